// Graph rewrites (passes/rewrite.h): each rule's result and its refusals; the schedule
// text with rewrite steps; and the property that every rule, wherever it applies (to
// every stage of every example, and of randomly generated graphs made for the rules),
// computes what the graph computed, by the float64 interpreter on random inputs.
#include "passes/rewrite.h"

#include <random>

#include "evolve/evaluation/inputs.h"
#include "evolve/fuzz/random_spec.h"
#include "ir/cost.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/pipeline.h"
#include "passes/schedule.h"
#include "test_util.h"

namespace ks {
namespace {

using test::output_error;

Graph check_graph(const std::string &text) { return test::graph_of(text, frontend::SizeSet::Check); }

// The graph's body lines ("y[i: 4] = ..."), one per stage, without declarations.
std::string stages_of(const Graph &g) {
  std::string out;
  for (const Stage &s : g.stages) {
    Graph one = g;
    one.stages = {s};
    std::string text = print_graph(one);
    out += text.substr(text.rfind('\n', text.size() - 2) + 1);
  }
  return out;
}

Graph rewritten(const Graph &g, RewriteKind kind, const std::string &stage) {
  std::string reason;
  std::optional<Graph> out = try_rewrite(g, Rewrite{kind, stage, {}, {}, 0, {}}, &reason);
  EXPECT_TRUE(out.has_value()) << rewrite_name(kind) << " " << stage << ": " << reason << "\n" << print_graph(g);
  return out ? *out : g;
}

std::string refusal(const Graph &g, RewriteKind kind, const std::string &stage) {
  std::string reason;
  std::optional<Graph> out = try_rewrite(g, Rewrite{kind, stage, {}, {}, 0, {}}, &reason);
  EXPECT_FALSE(out.has_value()) << rewrite_name(kind) << " " << stage << " applied:\n" << print_graph(*out);
  return reason;
}

// The steps of a rule at a stage that the check tries: the rule itself, or for
// rfactor a split of each reduction variable by 2 (mostly ragged at odd sizes), by a
// third of it, and past its extent (one part).
std::vector<Rewrite> steps_to_try(RewriteKind kind, const Stage &s) {
  if (!rewrite_takes_arguments(kind)) return {Rewrite{kind, s.output, {}, {}, 0, {}}};
  std::vector<Rewrite> out;
  for (const IterVar &v : s.reduce_vars)
    for (int64_t factor : {int64_t{2}, std::max<int64_t>(1, v.extent / 3), v.extent + 1})
      out.push_back(Rewrite{kind, s.output, {}, v.name, factor, {s.output + "_rf", v.name + "_o", v.name + "_i"}});
  return out;
}

// Every rule at every stage where it applies: the same outputs (float64, up to
// reassociation), no internal error; and the greedy sequence as a whole. Counts the
// (rule, stage) pairs that applied, by rule.
void check_every_rule(const Graph &g, const std::string &what, std::map<RewriteKind, int> *applied) {
  for (const Stage &s : g.stages)
    for (RewriteKind kind : all_rewrite_kinds())
      for (const Rewrite &step : steps_to_try(kind, s)) {
        std::string reason;
        std::optional<Graph> out = try_rewrite(g, step, &reason);
        EXPECT_EQ(reason.find("internal error"), std::string::npos) << what << ": " << reason << "\n" << print_graph(g);
        if (!out) continue;
        ++(*applied)[kind];
        EXPECT_LT(output_error(g, *out, 7), 1e-9) << what << ": " << print_rewrite(step) << "\nbefore:\n"
                                                  << print_graph(g) << "after:\n"
                                                  << print_graph(*out);
      }
  Schedule plan;
  plan.rewrites = simplifying_rewrites(g);
  Graph all = rewritten_graph(g, plan);
  EXPECT_LT(output_error(g, all, 11), 1e-9) << what << ":\n" << print_schedule(plan) << print_graph(all);
  EXPECT_LE(graph_work(all), graph_work(g)) << what << ":\n" << print_schedule(plan);
}

// ---- each rule ----------------------------------------------------------------------

TEST(Rewrite, PushSumTurnsTheSumOfAGemmsOutputsIntoAGemv) {
  Graph g = check_graph(R"(kernel s(x: f32[M, K], w: f32[N, K], b: f32[N]) -> y: f32[M] where M = 8, N = 16, K = 12 {
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  y[m] = sum(n) (acc[m, n] + b[n]) / 2.0
})");
  Graph out = rewritten(g, RewriteKind::PushSum, "y");
  EXPECT_EQ(stages_of(out),
            "w_sum[k: 12] = sum(n: 16) w[n, k]\n"
            "y_part[m: 8] = sum(k: 12) x[m, k] * w_sum[k] * 0.5\n"
            "y_part1[] = sum(n: 16) b[n] * 0.5\n"
            "y[m: 8] = y_part[m] + y_part1[]\n");
  EXPECT_EQ(out.find_tensor("acc"), nullptr) << "the GEMM is gone";
  EXPECT_LT(graph_work(out), graph_work(g) / 4);
  EXPECT_LT(output_error(g, out, 1), 1e-12);
}

TEST(Rewrite, PushSumTakesAFullConvolutionsGlobalPoolToWindowSums) {
  // A transposed convolution over its full output: every input window is summed
  // whole whatever the kernel offset, so the pool needs x's sums and w's.
  Graph g = check_graph(R"(kernel p(x: f32[N, C, H, W], w: f32[C, O, K, K]) -> y: f32[N, O]
  where N = 2, C = 3, O = 4, H = 5, W = 6, K = 3 {
  t[n, o, oh: H + K - 1, ow: W + K - 1] = sum(c, kh, kw) (x[n, c, oh - kh, ow - kw] else 0.0) * w[c, o, kh, kw]
  y[n, o] = sum(a: H + K - 1, b: W + K - 1) t[n, o, a, b] / ((H + K - 1) * (W + K - 1))
})");
  Graph out = rewritten(g, RewriteKind::PushSum, "y");
  EXPECT_EQ(stages_of(out),
            "x_sum[n: 2, c: 3] = sum(a1: 5, b1: 6) x[n, c, a1, b1]\n"
            "w_sum[o: 4, c: 3] = sum(kh: 3, kw: 3) w[c, o, kh, kw]\n"
            "y[n: 2, o: 4] = sum(c: 3) x_sum[n, c] * w_sum[o, c] * 0.017857142857142856\n");
  EXPECT_LT(output_error(g, out, 2), 1e-12);
}

// A pool that sums one window dimension whole and only part of another (a mean
// split by rfactor: each part sums a slice of oh): x's sum covers ow's window, but
// its read along oh still leaves x where oh - kh does, so it keeps x's pad (it
// dropped it, and failed verification: the schedule fuzzer's finding).
TEST(Rewrite, PushSumKeepsThePadOfAWindowItDoesNotCover) {
  Graph g = check_graph(R"(kernel p(x: f32[C, H, W], w: f32[C, K, K]) -> y: f32[L]
  where C = 2, H = 29, W = 1, K = 2, L = 5 {
  t[oh: H + K - 1, ow: W + K - 1] = sum(c, kh, kw) (x[c, oh - kh, ow - kw] else 0.0) * w[c, kh, kw]
  y[lo] = sum(li: 6, b: W + K - 1) t[lo * 6 + li, b] / 60.0
})");
  Graph out = rewritten(g, RewriteKind::PushSum, "y");
  EXPECT_NE(stages_of(out).find("else 0.0"), std::string::npos) << stages_of(out);
  EXPECT_LT(output_error(g, out, 3), 1e-12);
}

TEST(Rewrite, PushSumRefusals) {
  Graph g = check_graph(R"(kernel r(x: f32[M, K], w: f32[N, K]) -> (y: f32[M], z: f32[M, N], q: f32[M])
  where M = 4, N = 6, K = 5 {
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  z[m, n] = acc[m, n] * 2.0
  y[m] = max(n) acc[m, n]
  q[m] = sum(n) acc[m, n] * acc[m, n]
})");
  EXPECT_EQ(refusal(g, RewriteKind::PushSum, "nope"), "no stage defines 'nope'");
  EXPECT_EQ(refusal(g, RewriteKind::PushSum, "z"), "z is not a float sum (it is elementwise)");
  EXPECT_EQ(refusal(g, RewriteKind::PushSum, "y"), "y is not a float sum (it is max)");
  EXPECT_NE(refusal(g, RewriteKind::PushSum, "q").find("q reads no sum reduction as a term of its sum"),
            std::string::npos)
      << "a square of a sum is no term of it";
  // The GEMM stays for its other reader: pushing the sum down only adds work, so the
  // rule applies but the rewrites that make the graph cheaper leave it out.
  Graph kept = check_graph(R"(kernel r(x: f32[M, K], w: f32[N, K]) -> (y: f32[M], z: f32[M, N])
  where M = 4, N = 6, K = 5 {
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  z[m, n] = acc[m, n] * 2.0
  y[m] = sum(n) acc[m, n] * x[m, 0]
})");
  Graph pushed = rewritten(kept, RewriteKind::PushSum, "y");
  EXPECT_GT(graph_work(pushed), graph_work(kept));
  EXPECT_TRUE(simplifying_rewrites(kept).empty());
}

TEST(Rewrite, DropUnitReduction) {
  Graph g = check_graph(R"(kernel u(x: f32[N, C]) -> (y: f32[N], z: f32[N, C], a: i32[N])
  where N = 3, C = 1 {
  m[n] = max(c) x[n, c]
  y[n] = sum(c) exp(x[n, c] - m[n])
  s[n] = sum(d: C) x[n, d]
  z[n, c] = x[n, c] - s[n]
  a[n] = argmax(c) x[n, c]
})");
  EXPECT_EQ(stages_of(rewritten(g, RewriteKind::DropUnitReduction, "m")).substr(0, 16), "m[n: 3] = x[n, 0");
  EXPECT_EQ(stages_of(rewritten(g, RewriteKind::DropUnitReduction, "a")).find("a[n: 3] = 0\n") != std::string::npos,
            true);
  EXPECT_EQ(refusal(g, RewriteKind::DropUnitReduction, "z"), "z is elementwise: it has no reduction");
  Graph wide = check_graph("kernel w(x: f32[N, C]) -> y: f32[N] where N = 3, C = 4 { y[n] = sum(c) x[n, c] }");
  EXPECT_EQ(refusal(wide, RewriteKind::DropUnitReduction, "y"), "y reduces over no variable of extent 1 (c: 4)");
}

TEST(Rewrite, FoldConstantsMakesALogSumExpOverOneValueThatValue) {
  Graph g = check_graph(R"(kernel l(x: f32[N, C]) -> y: f32[N] where N = 3, C = 1 {
  m[n] = max(c) x[n, c]
  t[n] = sum(c) exp(x[n, c] - m[n])
  y[n] = gelu(log(t[n]) + m[n])
})");
  Schedule plan;
  plan.rewrites = simplifying_rewrites(g);
  Graph out = rewritten_graph(g, plan);
  EXPECT_EQ(stages_of(out), "y[n: 3] = gelu(x[n, 0])\n") << print_schedule(plan);
  EXPECT_LT(output_error(g, out, 3), 1e-12);
}

