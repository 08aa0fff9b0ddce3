// ksmith bench SUITE_DIR [--sizes FILE] [--peer FILE.json|SCRIPT.py] [--python PY] [--target T]
//                        [--device SEL] [--precision fp32|tf32] [--dtype f32|f16|bf16] [--time-limit S]
//                        [--json]
// Every spec of a folder, each in a child process, against the peer measured first;
// a table and KernelBench's metrics per level and for all (evolve/evaluation/bench.h).
#include "evolve/evaluation/bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "tools/cli.h"

namespace ks::cli {

namespace {

struct BenchCommandOptions {
  std::string dir;
  SuiteOptions suite;
  bool json = false;
};

std::string metrics_line(const BenchMetrics &m) {
  char text[512];
  std::snprintf(text, sizeof text, "%d problems, %d correct (%.1f%%)", m.problems, m.correct, 100 * m.correctness_rate);
  std::string out = text;
  if (m.with_peer == 0) return out + "; no speedups (no problem has a peer time)";
  if (!m.without_peer.empty())
    out += "; against the " + std::to_string(m.with_peer) + " with a peer time (" +
           std::to_string(m.without_peer.size()) + " without)";
  for (const auto &[p, value] : m.fast_p) {
    std::snprintf(text, sizeof text, ", fast_%g %.1f%%", p, 100 * value);
    out += text;
  }
  if (m.geomean_speedup) {
    std::snprintf(text, sizeof text, ", geomean speedup %.3fx", *m.geomean_speedup);
    out += text;
  }
  std::snprintf(text, sizeof text, ", average speedup ratio %.3f", *m.average_speedup_ratio);
  return out + text;
}

nlohmann::json metrics_json(const BenchMetrics &m) {
  nlohmann::json j = {{"problems", m.problems},
                      {"correct", m.correct},
                      {"correctness_rate", m.correctness_rate},
                      {"with_peer", m.with_peer},
                      {"without_peer", m.without_peer}};
  for (const auto &[p, value] : m.fast_p) j["fast_" + std::to_string(p).substr(0, 3)] = value;
  if (m.geomean_speedup) j["geomean_speedup"] = *m.geomean_speedup;
  if (m.average_speedup_ratio) j["average_speedup_ratio"] = *m.average_speedup_ratio;
  return j;
}

std::string number(std::optional<double> v, const char *format) {
  if (!v) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, *v);
  return text;
}

int bench(BenchCommandOptions &o) {
  o.suite.ksmith = std::filesystem::read_symlink("/proc/self/exe").string();
  Suite suite = run_suite(o.dir, o.suite);
  for (const std::string &warning : suite.warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  std::map<int, std::vector<BenchProblem>> by_level;
  for (const BenchProblem &p : suite.problems) by_level[p.level].push_back(p);
  const bool compiled = suite.compiled();
  if (o.json) {
    nlohmann::json j = {{"suite", o.dir},
                        {"precision", o.suite.precision},
                        {"dtype", o.suite.dtype.empty() ? "as the specs say" : o.suite.dtype},
                        {"peer", suite.peer},
                        {"problems", suite.records},
                        {"warnings", suite.warnings}};
    j["metrics"]["all"] = metrics_json(bench_metrics(suite.problems));
    for (const auto &[level, problems] : by_level)
      j["metrics"]["level " + std::to_string(level)] = metrics_json(bench_metrics(problems));
    if (compiled)
      j["metrics"]["all, against torch.compile"] = metrics_json(bench_metrics(against_compiled(suite.problems)));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("suite %s (%zu problems, precision %s%s); peer: %s\n\n", o.dir.c_str(), suite.problems.size(),
              o.suite.precision.c_str(), o.suite.dtype.empty() ? "" : (", at " + o.suite.dtype).c_str(),
              suite.peer.c_str());
  int width = 7;
  for (const BenchProblem &p : suite.problems) width = std::max(width, static_cast<int>(p.name.size()));
  std::printf("%-*s %5s %-8s %12s %7s %12s %9s %12s %9s\n", width, "problem", "level", "correct", "ms", "spread",
              "eager ms", "speedup", "compiled ms", "speedup");
  for (const BenchProblem &p : suite.problems)
    std::printf("%-*s %5d %-8s %12s %7s %12s %9s %12s %9s%s%s\n", width, p.name.c_str(), p.level,
                p.correct ? "yes" : "NO", number(p.ms, "%.4f").c_str(),
                number(p.cv ? std::optional<double>(100 * *p.cv) : std::nullopt, "%.2f%%").c_str(),
                number(p.peer_ms, "%.4f").c_str(), number(p.speedup(), "%.2fx").c_str(),
                number(p.compiled_ms, "%.4f").c_str(), number(p.speedup_over(p.compiled_ms), "%.2fx").c_str(),
                p.failure.empty() ? "" : "  ", p.failure.c_str());
  std::printf("\n");
  for (const auto &[level, problems] : by_level)
    std::printf("level %d: %s\n", level, metrics_line(bench_metrics(problems)).c_str());
  std::printf("all: %s\n", metrics_line(bench_metrics(suite.problems)).c_str());
  if (compiled)
    std::printf("all, against torch.compile: %s\n",
                metrics_line(bench_metrics(against_compiled(suite.problems))).c_str());
  return 0;
}

}  // namespace

Command add_bench(CLI::App &app) {
  auto o = std::make_shared<BenchCommandOptions>();
  CLI::App *command =
      app.add_subcommand("bench", "Evaluate every spec of a folder (each in a child process) against a peer");
  command->add_option("suite", o->dir, "A folder of .ks specs (NAME.sched beside a spec is applied)")->required();
  command->add_option("--sizes", o->suite.sizes_path, "Timed sizes: NAME SIZES lines (bench/sizes_*.txt)");
  command->add_option("--peer", o->suite.peer_path,
                      "The peer: bench/torch_peer.py's JSON, or the script itself (.py), run first with --sizes");
  command->add_option("--python", o->suite.python,
                      "The Python that runs a peer script (default /usr/bin/python3, Debian's, with python3-torch)");
  add_target_option(command, &o->suite.target);
  command->add_option("--device", o->suite.device, "Device, as for run");
  add_precision_option(command, &o->suite.precision);
  add_dtype_option(command, &o->suite.dtype);
  command->add_option("--tuned", o->suite.tuned_dir,
                      "Schedules found by ksmith evolve: DIR/NAME.sched for each problem that has one (bench/tuned/)");
  command->add_option("--time-limit", o->suite.time_limit_s, "Seconds each problem may take (default 600)")
      ->check(CLI::Range(1.0, 86400.0));
  command->add_flag("--json", o->json, "Print JSON");
  return {command, [o] { return bench(*o); }};
}

}  // namespace ks::cli
