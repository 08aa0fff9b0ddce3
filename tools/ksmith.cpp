// ksmith: the kernelsmith command line.
//   ksmith devices [--json]
//   ksmith compile SPEC [--target opencl|spirv] [--schedule FILE] [--size N=V]...
//                       [--emit=graph|loops|opencl|glsl|spirv] [-o FILE]
//   ksmith inspect SPEC [--target opencl|spirv] [--schedule FILE]
//                       [--print-after-all | --print-after=NAME | --print-changed] [--time-passes]
//   ksmith run SPEC [--target opencl|spirv] [--schedule FILE | --kernel FILE.cl] [--size N=V]...
//                   [--check-size N=V]... [--device SEL] [--json]
//   ksmith bench SUITE_DIR [--sizes FILE] [--peer FILE.json|SCRIPT.py] [--python PY] [--target T] [--device SEL]
//                          [--time-limit S] [--json]
// Exit status: 0 success; 1 a bad input, a failed check or a device failure;
// 2 a bad command line.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "codegen/glsl.h"
#include "codegen/spirv.h"
#include "evolve/bench.h"
#include "evolve/compare.h"
#include "evolve/evaluate.h"
#include "evolve/isolate.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "runtime/device.h"

namespace {

using namespace ks;

// Writes text to path through a temporary file, so a failure leaves any old file whole.
void write_file(const std::string &path, const std::string &text) {
  std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError("error: cannot write '" + path + "'");
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw UserError("error: cannot write '" + path + "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw UserError("error: cannot write '" + path + "': " + ec.message());
  }
}

frontend::SizeOverrides overrides(const std::vector<std::string> &items, const char *flag) {
  frontend::SizeOverrides o;
  o.flag = flag;
  for (const std::string &item : items) frontend::parse_size_assignments(item, &o);
  return o;
}

std::string human_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  else
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
  return text;
}

int devices_command(bool json) {
  std::vector<std::string> why_none;
  std::vector<runtime::DeviceInfo> devices = runtime::list_devices(&why_none);
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto &d : devices) list.push_back(device_json(d));
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  for (const auto &d : devices) {
    std::cout << d.selector() << "  " << d.name << "  [" << d.platform << ", " << d.version << ", driver "
              << d.driver_version << "]  " << (d.gpu ? "GPU" : "CPU") << ", " << human_bytes(d.global_memory_bytes)
              << " global, " << d.local_memory_bytes / 1024 << " KiB local, work-groups up to "
              << d.max_work_group_size;
    if (d.subgroup_size) std::cout << ", subgroups of " << d.subgroup_size;
    std::cout << "\n";
  }
  for (const std::string &reason : why_none) std::cout << "no devices: " << reason << "\n";
  return 0;
}

Target parse_target(const std::string &name) { return name == "spirv" ? Target::SPIRV : Target::OpenCL; }

Schedule schedule_from(const std::string &path) { return path.empty() ? Schedule{} : load_schedule(path); }

// SPIR-V: the disassembly of each kernel's module on standard output, or the
// binary with -o (FILE itself for one kernel; FILE's stem.KERNEL.ext for several).
int emit_spirv(const Compiled &c, const std::string &output) {
  const std::vector<runtime::SpirvKernel> &modules = c.binary.spirv;
  if (output.empty() || output == "-") {
    for (const runtime::SpirvKernel &k : modules)
      std::cout << "; kernel " << k.name << "\n" << disassemble_spirv(k.words);
    return 0;
  }
  for (const runtime::SpirvKernel &k : modules) {
    std::filesystem::path path(output);
    if (modules.size() > 1) path.replace_filename(path.stem().string() + "." + k.name + path.extension().string());
    write_file(path.string(), std::string(reinterpret_cast<const char *>(k.words.data()), k.words.size() * 4));
  }
  return 0;
}

