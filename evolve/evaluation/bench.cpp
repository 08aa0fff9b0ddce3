#include "evolve/evaluation/bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "evolve/evaluation/compile.h"
#include "evolve/isolate.h"
#include "frontend/elaborate.h"
#include "ir/diagnostic.h"
#include "runtime/device.h"

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
    if (!p.peer_ms) {
      m.without_peer.push_back(p.name);
      continue;
    }
    ++m.with_peer;
    if (std::optional<double> s = p.speedup()) {
      ++m.with_speedup;
      log_sum += std::log(*s);
      ratio_sum += *s >= 1 ? *s : 0;
    }
  }
  if (m.problems == 0) return m;
  m.correctness_rate = static_cast<double>(m.correct) / m.problems;
  if (m.with_peer == 0) return m;  // nothing to compare with
  for (double p : fast_p_thresholds()) {
    int fast = 0;
    for (const BenchProblem &problem : problems) {
      std::optional<double> s = problem.speedup();
      fast += s && *s > p;
    }
    m.fast_p[p] = static_cast<double>(fast) / m.with_peer;
  }
  if (m.with_speedup > 0) m.geomean_speedup = std::exp(log_sum / m.with_speedup);
  m.average_speedup_ratio = ratio_sum / m.with_peer;
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

bool Suite::compiled() const {
  return std::any_of(problems.begin(), problems.end(), [](const BenchProblem &p) { return p.compiled_ms; });
}

namespace {

// The peer's times: its JSON file, or its script run now with the sizes file on the
// kind of device the suite runs on, so that speedups are against PyTorch measured
// minutes apart. A peer that cannot run is an error, with its own words.
nlohmann::json peer_times(const SuiteOptions &o, size_t problems) {
  if (std::filesystem::path(o.peer_path).extension() != ".py") {
    nlohmann::json peer = nlohmann::json::parse(read_source_file(o.peer_path, "peer file")->text, nullptr, false);
    if (peer.is_discarded() || !peer.is_object()) throw UserError("error: peer file '" + o.peer_path + "' is not JSON");
    if (peer.contains("error"))
      throw UserError("error: peer file '" + o.peer_path + "' holds no times: " + peer["error"].dump());
    const nlohmann::json precision = peer.value("precision", nlohmann::json("fp32"));
    if (precision != o.precision)
      throw UserError("error: peer file '" + o.peer_path + "' was measured in precision " + precision.dump() +
                      ", the suite runs in " + o.precision + " (torch_peer.py" +
                      (o.precision == "tf32" ? " --tf32" : " without --tf32") + " measures that)");
    const std::string dtype = peer.value("dtype", std::string());
    if (dtype != o.dtype)
      throw UserError("error: peer file '" + o.peer_path + "' was measured " +
                      (dtype.empty() ? "at the specs' own types" : "at --dtype " + dtype) + ", the suite runs " +
                      (o.dtype.empty() ? "at the specs' own types" : "at --dtype " + o.dtype) +
                      " (torch_peer.py --dtype measures that)");
    return peer;
  }
  if (o.sizes_path.empty())
    throw UserError("error: the peer script '" + o.peer_path + "' times the sizes file's sizes: give --sizes");
  if (!std::filesystem::is_regular_file(o.peer_path))
    throw UserError("error: cannot open peer script '" + o.peer_path + "'");
  const bool gpu =
      runtime::open_device(o.device,
                           o.target.empty() ? "" : target_api(o.target == "spirv" ? Target::SPIRV : Target::OpenCL))
          ->info()
          .gpu;
  const std::string out =
      (std::filesystem::temp_directory_path() / ("ksmith_peer_" + std::to_string(::getpid()) + ".json")).string();
  std::fprintf(stderr, "peer: %s %s on %s...\n", o.python.c_str(), o.peer_path.c_str(), gpu ? "cuda" : "cpu");
  std::vector<std::string> command = {o.python, o.peer_path, o.sizes_path, out, "--device", gpu ? "cuda" : "cpu"};
  if (o.precision == "tf32") command.push_back("--tf32");
  if (!o.dtype.empty()) command.insert(command.end(), {"--dtype", o.dtype});
  ChildRun child = run_child(command, o.time_limit_s * static_cast<double>(std::max<size_t>(problems, 1)));
  std::string text;
  if (std::ifstream in{out}) text.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(out);
  nlohmann::json peer = nlohmann::json::parse(text, nullptr, false);
  if (child.started && !child.timed_out && child.exit_status == 0 && peer.is_object() && !peer.contains("error"))
    return peer;
  std::string why = !child.started           ? child.err
                    : child.timed_out        ? "it ran past its time limit"
                    : child.exit_status != 0 ? "it exited with status " + std::to_string(child.exit_status)
                    : peer.is_object()       ? peer["error"].dump()
                                             : "it wrote no JSON";
  std::string err = child.started ? child.err : "";
  while (!err.empty() && err.back() == '\n') err.pop_back();
  if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
  throw UserError("error: the peer script " + o.peer_path + " (run by " + o.python + ") failed: " + why +
                  (err.empty() ? "" : "; it said:\n" + err));
}

// "PyTorch 2.11 eager on NVIDIA H100; torch.compile available"
std::string peer_note(const nlohmann::json &peer) {
  std::string note =
      "PyTorch " + peer.value("torch", std::string("?")) + " eager on " + peer.value("device", std::string("?"));
  if (peer.value("precision", std::string()) == "tf32") note += " (TF32 allowed)";
  if (peer.contains("dtype")) note += " at " + peer["dtype"].get<std::string>();
  if (peer.contains("compile")) note += "; torch.compile " + peer["compile"].get<std::string>();
  return note;
}

}  // namespace