TEST(Rewrite, FoldConstantsWritesAConstantOutputWithoutWhatCameBefore) {
  Graph g = check_graph(R"(kernel c(x: f32[N, C]) -> y: f32[N] where N = 5, C = 1 {
  mean[n] = sum(c) x[n, c] / C
  y[n] = sum(c) x[n, c] - mean[n]
})");
  Schedule plan;
  plan.rewrites = simplifying_rewrites(g);
  Graph out = rewritten_graph(g, plan);
  EXPECT_EQ(stages_of(out), "y[n: 5] = 0.0\n") << print_schedule(plan);
  EXPECT_EQ(out.find_tensor("mean"), nullptr);
  Graph plain = check_graph("kernel p(x: f32[N]) -> y: f32[N] where N = 3 { y[i] = exp(x[i]) }");
  EXPECT_EQ(refusal(plain, RewriteKind::FoldConstants, "y"),
            "y has nothing to fold: no constant, copy or identity of arithmetic in its body");
}

TEST(Rewrite, FoldAffineCombinesLikeTerms) {
  Graph g = check_graph(R"(kernel a(x: f32[N]) -> (y: f32[N], z: f32[N]) where N = 4 {
  y[i] = leaky_relu(x[i], 0.1) + leaky_relu(x[i], 0.1)
  z[i] = (x[i] * 2.0 + 3.0) * 4.0
})");
  EXPECT_EQ(stages_of(rewritten(g, RewriteKind::FoldAffine, "y")).substr(0, 40),
            "y[i: 4] = leaky_relu(x[i], 0.1) * 2.0\nz[");
  EXPECT_NE(stages_of(rewritten(g, RewriteKind::FoldAffine, "z")).find("z[i: 4] = x[i] * 8.0 + 12.0\n"),
            std::string::npos);
  Graph plain = check_graph("kernel p(x: f32[N]) -> y: f32[N] where N = 3 { y[i] = x[i] * 2.0 + 1.0 }");
  EXPECT_NE(refusal(plain, RewriteKind::FoldAffine, "y").find("nothing to fold"), std::string::npos);
}

