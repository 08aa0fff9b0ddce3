// ksmith run SPEC [--target opencl|spirv] [--schedule FILE] [--kernel FILE.cl] [--size N=V]...
//                 [--check-size N=V]... [--device SEL] [--seed S] [--trials N] [--no-time]
//                 [--batches R] [--min-batch-ms MS] [--cold-cache] [--precision fp32|tf32] [--json]
// Checks a spec (naive, scheduled, or a kernel body) against the reference, then
// times it; the record as text or JSON. Exit 0 when correct, 1 otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "evolve/evaluation/compare.h"
#include "evolve/workers.h"
#include "frontend/kernel_body.h"
#include "frontend/parser.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct RunOptions {
  std::string spec, schedule, kernel, device, target, lock, precision = "fp32", dtype;
  std::optional<double> baseline_ms;
  double baseline_cv = 0;
  std::vector<std::string> sizes, check_sizes;
  bool json = false, no_time = false;
  std::optional<uint64_t> seed;
  EvalOptions eval;
  Served *served = nullptr;  // a worker's: its device and cache
};

std::string format_index(const std::vector<int64_t> &index) {
  std::string out;
  for (int64_t i : index) out += (out.empty() ? "" : ", ") + std::to_string(i);
  return "[" + out + "]";
}

void print_check(const char *label, const CheckRecord &c) {
  std::printf("  %-7s %-28s %s  worst %s%s: %.8g for %.8g, %.2g of the %.3g allowed, %d trials\n", label,
              c.sizes.c_str(), c.passed ? "correct  " : "INCORRECT", c.tensor.c_str(), format_index(c.index).c_str(),
              c.got, c.expected, c.worst_fraction, c.allowed, c.trials);
  if (!c.passed)
    std::printf("          %lld elements over what is allowed: %s\n", static_cast<long long>(c.bad_elements),
                c.tolerance().c_str());
}

// A kernel body is the user's code, and on a CPU device (PoCL) its writes outside the
// buffers land in this process's memory: it corrupts the heap and the process dies of
// it, far from the cause. So the rest of `ksmith run` goes on in a child, forked before
// any device is opened (a process that has opened a driver must not fork); the parent
// passes on the child's exit status, and where a signal ended the child says which,
// and why. Returns in the child (nullopt), and where fork fails (the run stays here).
std::optional<int> run_body_in_child(const std::string &body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid <= 0) return std::nullopt;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int signal = WTERMSIG(status);
  if (signal == SIGINT) return 130;
  throw UserError("error: the kernel body " + body + " crashed the process that ran it (" + strsignal(signal) +
                  ", signal " + std::to_string(signal) +
                  "): on a CPU device its reads and writes outside the buffers reach the host's memory; check the "
                  "launch geometry (its plan's, or the generated program's: a body written for other sizes or "
                  "another schedule does not fit) and its bounds");
}

