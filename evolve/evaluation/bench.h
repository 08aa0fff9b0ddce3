// A benchmark suite (`ksmith bench`): every spec of a folder evaluated in a child
// process against a peer (PyTorch) measured first in the same run, and KernelBench's
// metrics over the results, counted as KernelBench counts them:
//  - correctness rate: correct problems over all problems;
//  - the comparison set: the problems the peer timed. A problem without a peer time
//    is reported as such and left out of every speedup metric alike;
//  - fast_p: problems of the comparison set that are correct and faster than the
//    peer by more than p, over the comparison set (fast_0 is its correctness rate);
//  - the geometric-mean speedup of the correct problems of the comparison set;
//  - the Kernel-Smith paper's average speedup ratio: the mean over the comparison
//    set of the speedup, where an incorrect problem or a speedup below 1 counts 0.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
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
  int problems = 0, correct = 0;
  double correctness_rate = 0;            // over all problems
  int with_peer = 0;                      // the comparison set: problems the peer timed
  int with_speedup = 0;                   // of those, correct and timed
  std::vector<std::string> without_peer;  // left out of every speedup metric
  std::map<double, double> fast_p;        // p -> fraction of the comparison set; empty when it is
  std::optional<double> geomean_speedup, average_speedup_ratio;
};

/// The p of fast_p that KernelBench reports.
const std::vector<double> &fast_p_thresholds();

BenchMetrics bench_metrics(const std::vector<BenchProblem> &problems);

/// The problems with torch.compile's times as the peer's.
std::vector<BenchProblem> against_compiled(std::vector<BenchProblem> problems);

/// The level a spec names in a comment "(KernelBench level N, ...)"; 0 if none.
int kernelbench_level(const std::string &spec_text);

struct SuiteOptions {
  std::string ksmith;  // the executable that evaluates each problem in a child process
  std::string sizes_path;
  std::string peer_path;                    // bench/torch_peer.py's JSON, or the script itself (.py)
  std::string python = "/usr/bin/python3";  // runs a peer script: Debian's, where python3-torch installs
  std::string target, device;
  // What each problem is checked and timed in (ksmith run --precision), and the peer
  // with it: "tf32" runs the peer script with --tf32, and a peer file must say it.
  std::string precision = "fp32";
  // Each problem's f32 tensors at another type (ksmith run --dtype), and the peer at
  // the same (torch_peer.py --dtype; a peer file must say it); "" as the specs say.
  std::string dtype;
  double time_limit_s = 600;  // each problem; the peer script gets this per problem
  // Tuned schedules: DIR/NAME.sched for problem NAME where it is there, else the naive
  // kernel (the hand-written NAME.sched beside the spec is used only without it).
  std::string tuned_dir;
};

struct Suite {
  std::string dir;
  std::string peer;  // "PyTorch 2.11 eager on cuda; torch.compile available", or "none given"
  std::vector<BenchProblem> problems;
  nlohmann::json records = nlohmann::json::array();  // one per problem: its record and times
  std::vector<std::string> warnings;                 // specs missing from the sizes file or the peer's times
  bool compiled() const;                             // torch.compile times for some problem
};

/// Evaluates every spec of dir in a child process (`NAME.sched` beside a spec is
/// applied, its sizes come from the sizes file), after running or reading the peer.
/// Throws UserError for a bad folder, sizes file or peer file, and for a peer script
/// that fails (its error output in the message).
Suite run_suite(const std::string &dir, const SuiteOptions &options);

}  // namespace ks