TEST(Rewrite, RangedReductionMakesAMaskedSumARunningTotal) {
  for (const auto &[mask, form] : std::vector<std::pair<std::string, std::string>>{
           {"select(k <= i, x[b, k], 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"select(i >= k, x[b, k], 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"select(k > i, 0.0, x[b, k])", "select(k < i + 1, x[b, k], 0.0)"},
           {"x[b, k] * select(k < i + 1, 1.0, 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"select(k >= i, x[b, k], 0.0)", "select(i <= k, x[b, k], 0.0)"},
           {"select(k > i, x[b, k], 0.0)", "select(i + 1 <= k, x[b, k], 0.0)"},
           // The same computations spelled otherwise: the comparison as an affine one,
           // the mask a factor of a longer product (its canonical form).
           {"select(k - i <= 0, x[b, k], 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"select(0 <= i - k, x[b, k], 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"select(k + 1 <= i + 1, x[b, k], 0.0)", "select(k < i + 1, x[b, k], 0.0)"},
           {"2.0 * x[b, k] * select(k <= i, 1.0, 0.0)", "select(k < i + 1, x[b, k] * 2.0, 0.0)"},
           {"select(k <= i, x[b, k], 0.0) / 4.0", "select(k < i + 1, x[b, k] * 0.25, 0.0)"},
           {"-(select(i < k, 0.0, x[b, k]))", "select(k < i + 1, -x[b, k], 0.0)"}}) {
    Graph g =
        check_graph("kernel c(x: f32[B, N]) -> y: f32[B, N] where B = 2, N = 7 { y[b, i] = sum(k: N) " + mask + " }");
    Graph out = rewritten(g, RewriteKind::RangedReduction, "y");
    EXPECT_EQ(stages_of(out), "y[b: 2, i: 7] = sum(k: 7) " + form + "\n") << mask;
    EXPECT_LT(output_error(g, out, 4), 1e-12) << mask;
  }
  Graph exclusive = check_graph(
      "kernel c(x: f32[B, N]) -> y: f32[B, N] where B = 2, N = 7 { y[b, i] = sum(k: N) select(k < i, x[b, k], 0.0) }");
  EXPECT_EQ(stages_of(rewritten(exclusive, RewriteKind::RangedReduction, "y")),
            "y[b: 2, i: 7] = sum(k: 6) select(k < i, x[b, k], 0.0)\n")
      << "an exclusive total never reads the last position";
  Graph ranged = check_graph("kernel c(x: f32[N]) -> y: f32[N] where N = 7 { y[i] = sum(k: 0..i + 1) x[k] }");
  EXPECT_EQ(refusal(ranged, RewriteKind::RangedReduction, "y"), "y is already a ranged reduction");
  Graph offset =
      check_graph("kernel c(x: f32[N]) -> y: f32[N] where N = 7 { y[i] = sum(k: N) select(k <= i + 2, x[k], 0.0) }");
  EXPECT_NE(refusal(offset, RewriteKind::RangedReduction, "y").find("at an offset of 3"), std::string::npos);
}

TEST(Rewrite, MergeDuplicatesComputesAStageOnce) {
  Graph g = check_graph(R"(kernel d(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 5 {
  s1[n] = sum(d) x[n, d] * x[n, d]
  s2[i] = sum(j) x[i, j] * x[i, j]
  y[n, d] = x[n, d] / (s1[n] + s2[n])
})");
  Graph out = rewritten(g, RewriteKind::MergeDuplicates, "s2");
  EXPECT_EQ(out.find_tensor("s2"), nullptr);
  EXPECT_NE(stages_of(out).find("y[n: 3, d: 5] = x[n, d] / (s1[n] + s1[n])"), std::string::npos) << stages_of(out);
  EXPECT_EQ(refusal(g, RewriteKind::MergeDuplicates, "s1"), "no stage before s1 computes what it computes");
  // Spelled another way: the same canonical form.
  Graph spelled = check_graph(R"(kernel d(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 5 {
  s1[n] = sum(d) x[n, d] * x[n, d] / 2.0 - x[n, d]
  s2[i] = sum(j) -x[i, j] + 0.5 * (x[i, j] * x[i, j])
  s3[i] = sum(j) x[i, j] * x[i, j] / 2.0 + x[i, j]
  y[n, d] = x[n, d] / (s1[n] + s2[n] + s3[n])
})");
  Graph merged = rewritten(spelled, RewriteKind::MergeDuplicates, "s2");
  EXPECT_EQ(merged.find_tensor("s2"), nullptr);
  EXPECT_LT(output_error(spelled, merged, 5), 1e-12);
  EXPECT_EQ(refusal(spelled, RewriteKind::MergeDuplicates, "s3"), "no stage before s3 computes what it computes");
}

TEST(Rewrite, RecomputeGivesEachReaderItsOwnCopy) {
  Graph g = check_graph(R"(kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, D]) -> y: f32[T, D] where T = 6, D = 3 {
  s[i, j] = sum(d) q[i, d] * k[j, d]
  l[i] = logsumexp(j) s[i, j]
  y[i, e] = sum(j) exp(s[i, j] - l[i]) * v[j, e]
})");
  Graph out = rewritten(g, RewriteKind::Recompute, "s");
  EXPECT_EQ(stages_of(out),
            "s_l[i: 6, j: 6] = sum(d: 3) q[i, d] * k[j, d]\n"
            "s_y[i: 6, j: 6] = sum(d: 3) q[i, d] * k[j, d]\n"
            "l[i: 6] = logsumexp(j: 6) s_l[i, j]\n"
            "y[i: 6, e: 3] = sum(j: 6) exp(s_y[i, j] - l[i]) * v[j, e]\n");
  EXPECT_EQ(out.find_tensor("s"), nullptr);
  EXPECT_LT(output_error(g, out, 3), 1e-12);
  // Not listed for the search: more arithmetic for fewer bytes is a schedule's trade.
  EXPECT_FALSE(rewrite_listed(RewriteKind::Recompute));
  EXPECT_EQ(refusal(out, RewriteKind::Recompute, "s_l"), "only one stage reads s_l: there is nothing to compute twice");
  EXPECT_EQ(refusal(g, RewriteKind::Recompute, "y"), "y is an output: it is stored whatever its readers do");
  // A copy's name in use already: a fresh one.
  Graph taken = check_graph(R"(kernel a(x: f32[N]) -> (y: f32[N], t_y: f32[N]) where N = 4 {
  t[i] = x[i] * 2.0
  y[i] = t[i] + 1.0
  t_y[i] = t[i] * t[i]
})");
  Graph fresh = rewritten(taken, RewriteKind::Recompute, "t");
  EXPECT_NE(fresh.find_tensor("t_y1"), nullptr) << stages_of(fresh);
  EXPECT_LT(output_error(taken, fresh, 3), 1e-12);
}

TEST(Rewrite, RfactorSplitsAReductionIntoPartsAndCombinesThem) {
  Graph g = check_graph(R"(kernel m(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 3, N = 4, K = 10 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
})");
  auto split = [&](int64_t factor) {
    std::string reason;
    std::optional<Graph> out =
        try_rewrite(g, Rewrite{RewriteKind::Rfactor, "c", {}, "k", factor, {"c_rf", "ko", "ki"}}, &reason);
    EXPECT_TRUE(out) << reason;
    return out ? *out : g;
  };
  Graph even = split(5);
  EXPECT_EQ(stages_of(even),
            "c_rf[ko: 2, i: 3, j: 4] = sum(ki: 5) a[i, ko * 5 + ki] * b[ko * 5 + ki, j]\n"
            "c[i: 3, j: 4] = sum(ko: 2) c_rf[ko, i, j]\n");
  EXPECT_LT(output_error(g, even, 3), 1e-12);
  // A last part that is short reads in bounds and adds nothing past the end.
  Graph ragged = split(4);
  EXPECT_EQ(stages_of(ragged),
            "c_rf[ko: 3, i: 3, j: 4] = sum(ki: 4) select(ko * 4 + ki < 10, a[i, min(ko * 4 + ki, 9)] * b[min(ko * 4 "
            "+ ki, 9), j], 0.0)\n"
            "c[i: 3, j: 4] = sum(ko: 3) c_rf[ko, i, j]\n");
  EXPECT_LT(output_error(g, ragged, 3), 1e-12);
  // Past the extent: one part (a schedule's factor at the check sizes).
  EXPECT_NE(stages_of(split(64)).find("c_rf[ko: 1, i: 3, j: 4] = sum(ki: 10)"), std::string::npos);
  // A max repeats the last point rather than adding an identity.
  Graph h = check_graph(R"(kernel r(x: f32[N, D]) -> y: f32[N] where N = 3, D = 7 {
  y[n] = max(d) x[n, d]
})");
  std::string reason;
  std::optional<Graph> max = try_rewrite(h, Rewrite{RewriteKind::Rfactor, "y", {}, "d", 3, {"p", "q", "d"}}, &reason);
  ASSERT_TRUE(max) << reason;
  EXPECT_EQ(stages_of(*max), "p[q: 3, n: 3] = max(d: 3) x[n, min(q * 3 + d, 6)]\ny[n: 3] = max(q: 3) p[q, n]\n");
  EXPECT_EQ(output_error(h, *max, 5), 0.0);
}

TEST(Rewrite, RfactorRefusals) {
  Graph g =
      check_graph(R"(kernel m(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N], d: i64[M]) where M = 3, N = 4, K = 10 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
  d[i] = argmax(k) a[i, k]
  e[i, j] = c[i, j] * 2.0
})");
  auto refused = [&](const std::string &stage, const std::string &loop, int64_t factor,
                     std::vector<std::string> names = {"c_rf", "ko", "ki"}) {
    std::string reason;
    std::optional<Graph> out = try_rewrite(g, Rewrite{RewriteKind::Rfactor, stage, {}, loop, factor, names}, &reason);
    EXPECT_FALSE(out) << stage << "." << loop << " applied";
    return reason;
  };
  EXPECT_EQ(refused("c", "i", 2), "i is a spatial variable of c, not a reduction (its reduction: k)");
  EXPECT_EQ(refused("c", "q", 2), "c has no reduction variable q (its reduction: k)");
  EXPECT_EQ(refused("e", "i", 2), "i is a spatial variable of e, not a reduction (e has none)");
  EXPECT_EQ(refused("d", "k", 2),
            "argmax cannot combine partial results (they would need their values as well as their indices)");
  EXPECT_EQ(refused("c", "k", 0), "the factor must be at least 1, not 0");
  EXPECT_EQ(refused("c", "k", 2, {"a", "ko", "ki"}), "the name 'a' is taken");
  EXPECT_EQ(refused("c", "k", 2, {"c_rf", "j", "ki"}), "the name 'j' is taken");
  EXPECT_EQ(refused("c", "k", 2, {"c_rf", "ko", "ko"}), "the name 'ko' is given twice");
  EXPECT_EQ(refused("z", "k", 2), "no stage defines 'z'");
  // In a schedule: a factor below 1 is the parser's error at the factor; the rest the
  // pipeline's, at the step.
  EXPECT_NE(test::user_error([] {
              parse_schedule(test::source("rewrite rfactor c.k 0 -> c_rf ko ki\n", "r.sched"));
            }).find("r.sched:1:21: error: a factor must be at least 1"),
            std::string::npos);
  Schedule s = parse_schedule(test::source("rewrite rfactor c.i 4 -> c_rf ko ki\n", "r.sched"));
  std::string error = test::user_error([&] { run_pipeline(g, s); });
  EXPECT_NE(error.find("r.sched:1:1: error: rfactor c.i 4 -> c_rf ko ki: i is a spatial variable of c"),
            std::string::npos)
      << error;
}

