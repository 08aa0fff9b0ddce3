// Graph rewrites: each changes what a graph computes by an algebraic law, so that
// the outputs are the same (up to reassociation error) and cost less to compute. A
// schedule never changes what is computed; a rewrite does, before any schedule, and a
// candidate of the search is rewrites followed by a schedule of the rewritten graph.
//
// Each rule is one function `std::optional<Graph> rule(graph, stage, &reason)`: the
// new graph, verified, or nullopt with the reason it does not apply (and then nothing
// changes). Stages that no output needs any more are removed after each rule
// (remove_dead_stages). Inputs and outputs never change; temporaries come and go.
// The rules, with what each reaches, are listed in passes/README.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/graph.h"

namespace ks {

enum class RewriteKind {
  DropUnitReduction,
  FoldConstants,
  PushSum,
  FoldAffine,
  RangedReduction,
  MergeDuplicates,
  OnlineSoftmax,
  Rfactor,
  StridePhases,
  OnlineAttention,
  Recompute
};

/// "drop_unit_reduction", "fold_constants", "push_sum", "fold_affine", "ranged_reduction",
/// "merge_duplicates", "online_softmax", "rfactor", "stride_phases", "online_attention", "recompute": the name in
/// schedules, on the
/// command line and in messages.
const char *rewrite_name(RewriteKind kind);
std::optional<RewriteKind> parse_rewrite_kind(const std::string &name);
const std::vector<RewriteKind> &all_rewrite_kinds();

/// One rewrite step of a schedule: `rewrite push_sum total`, `rewrite rfactor c.k 4096
/// -> c_rf ko ki`.
struct Rewrite {
  RewriteKind kind = RewriteKind::FoldConstants;
  std::string stage;
  SourceLoc loc;  // where it was written, for errors
  // rfactor's alone: the reduction variable, the factor, and the names it gives.
  std::string loop;
  int64_t factor = 0;
  std::vector<std::string> results;
};

/// Whether the rule takes a variable, a factor and names (rfactor).
bool rewrite_takes_arguments(RewriteKind kind);
/// Whether applicable_rewrites lists the rule (what the search's mutator adds): not
/// rfactor (its arguments are drawn by the sketches) nor online_softmax (slower than
/// the two passes on a CPU, faster on a GPU: the mutator adds it there itself) nor
/// recompute (more arithmetic for fewer bytes: a schedule's trade).
bool rewrite_listed(RewriteKind kind);

std::string print_rewrite(const Rewrite &step);  // "rewrite push_sum total"

/// drop_unit_reduction s: the reduction variables of s whose extent is 1 take the
/// value 0 and leave the reduction (over one point, sum, max, min and prod are the
/// value there; argmax and argmin its index, 0). With none left, s is elementwise.
std::optional<Graph> drop_unit_reduction(const Graph &graph, const std::string &stage, std::string *reason);

/// fold_constants s: s's body simplified (ir/simplify.h), after the temporaries it
/// reads that are constants or plain copies of another tensor are put in place of
/// their loads; where s's body is then a plain read of a temporary that only s reads,
/// s takes that temporary's definition. An output that is constant becomes one stage
/// with a constant body, and the stages before it go.
std::optional<Graph> fold_constants(const Graph &graph, const std::string &stage, std::string *reason);

/// push_sum s: a sum pushed down through the contractions it sums over. s's body is
/// expanded into a sum of products; a product that reads the result of a sum
/// reduction P once (directly or through elementwise temporaries) takes P's body, its
/// reduction joining s's (sum_n sum_k = sum_n,k); terms that do not depend on a
/// reduction variable leave it, times its extent; then each product's reduction
/// variables are factored: sum_n,k x[m, k] w[n, k] = sum_k x[m, k] (sum_n w[n, k]),
/// the inner sum a new stage over the variables it needs (a sum over the whole window
/// of a zero-padded read is the whole sum: it needs none of the window's offsets).
/// Applies wherever a product merges, factors or leaves a variable; the choices it
/// makes depend on the graph's structure, not its sizes, so a schedule written at
/// one size names the same stages at another. Whether the graph is then cheaper
/// (a contraction another stage reads stays) is simplifying_rewrites' question.
std::optional<Graph> push_sum(const Graph &graph, const std::string &stage, std::string *reason);

/// fold_affine s: s's body as its canonical form (passes/canonical.h): constants
/// multiplied through, like terms combined (x + x is 2 x, (x * 2 + 3) * 4 is x * 8 +
/// 12), what cancels dropped, exp(a) / exp(b) as exp(a - b), log(exp(x)) as x.
/// Applies only where the body then has fewer operations.
std::optional<Graph> fold_affine(const Graph &graph, const std::string &stage, std::string *reason);

/// ranged_reduction s: a reduction masked by a comparison of its variable k with a
/// spatial variable i over k's whole range (`sum(k: D) select(k <= i, v, 0)`, or v
/// times such a mask) becomes the ranged reduction elaboration writes for
/// `sum(k: 0..i + 1) v` (and the exclusive and reversed forms), which `scan` then
/// computes in one pass over the row.
std::optional<Graph> ranged_reduction(const Graph &graph, const std::string &stage, std::string *reason);

/// merge_duplicates s: s computes what an earlier stage computes (the same reduction
/// and body, variables renamed): it is computed once, and s's readers read the other.
std::optional<Graph> merge_duplicates(const Graph &graph, const std::string &stage, std::string *reason);

/// online_softmax t: t = sum(k) exp(X - m[..]), a softmax's sum, with m = max(k) X over
/// the same points (both temporaries): one reduction l = logsumexp(k) X (a running
/// maximum and a rescaled running sum in one pass) in place of the two, its readers
/// reading l for m and 1 for t (t = exp(l - m)). Matched on the canonical form of exp's
/// argument (canonical.h), so also t = sum(k) exp(a X - a m[..]) for a positive constant
/// a however written (a temperature, attention's 1 / sqrt(D) after the maximum): then
/// l = logsumexp(k) a X, read as l / a for m. Refused where a stage reads m or t
/// other than through l (m itself, or exp(X - m) without the division, as an output).
std::optional<Graph> online_softmax(const Graph &graph, const std::string &stage, std::string *reason);

/// online_attention y: y = sum(j) exp(X - l[..]) * W, a sum weighted by a softmax, with
/// l = logsumexp(j) X over the same points (or a softmax's maximum and sum, made one by
/// online_softmax first), becomes y = softmax_sum(j) softmax_pair(X, W) (ir/graph.h):
/// one pass over j with a running maximum, sum and accumulator, the weights never
/// stored; where X reads a sum (attention's scores), times a constant or not, that sum
/// moves inside the step and the scores are not stored either. Refused where y reads l other than as the factor
/// exp(X - l), at more than one row, or at a row that depends on j, and where l is an
/// output.
std::optional<Graph> online_attention(const Graph &graph, const std::string &stage, std::string *reason);

/// recompute s: each stage that reads the temporary s reads a copy of its own,
/// s_READER (a fresh name where that one is taken), defined as s is, in s's place; s
/// goes. Then each reader's kernel can compute its copy where it reads it (compute_at
/// inside a reduction loop) and s is never stored: attention's scores computed again
/// for the weighted sum after the logsumexp's pass. Refused for an output and where
/// fewer than two stages read s.
std::optional<Graph> recompute(const Graph &graph, const std::string &stage, std::string *reason);

/// rfactor s.k F -> s_rf ko ki: s's reduction over k (extent K) in P = ceil(K / F)
/// parts: s_rf[ko: P, ...] reduces F consecutive points of k each (ki: min(F, K)),
/// and s reduces s_rf over ko. The parts are independent outputs, so a reduction
/// with too few outputs to fill the device (split-K GEMM, large statistics, a sum
/// to one value) spreads over work-groups. F may pass K (one part), as split's
/// factors may, so that one schedule serves the check sizes and the timed sizes.
/// Refused for a variable that is not one of s's reduction variables, for argmax
/// and argmin, for a factor below 1 and for names in use.
std::optional<Graph> rfactor(const Graph &graph, const std::string &stage, const std::string &loop, int64_t factor,
                             const std::vector<std::string> &results, std::string *reason);

/// stride_phases s: a transposed convolution's gather, a sum masked by `(v - k + c) % S
/// == 0` (v spatial, k reduced, S >= 2), runs only the offsets k on v's stride grid:
/// k = (v + c) % S + S t over ceil(K / S) values of a new variable t (those past K
/// masked, reads past the buffer padded with 0), and the division (v - k + c) / S becomes
/// (v + c) / S - t. Every such pair
/// of the body is taken; the stage keeps its shape and spatial variables. Refused where
/// no such test masks the whole body (where it fails the body must be 0) and for
/// reductions other than sum.
std::optional<Graph> stride_phases(const Graph &graph, const std::string &stage, std::string *reason);

/// Applies one step, or returns nullopt with *reason.
std::optional<Graph> try_rewrite(const Graph &graph, const Rewrite &step, std::string *reason);

/// Applies one step; a refusal is the user's error at the step's location, naming
/// where the stage is defined in the spec.
Graph apply_rewrite(const Graph &graph, const Rewrite &step);

/// Every rewrite step that applies to graph (each listed rule at each stage), in stage
/// order.
std::vector<Rewrite> applicable_rewrites(const Graph &graph);

/// The rewrites that make graph cheaper, found greedily: each stage in order, each
/// rule in the order drop_unit_reduction, fold_constants, ranged_reduction,
/// merge_duplicates, push_sum, fold_affine, stride_phases; the first that applies is taken and the
/// search starts again on its result, until none applies (or max_steps). Every rule
/// but push_sum simplifies whenever it applies; push_sum is taken only where the
/// work (ir/cost.h's graph_work) goes down. What the search's sketches start from.
std::vector<Rewrite> simplifying_rewrites(const Graph &graph, size_t max_steps = 32);

/// The bytes the naive kernels of graph move through device memory for temporaries:
/// each written once and read back once by each stage that reads it. What a rewrite
/// that fuses stages without cutting work saves.
double temporary_bytes(const Graph &graph);

/// A rewrite that fuses stages without cutting work (online_softmax,
/// online_attention): simplifying_rewrites leaves it out, since graph_work does not
/// go down, but the temporaries it keeps out of device memory do.
struct Fusion {
  Rewrite step;
  double bytes_before = 0, bytes_after = 0;  // temporary_bytes of graph, and after step
};

/// The fusing rewrites that apply to graph, each on its own, with what they save.
std::vector<Fusion> fusing_rewrites(const Graph &graph);

/// The graph without the temporaries that no output needs (and their stages).
Graph remove_dead_stages(const Graph &graph);

}  // namespace ks
