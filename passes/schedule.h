// Schedules: a list of primitive applications, plain text, one per line, after the
// graph rewrites that change what is computed (passes/rewrite.h), if any:
//
//   rewrite push_sum total              # the sum pushed down through the GEMM it sums
//   inline  e                           # compute e where it is read
//   reverse_inline y                    # compute y where the temporary it reads is stored
//   split   y.m 64 -> mo mi             # loop m: mo outside mi (64 iterations)
//   tile    y m n 64 32 -> mo no mi ni  # split both, then reorder mo no mi ni
//   reorder y mo no mi ni               # these loops, in this order
//   fuse    y m n -> mn                 # directly nested loops into one
//   bind    y.mo group.y                # loop mo runs as work-groups along y
//   unroll  y.ki                        # at most 64 iterations
//   vectorize y.v                       # 2, 4, 8 or 16 iterations as vector lanes
//   cross_reduce y.d 256 -> t           # 256 work-items share reduction loop d
//   scan    y.i 256 -> t                # a cumulative stage as a work-group scan along i
//   compute_at total y.t                # total's kernel inside y's, at loop t
//   cache_write c.tx private            # c's accumulators for one tx in registers
//   cache_read c.ko a local -> a_s      # a's box read in one ko, copied to a_s
//   pad c.a_s 1                         # a_s's rows one element longer
//   transpose c.a_s                     # a_s's two innermost dimensions swapped
//   prefetch c.a_s                      # a_s's next copy read into registers early
//
// Names are stages (the tensors they define) and loops as the printed Loop IR
// shows them (`ksmith inspect SPEC --print-after=lower`): after the rewrites, the
// rewritten graph's stages. `#` starts a comment. Rewrites come first.
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
  Split,
  Tile,
  Reorder,
  Fuse,
  Bind,
  Unroll,
  Vectorize,
  Inline,
  CrossReduce,
  ComputeAt,
  CacheWrite,
  CacheRead,
  Pad,
  Transpose,
  Prefetch,
  Scan,
  ReverseInline,
  AsyncCopy
};
const char *primitive_name(PrimitiveKind kind);

/// One primitive application. Which fields matter depends on the kind.
struct Primitive {
  PrimitiveKind kind = PrimitiveKind::Split;
  std::string stage;
  std::string consumer;  // compute_at: the stage whose loop it names
  std::string buffer;    // cache_read: the buffer cached; pad, transpose, prefetch: the one changed
  MemoryScope memory = MemoryScope::Private;  // cache_read, cache_write
  std::vector<std::string> loops;  // split, bind, unroll, vectorize, compute_at: one; tile: two; reorder, fuse: several
  std::vector<int64_t> factors;    // split, cross_reduce, scan, pad: one; tile: two
  std::vector<std::string> results;   // split: outer, inner; tile: four; fuse, cache_read: one
  ForKind binding = ForKind::Serial;  // bind
  SourceLoc loc;                      // where it was written, for errors
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