int compile_command(const std::string &path, const std::string &schedule_path, const std::vector<std::string> &sizes,
                    std::optional<Target> target, std::string emit, const std::string &output) {
  // The emitted language follows the target, and must not contradict it.
  if (emit.empty()) emit = target == Target::SPIRV ? "spirv" : "opencl";
  bool spirv_stage = emit == "glsl" || emit == "spirv";
  if (target && ((*target == Target::SPIRV && emit == "opencl") || (*target == Target::OpenCL && spirv_stage)))
    throw UserError("error: --emit=" + emit + " is not code of --target " + target_name(*target) +
                    " (opencl emits opencl; spirv emits glsl or spirv)");
  frontend::Spec spec = frontend::load_spec(path);
  frontend::SizeOverrides o = overrides(sizes, "--size");
  Schedule schedule = schedule_from(schedule_path);
  std::string text;
  if (emit == "graph") {
    text = print_graph(frontend::elaborate(spec, frontend::SizeSet::Default, o));
  } else {
    Compiled c =
        compile_spec(spec, frontend::SizeSet::Default, o, schedule, spirv_stage ? Target::SPIRV : Target::OpenCL);
    if (emit == "spirv") return emit_spirv(c, output);
    text = emit == "loops" ? print_program(c.program) : c.code.source;
  }
  if (output.empty() || output == "-")
    std::cout << text;
  else
    write_file(output, text);
  return 0;
}

struct InspectOptions {
  bool all = false, changed = false, time_passes = false;
  std::string after;             // a pass name; "schedule" matches every schedule step
  std::optional<Target> target;  // print the generated code too
};

