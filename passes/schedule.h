// Schedules: a list of primitive applications, plain text, one per line.
//
//   inline  e                           # compute e where it is read
//   split   y.m 64 -> mo mi             # loop m: mo outside mi (64 iterations)
//   tile    y m n 64 32 -> mo no mi ni  # split both, then reorder mo no mi ni
//   reorder y mo no mi ni               # these loops, in this order
//   fuse    y m n -> mn                 # directly nested loops into one
//   bind    y.mo group.y                # loop mo runs as work-groups along y
//   unroll  y.ki                        # at most 64 iterations
//   cross_reduce y.d 256 -> t           # 256 work-items share reduction loop d
//
// Names are stages (the tensors they define) and loops as the printed Loop IR
// shows them (`ksmith inspect SPEC --print-after=lower`). `#` starts a comment.
// A schedule is data: records that print and parse back exactly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/loop_ir.h"

namespace ks {

enum class PrimitiveKind { Split, Tile, Reorder, Fuse, Bind, Unroll, Inline, CrossReduce };
const char *primitive_name(PrimitiveKind kind);

/// One primitive application. Which fields matter depends on the kind.
struct Primitive {
  PrimitiveKind kind = PrimitiveKind::Split;
  std::string stage;
  std::vector<std::string> loops;     // split, bind, unroll: one; tile: two; reorder, fuse: several
  std::vector<int64_t> factors;       // split: one; tile: two
  std::vector<std::string> results;   // split: outer, inner; tile: four; fuse: one
  ForKind binding = ForKind::Serial;  // bind
  SourceLoc loc;                      // where it was written, for errors
};

struct Schedule {
  std::vector<Primitive> steps;
};

/// Parses a schedule; errors are `file:line:col: error:` with the line and a caret.
Schedule parse_schedule(const std::shared_ptr<const SourceFile> &file);
Schedule load_schedule(const std::string &path);

std::string print_primitive(const Primitive &step);  // "split y.m 64 -> mo mi"
std::string print_schedule(const Schedule &schedule);

/// Applies one step. A refusal is the user's error, at the step's location:
/// `file:line:col: error: split y.q: no loop named q in stage y; loops are m, n`.
Program apply_primitive(const Program &program, const Primitive &step);

}  // namespace ks