TEST(Rewrite, OnlineSoftmaxTakesTheTwoStatisticsInOnePass) {
  // softmax through its exponentials' temporary, log-softmax and a loss read directly.
  const std::pair<std::string, std::string> cases[] = {
      {"  e[n, d] = exp(x[n, d] - row_max[n])\n  total[n] = sum(d) e[n, d]\n  y[n, d] = e[n, d] / total[n]\n",
       "y[n: 4, d: 9] = exp(x[n, d] - row_max_lse[n])\n"},
      {"  total[n] = sum(d) exp(x[n, d] - row_max[n])\n  y[n, d] = x[n, d] - row_max[n] - log(total[n])\n",
       "y[n: 4, d: 9] = x[n, d] - row_max_lse[n]\n"}};
  for (const auto &[rows, output] : cases) {
    Graph g = check_graph(
        "kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 4, D = 9 {\n  row_max[n] = max(d) x[n, d]\n" + rows + "}");
    Graph out = rewritten(g, RewriteKind::OnlineSoftmax, "total");
    EXPECT_EQ(stages_of(out), "row_max_lse[n: 4] = logsumexp(d: 9) x[n, d]\n" + output);
    EXPECT_LT(output_error(g, out, 2), 1e-12);
  }
}

// `logsumexp(d)` in the spec language: log(sum(exp(x))) as the interpreter computes it
// in float64, and its printed Graph IR parses back.
TEST(Rewrite, LogSumExpIsAReductionOfTheSpecLanguage) {
  Graph g = check_graph(
      "kernel l(x: f32[N, D] in -50.0..50.0) -> y: f32[N] where N = 3, D = 40 {\n"
      "  y[n] = logsumexp(d) x[n, d] * 2.0\n}");
  EXPECT_EQ(stages_of(g), "y[n: 3] = logsumexp(d: 40) x[n, d] * 2.0\n");
  TensorMap inputs;
  inputs["x"] = to_tensor_data(random_input(*g.find_tensor("x"), 4));
  const std::vector<double> y = interpret(g, inputs).at("y").values;
  for (int n = 0; n < 3; ++n) {
    double total = 0;
    for (int d = 0; d < 40; ++d) total += std::exp(2.0 * inputs.at("x").values[static_cast<size_t>(n * 40 + d)]);
    EXPECT_NEAR(y[static_cast<size_t>(n)], std::log(total), 1e-9 * std::fabs(std::log(total)));
  }
  EXPECT_EQ(print_graph(parse_graph(test::source(print_graph(g), "l.graph"))), print_graph(g));
}

TEST(Rewrite, OnlineSoftmaxRefusesWhatIsNotASoftmax) {
  auto graph = [](const std::string &outputs, const std::string &rows) {
    return check_graph("kernel s(x: f32[N, D]) -> " + outputs + " where N = 4, D = 9 {\n" + rows + "}");
  };
  const std::string stats = "  row_max[n] = max(d) x[n, d]\n  total[n] = sum(d) exp(x[n, d] - row_max[n])\n";
  EXPECT_EQ(refusal(graph("y: f32[N, D]", "  total[n] = sum(d) x[n, d]\n  y[n, d] = x[n, d] / total[n]\n"),
                    RewriteKind::OnlineSoftmax, "total"),
            "total is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X (its body is not exp of a value minus a "
            "maximum)");
  EXPECT_EQ(refusal(graph("y: f32[N, D]",
                          "  row_max[n] = max(d) x[n, d] * 2.0\n  total[n] = sum(d) exp(x[n, d] - "
                          "row_max[n])\n  y[n, d] = exp(x[n, d] - row_max[n]) / total[n]\n"),
                    RewriteKind::OnlineSoftmax, "total"),
            "total is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X (row_max is not the maximum of the same "
            "values over the same points)");
  EXPECT_EQ(refusal(graph("y: f32[N, D]", stats + "  y[n, d] = exp(x[n, d] - row_max[n]) + total[n]\n"),
                    RewriteKind::OnlineSoftmax, "total"),
            "y reads row_max or total other than through their logsumexp (softmax, log-softmax, logsumexp)");
  EXPECT_EQ(
      refusal(graph("(y: f32[N, D], row_max: f32[N])", stats + "  y[n, d] = x[n, d] - row_max[n] - log(total[n])\n"),
              RewriteKind::OnlineSoftmax, "total"),
      "row_max is an output: its value would change");
  EXPECT_EQ(refusal(graph("y: f32[N, D]", stats + "  y[n, d] = x[n, d] - row_max[n] - log(total[n])\n"),
                    RewriteKind::OnlineSoftmax, "row_max"),
            "row_max is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X (row_max is not a sum)");
}

// Large and tiny values: the online logsumexp neither overflows nor loses the rows
// whose values are all far below zero (exp underflows to 0 in the two-pass sum of a
// row shifted by anything but its maximum).
TEST(Rewrite, OnlineSoftmaxOfLargeAndTinyValuesHasNoOverflowOrNaN) {
  for (const char *range : {"-20000.0..20000.0", "-1e-30..1e-30", "-90000.0..-80000.0"}) {
    Graph g = check_graph(std::string("kernel s(x: f32[N, D] in ") + range +
                          ") -> y: f32[N, D] where N = 3, D = 300 {\n  row_max[n] = max(d) x[n, d]\n"
                          "  total[n] = sum(d) exp(x[n, d] - row_max[n])\n"
                          "  y[n, d] = x[n, d] - row_max[n] - log(total[n])\n}");
    Graph out = rewritten(g, RewriteKind::OnlineSoftmax, "total");
    TensorMap inputs;
    inputs["x"] = to_tensor_data(random_input(*g.find_tensor("x"), 9));
    const std::vector<double> two_pass = interpret(g, inputs).at("y").values,
                              online = interpret(out, inputs).at("y").values;
    for (size_t i = 0; i < online.size(); ++i) {
      ASSERT_TRUE(std::isfinite(online[i])) << range << ": y[" << i << "] = " << online[i];
      EXPECT_NEAR(online[i], two_pass[i], 1e-9 * std::max(1.0, std::fabs(two_pass[i]))) << range;
    }
  }
}

// Attention's three passes (scores, their softmax, the weighted sum) as one
// softmax_sum whose score's sum over the head runs inside each step; from the softmax's
// pair of statistics, from their logsumexp, and with a mask (the mask goes into the
// score; the scores stay a stage, their sum not a plain read there).
const char *kAttention =
    "kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, E]) -> y: f32[T, E] where T = 5, D = 3, E = 4 {\n"
    "  s[i, j] = sum(d) q[i, d] * k[j, d] * 0.5\n";

