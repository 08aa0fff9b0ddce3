// Finding and rewriting the loops of a stage, for the schedule primitives.
//
// A stage's loops are the loops of its kernel that enclose its block (its spatial
// loops, and whatever splits and fusions made of them) and the loops inside its
// block (its reduction loops). Loop names are unique within a kernel.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/bounds.h"
#include "ir/loop_ir.h"
#include "passes/names.h"

namespace ks {

/// Where a stage lives: its kernel's index, and its loops from outermost in.
struct StageLoops {
  size_t kernel = 0;
  std::vector<const For *> outer;  // enclosing the block, outermost first
  std::vector<const For *> inner;  // inside the block (reductions), outermost first
  const For *find(const std::string &loop) const;
  bool is_inner(const std::string &loop) const;
  std::string names() const;  // "m, n, k"
};

/// The stages whose blocks lie in body, in order.
std::vector<std::string> stage_names(const Stmt &body);
/// Every stage of the program, kernel by kernel.
std::vector<std::string> stage_names(const Program &program);

/// The loops of a stage, or nullopt with *reason set ("no stage named q; stages are y, e").
std::optional<StageLoops> stage_loops(const Program &program, const std::string &stage, std::string *reason);

/// The loop of a stage, or nullptr with *reason set ("no loop named q in stage y; loops are m, n").
const For *find_loop(const Program &program, const std::string &stage, const std::string &loop, StageLoops *where,
                     std::string *reason);

/// Every variable name a kernel defines (loops, lets) and every buffer it allocates.
std::set<std::string> names_in_kernel(const Kernel &kernel);

/// The names a pass that adds to the kernel must not take: the program's buffers and
/// names_in_kernel (graph_edit.h's graph_names is the same for a graph).
NameSet kernel_names(const Program &program, const Kernel &kernel);

/// Where a primitive writes 16-bit accesses it does not generate (matrix fragments
/// read straight from an f16 or bf16 tensor, not from its local copy): the refusal
/// naming the first such buffer that `s` reads or writes, else empty.
std::string half_access_refusal(const Program &program, const Stmt &s, const std::string &primitive);
/// The same over every kernel: the names a step that may move code between kernels
/// must not take (the search's fresh names).
NameSet program_names(const Program &program);

/// The local buffers of two or more dimensions a kernel allocates: the panels whose
/// layout pad and transpose change; with `spread`, those of at least that many
/// dimensions of more than one element (innermost_dims: what transpose can swap).
std::vector<std::string> local_panels(const Kernel &kernel, size_t spread = 0);
/// The allocation of buffer where kernel allocates it as such a panel; else null, and
/// *reason says what it is ("kernel c allocates no buffer named q", "c_acc is in private
/// memory; " + only).
const Allocate *local_panel(const Kernel &kernel, const std::string &buffer, const std::string &only,
                            std::string *reason);
/// The positions of a panel's `count` innermost dimensions of more than one element,
/// innermost last (fewer where the shape has fewer). A copy's box keeps a dimension of
/// one element for each index that does not range (a convolution's kd, kh of one
/// step), and pad and transpose mean the dimensions the panel's elements lie along.
std::vector<size_t> innermost_dims(const std::vector<int64_t> &shape, size_t count);

/// Whether name is free to introduce in the kernel; else *reason says why.
bool name_is_free(const Program &program, const Kernel &kernel, const std::string &name, std::string *reason);

/// Replaces the loop named `loop` in kernel k by rewrite(loop).
Program replace_loop(const Program &program, size_t kernel, const std::string &loop,
                     const std::function<Stmt(const For *)> &rewrite);

/// Replaces every Block of the given stage by rewrite(block).
Program replace_block(const Program &program, const std::string &stage,
                      const std::function<Stmt(const Block *)> &rewrite);

/// Renames variables (loops, lets, their uses) and allocations (and their loads
/// and stores) by `names`; names not in the map stay.
Stmt rename(const Stmt &s, const std::map<std::string, std::string> &names);

/// The loops and lets around the loop named `loop` in body, outermost first, and that
/// loop last; empty when body has no such loop.
std::vector<Stmt> path_to(const Stmt &body, const std::string &loop);
/// The ranges of the loops and lets on a path (path_to's), the loop's own included.
BoundsScope ranges_on(const std::vector<Stmt> &path);

/// Peels the loops, lets and guards (without else) enclosing one another at the top
/// of s into *layers, outermost first; returns what the innermost encloses.
Stmt peel(Stmt s, std::vector<Stmt> *layers);
/// Rebuilds layers (loops, lets, guards, blocks, allocations; their own bodies ignored)
/// around body, outermost first: the inverse of peel.
Stmt wrap(const std::vector<Stmt> &layers, Stmt body);
/// A loop body as cache_read leaves it: allocations around a sequence `copies; barrier;
/// work; barrier`, the copies the statements before its first barrier.
struct CacheReadBody {
  std::vector<const Allocate *> allocations;
  const Seq *seq = nullptr;
  size_t barrier = 0;  // the first barrier's place in seq
};
/// body in that form (a sequence inside the allocations, a statement before its first
/// barrier, a barrier last), or nullopt; what the copies are is the caller's question.
std::optional<CacheReadBody> cache_read_body(const Stmt &body);
/// The one statement s holds where it is a loop, a let, a guard without else, a block or
/// an allocation (wrap({s}, b) puts another there); undefined otherwise.
Stmt inside(const Stmt &s);
/// The copy `for i unrolled { let f = i * N + w; X[c(f)] = src[s(f)] }` as W lanes a
/// step (`for i unrolled { let g = i * N + w; for v vectorized { X[..] = src[..] } }`
/// over 1 / W of the steps, f = W g + v; W = 16 / the element's bytes), or nullopt where
/// that is not the same copy in 16-byte pieces: f used otherwise than itself, f / K,
/// f % K and (f / K) % M with K a multiple of W, steps not a multiple of W, lanes not
/// contiguous at both ends, or a read outside src (outside: the ranges of the names
/// around the copy).
std::optional<Stmt> copy_in_lanes(const Program &program, const For &copy, const BoundsScope &outside, NameSet &names);

/// The one store `stage[v0, ..] = value` of an elementwise stage (no reduction, alone in
/// its kernel, distinct loop variables as indices) and those variables in *vars; or
/// nullptr with *reason set. What inline and reverse_inline take.
const Store *elementwise_store(const Program &program, const StageLoops &where, const std::string &stage,
                               std::vector<std::string> *vars, std::string *reason);

/// Whether s contains a loop bound to group.* or local.*.
bool has_bound_loop(const Stmt &s);
/// Whether s contains a barrier.
bool has_barrier(const Stmt &s);

/// Whether the iterations of the loops named in `loops` (inside body) observe their own
/// order: an iteration stores, at an element of its own, a value read from a buffer
/// that every iteration updates in place and that lives across them (a scan's
/// running total stored at each position). A reduction's accumulator alone does not: its combine is reassociated
/// freely. Where it does, *what names the store and the buffer ("y reads y_acc").
bool observes_running_value(const Stmt &body, const std::set<std::string> &loops, std::string *what);

/// Whether a group of `threads` work-items suits cross_reduce and scan (a power of
/// two from 2 to kMaxCrossReduceThreads); else *reason says so.
bool power_of_two_work_items(int64_t threads, std::string *reason);
/// Whether every loop enclosing a stage's block but `except` is bound to work-groups;
/// else *reason names the first that is not (`bind every OTHER spatial loop ...`).
bool outer_loops_on_groups(const StageLoops &where, const std::string &stage, const For *except, std::string *reason);

/// Verifies a primitive's result; a failure becomes *reason (the rule broken).
bool verified(const Program &program, std::string *reason);

}  // namespace ks
