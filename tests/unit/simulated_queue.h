// A deterministic evaluation queue for the search's tests: no device, no child
// process. An evaluation's record is a function of the candidate alone (its features
// from the compiler, a speedup from its program's hash, one in seven incorrect), so
// that two runs of a search, or a run killed and resumed, see the same results. On a
// learnable landscape the speedup follows the program's structure instead (larger
// work-groups and fewer launches faster, a little noise from the hash), as a device's
// does: what a cost model can learn.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <thread>

#include "evolve/evaluation/evaluate.h"
#include "evolve/search/cost_features.h"
#include "evolve/search/genome.h"
#include "evolve/search/run_db.h"
#include "evolve/search/search.h"
#include "evolve/workers.h"
#include "frontend/parser.h"
#include "passes/schedule.h"

namespace ks::test {

/// A search's progress, unseen.
class NullProgress : public ProgressSink {
 public:
  void update(const Progress &) override {}
  void note(const std::string &) override {}
};

/// A folder of its own for a test's run, under the temporary directory and named
/// after the process, removed when the test ends, failed or not (declared before the
/// run's database, which closes first).
struct RunFolder {
  explicit RunFolder(const std::string &name)
      : dir((std::filesystem::temp_directory_path() / ("ks_evolve_" + std::to_string(::getpid()) + "_" + name))
                .string()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~RunFolder() { std::filesystem::remove_all(dir); }
  RunFolder(const RunFolder &) = delete;
  RunFolder &operator=(const RunFolder &) = delete;
  std::string dir;
};

/// What a short search on a device found: its outcome, its correct candidates, and
/// the fastest of them (timed again beside the naive kernel where it was) with its
/// schedule.
struct DeviceSearch {
  SearchOutcome outcome;
  std::vector<CandidateRow> correct;
  double best = 0;
  std::string schedule;
};

/// A short search of examples/NAME.ks at the given timed sizes on the first OpenCL
/// device, through child processes of ksmith as `ksmith evolve` runs them (two
/// workers, three batches of at least min_batch_ms, the best three timed again at the
/// end, an evaluation killed after 60 s: PoCL 3.1 never finishes compiling some).
inline DeviceSearch device_search(const std::string &name, const std::string &sizes, int budget, double min_batch_ms,
                                  const std::string &dir) {
  SearchSetup setup;
  setup.spec_path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
  setup.config.budget = budget;
  setup.config.workers = 2;
  setup.config.sizes = sizes;
  setup.config.batches = 3;
  setup.config.min_batch_ms = min_batch_ms;
  setup.config.final_top = 3;
  setup.config.time_limit_s = 60;
  setup.ksmith = KS_KSMITH;
  setup.work_dir = dir;
  setup.device = runtime::find_device("", "opencl");
  setup.target = "opencl";
  RunDatabase db(dir + "/evolve.db");
  WorkerQueue queue(setup.ksmith, device_slots({setup.device}, 2));
  NullProgress progress;
  std::atomic<bool> stop{false};
  DeviceSearch out;
  out.outcome = run_search(db, std::nullopt, setup, queue, progress, stop);
  for (const CandidateRow &c : db.candidates(out.outcome.run))
    if (c.status == CandidateStatus::Correct) {
      out.correct.push_back(c);
      const double s = c.retimed_speedup > 0 ? c.retimed_speedup : c.speedup;
      if (s > out.best) out.best = s, out.schedule = c.schedule;
    }
  return out;
}

/// The device the simulated evaluations pretend to run on.
inline runtime::DeviceInfo simulated_device() {
  runtime::DeviceInfo d;
  d.api = "opencl";
  d.name = "simulated";
  d.platform = "tests";
  d.max_work_group_size = 1024;
  d.max_work_item_sizes = {1024, 1024, 64};
  d.local_memory_bytes = 48 * 1024;
  d.global_memory_bytes = 1ull << 34;
  d.max_allocation_bytes = 1ull << 32;
  return d;
}

class SimulatedQueue : public EvaluationQueue {
 public:
  explicit SimulatedQueue(int delay_ms = 0, bool learnable = false) : delay_ms_(delay_ms), learnable_(learnable) {}
  /// From the nth job on, every evaluation dies without a record, as when the device
  /// vanishes mid-run.
  void break_device_after(int n) { broken_after_ = n; }
  /// Evaluations honour --give-up-ms as the evaluator does (off by default, so that
  /// the other tests' searches see every candidate timed).
  void give_up_when_asked() { give_up_ = true; }
  /// Timing again answers with JSON of the wrong shape (times that are not times).
  void garble_retimes() { garble_retimes_ = true; }
  /// From the nth evaluation on, an evaluation does not end by itself, as a compile
  /// that hangs: it runs until its job's time limit, unless stopped.
  void hang_evaluations_after(int n) { hang_after_ = n; }
  /// The naive kernel's time when timed again beside the best (kNaiveRetimedMs by
  /// default): a small one makes every candidate slower than it there.
  void retime_naive_at(double ms) { naive_retimed_ms_ = ms; }
  /// Every job submitted, in order.
  const std::vector<Job> &submitted() const { return submitted_; }
  size_t slots() const override { return 1; }
  size_t running() const override { return jobs_.size(); }
  void submit(Job job) override {
    if (job.args[0] == "run" && hang_after_ >= 0 && ++evaluations_ > hang_after_)
      hang_until_[job.ticket] = std::chrono::steady_clock::now() + seconds(job.time_limit_s);
    submitted_.push_back(job);
    jobs_.push_back(std::move(job));
  }
  std::vector<JobResult> wait(double timeout_s) override {
    if (jobs_.empty()) return {};
    if (auto h = hang_until_.find(jobs_.front().ticket); h != hang_until_.end()) {
      const auto now = std::chrono::steady_clock::now();
      if (now < h->second) {
        std::this_thread::sleep_until(std::min(h->second, now + seconds(timeout_s)));
        return {};
      }
      ChildRun killed;
      killed.started = true;
      killed.timed_out = true;
      killed.exit_status = -1;
      JobResult r{jobs_.front().ticket, killed};
      jobs_.pop_front();
      ++done_;
      return {r};
    }
    if (delay_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    Job job = jobs_.front();
    jobs_.pop_front();
    ++done_;
    if (broken_after_ >= 0 && done_ > broken_after_) {
      ChildRun dead;
      dead.started = true;
      dead.exit_status = 1;
      dead.err = "error: no OpenCL device found";
      return {JobResult{job.ticket, dead}};
    }
    if (job.args[0] != "run" && garble_retimes_) {
      ChildRun garbled;
      garbled.started = true;
      garbled.exit_status = 0;
      // As many times as asked for, none of them a time.
      nlohmann::json times = nlohmann::json::array();
      for (const std::string &a : job.args)
        if (a == "--schedule" || a == "--naive")
          times.push_back(times.size() % 2 ? nlohmann::json{{"median_ms", "fast"}} : nlohmann::json(1));
      garbled.out = nlohmann::json{{"times", times}}.dump();
      return {JobResult{job.ticket, garbled}};
    }
    return {JobResult{job.ticket, job.args[0] == "run" ? evaluate(job.args, learnable_, give_up_)
                                                       : retime(job.args, learnable_, naive_retimed_ms_)}};
  }
  void stop() override {
    jobs_.clear();
    ++stops_;
  }
  int done() const { return done_; }
  int stops() const { return stops_; }

  static constexpr double kNaiveRetimedMs = 12.0;

  // A candidate's simulated speedup over the naive kernel: 0.25x to 4x by its hash,
  // or on the learnable landscape by its structure against the naive kernel's.
  static double speedup(const Compiled &c, const std::string &id, bool naive, bool learnable) {
    if (naive) return 1.0;
    uint64_t h = std::stoull(id, nullptr, 16);
    if (!learnable) return 0.25 + static_cast<double>(h % 3751) / 1000.0;
    // The naive kernel's, once per spec and sizes (every evaluation would replay it).
    static std::map<std::string, double> naive_speed;
    const std::string key = c.graph.name + " " + describe_sizes(c.graph);
    if (!naive_speed.count(key)) naive_speed[key] = structural_speed(*replay(c.graph, {}).program);
    return structural_speed(c.program) / naive_speed.at(key) * (0.95 + static_cast<double>(h % 101) / 1000.0);
  }
  static double structural_speed(const Program &program) {
    const std::vector<float> f = cost_features(program);
    const std::vector<std::string> &names = cost_feature_names();
    auto feature = [&](const std::string &name) {
      return static_cast<double>(f[static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin())]);
    };
    return std::exp2(0.3 * feature("log_group_size_min") - 0.5 * feature("kernels") + 0.5 * feature("coalesced_share"));
  }