TEST(Rewrite, OnlineAttentionComputesAttentionInOnePass) {
  const std::string pair = "  m[i] = max(j) s[i, j]\n  x[i, j] = exp(s[i, j] - m[i])\n  t[i] = sum(j) x[i, j]\n";
  const std::string fused =
      "y[i: 5, e: 4] = softmax_sum(j: 5) softmax_pair(sum(d: 3) q[i, d] * k[j, d] * 0.5, v[j, e])\n";
  for (const std::string &rows : {pair + "  y[i, e] = sum(j) x[i, j] / t[i] * v[j, e]\n",
                                  pair + "  p[i, j] = x[i, j] / t[i]\n  y[i, e] = sum(j) v[j, e] * p[i, j]\n",
                                  std::string("  l[i] = logsumexp(j) s[i, j]\n  y[i, e] = sum(j) exp(s[i, j] - l[i]) "
                                              "* v[j, e]\n")}) {
    Graph g = check_graph(kAttention + rows + "}");
    Graph out = rewritten(g, RewriteKind::OnlineAttention, "y");
    EXPECT_EQ(stages_of(out), fused) << rows;
    EXPECT_LT(output_error(g, out, 3), 1e-12) << rows;
  }
  Graph masked = check_graph(std::string(kAttention) +
                             "  z[i, j] = select(j <= i, s[i, j], -inf)\n  l[i] = logsumexp(j) z[i, j]\n"
                             "  y[i, e] = sum(j) exp(z[i, j] - l[i]) * v[j, e]\n}");
  Graph out = rewritten(masked, RewriteKind::OnlineAttention, "y");
  EXPECT_EQ(stages_of(out),
            "s[i: 5, j: 5] = sum(d: 3) q[i, d] * k[j, d] * 0.5\n"
            "y[i: 5, e: 4] = softmax_sum(j: 5) softmax_pair(select(j <= i, s[i, j], -inf), v[j, e])\n");
  EXPECT_LT(output_error(masked, out, 4), 1e-12);
}

TEST(Rewrite, OnlineAttentionRefusesWhatIsNotASoftmaxWeightedSum) {
  auto graph = [](const std::string &outputs, const std::string &rows) {
    return check_graph(std::string(kAttention).replace(std::string(kAttention).find("y: f32[T, E]"), 12, outputs) +
                       "  l[i] = logsumexp(j) s[i, j]\n" + rows + "}");
  };
  const std::string y = "y: f32[T, E]";
  EXPECT_EQ(refusal(graph(y, "  y[i, e] = sum(j) s[i, j] * v[j, e] + l[i]\n"), RewriteKind::OnlineAttention, "y"),
            "y reads l other than as a factor exp(X - l)");
  EXPECT_EQ(refusal(graph(y, "  y[i, e] = sum(j) exp(2.0 * (s[i, j] - l[i])) * v[j, e]\n"),
                    RewriteKind::OnlineAttention, "y"),
            "y reads l other than as a factor exp(X - l)");
  EXPECT_EQ(refusal(graph(y, "  y[i, e] = sum(j) exp(s[i, j] - l[j]) * v[j, e]\n"), RewriteKind::OnlineAttention, "y"),
            "y reads l at more than one row, or at a row that depends on its reduction");
  EXPECT_EQ(refusal(graph("(y: f32[T, E], l: f32[T])", "  y[i, e] = sum(j) exp(s[i, j] - l[i]) * v[j, e]\n"),
                    RewriteKind::OnlineAttention, "y"),
            "l is an output: it would no longer be computed");
  EXPECT_EQ(refusal(graph(y, "  y[i, e] = sum(j) v[j, e] * s[i, j]\n"), RewriteKind::OnlineAttention, "y"),
            "y is not a softmax-weighted sum: sum(j) exp(X - L) * W with L = logsumexp(j) X (it reads no "
            "logsumexp, nor a softmax's maximum and sum)");
  EXPECT_EQ(
      refusal(graph(y, "  y[i, e] = max(j) exp(s[i, j] - l[i]) * v[j, e]\n"), RewriteKind::OnlineAttention, "y"),
      "y is not a softmax-weighted sum: sum(j) exp(X - L) * W with L = logsumexp(j) X (y is not a sum of floats)");
  EXPECT_EQ(refusal(graph(y, "  y[i, e] = sum(j) exp(s[i, j] - l[i]) * v[j, e]\n"), RewriteKind::OnlineAttention, "w"),
            "no stage defines 'w'");
  // A softmax_sum is not for the rules that take a reduction apart.
  Graph fused =
      rewritten(graph(y, "  y[i, e] = sum(j) exp(s[i, j] - l[i]) * v[j, e]\n"), RewriteKind::OnlineAttention, "y");
  EXPECT_NE(refusal(fused, RewriteKind::DropUnitReduction, "y").find("is a softmax_sum"), std::string::npos);
  std::string reason;
  EXPECT_FALSE(try_rewrite(fused, Rewrite{RewriteKind::Rfactor, "y", {}, "j", 2, {"y_rf", "jo", "ji"}}, &reason));
  EXPECT_NE(reason.find("is a softmax_sum"), std::string::npos) << reason;
  // A spec cannot write its body.
  EXPECT_NE(test::user_error([] {
              test::graph_of("kernel p(x: f32[N]) -> y: f32[N] where N = 4 {\n  y[i] = softmax_pair(x[i], x[i])\n}");
            }).find("softmax_pair is the body of a softmax_sum"),
            std::string::npos);
}

// Scores whose exponentials overflow f32, underflow it, or are tiny: the interpreter's
// softmax_sum (two passes in f64) as the three stages compute it.
TEST(Rewrite, OnlineAttentionOfLargeAndTinyScoresHasNoOverflowOrNaN) {
  for (const char *range : {"-100.0..100.0", "-1e-30..1e-30", "-90.0..-80.0"}) {
    Graph g = check_graph(std::string("kernel a(q: f32[T, D] in ") + range + ", k: f32[T, D] in " + range +
                          ", v: f32[T, E]) -> y: f32[T, E] where T = 40, D = 3, E = 4 {\n"
                          "  s[i, j] = sum(d) q[i, d] * k[j, d]\n  m[i] = max(j) s[i, j]\n"
                          "  x[i, j] = exp(s[i, j] - m[i])\n  t[i] = sum(j) x[i, j]\n"
                          "  y[i, e] = sum(j) x[i, j] / t[i] * v[j, e]\n}");
    Graph out = rewritten(g, RewriteKind::OnlineAttention, "y");
    TensorMap inputs;
    for (const TensorDecl &t : g.tensors)
      if (t.role == TensorRole::Input) inputs[t.name] = to_tensor_data(random_input(t, 5));
    // (copies: a reference into interpret's returned map would outlive it)
    const std::vector<double> passes = interpret(g, inputs).at("y").values, one = interpret(out, inputs).at("y").values;
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_TRUE(std::isfinite(one[i])) << range << ": y[" << i << "] = " << one[i];
      EXPECT_NEAR(one[i], passes[i], 1e-9 * std::max(1.0, std::fabs(passes[i]))) << range;
    }
  }
}

// ---- spellings: the canonical form and the rules that match on it --------------------

// A random float expression over a[i], b[i] and c[i]: sums, differences, products,
// quotients (by a constant or a load), negations, exp, log of exp, min, max, select.
Expr random_expression(std::mt19937 &rng, int depth) {
  const Expr i = Var::make(DType::I32, "i");
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 1 : 11);
  const char *buffers[] = {"a", "b", "c"};
  switch (pick(rng)) {
    case 0: return Load::make(DType::F32, buffers[rng() % 3], {i});
    case 1: return make_f32(static_cast<double>(static_cast<int>(rng() % 9) - 4) / 2 + 0.25);
    case 2: return random_expression(rng, depth - 1) + random_expression(rng, depth - 1);
    case 3: return random_expression(rng, depth - 1) - random_expression(rng, depth - 1);
    case 4: return random_expression(rng, depth - 1) * random_expression(rng, depth - 1);
    case 5: return random_expression(rng, depth - 1) / make_f32(rng() % 2 ? 4.0 : 3.0);
    case 6: return random_expression(rng, depth - 1) / Load::make(DType::F32, buffers[rng() % 3], {i});
    case 7: return Unary::make(UnaryOp::Neg, random_expression(rng, depth - 1));
    case 8: return Call::make(Builtin::Exp, {random_expression(rng, depth - 2)});
    case 9: return Call::make(Builtin::Log, {Call::make(Builtin::Exp, {random_expression(rng, depth - 1)})});
    case 10:
      return Binary::make(rng() % 2 ? BinaryOp::Min : BinaryOp::Max, random_expression(rng, depth - 1),
                          random_expression(rng, depth - 1));
    default:
      return Select::make(Binary::make(BinaryOp::Lt, random_expression(rng, depth - 1), make_f32(0.5)),
                          random_expression(rng, depth - 1), random_expression(rng, depth - 1));
  }
}

