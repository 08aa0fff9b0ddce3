// A suite's results and KernelBench's metrics over them: correctness rate, fast_p
// (correct and faster than the peer by more than p), the geometric-mean speedup of
// the correct problems, and the Kernel-Smith paper's average speedup ratio (the
// mean speedup over all problems, where an incorrect problem or a speedup below 1
// counts as 0). Speedups are over the peer (PyTorch eager) measured in the same run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct BenchProblem {
  std::string name;
  int level = 0;  // KernelBench level, 0 where the spec does not say
  bool correct = false;
  std::optional<double> ms, peer_ms;  // the peer: PyTorch eager
  std::optional<double> compiled_ms;  // PyTorch's torch.compile, where it ran
  std::optional<double> cv;           // spread of ms: coefficient of variation of its batches
  std::string failure;                // why it is not correct, or not timed
  /// Over a peer time: none unless correct and timed.
  std::optional<double> speedup_over(std::optional<double> peer) const;
  std::optional<double> speedup() const { return speedup_over(peer_ms); }
};

struct BenchMetrics {
  int problems = 0, correct = 0, with_speedup = 0;
  double correctness_rate = 0;
  std::map<double, double> fast_p;  // p -> fraction of all problems; empty without speedups
  std::optional<double> geomean_speedup, average_speedup_ratio;
};

/// The p of fast_p that KernelBench reports.
const std::vector<double> &fast_p_thresholds();

BenchMetrics bench_metrics(const std::vector<BenchProblem> &problems);

/// The problems with torch.compile's times as the peer's.
std::vector<BenchProblem> against_compiled(std::vector<BenchProblem> problems);

/// The level a spec names in a comment "(KernelBench level N, ...)"; 0 if none.
int kernelbench_level(const std::string &spec_text);

}  // namespace ks
