// Schedules: a list of primitive applications, plain text, one per line, after the
// graph rewrites that change what is computed (passes/rewrite.h), if any:
//
//   rewrite push_sum total              # the sum pushed down through the GEMM it sums
//   tile    y m n 64 32 -> mo no mi ni  # split both, then reorder mo no mi ni
//   bind    y.mo group.y                # loop mo runs as work-groups along y
//   cache_read y.ko a local -> a_s      # a's box read in one ko, copied to a_s
//
// Each primitive's arguments, what it does and an example come from the registry
// (passes/primitive_info.h, listed in passes/primitives.def; `ksmith primitives`
// prints them). Names are stages (the tensors they define) and loops as the printed
// Loop IR shows them (`ksmith inspect SPEC --print-after=lower`): after the rewrites,
// the rewritten graph's stages. `#` starts a comment. Rewrites come first.
// A schedule is data: records that print and parse back exactly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/loop_ir.h"
#include "passes/rewrite.h"

namespace ks {

enum class PrimitiveKind {
#define PRIMITIVE(Kind, name) Kind,
#include "passes/primitives.def"
};
const char *primitive_name(PrimitiveKind kind);

/// One primitive application. Which fields a kind uses, and in which order, its
/// arguments in the registry say (primitive_info(kind).args).
struct Primitive {
  PrimitiveKind kind = PrimitiveKind::Split;
  std::string stage;
  std::string consumer;                       // compute_at: the stage whose loop it names
  std::string buffer;                         // the buffer cached, padded, transposed, prefetched
  MemoryScope memory = MemoryScope::Private;  // cache_read, cache_write
  std::vector<std::string> loops;             // the loops named, in order
  std::vector<int64_t> factors;               // the integers, in order
  std::vector<std::string> results;           // the names it introduces, in order
  ForKind binding = ForKind::Serial;          // bind
  SourceLoc loc;                              // where it was written, for errors
};

struct Schedule {
  std::vector<Primitive> steps;   // applied to the rewritten graph's Loop IR
  std::vector<Rewrite> rewrites;  // applied to the graph first, in order
  /// No rewrite and no step: the naive kernel.
  bool naive() const { return steps.empty() && rewrites.empty(); }
};

/// Parses a schedule; errors are `file:line:col: error:` with the line and a caret.
Schedule parse_schedule(const std::shared_ptr<const SourceFile> &file);
Schedule load_schedule(const std::string &path);

std::string print_primitive(const Primitive &step);  // "split y.m 64 -> mo mi"
/// The rewrites, then the primitives, a line each.
std::string print_schedule(const Schedule &schedule);

/// The graph after the schedule's rewrites (the graph itself when there are none).
/// A refused rewrite throws UserError at its line.
Graph rewritten_graph(const Graph &graph, const Schedule &schedule);

/// Applies one step. A refusal is the user's error, at the step's location:
/// `file:line:col: error: split y.q: no loop named q in stage y; loops are m, n`.
Program apply_primitive(const Program &program, const Primitive &step);

}  // namespace ks