Suite run_suite(const std::string &dir, const SuiteOptions &o) {
  Suite suite;
  suite.dir = dir;
  std::vector<std::filesystem::path> specs;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".ks") specs.push_back(entry.path());
  if (ec) throw UserError("error: cannot read suite folder '" + dir + "': " + ec.message());
  if (specs.empty()) throw UserError("error: suite folder '" + dir + "' holds no .ks specs");
  if (!o.tuned_dir.empty() && !std::filesystem::is_directory(o.tuned_dir))
    throw UserError("error: no folder of tuned schedules '" + o.tuned_dir + "'");
  std::sort(specs.begin(), specs.end());
  std::map<std::string, std::string> sizes;
  if (!o.sizes_path.empty()) sizes = frontend::read_sizes_file(o.sizes_path);
  // The peer first: its times are taken before the suite's, on an idle device.
  nlohmann::json peer;
  if (!o.peer_path.empty()) peer = peer_times(o, specs.size());
  suite.peer = o.peer_path.empty() ? "none given" : peer_note(peer);
  for (const std::filesystem::path &spec : specs) {
    BenchProblem p;
    p.name = spec.stem().string();
    p.level = kernelbench_level(read_source_file(spec.string(), "spec")->text);
    std::vector<std::string> args = {spec.string()};
    if (!o.target.empty()) args.insert(args.end(), {"--target", o.target});
    if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
    args.insert(args.end(), {"--precision", o.precision});
    if (!o.dtype.empty()) args.insert(args.end(), {"--dtype", o.dtype});
    if (sizes.count(p.name))
      args.insert(args.end(), {"--size", sizes.at(p.name)});
    else if (!o.sizes_path.empty())
      suite.warnings.push_back(p.name + " is not in the sizes file " + o.sizes_path + ": timed at its spec's sizes");
    std::filesystem::path schedule = spec;
    schedule.replace_extension(".sched");
    if (!o.tuned_dir.empty()) schedule = std::filesystem::path(o.tuned_dir) / (p.name + ".sched");
    if (std::filesystem::exists(schedule)) args.insert(args.end(), {"--schedule", schedule.string()});
    IsolatedRun run = run_isolated(o.ksmith, args, o.time_limit_s);
    p.correct = run.ok;
    p.failure = run.ok ? "" : run.failure;
    if (run.record && run.record->contains("time") && (*run.record)["time"].contains("median_ms")) {
      p.ms = (*run.record)["time"]["median_ms"].get<double>();
      p.cv = (*run.record)["time"]["cv"].get<double>();
    }
    if (!peer.is_null()) {
      const nlohmann::json times =
          peer.contains("problems") ? peer["problems"].value(p.name, nlohmann::json()) : nullptr;
      if (times.is_object() && times.contains("median_ms")) p.peer_ms = times["median_ms"].get<double>();
      if (times.is_object() && times.contains("compiled_ms")) p.compiled_ms = times["compiled_ms"].get<double>();
      if (!p.peer_ms)
        suite.warnings.push_back(p.name + " has no peer time" +
                                 (times.is_object() && times.contains("error")
                                      ? " (the peer: " + times["error"].get<std::string>() + ")"
                                      : " (not in the peer's output)") +
                                 ": left out of the speedup metrics");
    }
    nlohmann::json entry = {{"problem", p.name},
                            {"level", p.level},
                            {"correct", p.correct},
                            {"failure", p.failure},
                            {"record", run.record ? *run.record : nlohmann::json()},
                            {"seconds", run.seconds}};
    if (p.peer_ms) entry["peer_ms"] = *p.peer_ms;
    if (p.compiled_ms) entry["compiled_ms"] = *p.compiled_ms;
    suite.records.push_back(entry);
    suite.problems.push_back(p);
  }
  return suite;
}

}  // namespace ks
