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

/// unroll y.ki: a serial loop of at most kMaxUnroll iterations is unrolled, as long
/// as the innermost body is copied at most kMaxUnrollCopies times (counting the
/// unrolled loops around and inside it) and the copies hold at most
/// kMaxUnrolledIterations iterations of the loops inside.
std::optional<Program> unroll(const Program &program, const std::string &stage, const std::string &loop,
                              std::string *reason);
constexpr int64_t kMaxUnroll = 64;
/// 256: a GEMM's k loop of 16 around a 16-chunk register tile (on the H100, 3.3
/// against 3.6 ms at 4096^3 with the next panels prefetched; bench/results.md).
/// PoCL takes 43 s to compile that kernel, so a search on a CPU keeps to 64
/// (evolve/search/genome.h: kCpuUnrollCopies).
constexpr int64_t kMaxUnrollCopies = 256;
/// The most iterations of the loops inside an unrolled loop, times its copies.
constexpr int64_t kMaxUnrolledIterations = 1024;

/// vectorize y.v: the iterations of the innermost loop v (2, 4, 8 or 16 of them)
/// run as the lanes of vector operations: contiguous accesses become vector loads
/// and stores. The loop's body must have the vector form (ir/vector_form.h), which
/// the refusal names when it does not.
std::optional<Program> vectorize(const Program &program, const std::string &stage, const std::string &loop,
                                 std::string *reason);

/// cross_reduce y.d T -> t: the reduction loop d of y is shared by T work-items
/// (local.x, T a power of two up to 1024): work-item t accumulates the iterations
/// d = j * T + t, the T partial results meet in local memory and combine in a tree
/// (log2 T steps, a barrier after each), and work-item 0 stores the result. The
/// stage's spatial loops must be bound to work-groups (bind them first), and y's
/// reduction must be sum, prod, max, min or logsumexp.
std::optional<Program> cross_reduce(const Program &program, const std::string &stage, const std::string &loop,
                                    int64_t threads, const std::string &thread, std::string *reason);
constexpr int64_t kMaxCrossReduceThreads = 1024;

/// scan y.i T -> t: a running total (`y[.., i] = sum(k: 0..i + 1) V(k)`, reversed
/// `k: i..N`, exclusive `k: 0..i` or `k: i + 1..N`; or prod, max, min), whose lowering
/// visits every k for every i, runs as a work-group scan: T work-items (local.x, a
/// power of two up to 1024) each total a chunk of consecutive positions, the totals
/// become prefixes (suffixes) in local memory (log2 T steps), and each work-item runs
/// its chunk again from there, storing y[.., k] as it goes.
/// i must be the stage's innermost spatial loop, serial, with k its only reduction
/// loop over the same extent; every other spatial loop bound to work-groups.
std::optional<Program> scan(const Program &program, const std::string &stage, const std::string &loop, int64_t threads,
                            const std::string &thread, std::string *reason);
/// A running total's direction and whether it includes its own position.
struct RunningTotal {
  bool reversed = false;   // sum(k: i..N): from the end
  bool exclusive = false;  // sum(k: 0..i): without y's own position
};
/// The running total a reduction's guard makes of reduction variable k and spatial
/// variable i, as elaboration writes the ranges and lowering keeps them: `k < i + 1`
/// (k over i's extent), `k < i` (one less), `i <= k`, `i + 1 <= k`; casts aside. None
/// for any other guard or box. What scan takes, and the sketches' pattern.
std::optional<RunningTotal> running_total_form(const Expr &guard, const std::string &k, int64_t k_extent,
                                               const std::string &i, int64_t i_extent);

/// inline e: an elementwise temporary (no reduction, not an output) is computed
/// where it is read instead of stored: its kernel and buffer disappear.
std::optional<Program> inline_stage(const Program &program, const std::string &stage, std::string *reason);

/// reverse_inline y: an elementwise stage y that reads one temporary P, at its own
/// element, is computed where P is stored (y[i] = f(value) in place of P[i] = value),
/// so that an epilogue runs in its contraction's kernel on the accumulators as they
/// are written back; y's kernel and P's buffer go. P must be stored by one earlier
/// kernel and read by y alone, and nothing between the two may write what y reads.
std::optional<Program> reverse_inline(const Program &program, const std::string &stage, std::string *reason);

