// Elaboration: a parsed spec plus size values -> Graph IR. Binds every size to a
// number, infers the extents of index variables and the shapes of intermediates,
// checks types (inserting the implicit int-to-float conversions), and proves every
// read without a pad value inside its tensor. Every error points at the source.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/graph.h"

namespace ks::frontend {

/// Size and constant values given on the command line (`--size M=64,eps=1e-3`) or
/// in a sizes file, by name. Which names are sizes and which constants only the
/// spec knows: a non-negative integer lands in values (a constant may take it),
/// any other number in constants (a size may not).
struct SizeOverrides {
  std::map<std::string, int64_t> values;
  std::map<std::string, double> constants;
  std::string flag = "--size";  // named in errors
};

/// Parses `M=64` or `M=64,eps=1e-3` into overrides; throws UserError on bad text.
void parse_size_assignments(const std::string &text, SizeOverrides *out);

/// A sizes file (bench/sizes_*.txt): NAME SIZES lines, SIZES as for --size; '#' starts
/// a comment. Throws UserError for an unreadable file, a line without sizes or with
/// more than one word of them, or a name given twice.
std::map<std::string, std::string> read_sizes_file(const std::string &path);
/// The same for a text already read.
std::map<std::string, std::string> parse_sizes_file(const SourceFile &file);

enum class SizeSet {
  Default,  // the `where` values, replaced by overrides
  Check,    // the `check` values where given, else the `where` values; then overrides
};

/// The value of a size expression (integers, sizes, + - * / % min max, as `where`
/// clauses and kernel bodies' plans write them); UserError at the expression
/// otherwise, unknown_hint appended to an unknown name's error ("; sizes are M, N").
int64_t size_value(const AstExpr &e, const std::map<std::string, int64_t> &sizes, const std::string &unknown_hint);

/// Elaborates spec with the chosen sizes. The result passes verify_graph().
Graph elaborate(const Spec &spec, SizeSet which, const SizeOverrides &overrides);

}  // namespace ks::frontend
