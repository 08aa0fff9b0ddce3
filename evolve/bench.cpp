#include "evolve/bench.h"

#include <cmath>
#include <regex>

namespace ks {

std::optional<double> BenchProblem::speedup_over(std::optional<double> peer) const {
  if (!correct || !ms || !peer || *ms <= 0) return std::nullopt;
  return *peer / *ms;
}

const std::vector<double> &fast_p_thresholds() {
  static const std::vector<double> p = {0, 0.5, 0.8, 1, 1.5, 2};
  return p;
}

BenchMetrics bench_metrics(const std::vector<BenchProblem> &problems) {
  BenchMetrics m;
  m.problems = static_cast<int>(problems.size());
  double log_sum = 0, ratio_sum = 0;
  for (const BenchProblem &p : problems) {
    m.correct += p.correct;
    if (std::optional<double> s = p.speedup()) {
      ++m.with_speedup;
      log_sum += std::log(*s);
      ratio_sum += *s >= 1 ? *s : 0;
    }
  }
  if (m.problems == 0) return m;
  m.correctness_rate = static_cast<double>(m.correct) / m.problems;
  if (m.with_speedup == 0) return m;  // no peer: no speedups to summarise
  for (double p : fast_p_thresholds()) {
    int fast = 0;
    for (const BenchProblem &problem : problems) {
      std::optional<double> s = problem.speedup();
      fast += s && *s > p;
    }
    m.fast_p[p] = static_cast<double>(fast) / m.problems;
  }
  m.geomean_speedup = std::exp(log_sum / m.with_speedup);
  m.average_speedup_ratio = ratio_sum / m.problems;
  return m;
}

int kernelbench_level(const std::string &spec_text) {
  static const std::regex level(R"(KernelBench level (\d+))");
  std::smatch match;
  return std::regex_search(spec_text, match, level) ? std::stoi(match[1]) : 0;
}

std::vector<BenchProblem> against_compiled(std::vector<BenchProblem> problems) {
  for (BenchProblem &p : problems) p.peer_ms = p.compiled_ms;
  return problems;
}

}  // namespace ks