int inspect_command(const std::string &path, const std::string &schedule_path, const std::vector<std::string> &sizes,
                    const InspectOptions &options) {
  frontend::Spec spec = frontend::load_spec(path);
  Schedule schedule = schedule_from(schedule_path);
  Graph graph = frontend::elaborate(spec, frontend::SizeSet::Default, overrides(sizes, "--size"));
  bool print_all = options.all || (!options.changed && options.after.empty());
  if (print_all || options.changed || options.after == "elaborate")
    std::cout << "// ----- after elaborate (Graph IR) -----\n" << print_graph(graph) << "\n";
  std::string previous;
  std::vector<std::pair<std::string, double>> times;
  Program program = run_pipeline(graph, schedule, [&](const std::string &pass, const Program &p, double seconds) {
    times.push_back({pass, seconds});
    std::string text = print_program(p);
    bool matches = pass == options.after || (options.after == "schedule" && pass.rfind("schedule: ", 0) == 0);
    if (print_all || matches || (options.changed && text != previous))
      std::cout << "// ----- after " << pass << " -----\n" << text << "\n";
    previous = text;
  });
  // Code generation is the last stage, printed when a target is named or asked for.
  if (options.target || options.after == "codegen") {
    Target target = options.target.value_or(Target::OpenCL);
    auto start = std::chrono::steady_clock::now();
    GeneratedProgram code = target == Target::SPIRV ? generate_glsl(program) : generate_opencl_c(program);
    times.push_back({"codegen", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    if (print_all || options.changed || options.after == "codegen")
      std::cout << "// ----- after codegen (" << (target == Target::SPIRV ? "GLSL" : "OpenCL C") << ") -----\n"
                << code.source;
  }
  if (options.time_passes) {
    std::fprintf(stderr, "%-48s %10s\n", "pass", "ms");
    for (const auto &[pass, seconds] : times) std::fprintf(stderr, "%-48s %10.3f\n", pass.c_str(), seconds * 1e3);
  }
  return 0;
}

std::string format_index(const std::vector<int64_t> &index) {
  std::string out;
  for (int64_t i : index) out += (out.empty() ? "" : ", ") + std::to_string(i);
  return "[" + out + "]";
}

int run_command(const std::string &path, const EvalOptions &options, const std::string &device_selector,
                std::optional<Target> target, bool json) {
  frontend::Spec spec = frontend::load_spec(path);
  if (target)
    for (const char *api : {"opencl", "vulkan"})
      if (api != std::string(target_api(*target)) && device_selector.rfind(std::string(api) + ":", 0) == 0)
        throw UserError("error: --device " + device_selector + " is a " + api + " device; --target " +
                        target_name(*target) + " runs on " + target_api(*target) + " devices");
  std::unique_ptr<runtime::Device> device = runtime::open_device(device_selector, target ? target_api(*target) : "");
  EvalRecord r = evaluate(spec, path, *device, options);
  if (json) {
    std::cout << r.to_json().dump(2) << "\n";
    return r.ok() ? 0 : 1;
  }
  const auto &d = r.device;
  std::printf("%s  (%s)\n  device  %s: %s [%s, driver %s]  target %s\n", r.kernel.c_str(), r.spec.c_str(),
              d.selector().c_str(), d.name.c_str(), d.platform.c_str(), d.driver_version.c_str(),
              target_name(target_for(d)));
  auto print_check = [](const char *label, const CheckRecord &c) {
    std::printf("  %-7s %-28s %s  worst error %.2e at %s%s (expected %.8g, got %.8g), %d trials\n", label,
                c.sizes.c_str(), c.passed ? "correct  " : "INCORRECT", c.worst_error, c.tensor.c_str(),
                format_index(c.index).c_str(), c.expected, c.got, c.trials);
    if (!c.passed)
      std::printf("          %lld elements over the tolerance (%.0e)\n", static_cast<long long>(c.bad_elements),
                  tolerance_for(DType::F32));
  };
  if (!r.failure || r.failure->sizes != "check") print_check("check", r.check);
  for (const std::string &flag : r.hacking_flags) std::printf("  FLAGGED the kernel %s\n", flag.c_str());
  if (r.time) {
    const TimeRecord &t = *r.time;
    if (t.versus_naive) print_check("versus", *t.versus_naive);  // the naive kernel, at the timed sizes
    if (t.timing.batches > 0) {
      double seconds = t.timing.median_ms * 1e-3;
      std::printf("  time    %-28s median %.4f ms  spread %.2f%% (%d batches x %d runs%s)  %.1f GB/s  %.2f GFLOP/s\n",
                  t.sizes.c_str(), t.timing.median_ms, 100 * t.timing.cv, t.timing.batches, t.timing.runs_per_batch,
                  t.timing.cold_cache ? ", cold caches" : "", t.cost.bytes / seconds * 1e-9,
                  t.cost.flops / seconds * 1e-9);
      if (t.versus_naive)
        std::printf("  naive   %-28s median %.4f ms  spread %.2f%%  speedup %.2fx\n", t.sizes.c_str(),
                    t.baseline.median_ms, 100 * t.baseline.cv, t.speedup());
    }
    if (!t.after_timing_correct) std::printf("          FAILED: %s\n", t.problem.c_str());
  }
  if (r.failure) {
    std::fflush(stdout);
    // A diagnostic with a location ("file:line:col: error: ...") is printed as it is.
    const std::string &m = r.failure->message;
    bool located = m.substr(0, m.find('\n')).find("error:") != std::string::npos;
    std::cerr << (located ? "" : "error: ") << (r.failure->sizes == "timed" ? "at the timed sizes: " : "") << m << "\n";
  }
  return r.ok() ? 0 : 1;
}

struct BenchOptions {
  std::string sizes_path, peer_path, target, device;
  std::string python = "python3";  // runs a peer script
  double time_limit_s = 600;
  bool json = false;
};

// NAME SIZES lines (bench/sizes_*.txt); '#' starts a comment.
std::map<std::string, std::string> read_sizes_file(const std::string &path) {
  std::map<std::string, std::string> sizes;
  std::istringstream lines(read_source_file(path, "sizes file")->text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string name, value;
    if (words >> name >> value) sizes[name] = value;
  }
  return sizes;
}

std::string metrics_line(const BenchMetrics &m) {
  char text[512];
  int n = std::snprintf(text, sizeof text, "%d problems, %d correct (%.1f%%)", m.problems, m.correct,
                        100 * m.correctness_rate);
  if (!m.geomean_speedup)
    return std::string(text, static_cast<size_t>(n)) + "; no speedups (no peer time for a correct, timed problem)";
  std::string out(text, static_cast<size_t>(n));
  for (const auto &[p, value] : m.fast_p) {
    std::snprintf(text, sizeof text, ", fast_%g %.1f%%", p, 100 * value);
    out += text;
  }
  std::snprintf(text, sizeof text, ", geomean speedup %.3fx, average speedup ratio %.3f", *m.geomean_speedup,
                *m.average_speedup_ratio);
  return out + text;
}

nlohmann::json metrics_json(const BenchMetrics &m) {
  nlohmann::json j = {{"problems", m.problems}, {"correct", m.correct}, {"correctness_rate", m.correctness_rate}};
  for (const auto &[p, value] : m.fast_p) j["fast_" + std::to_string(p).substr(0, 3)] = value;
  if (m.geomean_speedup) j["geomean_speedup"] = *m.geomean_speedup;
  if (m.average_speedup_ratio) j["average_speedup_ratio"] = *m.average_speedup_ratio;
  return j;
}

// The peer's times as bench/torch_peer.py writes them. peer_path is that JSON, or the
// script itself (.py), run now with the sizes file on the same kind of device as the
// suite, so that speedups are against PyTorch measured minutes apart. A peer that
// cannot run (no PyTorch, no interpreter, a crash) gives {"error": why}.
nlohmann::json peer_times(const BenchOptions &o, size_t problems) {
  if (o.peer_path.empty()) return {{"error", "no peer given"}};
  if (std::filesystem::path(o.peer_path).extension() != ".py") {
    nlohmann::json peer = nlohmann::json::parse(read_source_file(o.peer_path, "peer file")->text, nullptr, false);
    if (peer.is_discarded() || !peer.is_object()) throw UserError("error: peer file '" + o.peer_path + "' is not JSON");
    return peer;
  }
  if (o.sizes_path.empty())
    throw UserError("error: the peer script '" + o.peer_path + "' times the sizes file's sizes: give --sizes");
  if (!std::filesystem::is_regular_file(o.peer_path))
    throw UserError("error: cannot open peer script '" + o.peer_path + "'");
  const bool gpu =
      runtime::open_device(o.device, o.target.empty() ? "" : target_api(parse_target(o.target)))->info().gpu;
  const std::string out =
      (std::filesystem::temp_directory_path() / ("ksmith_peer_" + std::to_string(::getpid()) + ".json")).string();
  std::fprintf(stderr, "peer: %s %s on %s...\n", o.python.c_str(), o.peer_path.c_str(), gpu ? "cuda" : "cpu");
  ChildRun child = run_child({o.python, o.peer_path, o.sizes_path, out, "--device", gpu ? "cuda" : "cpu"},
                             o.time_limit_s * static_cast<double>(std::max<size_t>(problems, 1)));
  std::string text;
  if (std::ifstream in{out}) text.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(out);
  nlohmann::json peer = nlohmann::json::parse(text, nullptr, false);
  if (child.started && !child.timed_out && child.exit_status == 0 && peer.is_object()) return peer;
  std::string why = !child.started      ? child.err
                    : child.timed_out   ? "it ran past its time limit"
                    : child.err.empty() ? "it exited with status " + std::to_string(child.exit_status)
                                        : child.err.substr(child.err.rfind('\n', child.err.size() - 2) + 1);
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return {{"error", "the peer script failed: " + why}};
}

// "PyTorch 2.11 on cuda: eager; torch.compile", or why there is no peer.
std::string peer_note(const nlohmann::json &peer) {
  if (peer.contains("error")) return "unavailable: " + peer["error"].get<std::string>();
  std::string note =
      "PyTorch " + peer.value("torch", std::string("?")) + " eager on " + peer.value("device", std::string("?"));
  if (peer.contains("compile")) note += "; torch.compile " + peer["compile"].get<std::string>();
  return note;
}

// Every spec of the folder, each evaluated in a child process (its schedule beside
// it, its sizes from the sizes file), against the peer's times.
int bench_command(const std::string &dir, const BenchOptions &o) {
  std::vector<std::filesystem::path> specs;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".ks") specs.push_back(entry.path());
  if (ec) throw UserError("error: cannot read suite folder '" + dir + "': " + ec.message());
  if (specs.empty()) throw UserError("error: suite folder '" + dir + "' holds no .ks specs");
  std::sort(specs.begin(), specs.end());
  std::map<std::string, std::string> sizes;
  if (!o.sizes_path.empty()) sizes = read_sizes_file(o.sizes_path);
  // The peer first: its times are taken before the suite's, on an idle device.
  const nlohmann::json peer = peer_times(o, specs.size());
  const std::string note = peer_note(peer);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<BenchProblem> results;
  nlohmann::json records = nlohmann::json::array();
  for (const std::filesystem::path &spec : specs) {
    BenchProblem p;
    p.name = spec.stem().string();
    p.level = kernelbench_level(read_source_file(spec.string(), "spec")->text);
    std::vector<std::string> args = {spec.string()};
    if (!o.target.empty()) args.insert(args.end(), {"--target", o.target});
    if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
    if (sizes.count(p.name)) args.insert(args.end(), {"--size", sizes.at(p.name)});
    std::filesystem::path schedule = spec;
    schedule.replace_extension(".sched");
    if (std::filesystem::exists(schedule)) args.insert(args.end(), {"--schedule", schedule.string()});
    IsolatedRun run = run_isolated(self, args, o.time_limit_s);
    p.correct = run.ok;
    p.failure = run.ok ? "" : run.failure;
    if (run.record && run.record->contains("time") && (*run.record)["time"].contains("median_ms")) {
      p.ms = (*run.record)["time"]["median_ms"].get<double>();
      p.cv = (*run.record)["time"]["cv"].get<double>();
    }
    if (peer.contains("problems") && peer["problems"].contains(p.name)) {
      const nlohmann::json &times = peer["problems"][p.name];
      if (times.contains("median_ms")) p.peer_ms = times["median_ms"].get<double>();
      if (times.contains("compiled_ms")) p.compiled_ms = times["compiled_ms"].get<double>();
    }
    records.push_back({{"problem", p.name},
                       {"level", p.level},
                       {"correct", p.correct},
                       {"failure", p.failure},
                       {"record", run.record ? *run.record : nlohmann::json()},
                       {"seconds", run.seconds}});
    if (p.peer_ms) records.back()["peer_ms"] = *p.peer_ms;
    if (p.compiled_ms) records.back()["compiled_ms"] = *p.compiled_ms;
    results.push_back(p);
  }
  std::map<int, std::vector<BenchProblem>> by_level;
  for (const BenchProblem &p : results) by_level[p.level].push_back(p);
  const bool compiled =
      std::any_of(results.begin(), results.end(), [](const BenchProblem &p) { return p.compiled_ms; });
  if (o.json) {
    nlohmann::json j = {{"suite", dir}, {"peer", note}, {"problems", records}};
    j["metrics"]["all"] = metrics_json(bench_metrics(results));
    for (const auto &[level, problems] : by_level)
      j["metrics"]["level " + std::to_string(level)] = metrics_json(bench_metrics(problems));
    if (compiled) j["metrics"]["all, against torch.compile"] = metrics_json(bench_metrics(against_compiled(results)));
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("suite %s (%zu problems); peer: %s\n\n", dir.c_str(), results.size(), note.c_str());
  std::printf("%-22s %5s %-8s %12s %7s %12s %9s %12s %9s\n", "problem", "level", "correct", "ms", "spread", "eager ms",
              "speedup", "compiled ms", "speedup");
  for (const BenchProblem &p : results) {
    auto number = [](std::optional<double> v, const char *format) {
      char text[32];
      if (!v) return std::string("-");
      std::snprintf(text, sizeof text, format, *v);
      return std::string(text);
    };
    std::printf("%-22s %5d %-8s %12s %7s %12s %9s %12s %9s%s%s\n", p.name.c_str(), p.level, p.correct ? "yes" : "NO",
                number(p.ms, "%.4f").c_str(),
                number(p.cv ? std::optional<double>(100 * *p.cv) : std::nullopt, "%.2f%%").c_str(),
                number(p.peer_ms, "%.4f").c_str(), number(p.speedup(), "%.2fx").c_str(),
                number(p.compiled_ms, "%.4f").c_str(), number(p.speedup_over(p.compiled_ms), "%.2fx").c_str(),
                p.failure.empty() ? "" : "  ", p.failure.c_str());
  }
  std::printf("\n");
  for (const auto &[level, problems] : by_level)
    std::printf("level %d: %s\n", level, metrics_line(bench_metrics(problems)).c_str());
  std::printf("all: %s\n", metrics_line(bench_metrics(results)).c_str());
  if (compiled)
    std::printf("all, against torch.compile: %s\n", metrics_line(bench_metrics(against_compiled(results))).c_str());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kernelsmith: operator specs to fast OpenCL and SPIR-V kernels", "ksmith"};
  app.require_subcommand(1);

  bool devices_json = false;
  auto *devices = app.add_subcommand("devices", "List the devices of every API");
  devices->add_flag("--json", devices_json, "Print JSON");

  std::string spec_path, emit, output, device_selector, schedule_path, target_text;
  auto add_target = [&](CLI::App *command) {
    return command->add_option("--target", target_text, "Code for: opencl (OpenCL devices) or spirv (Vulkan devices)")
        ->check(CLI::IsMember({"opencl", "spirv"}));
  };
  std::vector<std::string> sizes, check_sizes;
  auto *compile = app.add_subcommand("compile", "Compile a spec and print the chosen stage");
  compile->add_option("spec", spec_path, "The .ks spec")->required();
  compile->add_option("--schedule", schedule_path, "Apply the schedule in FILE");
  compile->add_option("--size", sizes, "Override a size: NAME=VALUE (repeatable, or comma-separated)");
  add_target(compile);
  compile->add_option("--emit", emit, "What to print: graph, loops, opencl, glsl or spirv (default: the target's code)")
      ->check(CLI::IsMember({"graph", "loops", "opencl", "glsl", "spirv"}));
  compile->add_option("-o,--output", output, "Write to FILE instead of standard output");

  InspectOptions inspect_options;
  auto *inspect = app.add_subcommand("inspect", "Print the IR after each pass");
  inspect->add_option("spec", spec_path, "The .ks spec")->required();
  inspect->add_option("--schedule", schedule_path, "Apply the schedule in FILE");
  inspect->add_option("--size", sizes, "Override a size: NAME=VALUE");
  add_target(inspect);
  auto *all_flag =
      inspect->add_flag("--print-after-all", inspect_options.all, "Print the IR after every pass (default)");
  auto *after_flag =
      inspect->add_option("--print-after", inspect_options.after,
                          "Print the IR after one pass: elaborate, lower, schedule, bind-unbound-kernels, codegen");
  auto *changed_flag =
      inspect->add_flag("--print-changed", inspect_options.changed, "Print the IR after passes that change it");
  all_flag->excludes(after_flag)->excludes(changed_flag);
  after_flag->excludes(changed_flag);
  inspect->add_flag("--time-passes", inspect_options.time_passes, "Print each pass's time to standard error");

  EvalOptions options;
  bool run_json = false, no_time = false;
  uint64_t seed = 0;
  auto *run = app.add_subcommand("run", "Check a spec against the reference, then time it");
  run->add_option("spec", spec_path, "The .ks spec")->required();
  run->add_option("--size", sizes, "Override a size of the timed run: NAME=VALUE");
  std::string kernel_path;
  auto *schedule_option = run->add_option("--schedule", schedule_path, "Apply the schedule in FILE");
  run->add_option("--kernel", kernel_path,
                  "Run the OpenCL C kernel body in FILE in place of the generated code (sizes as macros)")
      ->excludes(schedule_option);
  run->add_option("--check-size", check_sizes, "Override a size of the correctness check: NAME=VALUE");
  add_target(run);
  run->add_option("--device", device_selector,
                  "Device: opencl:N, vulkan:N, N, or part of its name (default: the first GPU of the target's API)");
  run->add_flag("--json", run_json, "Print the evaluation record as JSON");
  auto *seed_option = run->add_option("--seed", seed, "Seed of the random inputs (default: fresh each run)");
  run->add_option("--trials", options.trials, "Correctness trials, each with fresh inputs")->check(CLI::Range(1, 1000));
  run->add_flag("--no-time", no_time, "Check only");
  run->add_option("--batches", options.timing.batches, "Timed batches")->check(CLI::Range(1, 100000));
  run->add_option("--min-batch-ms", options.timing.min_batch_ms, "Shortest batch, in milliseconds")
      ->check(CLI::Range(0.0, 1e6));
  run->add_flag("--cold-cache", options.timing.cold_cache,
                "Flush the device's caches before each timed run, and time each run on its own");

  BenchOptions bench_options;
  std::string suite_dir;
  auto *bench = app.add_subcommand("bench", "Evaluate every spec of a folder (each in a child process) against a peer");
  bench->add_option("suite", suite_dir, "A folder of .ks specs (NAME.sched beside a spec is applied)")->required();
  bench->add_option("--sizes", bench_options.sizes_path, "Timed sizes: NAME SIZES lines (bench/sizes_*.txt)");
  bench->add_option("--peer", bench_options.peer_path,
                    "The peer: bench/torch_peer.py's JSON, or the script itself (.py), run first with --sizes");
  bench->add_option("--python", bench_options.python, "The Python that runs a peer script (default python3)");
  bench->add_option("--target", bench_options.target, "Code for: opencl or spirv")
      ->check(CLI::IsMember({"opencl", "spirv"}));
  bench->add_option("--device", bench_options.device, "Device, as for run");
  bench->add_option("--time-limit", bench_options.time_limit_s, "Seconds each problem may take (default 600)")
      ->check(CLI::Range(1.0, 86400.0));
  bench->add_flag("--json", bench_options.json, "Print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (devices->parsed()) return devices_command(devices_json);
    if (bench->parsed()) return bench_command(suite_dir, bench_options);
    std::optional<Target> target;
    if (!target_text.empty()) target = parse_target(target_text);
    if (compile->parsed()) return compile_command(spec_path, schedule_path, sizes, target, emit, output);
    if (inspect->parsed()) {
      static const char *passes[] = {"elaborate", "lower", "schedule", "bind-unbound-kernels", "codegen"};
      if (!inspect_options.after.empty() &&
          std::find(std::begin(passes), std::end(passes), inspect_options.after) == std::end(passes))
        throw UserError("error: --print-after: unknown pass '" + inspect_options.after +
                        "'; passes are elaborate, lower, schedule, bind-unbound-kernels, codegen");
      inspect_options.target = target;
      return inspect_command(spec_path, schedule_path, sizes, inspect_options);
    }
    if (run->parsed()) {
      options.sizes = overrides(sizes, "--size");
      options.check_sizes = overrides(check_sizes, "--check-size");
      if (*seed_option) options.seed = seed;
      options.time = !no_time;
      options.schedule = schedule_from(schedule_path);
      if (!kernel_path.empty()) {
        options.kernel_source = read_source_file(kernel_path, "kernel body")->text;
        if (options.kernel_source.find_first_not_of(" \t\r\n") == std::string::npos)
          throw UserError("error: kernel body '" + kernel_path + "' is empty");
      }
      return run_command(spec_path, options, device_selector, target, run_json);
    }
  } catch (const UserError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const runtime::DeviceError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