// Each law holds (canonical.h): an expression and its canonical form have one value, by
// the float64 evaluation of both at random points, on a thousand random expressions.
TEST(Canonical, TheFormComputesWhatTheExpressionComputes) {
  std::mt19937 rng(47);
  std::uniform_real_distribution<double> value(0.5, 1.5);
  int compared = 0;
  for (int n = 0; n < 1000; ++n) {
    const Expr e = random_expression(rng, 4), c = canonical(e);
    std::map<std::string, double> drawn;
    auto load = [&](const Load &l, const std::string &key) {
      auto it = drawn.find(l.buffer + key);
      return it != drawn.end() ? it->second : (drawn[l.buffer + key] = (rng() % 2 ? 1 : -1) * value(rng));
    };
    auto var = [](const Var &) { return 0.0; };
    std::optional<double> x = value_at(e, load, var), y = value_at(c, load, var);
    if (!x || !y || !std::isfinite(*x) || std::fabs(*x) > 1e12) continue;
    ++compared;
    EXPECT_NEAR(*y, *x, 1e-9 * std::max(1.0, std::fabs(*x))) << print_expr(e) << "\n  canonical: " << print_expr(c);
  }
  EXPECT_GT(compared, 800);
}

// Spellings of one computation have one canonical form; others do not.
TEST(Canonical, SpellingsOfOneComputationConverge) {
  Graph g = check_graph(
      "kernel c(x: f32[N], m: f32[N]) -> y: f32[N] where N = 4 {\n"
      "  a0[i] = exp(x[i] / 2.0 - m[i] / 2.0)\n  a1[i] = exp((x[i] - m[i]) * 0.5)\n"
      "  a2[i] = exp(-(m[i] * 0.5) + 0.5 * x[i])\n  a3[i] = exp(x[i] * 0.5) / exp(m[i] * 0.5)\n"
      "  a4[i] = exp(0.5 * (x[i] - m[i]))\n  a5[i] = exp(x[i] / sqrt(4.0) - m[i] / sqrt(4.0))\n"
      "  a6[i] = exp(log(exp(x[i] * 0.5)) - 0.5 * m[i])\n  a7[i] = exp(x[i] * 0.25 + x[i] * 0.25 - m[i] * 0.5)\n"
      "  b0[i] = exp(x[i] * 0.5 - m[i])\n  b1[i] = exp(x[i] - m[i] * 0.5)\n  b2[i] = exp(m[i] * 0.5 - x[i] * 0.5)\n"
      "  y[i] = a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + b0[i] + b1[i] + b2[i]\n}");
  auto body = [&](const std::string &name) { return g.stages[*stage_index(g, name)].body; };
  for (const char *name : {"a1", "a2", "a3", "a4", "a5", "a6", "a7"})
    EXPECT_TRUE(same_canonical(body("a0"), body(name)))
        << name << ": " << print_expr(canonical(body(name))) << " against " << print_expr(canonical(body("a0")));
  for (const char *name : {"b0", "b1", "b2"}) EXPECT_FALSE(same_canonical(body("a0"), body(name))) << name;
  EXPECT_EQ(print_expr(canonical(body("a3"))), print_expr(canonical(body("a0"))));
}

// online_softmax on spellings of a softmax, log-softmax and tempered softmax (a positive
// scale of the values inside or outside the maximum): it fires on every one, and the
// interpreter agrees before and after.
TEST(Spellings, OnlineSoftmaxFiresOnEverySpelling) {
  const std::string head = "kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 4, D = 9 {\n  m[n] = max(d) x[n, d]\n";
  const std::vector<std::string> spellings = {
      head + "  t[n] = sum(d) exp(x[n, d] - m[n])\n  y[n, d] = exp(x[n, d] - m[n]) / t[n]\n",
      head + "  e[n, d] = exp(-m[n] + x[n, d])\n  t[n] = sum(d) e[n, d]\n  y[n, d] = e[n, d] / t[n]\n",
      head + "  t[n] = sum(d) exp(x[n, d]) / exp(m[n])\n  y[n, d] = x[n, d] - m[n] - log(t[n])\n",
      head + "  t[n] = sum(d) exp(x[n, d] / 2.0 - m[n] / 2.0)\n  y[n, d] = exp(x[n, d] / 2.0 - m[n] / 2.0) / t[n]\n",
      head + "  e[n, d] = exp((x[n, d] - m[n]) * 0.5)\n  t[n] = sum(d) e[n, d]\n  y[n, d] = e[n, d] / t[n]\n",
      head +
          "  t[n] = sum(d) exp(x[n, d] * 3.0 - 3.0 * m[n])\n"
          "  y[n, d] = x[n, d] * 3.0 - m[n] * 3.0 - log(t[n])\n",
      head +
          "  e[n, d] = exp(x[n, d] / sqrt(D) - m[n] / sqrt(D))\n  t[n] = sum(d) e[n, d]\n"
          "  y[n, d] = e[n, d] / t[n]\n",
      "kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 4, D = 9 {\n  m[n] = max(d) x[n, d] * 0.5\n"
      "  t[n] = sum(d) exp(x[n, d] * 0.5 - m[n])\n  y[n, d] = exp(0.5 * x[n, d] - m[n]) / t[n]\n",
  };
  for (const std::string &text : spellings) {
    Graph g = check_graph(text + "}");
    Graph out = rewritten(g, RewriteKind::OnlineSoftmax, "t");
    bool online = false;
    for (const Stage &s : out.stages) online = online || s.reduce == ReduceOp::LogSumExp;
    EXPECT_TRUE(online) << text;
    EXPECT_LT(output_error(g, out, 7), 1e-12) << text << print_graph(out);
  }
  // A scale of unknown sign does not commute with the maximum: refused, the graph as it was.
  EXPECT_EQ(refusal(check_graph("kernel s(x: f32[N, D], w: f32[N]) -> y: f32[N, D] where N = 4, D = 9 {\n"
                                "  m[n] = max(d) x[n, d]\n  t[n] = sum(d) exp(x[n, d] * w[n] - m[n] * w[n])\n"
                                "  y[n, d] = exp(x[n, d] * w[n] - m[n] * w[n]) / t[n]\n}"),
                    RewriteKind::OnlineSoftmax, "t"),
            "t is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X (its body is not exp of a value minus a "
            "maximum)");
  // Nor does a negative one (max(k) -X is not -max(k) X).
  EXPECT_EQ(
      refusal(check_graph(head + "  t[n] = sum(d) exp(m[n] - x[n, d])\n  y[n, d] = exp(m[n] - x[n, d]) / t[n]\n}"),
              RewriteKind::OnlineSoftmax, "t"),
      "t is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X (its body is not exp of a value minus a "
      "maximum)");
}