/// compute_at P C.L: P's kernel runs inside C's kernel, at L, C's innermost bound
/// loop: P's outer loops must match C's down to L (extent and binding), and what C
/// reads of P's results must be written in the same work-group (the same work-item
/// below a group loop). A barrier separates P from C where L is a local loop.
/// Temporaries used by this kernel alone move to local memory, without the
/// dimensions that only group loops index (softmax's row maximum: one per group).
/// Or L is a serial loop of C's reduction, matched by a serial loop of P's: each
/// iteration of L computes what it reads (attention's panel of scores), the temporary
/// folded to one iteration's block; P's work before that loop runs once, and P's copies
/// join C's at L's start (async_copy rings both). compute_at.cpp says how.
std::optional<Program> compute_at(const Program &program, const std::string &producer, const std::string &consumer,
                                  const std::string &loop, std::string *reason);
/// The most local memory one primitive allocates: what NVIDIA's OpenCL and Vulkan give
/// a work-group (AMD's and Intel's GPUs give 64 KiB). OpenCL's minimum, 32 KiB, held
/// the 16-bit GEMM to three slots of 16 k (two of 32 with B's rows padded need 34 KiB)
/// and attention's two passes to blocks of 64 rows (128: 38 KiB). A device with less
/// (lavapipe's 32 KiB) refuses the kernel before launch (check_device_limits), as the
/// search does each sketch and mutation before any device time (replay).
constexpr int64_t kMaxLocalBytes = 48 * 1024;

/// cache_write y.L private: y's results for one iteration of L accumulate in a
/// private array (one element per iteration of y's spatial loops below L), and
/// y's reduction loops move outside those loops: every step of the reduction
/// updates the whole tile, held in registers. The accumulator keeps its name; the
/// copies of the spatial loops that initialise it and write it back are named
/// *_init and *_out.
std::optional<Program> cache_write(const Program &program, const std::string &stage, const std::string &loop,
                                   MemoryScope scope, std::string *reason);
constexpr int64_t kMaxPrivateElements = 256;  // per work-item, so registers are not spilled wholesale

/// cache_read y.L b local -> b_s: the box of b that one iteration of L reads (in
/// all the group's work-items, for local memory; in one, for private) is copied to
/// b_s first, by the group's work-items together, and read from there; barriers
/// guard a local copy. Every index of b under L must be affine in the loops.
std::optional<Program> cache_read(const Program &program, const std::string &stage, const std::string &loop,
                                  const std::string &buffer, MemoryScope scope, const std::string &cache,
                                  std::string *reason);

/// pad y.b_s N: the rows of y's local buffer b_s (two or more dimensions) grow by
/// N unused elements, so a column is spread over memory banks.
std::optional<Program> pad(const Program &program, const std::string &stage, const std::string &buffer, int64_t extra,
                           std::string *reason);
constexpr int64_t kMaxPad = 32;

/// transpose y.b_s: the two innermost dimensions of y's local buffer b_s swap
/// places (its shape and every index), so what a work-item read down a column is
/// contiguous: vector loads, and reads that broadcast across the group.
std::optional<Program> transpose(const Program &program, const std::string &stage, const std::string &buffer,
                                 std::string *reason);

/// prefetch y.b_s: the copy into y's local cache b_s for the next iteration of its
/// serial loop is read into registers (b_s_next) during this iteration's work and
/// stored into b_s at the start of the next, so global loads overlap arithmetic.
/// The copy must be unrolled (one register per step, at most kMaxPrefetchElements).
std::optional<Program> prefetch(const Program &program, const std::string &stage, const std::string &buffer,
                                std::string *reason);
constexpr int64_t kMaxPrefetchElements = 32;

/// async_copy y.L S: the local caches copied at the start of each iteration of y's
/// serial loop L become rings of S slots, filled by asynchronous copies S - 1
/// iterations ahead (in 16-byte pieces where a copy's lanes are contiguous), one
/// barrier an iteration. The code generator writes them as PTX cp.async where the
/// device has it (NVIDIA's OpenCL, 8.0+) and refuses the program elsewhere.
std::optional<Program> async_copy(const Program &program, const std::string &stage, const std::string &loop,
                                  int64_t slots, std::string *reason);

/// tensorize y.L: y's serial loop L, a nest of multiply-adds into a private
/// accumulator laid out as the warp's matrix instruction wants (ir/matrix_tile.h),
/// becomes a matrix loop, which the code generator writes as mma.sync where the
/// device has matrix units (NVIDIA's OpenCL, 8.0+), emulates where asked, and
/// refuses elsewhere.
std::optional<Program> tensorize(const Program &program, const std::string &stage, const std::string &loop,
                                 std::string *reason);

}  // namespace ks