int run(RunOptions &o) {
  EvalOptions &options = o.eval;
  options.sizes = size_overrides(o.sizes, "--size");
  options.check_sizes = size_overrides(o.check_sizes, "--check-size");
  options.seed = o.seed;
  options.time = !o.no_time;
  options.schedule = schedule_from(o.schedule);
  options.precision = *parse_precision(o.precision);
  if (!o.kernel.empty()) {
    auto file = read_source_file(o.kernel, "kernel body");
    frontend::parse_kernel_body(file);  // its plan's syntax, said here with the line shown
    options.kernel_source = file->text;
    options.kernel_label = o.kernel;
  }
  frontend::Spec spec = frontend::load_spec(o.spec, frontend::parse_spec_dtype(o.dtype));
  // --size names sizes of the spec whether or not they are timed: with --no-time the
  // timed sizes are never elaborated, so they are checked here, before any device.
  if (!options.time) frontend::elaborate(spec, frontend::SizeSet::Default, options.sizes);
  std::optional<Target> target = parse_target(o.target);
  if (target)
    for (const char *api : {"opencl", "vulkan"})
      if (api != std::string(target_api(*target)) && o.device.rfind(std::string(api) + ":", 0) == 0)
        throw UserError("error: --device " + o.device + " is a " + api + " device; --target " + target_name(*target) +
                        " runs on " + target_api(*target) + " devices");
  if (!o.kernel.empty() && !o.served)  // a worker is a child of its own already
    if (std::optional<int> status = run_body_in_child(o.kernel)) return *status;
  std::unique_ptr<runtime::Device> own;
  runtime::Device *device = &open_device_for(o.served, &own, o.device, target ? target_api(*target) : "");
  if (o.served) options.cache = &o.served->cache;
  std::optional<DeviceLock> lock;
  if (!o.lock.empty()) {
    lock.emplace(o.lock);
    options.lock = &*lock;
  }
  if (o.baseline_ms) {
    options.baseline.emplace();
    options.baseline->median_ms = *o.baseline_ms;
    options.baseline->cv = o.baseline_cv;
  }
  EvalRecord r = evaluate(spec, o.spec, *device, options);
  if (o.json) {
    std::cout << r.to_json().dump(2) << "\n";
    return r.ok() ? 0 : 1;
  }
  const auto &d = r.device;
  std::printf("%s  (%s)\n  device  %s: %s [%s, driver %s]  target %s  tensors %s  precision %s%s\n", r.kernel.c_str(),
              r.spec.c_str(), d.selector().c_str(), d.name.c_str(), d.platform.c_str(), d.driver_version.c_str(),
              target_name(target_for(d)), r.tensor_types.c_str(), precision_name(r.precision),
              r.precision == Precision::TF32 && !d.matrix_units && !options.emulate_matrix_units
                  ? " (no matrix units here: every sum in fp32)"
                  : "");
  if (!r.failure || r.failure->sizes != "check") print_check("check", r.check);
  for (const std::string &flag : r.hacking_flags) std::printf("  FLAGGED the kernel %s\n", flag.c_str());
  if (r.time) {
    const TimeRecord &t = *r.time;
    if (t.versus_naive) print_check("versus", *t.versus_naive);  // the reference, at the timed sizes
    if (t.timing.batches > 0) {
      double seconds = t.timing.median_ms * 1e-3;
      std::printf("  time    %-28s median %.4f ms  spread %.2f%% (%d batches x %d runs%s)  %s  %s\n", t.sizes.c_str(),
                  t.timing.median_ms, 100 * t.timing.cv, t.timing.batches, t.timing.runs_per_batch,
                  t.timing.cold_cache ? ", cold caches" : "", human_rate(t.cost.bytes / seconds, "B/s").c_str(),
                  human_rate(t.cost.flops / seconds, "FLOP/s").c_str());
      if (t.versus_naive)
        std::printf("  naive   %-28s median %.4f ms  spread %.2f%%  speedup %.2fx\n", t.sizes.c_str(),
                    t.baseline.median_ms, 100 * t.baseline.cv, t.speedup());
    }
    if (!t.after_timing_correct) std::printf("          FAILED: %s\n", t.problem.c_str());
    if (t.gave_up_ms) std::printf("  slow    %s\n", r.verdict().c_str());
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

}  // namespace

Command add_run(CLI::App &app, Served *served) {
  auto o = std::make_shared<RunOptions>();
  o->served = served;
  CLI::App *command = app.add_subcommand("run", "Check a spec against the reference, then time it");
  add_spec_options(command, &o->spec, &o->schedule, &o->sizes);
  command->add_option("--kernel", o->kernel,
                      "Run the OpenCL C kernel body in FILE in place of the generated code: launched by its own "
                      "plan (a '/* ksmith plan ... */' comment, README), or without one with the naive program's "
                      "kernels and geometry (or --schedule's), sizes as macros");
  command->add_option("--check-size", o->check_sizes, "Override a size of the correctness check: NAME=VALUE");
  add_target_option(command, &o->target);
  command->add_option(
      "--device", o->device,
      "Device: opencl:N, vulkan:N, N, or part of its name (default: the first GPU of the target's API)");
  command->add_flag("--json", o->json, "Print the evaluation record as JSON");
  command->add_option("--seed", o->seed, "Seed of the random inputs (default: fresh each run)");
  command->add_option("--trials", o->eval.trials, "Correctness trials, each with fresh inputs")
      ->check(CLI::Range(1, 1000));
  command->add_flag("--no-time", o->no_time, "Check only");
  command->add_flag("--async-copies-in-order", o->eval.async_copies_in_order,
                    "Where the device cannot copy ahead (no cp.async), run async_copy's copies in order: the "
                    "schedule's rings and slots are checked all the same (the schedule fuzzer's)");
  command->add_flag(
      "--emulate-matrix-units", o->eval.emulate_matrix_units,
      "Where the device has no matrix units, run tensorize's matrix loops emulated in portable OpenCL C or GLSL "
      "(the instruction's fragment layout and TF32 rounding; how the tests check them on PoCL)");
  add_precision_option(command, &o->precision);
  add_dtype_option(command, &o->dtype);
  command->add_option("--batches", o->eval.timing.batches, "Timed batches")->check(CLI::Range(1, 100000));
  command->add_option("--min-batch-ms", o->eval.timing.min_batch_ms, "Shortest batch, in milliseconds")
      ->check(CLI::Range(0.0, 1e6));
  command->add_flag("--cold-cache", o->eval.timing.cold_cache,
                    "Flush the device's caches before each timed run, and time each run on its own");
  command
      ->add_option("--baseline-ms", o->baseline_ms,
                   "The naive kernel's time at the timed sizes, measured before: it is not timed again")
      ->check(CLI::PositiveNumber);
  command->add_option("--baseline-cv", o->baseline_cv, "The spread of --baseline-ms")->check(CLI::Range(0.0, 10.0));
  command
      ->add_option("--give-up-ms", o->eval.give_up_ms,
                   "Stop when a run at the timed sizes, and the one after it, take longer than this: not timed "
                   "further nor checked there (exit 1, verdict 'slow')")
      ->check(CLI::PositiveNumber);
  command->add_option("--device-lock", o->lock,
                      "A lock file shared with other evaluations on the device: held shared while checking, alone "
                      "while timing (ksmith evolve passes it)");
  return {command, [o] { return run(*o); }};
}

}  // namespace ks::cli