// online_attention on spellings of scaled dot-product attention (the scale in the
// scores, after the maximum, as a division or a product, the weights normalised before
// or after the product with v, a logsumexp): it fires on every one with the scores'
// sum inside the step, and the interpreter agrees before and after.
TEST(Spellings, OnlineAttentionFiresOnEverySpelling) {
  const std::string head =
      "kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, E]) -> y: f32[T, E] where T = 6, D = 4, "
      "E = 3 {\n  s[i, j] = sum(d) q[i, d] * k[j, d]\n";
  const std::string max = "  m[i] = max(j) s[i, j]\n";
  const std::vector<std::string> spellings = {
      "kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, E]) -> y: f32[T, E] where T = 6, D = 4, E = 3 {\n"
      "  s[i, j] = sum(d) q[i, d] * k[j, d] / sqrt(D)\n  m[i] = max(j) s[i, j]\n  e[i, j] = exp(s[i, j] - m[i])\n"
      "  t[i] = sum(j) e[i, j]\n  y[i, c] = sum(j) e[i, j] / t[i] * v[j, c]\n",
      head + max +
          "  e[i, j] = exp(s[i, j] / sqrt(D) - m[i] / sqrt(D))\n  t[i] = sum(j) e[i, j]\n"
          "  y[i, c] = sum(j) e[i, j] * v[j, c] / t[i]\n",
      head + max +
          "  e[i, j] = exp(s[i, j] * 2.0 - m[i] * 2.0)\n  t[i] = sum(j) e[i, j]\n"
          "  y[i, c] = sum(j) e[i, j] * v[j, c] / t[i]\n",
      head + max +
          "  e[i, j] = exp((s[i, j] - m[i]) / sqrt(D))\n  t[i] = sum(j) e[i, j]\n"
          "  p[i, j] = e[i, j] / t[i]\n  y[i, c] = sum(j) p[i, j] * v[j, c]\n",
      head + max +
          "  e[i, j] = exp(0.5 * (s[i, j] - m[i]))\n  t[i] = sum(j) e[i, j]\n"
          "  y[i, c] = sum(j) v[j, c] * e[i, j] / t[i]\n",
      head + max +
          "  e[i, j] = exp(-(m[i] * 0.5) + s[i, j] * 0.5)\n  t[i] = sum(j) e[i, j]\n"
          "  y[i, c] = sum(j) e[i, j] / t[i] * v[j, c]\n",
      head + "  l[i] = logsumexp(j) s[i, j] * 0.5\n  y[i, c] = sum(j) exp(s[i, j] * 0.5 - l[i]) * v[j, c]\n",
      head +
          "  z[i, j] = s[i, j] * 0.5\n  m[i] = max(j) z[i, j]\n  e[i, j] = exp(z[i, j] - m[i])\n"
          "  t[i] = sum(j) e[i, j]\n  y[i, c] = sum(j) e[i, j] / t[i] * v[j, c]\n",
  };
  for (const std::string &text : spellings) {
    Graph g = check_graph(text + "}");
    Graph out = rewritten(g, RewriteKind::OnlineAttention, "y");
    const Stage &y = out.stages[*stage_index(out, "y")];
    EXPECT_EQ(y.reduce, ReduceOp::SoftmaxSum) << text;
    EXPECT_EQ(y.score_vars, 1u) << text << print_graph(out);  // the scores' sum inside the step
    EXPECT_EQ(out.stages.size(), 1u) << text << print_graph(out);
    EXPECT_LT(output_error(g, out, 11), 1e-12) << text << print_graph(out);
  }
}

// fold_affine takes the canonical form where it has fewer operations: spellings that
// hide a cancellation, two exponentials or a log of an exp fold; the interpreter agrees.
TEST(Spellings, FoldAffineTakesTheCanonicalForm) {
  Graph g = check_graph(R"(kernel f(x: f32[N], m: f32[N]) -> (a: f32[N], b: f32[N], c: f32[N], d: f32[N]) where N = 5 {
  a[i] = exp(x[i]) / exp(m[i])
  b[i] = log(exp(x[i] * 0.5)) * 2.0
  c[i] = x[i] * 3.0 - (x[i] + x[i])
  d[i] = exp(x[i] * 0.5) * exp(x[i] * 0.5) - m[i]
})");
  for (const auto &[stage, form] :
       std::vector<std::pair<std::string, std::string>>{{"a", "a[i: 5] = exp(x[i] - m[i])\n"},
                                                        {"b", "b[i: 5] = x[i]\n"},
                                                        {"c", "c[i: 5] = x[i]\n"},
                                                        {"d", "d[i: 5] = exp(x[i]) - m[i]\n"}}) {
    Graph out = rewritten(g, RewriteKind::FoldAffine, stage);
    EXPECT_NE(stages_of(out).find(form), std::string::npos) << stage << ":\n" << stages_of(out);
    EXPECT_LT(output_error(g, out, 3), 1e-12) << stage;
  }
}

// canonicalize leaves a body whose form grows past its limit as written, and says so:
// a polynomial in Horner's form opens into monomials, quadratic in its degree.
TEST(Canonical, AFormPastItsLimitIsLeftAsWritten) {
  std::string horner = "1.0";
  for (int n = 0; n < 24; ++n) horner = "(" + horner + ") * x[i] + 0.5";
  Graph g = check_graph("kernel h(x: f32[N]) -> (y: f32[N], z: f32[N]) where N = 3 {\n  y[i] = " + horner +
                        "\n  z[i] = x[i] * 2.0 - x[i]\n}");
  std::vector<std::string> notes;
  Graph out = canonical_graph(g, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("y's canonical form has "), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("left as written"), std::string::npos) << notes[0];
  EXPECT_EQ(print_expr(out.stages[0].body), print_expr(g.stages[0].body));
  EXPECT_EQ(print_expr(out.stages[1].body), "x[i]");
  EXPECT_GT(operation_count(canonical(g.stages[0].body)),
            kCanonicalGrowth * operation_count(g.stages[0].body) + kCanonicalSlack);
}

// The rewrites that fuse without cutting work, with the temporaries they keep out of
// memory: online_attention on attention (s, e and t go), online_softmax on softmax.
TEST(Rewrite, FusingRewritesSayWhatTheySave) {
  for (const auto &[example, rule, stage] : std::vector<std::tuple<std::string, RewriteKind, std::string>>{
           {"attention", RewriteKind::OnlineAttention, "y"}, {"softmax", RewriteKind::OnlineSoftmax, "total"}}) {
    Graph g = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + example + ".ks"),
                                  frontend::SizeSet::Check, {});
    std::vector<Fusion> fusions = fusing_rewrites(g);
    bool found = false;
    for (const Fusion &f : fusions) {
      EXPECT_LT(f.bytes_after, f.bytes_before) << example << ": " << print_rewrite(f.step);
      EXPECT_EQ(f.bytes_before, temporary_bytes(g));
      found = found || (f.step.kind == rule && f.step.stage == stage);
    }
    EXPECT_TRUE(found) << example << ": " << fusions.size() << " fusing rewrites";
    EXPECT_TRUE(simplifying_rewrites(g).empty()) << example;  // they cut no work
  }
}

// ---- the schedule text and the pipeline ------------------------------------------------

TEST(Rewrite, StridePhasesGathersOnlyTheOffsetsOnTheStrideGrid) {
  // A 1-D transposed convolution, stride 2, padding 1, kernel 3: at each output two
  // of the three offsets (or one) land on the stride grid.
  Graph g = check_graph(R"(kernel t(x: f32[C, H], w: f32[C, K]) -> y: f32[(H - 1) * S - 2 * P + K]
  where C = 2, H = 5, K = 3, S = 2, P = 1 {
  y[oh] = sum(c, kh) select((oh + P - kh) % S == 0, x[c, (oh + P - kh) / S] else 0.0, 0.0) * w[c, kh]
})");
  Graph out = rewritten(g, RewriteKind::StridePhases, "y");
  EXPECT_EQ(stages_of(out),
            "y[oh: 9] = sum(c: 2, kh_t: 2) select((oh + 1) % 2 + kh_t * 2 < 3, x[c, (oh + 1) / 2 - kh_t] else 0.0, "
            "0.0) * (w[c, (oh + 1) % 2 + kh_t * 2] else 0.0)\n");
  EXPECT_LT(output_error(g, out, 3), 1e-12);
  EXPECT_LT(graph_work(out), graph_work(g));
  // Where the stride divides the kernel every offset on the grid is inside it: no test, no clamp.
  Graph even = check_graph(R"(kernel t(x: f32[C, H], w: f32[C, K]) -> y: f32[(H - 1) * S - 2 * P + K]
  where C = 2, H = 5, K = 4, S = 2, P = 1 {
  y[oh] = sum(c, kh) select((oh + P - kh) % S == 0, x[c, (oh + P - kh) / S] else 0.0, 0.0) * w[c, kh]
})");
  Graph unmasked = rewritten(even, RewriteKind::StridePhases, "y");
  EXPECT_EQ(stages_of(unmasked),
            "y[oh: 10] = sum(c: 2, kh_t: 2) (x[c, (oh + 1) / 2 - kh_t] else 0.0) * w[c, (oh + 1) % 2 + kh_t * 2]\n");
  EXPECT_LT(output_error(even, unmasked, 3), 1e-12);
  // Stride 3 and padding past the stride, the test written with its sides swapped,
  // in two dimensions at once: each split.
  Graph h =
      check_graph(R"(kernel t(x: f32[H, H], w: f32[K, K]) -> y: f32[(H - 1) * S - 2 * P + K, (H - 1) * S - 2 * P + K]
  where H = 4, K = 5, S = 3, P = 4 {
  y[oh, ow] = sum(kh, kw) select((kh - oh - P) % S == 0 && (ow + P - kw) % S == 0,
                                 x[(oh + P - kh) / S, (ow + P - kw) / S] else 0.0, 0.0) * w[kh, kw]
})");
  Graph both = rewritten(h, RewriteKind::StridePhases, "y");
  EXPECT_EQ(stages_of(both),
            "y[oh: 6, ow: 6] = sum(kh_t: 2, kw_t: 2) select((oh + 1) % 3 + kh_t * 3 < 5 && (ow + 1) % 3 + kw_t * 3 < "
            "5, x[(oh + 1) / 3 - kh_t + 1, (ow + 1) / 3 - kw_t + 1] else 0.0, 0.0) * (w[(oh + 1) % 3 + kh_t * 3, (ow "
            "+ 1) % 3 + kw_t * 3] else 0.0)\n");
  EXPECT_LT(output_error(h, both, 5), 1e-12);
}

