// Sketches: the search space derived from the program, as Ansor and MetaSchedule
// derive theirs. Each stage of the spec is matched to a pattern, and the pattern's
// rule writes a schedule skeleton whose open decisions (tile sizes, work-items per
// group, which operands go through local memory, unrolling, vector width) are drawn
// at random:
//
//   elementwise   temporaries inlined where they are read; what is left (outputs,
//                 and a short reduction per output) gets a work-item per output:
//                 spatial loops fused, split by the group size, bound to group.x and
//                 local.x, the innermost loop vectorised where its accesses allow
//   contraction   (a reduction whose operands each miss a spatial loop: matmul,
//                 batched matmul, conv) multi-level tiling: two spatial loops split
//                 into group, work-item and register levels, the other spatial loops
//                 fused onto group.z, each work-item's outputs in chunks of 1, 2
//                 or 4 neighbours (the chunk's lanes vectorised where the panels
//                 allow), the accumulators in registers (cache_write), the
//                 reduction split and its operand panels copied to local memory
//                 (cache_read), a panel whose rows run along the reduction mostly
//                 transposed (then read along the outputs) and padded, the
//                 next step's panels prefetched into registers, the register
//                 tile unrolled, the reduction's steps and short window loops
//                 unrolled; a large contraction on a GPU mostly gets 128 to 512
//                 work-items with 4 or 8 outputs a side; the two tiled loops
//                 mostly reuse both operands (the
//                 innermost loop, and one along which an operand that varies with
//                 it does not: a conv's output channels). On a device with matrix
//                 units, mostly (7 in 10) a warp tile of mma.sync instead: rows the
//                 loop only one operand reads, columns only the other's, laid out
//                 as the instruction's fragments (ir/matrix_tile.h), warps of 16 to
//                 64 a side (at most 64 accumulators a lane), panels of 8 to 32 k
//                 padded against bank conflicts, copied ahead, tensorize
//   row reduction (the reduction runs along the contiguous dimension, or the output
//                 is a scalar: softmax's statistics, norms, losses, matvec) a
//                 work-group per output with cross_reduce; an elementwise output that
//                 reads such rows (softmax, layer norm) takes them into its own kernel
//                 with compute_at, the group's work-items striding the row, the row
//                 optionally kept in registers (cache_read private), mostly in
//                 16-byte chunks interleaved across the work-items (kVectorRowsShare)
//   attention     (a softmax_sum, online_attention's one-pass attention) a work-item
//                 per 1 or 2 rows and all, half or a quarter of the value's columns,
//                 its accumulators in registers; the panels of the operands read
//                 along the reduction (k, v) in local memory, copied ahead; the row's
//                 operand of the score (q) in registers; the score's sum unrolled
//   running total (`y[.., i] = sum(k: 0..i + 1) ...`: cumulative sums, products,
//                 maxima) a work-group per row, its other spatial loops bound to
//                 groups, scanning the row with `scan` (T work-items)
//   column        (a reduction along a strided dimension: sum over a middle axis,
//                 pooling windows) mostly a work-item per 2, 4 or 8 neighbouring
//                 outputs, read and summed as one vector in registers (cache_write,
//                 vectorize), else a work-item per output; the reduction unrolled
//
// Before the stages are sketched, a sum weighted by a softmax (attention) is made one
// pass (`rewrite online_attention`) in kAttentionShare of the draws
// (kAttentionShareWithMatrixUnits on a device with matrix units), a row's maximum
// and its sum of exponentials made one logsumexp (`rewrite online_softmax`) in
// kOnlineSoftmaxShare of the draws on a GPU where that applies; on a device with matrix
// units, a 16-bit contraction that a logsumexp and a sum read (attention's scores), or
// that they read through one elementwise temporary (a causal mask, copied first and
// drawn inline), is given to each reader as a copy of its own (`rewrite recompute`) in
// kRecomputeShare of the draws, and each reader is then mostly sketched around it: the
// reader's loop over j in panels of 16, the scores' panel of 64 rows computed on the
// matrix units at each step (compute_at inside the reduction), the sum a matrix tile
// of 64 rows in warps of 16 or 32, the logsumexp a work-item a row, the panels copied
// ahead in rings of 2 or 3 (attention in two passes, the scores never stored); and a
// reduction whose outputs are too few to fill the
// device (split_candidate: a GEMM with a long K, a channel's statistics, a sum to one
// value) is split across work-groups in some draws (`rewrite rfactor`, parts drawn
// so that the partial results give the device 2 to 16 groups a compute unit); its
// partial results are then sketched as any stage (a contraction with the part as
// one more spatial loop), and the combining stage reads along the outputs (column).
//
// Every step is applied as it is drawn; a step the IR refuses is dropped (an
// optional one) or undoes its rule for that stage, which then gets the work-item per
// output rule. A sketch that the device's limits refuse is drawn again.
#pragma once

#include <optional>
#include <string>

#include "evolve/search/space.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace ks {

enum class StagePattern { Elementwise, Contraction, RowReduction, ColumnReduction, RunningTotal, Attention };
/// "elementwise", "contraction", "row", "column", "scan", "attention".
const char *stage_pattern_name(StagePattern pattern);

