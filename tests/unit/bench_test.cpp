// KernelBench's metrics over a suite's results, on hand-computed cases.
#include "evolve/evaluation/bench.h"

#include <cmath>

#include "test_util.h"

namespace ks {
namespace {

BenchProblem problem(bool correct, std::optional<double> ms, std::optional<double> peer_ms) {
  BenchProblem p;
  p.correct = correct;
  p.ms = ms;
  p.peer_ms = peer_ms;
  return p;
}

TEST(BenchMetrics, MatchHandComputedValues) {
  // Speedups 2, 0.5 and 1.25; one incorrect (fast but wrong); one correct, untimed.
  std::vector<BenchProblem> problems = {problem(true, 1.0, 2.0), problem(true, 2.0, 1.0), problem(true, 4.0, 5.0),
                                        problem(false, 0.1, 5.0), problem(true, std::nullopt, 1.0)};
  BenchMetrics m = bench_metrics(problems);
  EXPECT_EQ(m.problems, 5);
  EXPECT_EQ(m.correct, 4);
  EXPECT_EQ(m.with_speedup, 3);
  EXPECT_DOUBLE_EQ(m.correctness_rate, 0.8);
  EXPECT_DOUBLE_EQ(m.fast_p.at(0), 3.0 / 5);    // correct and timed
  EXPECT_DOUBLE_EQ(m.fast_p.at(0.5), 2.0 / 5);  // 0.5 is not faster than 0.5
  EXPECT_DOUBLE_EQ(m.fast_p.at(1), 2.0 / 5);
  EXPECT_DOUBLE_EQ(m.fast_p.at(1.5), 1.0 / 5);
  EXPECT_DOUBLE_EQ(m.fast_p.at(2), 0.0);  // 2 is not faster than 2
  EXPECT_NEAR(*m.geomean_speedup, std::cbrt(2 * 0.5 * 1.25), 1e-12);
  EXPECT_NEAR(*m.average_speedup_ratio, (2 + 0 + 1.25 + 0 + 0) / 5, 1e-12);  // below 1 and incorrect count 0
}

// A problem the peer did not time is left out of fast_p, the geometric mean and the
// average speedup ratio alike, and named; correctness still counts it.
TEST(BenchMetrics, ProblemsWithoutAPeerTimeAreLeftOutOfEverySpeedupMetric) {
  std::vector<BenchProblem> problems = {problem(true, 1.0, 2.0), problem(true, 2.0, 1.0), problem(false, 1.0, 1.0),
                                        problem(true, 1.0, std::nullopt), problem(false, std::nullopt, std::nullopt)};
  problems[3].name = "unpeered";
  problems[4].name = "broken";
  BenchMetrics m = bench_metrics(problems);
  EXPECT_EQ(m.problems, 5);
  EXPECT_EQ(m.correct, 3);
  EXPECT_DOUBLE_EQ(m.correctness_rate, 3.0 / 5);
  EXPECT_EQ(m.with_peer, 3);
  EXPECT_EQ(m.without_peer, (std::vector<std::string>{"unpeered", "broken"}));
  EXPECT_DOUBLE_EQ(m.fast_p.at(0), 2.0 / 3);  // fast_0: the comparison set's correctness rate
  EXPECT_DOUBLE_EQ(m.fast_p.at(1), 1.0 / 3);
  EXPECT_NEAR(*m.geomean_speedup, 1.0, 1e-12);  // sqrt(2 * 0.5)
  EXPECT_NEAR(*m.average_speedup_ratio, 2.0 / 3, 1e-12);
}

TEST(BenchMetrics, WithoutAPeerOnlyCorrectness) {
  BenchMetrics m = bench_metrics({problem(true, 1.0, std::nullopt), problem(false, std::nullopt, std::nullopt)});
  EXPECT_DOUBLE_EQ(m.correctness_rate, 0.5);
  EXPECT_TRUE(m.fast_p.empty());
  EXPECT_FALSE(m.geomean_speedup);
  EXPECT_FALSE(m.average_speedup_ratio);
  EXPECT_EQ(bench_metrics({}).problems, 0);
}

TEST(BenchMetrics, LevelsComeFromTheSpecsComment) {
  EXPECT_EQ(kernelbench_level("# Conv2d + ReLU + bias add (KernelBench level 2, 1).\nkernel k"), 2);
  EXPECT_EQ(kernelbench_level("# Square matmul (KernelBench level 1, 1).\n"), 1);
  EXPECT_EQ(kernelbench_level("kernel k(x: f32[N]) -> y: f32[N]"), 0);
}

}  // namespace
}  // namespace ks