 private:
  int delay_ms_;
  bool learnable_;
  bool give_up_ = false;
  bool garble_retimes_ = false;
  double naive_retimed_ms_ = kNaiveRetimedMs;
  std::deque<Job> jobs_;
  std::vector<Job> submitted_;
  int done_ = 0;
  int broken_after_ = -1;
  int hang_after_ = -1, evaluations_ = 0, stops_ = 0;
  std::map<uint64_t, std::chrono::steady_clock::time_point> hang_until_;  // a hung evaluation's time limit

  static std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
  }

  static std::string value_of(const std::vector<std::string> &args, const std::string &flag) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == flag) return args[i + 1];
    return "";
  }

  // The candidate of a `run` or `time` job's schedule file: its program and identity.
  static std::pair<Compiled, std::string> compiled(const std::string &spec_path, const std::string &schedule_path,
                                                   const std::string &sizes) {
    frontend::SizeOverrides o;
    if (!sizes.empty()) frontend::parse_size_assignments(sizes, &o);
    Compiled c = compile_spec(frontend::load_spec(spec_path), frontend::SizeSet::Default, o,
                              load_schedule(schedule_path), Target::OpenCL);
    return {c, candidate_identity(c.program)};
  }

  static ChildRun evaluate(const std::vector<std::string> &args, bool learnable, bool give_up) {
    auto [c, id] = compiled(args[1], value_of(args, "--schedule"), value_of(args, "--size"));
    const Schedule schedule = load_schedule(value_of(args, "--schedule"));
    const bool naive = schedule.steps.empty();
    nlohmann::json record;
    record["features"] = program_features(c.graph, c.program, static_cast<int>(schedule.steps.size()),
                                          static_cast<int64_t>(c.code.source.size()))
                             .to_json();
    const bool wrong = !naive && std::stoull(id, nullptr, 16) % 7 == 0;
    record["ok"] = !wrong;
    record["verdict"] = wrong ? "incorrect at N=5: y[0] is 1, expected 2 (1 elements over the tolerance)" : "correct";
    const double s = speedup(c, id, naive, learnable);
    record["time"] = {{"median_ms", 10.0 / s}, {"cv", 0.01}, {"speedup", s}};
    const std::string limit = value_of(args, "--give-up-ms");
    if (give_up && !wrong && !limit.empty() && 10.0 / s > std::stod(limit)) {
      record["ok"] = false;
      record["verdict"] = "slow: a run at N=64, D=512 took " + std::to_string(10.0 / s) + " ms";
      record["time"]["gave_up_ms"] = std::stod(limit);
    }
    ChildRun run;
    run.started = true;
    run.exit_status = record["ok"] ? 0 : 1;
    run.out = record.dump();
    run.seconds = 0.01;
    return run;
  }

  // Side by side, each a little slower than first measured, more so the faster; the
  // naive kernel (--naive, first) at 12 ms against its 10 ms when evaluated, as a CPU
  // device runs one kernel at another speed in another process.
  static ChildRun retime(const std::vector<std::string> &args, bool learnable, double naive_ms) {
    nlohmann::json times = nlohmann::json::array();
    if (std::find(args.begin(), args.end(), "--naive") != args.end())
      times.push_back({{"median_ms", naive_ms}, {"cv", 0.002}});
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--schedule") {
        auto [c, id] = compiled(args[1], args[i + 1], value_of(args, "--size"));
        double s = speedup(c, id, load_schedule(args[i + 1]).steps.empty(), learnable);
        times.push_back({{"median_ms", 10.0 / (s * (1 - 0.01 * s))}, {"cv", 0.002}});
      }
    ChildRun run;
    run.started = true;
    run.exit_status = 0;
    run.out = nlohmann::json{{"times", times}}.dump();
    return run;
  }
};

}  // namespace ks::test