/// The pattern of one stage of graph (its reads and its reduction decide).
StagePattern classify_stage(const Stage &stage);

struct Sketch {
  Schedule schedule;
  std::string note;  // the rules applied: "inline e; y: row chain of row_max, total (256)"
};

/// A schedule drawn from the sketches of graph's stages, within the device's limits
/// (work-group size, local memory); none when no draw of `attempts` replays on it.
/// Its rewrites are `rewrites` where given; else, in kRewriteShare of the draws, the
/// rewrites that cut the graph's work (passes/rewrite.h's simplifying_rewrites), and
/// none in the others. The stages are sketched as the rewritten graph has them.
std::optional<Sketch> sample_sketch(const Graph &graph, const runtime::DeviceInfo &device, Rng &rng, int attempts = 8,
                                    const std::vector<Rewrite> *rewrites = nullptr);

/// passes/rewrite.h's simplifying_rewrites of graph, found once per graph; none
/// where together they leave more than 1 / kRewriteWorthIt of the work.
const std::vector<Rewrite> &cheaper_rewrites(const Graph &graph);
/// How much less work the rewrites must leave for the sketches to start from them:
/// on the H100, KernelBench 62 (x + x after a GEMM: 1.01 times less work) and 77 (a
/// pool pushed through a convolution that a variance still needs: 1.02) ended 8% and
/// 9% slower with the sketches on the rewritten graph than as written, where 14, 42,
/// 44 and 51 (hundreds to thousands of times less) ended 7 to 90 times faster.
constexpr double kRewriteWorthIt = 1.2;
/// The work-groups a stage's sketch gives the device, roughly: a contraction's tiles
/// (4,096 outputs each), a row reduction's group per output, a work-item per output
/// elsewhere (256 a group). What split_candidate weighs against the compute units.
int64_t sketch_groups(const Stage &stage);
/// The share of draws that split a split_candidate's reduction: not all, so that the
/// search also times it whole.
constexpr double kRfactorShare = 0.6;
/// An rfactor of `stage` (its outermost reduction variable of extent 2 or more) into
/// parts that give the device 2 to 16 work-groups a compute unit, drawn; none where
/// the stage already gives it twice as many as it has units, its reduction is
/// shorter than 1,024 points or cannot be split (argmax, a running total).
std::optional<Rewrite> draw_rfactor(const Graph &graph, const Stage &stage, const runtime::DeviceInfo &device,
                                    Rng &rng);

/// The share of draws that compute a softmax-weighted sum in one pass (`rewrite
/// online_attention`, attention in one kernel: on the H100 2.9 ms against the two
/// passes' best 3.9, bench/results.md): most; not all, so that the search also times
/// the passes as written (a mask the one pass cannot take in leaves the scores stored).
/// Where the device has matrix units, a few: the one pass's two contractions are a
/// work-item's dot products, which the units cannot take, while the passes as written
/// are two contractions they can (on the H200 2.04 ms against the one pass's 2.90).
constexpr double kAttentionShare = 0.8, kAttentionShareWithMatrixUnits = 0.3;
/// The share of draws, on a device with matrix units, that give each reader of a
/// 16-bit contraction read by a logsumexp and a sum (attention's scores, once
/// online_softmax has made the logsumexp) a copy of its own (`rewrite recompute`), and
/// the share of those readers then sketched around it: the contraction computed at
/// each panel of the reader's reduction (compute_at inside it), never stored. Attention
/// at bf16 so took 0.990 ms on the H200 against 1.002 for the three kernels that store
/// the scores (bench/results.md, "Attention in two passes"): about even, so half.
constexpr double kRecomputeShare = 0.5, kAroundItsScoresShare = 0.9;
/// The share of row chains (softmax, layer norm: the statistics computed in the output's
/// kernel) drawn with the row in 16-byte chunks, where the row's length allows: work-item
/// t of T holds chunks j * T + t, each one vector load, the warp's loads contiguous, the
/// row in registers once for every stage (cache_read's box in parts). A bf16 layer_norm
/// at D = 16,384 so took 0.0847 ms on the H200 against the 2-byte loads' 0.0975
/// (bench/results.md, "Rows in 16-byte vectors"): most.
constexpr double kVectorRowsShare = 0.7;
/// The share of draws that make a row's maximum and its sum of exponentials one pass,
/// a logsumexp (`rewrite online_softmax`): the row is read once less, and since
/// max-then-sum a work-item's share of it costs one exp an element as the two passes
/// did (attention's three kernels on the H200: 1.80 ms against the four's 2.05). Not
/// all: a softmax's statistics may also live in one kernel with its output. On a GPU
/// only, as the mutator's rewrite edit: on PoCL the one pass was the slower.
constexpr double kOnlineSoftmaxShare = 0.5;

/// Whether any rewrite applies to graph, found once per graph.
bool rewrites_apply(const Graph &graph);

/// The share of sketches drawn on the rewritten graph: most, since the rewrites cut
/// the work by the factors that matter (a GEMM to a GEMV); not all, so that the
/// search also times the graph as written.
constexpr double kRewriteShare = 0.85;

}  // namespace ks
