// Schedule primitives: each returns the transformed program, or nullopt with
// *reason saying precisely why it refuses (and then changes nothing). A primitive
// never changes what the program computes; each result is verified. Loops are
// named as the printed Loop IR shows them (`ksmith inspect`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace ks {

/// split y.m F -> mo mi: loop m of extent E becomes mo (ceil(E / F)) around mi (F),
/// with m = mo * F + mi and a guard `if m < E` when F does not divide E. F may
/// exceed E (one outer iteration), so one schedule serves small and large sizes.
std::optional<Program> split(const Program &program, const std::string &stage, const std::string &loop, int64_t factor,
                             const std::string &outer, const std::string &inner, std::string *reason);

/// fuse y m n -> mn: directly nested serial loops (outermost first) become one loop
/// over the product of their extents; each original variable is recovered by / and %.
std::optional<Program> fuse(const Program &program, const std::string &stage, const std::vector<std::string> &loops,
                            const std::string &fused, std::string *reason);

/// reorder y a b c: the listed serial loops, which must enclose one another with
/// only lets and guards between them, take each other's places in the order given.
/// Lets and guards between them move inside the innermost, in their order.
std::optional<Program> reorder(const Program &program, const std::string &stage, const std::vector<std::string> &loops,
                               std::string *reason);

/// tile y m n Fm Fn -> mo no mi ni: split both loops, then reorder mo no mi ni.
std::optional<Program> tile(const Program &program, const std::string &stage, const std::string &loop_a,
                            const std::string &loop_b, int64_t factor_a, int64_t factor_b,
                            const std::vector<std::string> &names, std::string *reason);

/// bind y.mo group.y: a serial spatial loop runs as work-groups (group.*) or as the
/// work-items of a group (local.*). Group loops must enclose local loops, which
/// must enclose every serial loop; each hardware index is bound once.
std::optional<Program> bind(const Program &program, const std::string &stage, const std::string &loop, ForKind kind,
                            std::string *reason);

/// unroll y.ki: a serial loop is unrolled, as long as the innermost body is copied
/// at most kMaxUnroll times (counting the unrolled loops around and inside it).
std::optional<Program> unroll(const Program &program, const std::string &stage, const std::string &loop,
                              std::string *reason);
constexpr int64_t kMaxUnroll = 64;

/// cross_reduce y.d T -> t: the reduction loop d of y is shared by T work-items
/// (local.x, T a power of two up to 1024): work-item t accumulates the iterations
/// d = j * T + t, the T partial results meet in local memory and combine in a tree
/// (log2 T steps, a barrier after each), and work-item 0 stores the result. The
/// stage's spatial loops must be bound to work-groups (bind them first), and y's
/// reduction must be sum, prod, max or min.
std::optional<Program> cross_reduce(const Program &program, const std::string &stage, const std::string &loop,
                                    int64_t threads, const std::string &thread, std::string *reason);
constexpr int64_t kMaxCrossReduceThreads = 1024;

/// inline e: an elementwise temporary (no reduction, not an output) is computed
/// where it is read instead of stored: its kernel and buffer disappear.
std::optional<Program> inline_stage(const Program &program, const std::string &stage, std::string *reason);

}  // namespace ks