TEST(Rewrite, StridePhasesRefusals) {
  auto graph = [](const std::string &body, const std::string &op = "sum") {
    return check_graph(
        "kernel t(x: f32[C, H], w: f32[C, K]) -> y: f32[(H - 1) * S - 2 * P + K] where C = 2, H = 5, "
        "K = 3, S = 2, P = 1 {\n  y[oh] = " +
        op + "(c, kh: K) " + body + "\n}\n");
  };
  const std::string masked = "select((oh + P - kh) % S == 0, x[c, (oh + P - kh) / S] else 0.0, 0.0)";
  EXPECT_NE(refusal(graph(masked + " * w[c, kh]", "max"), RewriteKind::StridePhases, "y").find("only a sum"),
            std::string::npos);
  // Where the test fails the body is not 0: skipping those points would change the sum.
  const std::string why = "is not masked by a stride test";
  EXPECT_NE(refusal(graph(masked + " + w[c, kh]"), RewriteKind::StridePhases, "y").find(why), std::string::npos);
  EXPECT_NE(refusal(graph("select((oh + P - kh) % S == 0, x[c, (oh + P - kh) / S] else 0.0, 1.0) * w[c, kh]"),
                    RewriteKind::StridePhases, "y")
                .find(why),
            std::string::npos);
  // A stride of 1 tests nothing; a test of two reduction variables is not a stride's.
  EXPECT_NE(refusal(graph("select((oh + 1 - kh) % 1 == 0, x[c, oh / 2] else 0.0, 0.0)"), RewriteKind::StridePhases, "y")
                .find(why),
            std::string::npos);
  EXPECT_NE(refusal(graph("select((c + 1 - kh) % 2 == 0, x[c, oh / 2] else 0.0, 0.0)"), RewriteKind::StridePhases, "y")
                .find(why),
            std::string::npos);
  EXPECT_EQ(refusal(graph(masked), RewriteKind::StridePhases, "z"), "no stage defines 'z'");
}

TEST(Rewrite, StepsPrintAndParseBackBeforeThePrimitives) {
  const std::string text =
      "rewrite push_sum y\nrewrite fold_constants y\nrewrite rfactor y.k 64 -> y_rf ko ki\nsplit y.m 4 -> mo mi\n";
  Schedule s = parse_schedule(test::source(text, "a.sched"));
  ASSERT_EQ(s.rewrites.size(), 3u);
  EXPECT_EQ(s.rewrites[0].kind, RewriteKind::PushSum);
  EXPECT_EQ(s.rewrites[1].stage, "y");
  EXPECT_EQ(s.rewrites[2].loop, "k");
  EXPECT_EQ(s.rewrites[2].factor, 64);
  EXPECT_EQ(s.rewrites[2].results, (std::vector<std::string>{"y_rf", "ko", "ki"}));
  EXPECT_EQ(print_schedule(s), text);
  EXPECT_NE(test::user_error([] {
              parse_schedule(test::source("split y.m 4 -> a b\nrewrite push_sum y\n", "b.sched"));
            }).find("b.sched:2:1: error: rewrites come before the primitives"),
            std::string::npos);
  EXPECT_NE(
      test::user_error([] { parse_schedule(test::source("rewrite push_down y\n", "c.sched")); })
          .find("c.sched:1:9: error: unknown rewrite 'push_down'; rewrites are drop_unit_reduction, "
                "fold_constants, push_sum, fold_affine, ranged_reduction, merge_duplicates, online_softmax, rfactor"),
      std::string::npos);
}

TEST(Rewrite, ARefusedStepIsTheUsersErrorAtItsLineNamingTheStagesLine) {
  Graph g = test::graph_of("kernel e(x: f32[N]) -> y: f32[N] where N = 4 {\n  y[i] = exp(x[i])\n}");
  Schedule s = parse_schedule(test::source("rewrite push_sum y\n", "e.sched"));
  std::string error = test::user_error([&] { run_pipeline(g, s); });
  EXPECT_NE(error.find("e.sched:1:1: error: push_sum y: y is not a float sum (it is elementwise)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("test.ks:2:3: note: 'y' is defined here"), std::string::npos) << error;
  Schedule missing = parse_schedule(test::source("rewrite fold_constants z\n", "e.sched"));
  error = test::user_error([&] { run_pipeline(g, missing); });
  EXPECT_NE(error.find("fold_constants z: no stage defines 'z'"), std::string::npos) << error;
  EXPECT_NE(error.find("note: the stages are y"), std::string::npos) << error;
}

TEST(Rewrite, ThePipelineSchedulesTheRewrittenGraph) {
  Graph g = check_graph(R"(kernel s(x: f32[M, K], w: f32[N, K]) -> y: f32[M] where M = 8, N = 16, K = 12 {
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  y[m] = sum(n) acc[m, n]
})");
  Schedule s = parse_schedule(test::source("rewrite push_sum y\nsplit y.m 4 -> mo mi\n", "p.sched"));
  std::vector<std::string> passes;
  Program p = run_pipeline(
      g, s, [&](const std::string &pass, const Program &, double) { passes.push_back(pass); },
      [&](const std::string &pass, const Graph &, double) { passes.push_back(pass); });
  ASSERT_GE(passes.size(), 3u);
  EXPECT_EQ(passes[0], "rewrite push_sum y");
  EXPECT_EQ(passes[1], "lower");
  ASSERT_EQ(p.kernels.size(), 2u) << print_program(p);
  EXPECT_EQ(p.kernels[0].name, "w_sum");
}

// ---- every rule, wherever it applies ---------------------------------------------------

TEST(RewriteProperty, EveryRuleOnEveryExampleKeepsItsOutputs) {
  std::map<RewriteKind, int> applied;
  for (const std::string &path : test::example_paths()) {
    Graph g = frontend::elaborate(frontend::load_spec(path), frontend::SizeSet::Check, {});
    check_every_rule(g, path, &applied);
  }
  EXPECT_GT(applied[RewriteKind::PushSum], 0) << "the level-2 examples made for the rules";
}

TEST(RewriteProperty, EveryRuleOnRandomGraphsKeepsTheirOutputs) {
  std::mt19937 rng(20261126);
  std::map<RewriteKind, int> applied;
  int graphs = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string text = rewrite_pattern_spec(rng);
    Graph g;
    try {
      g = test::graph_of(text);
    } catch (const UserError &e) {
      ADD_FAILURE() << "the generator wrote a bad spec:\n" << text << e.what();
      continue;
    }
    ++graphs;
    check_every_rule(g, text, &applied);
  }
  EXPECT_EQ(graphs, 300);
  for (RewriteKind kind : all_rewrite_kinds())
    EXPECT_GE(applied[kind], 20) << rewrite_name(kind) << ": the generated graphs are made for every rule";
}

}  // namespace
}  // namespace ks
