// ksmith tune's suite: searches in child processes, spread over the devices.
#include "evolve/search/tune.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "evolve/search/artifacts.h"
#include "evolve/search/run_db.h"
#include "evolve/workers.h"
#include "frontend/elaborate.h"
#include "ir/diagnostic.h"

namespace ks {

namespace {

namespace fs = std::filesystem;

struct Problem {
  std::string name, spec, sizes;
  fs::path run_dir, db;
  fs::path sched, summary;  // what the tuned folder gets
  bool resume = false;      // its database holds a run that did not finish
};

// The last non-empty line of text.
std::string last_line(const std::string &text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Whether the problem's database holds a run, and whether its last run finished.
std::optional<std::string> last_run_status(const Problem &p) {
  if (!fs::exists(p.db)) return std::nullopt;
  RunDatabase db(p.db.string());
  std::vector<RunRow> runs = db.runs();
  if (runs.empty()) return std::nullopt;
  return runs.back().status;
}

// The tuned folder's entries for a problem whose search ended: NAME.sched (its best,
// if any) and NAME.json (the summary of its last run, with the device), NAME.json last
// so that its presence says the problem is done.
TunedProblem export_problem(const Problem &p, const std::string &device) {
  TunedProblem t;
  t.name = p.name;
  t.device = device;
  RunDatabase db(p.db.string());
  std::vector<RunRow> runs = db.runs();
  if (runs.empty()) throw UserError("error: the search of " + p.name + " left no run in " + p.db.string());
  nlohmann::json summary = run_summary(db, runs.back());
  summary["tuned_on"] = device;
  const fs::path best = p.run_dir / "best.sched";
  if (fs::exists(best)) write_text_file(p.sched.string(), read_source_file(best.string(), "schedule")->text);
  write_text_file(p.summary.string(), summary.dump(2) + "\n");
  t.status = "tuned";
  t.evaluations = summary.value("evaluations", int64_t{0});
  t.seconds = summary.value("seconds", 0.0);
  if (summary.contains("best")) t.best = summary["best"].value("speedup", 0.0);
  return t;
}

// A problem's summary when it is done: its NAME.json.
std::optional<TunedProblem> done_problem(const Problem &p) {
  if (!fs::exists(p.summary)) return std::nullopt;
  nlohmann::json s =
      nlohmann::json::parse(read_source_file(p.summary.string(), "tuning summary")->text, nullptr, false);
  TunedProblem t;
  t.name = p.name;
  t.status = "tuned";
  if (s.is_object()) {
    t.device = s.value("tuned_on", std::string());
    t.evaluations = s.value("evaluations", int64_t{0});
    t.seconds = s.value("seconds", 0.0);
    if (s.contains("best") && s["best"].is_object()) t.best = s["best"].value("speedup", 0.0);
    if (s.value("status", std::string()) == "failed") t.status = "failed";
  }
  return t;
}

std::string describe(const TunedProblem &t) {
  char text[160];
  if (t.status == "tuned")
    std::snprintf(text, sizeof text, "best %.3gx after %lld evaluations (%.1f min)", t.best,
                  static_cast<long long>(t.evaluations), t.seconds / 60);
  else
    std::snprintf(text, sizeof text, "%s", t.status.c_str());
  return text;
}

// The suite's specs (its .ks files), in name order.
std::vector<fs::path> suite_specs(const TuneOptions &o) {
  std::error_code ec;
  std::vector<fs::path> specs;
  for (const auto &entry : fs::directory_iterator(o.suite_dir, ec))
    if (entry.path().extension() == ".ks") specs.push_back(entry.path());
  if (ec) throw UserError("error: cannot read the suite folder '" + o.suite_dir + "': " + ec.message());
  if (specs.empty()) throw UserError("error: the suite folder '" + o.suite_dir + "' holds no .ks specs");
  std::sort(specs.begin(), specs.end());
  return specs;
}

// The sizes file's sizes by spec name, each of a spec of the suite.
std::map<std::string, std::string> suite_sizes(const TuneOptions &o, const std::vector<fs::path> &specs) {
  std::map<std::string, std::string> sizes;
  if (!o.sizes_path.empty()) sizes = frontend::read_sizes_file(o.sizes_path);
  for (const auto &entry : sizes) {
    const std::string &name = entry.first;  // (Clang 15 captures no structured binding)
    if (std::none_of(specs.begin(), specs.end(), [&](const fs::path &s) { return s.stem() == name; }))
      throw UserError("error: " + o.sizes_path + " gives sizes for " + name + ", which is not a spec of " +
                      o.suite_dir + " (its specs: " + specs.front().stem().string() + ", ...)");
  }
  return sizes;
}

// The tuning's folder with its runs/: new, or an earlier tuning's to resume.
void make_out_dir(const TuneOptions &o) {
  const fs::path out = o.out_dir;
  const bool earlier = fs::exists(out / "runs");
  if (earlier && !o.resume)
    throw UserError("error: '" + o.out_dir + "' holds an earlier tuning (" + (out / "runs").string() +
                    "); go on with it with --resume, or give another --out");
  if (!earlier && o.resume) throw UserError("error: nothing to resume: '" + o.out_dir + "' holds no tuning");
  std::error_code ec;
  fs::create_directories(out / "runs", ec);
  if (ec) throw UserError("error: cannot create '" + (out / "runs").string() + "': " + ec.message());
}

// A spec's problem: where its search and its tuned folder's entries go.
Problem problem_of(const fs::path &spec, const fs::path &out, const std::map<std::string, std::string> &sizes) {
  Problem p;
  p.name = spec.stem().string();
  p.spec = spec.string();
  if (sizes.count(p.name)) p.sizes = sizes.at(p.name);
  p.run_dir = out / "runs" / p.name;
  p.db = p.run_dir / "evolve.db";
  p.sched = out / (p.name + ".sched");
  p.summary = out / (p.name + ".json");
  return p;
}

// The problems to search; those done before go into results (one whose search
// finished but was not exported is exported now).
std::vector<Problem> problems_left(const TuneOptions &o, const std::vector<fs::path> &specs,
                                   const std::map<std::string, std::string> &sizes, TuneProgress &progress,
                                   std::vector<TunedProblem> *results) {
  std::vector<Problem> todo;
  for (const fs::path &spec : specs) {
    Problem p = problem_of(spec, o.out_dir, sizes);
    if (std::optional<TunedProblem> done = done_problem(p)) {
      results->push_back(*done);
      continue;
    }
    const std::optional<std::string> status = last_run_status(p);
    if (status == "finished") {  // killed after its search, before its export
      results->push_back(export_problem(p, "(finished before)"));
      continue;
    }
    p.resume = status.has_value();
    if (!o.sizes_path.empty() && p.sizes.empty())
      progress.note("note: " + p.name + " is not in " + o.sizes_path + ": searched at its spec's sizes");
    todo.push_back(p);
  }
  return todo;
}

// The searches of the problems left, each a `ksmith evolve` child on a device of its
// own, started as devices come free; each one's outcome goes into results as it ends.
class SuiteRun {
 public:
  SuiteRun(const TuneOptions &o, TuneProgress &progress, std::vector<Problem> todo, size_t total,
           std::vector<TunedProblem> *results)
      : o_(o),
        progress_(progress),
        todo_(std::move(todo)),
        total_(total),
        results_(*results),
        slots_(o.devices.size()),
        limit_s_(o.minutes * 60 * 1.5 + 600) {}

  // Until every search ended, or stop was asked for and the searches running stopped.
  void run(const std::atomic<bool> &stop) {
    while (true) {
      if (stop && !stopping_) {
        stopping_ = true;
        for (auto &s : slots_)
          if (s) s->child->interrupt();
      }
      start_searches();
      const bool any = poll_searches();
      if (!any && (stopping_ || next_ >= todo_.size())) break;
    }
  }

 private:
  struct Running {
    Problem problem;
    std::unique_ptr<Child> child;
    double started = 0;
  };

  // The next problems on the devices free.
  void start_searches() {
    for (size_t slot = 0; slot < slots_.size() && !stopping_; ++slot) {
      if (slots_[slot] || next_ >= todo_.size()) continue;
      Problem p = todo_[next_++];
      const std::vector<std::string> argv = search_args(p, o_.devices[slot]);
      std::error_code ec;
      fs::create_directories(p.run_dir, ec);
      progress_.note("   " + p.name + " on " + o_.devices[slot] + (p.resume ? " (resumed)" : ""));
      // In this process's group: a kill of the tuning's group, or a Ctrl-C, reaches
      // the search too (its workers end with their standard input).
      slots_[slot] = Running{p, std::make_unique<Child>(argv, false, false), monotonic_seconds()};
      if (!slots_[slot]->child->started()) finish(slot, slots_[slot]->child->result(), false);
    }
  }

  std::vector<std::string> search_args(const Problem &p, const std::string &device) const {
    std::vector<std::string> argv = {o_.ksmith,     "evolve",    p.spec, "--out",     p.run_dir.string(),        "--db",
                                     p.db.string(), "--devices", device, "--minutes", std::to_string(o_.minutes)};
    if (!p.sizes.empty()) argv.insert(argv.end(), {"--size", p.sizes});
    if (!o_.config.empty()) argv.insert(argv.end(), {"--config", o_.config});
    if (o_.budget) argv.insert(argv.end(), {"--budget", std::to_string(*o_.budget)});
    if (o_.workers) argv.insert(argv.end(), {"--workers", std::to_string(*o_.workers)});
    if (!o_.target.empty()) argv.insert(argv.end(), {"--target", o_.target});
    if (!o_.dtype.empty() && !p.resume) argv.insert(argv.end(), {"--dtype", o_.dtype});
    if (p.resume) argv.push_back("--resume");
    return argv;
  }

  // Waits a little on each search running, finishing those that ended and killing
  // those past the limit. Whether any was running.
  bool poll_searches() {
    bool any = false;
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (!slots_[slot]) continue;
      any = true;
      Child &c = *slots_[slot]->child;
      const bool exited = c.poll(100);
      const bool late = !exited && monotonic_seconds() - slots_[slot]->started > limit_s_;
      if (late) {
        c.kill();
        while (!c.poll(1000)) {
        }
      }
      if (exited || late) finish(slot, c.result(), late);
    }
    return any;
  }

  // A search that ended: its log kept, its outcome exported or recorded, and said.
  void finish(size_t slot, const ChildRun &run, bool late) {
    const Problem &p = slots_[slot]->problem;
    const std::string &device = o_.devices[slot];
    TunedProblem t;
    t.name = p.name;
    t.device = device;
    write_text_file((p.run_dir / "log.txt").string(), run.out + run.err);
    if (!late && run.exit_status == 0) {
      t = export_problem(p, device);
    } else if (!late && run.exit_status == 130) {
      t.status = "stopped";
      stopping_ = true;
    } else {
      t.status = "failed";
      t.message = late ? "ran past " + std::to_string(static_cast<int>(limit_s_)) + " s and was killed"
                       : last_line(run.err.empty() ? run.out : run.err);
      // Said in the tuned folder too: a resume does not search it again.
      write_text_file(
          p.summary.string(),
          nlohmann::json{{"kernel", p.name}, {"status", "failed"}, {"message", t.message}, {"tuned_on", device}}.dump(
              2) +
              "\n");
    }
    results_.push_back(t);
    progress_.note("[" + std::to_string(results_.size()) + "/" + std::to_string(total_) + "] " + p.name + " on " +
                   device + ": " + (t.status == "failed" ? "failed: " + t.message : describe(t)));
    slots_[slot].reset();
  }

  const TuneOptions &o_;
  TuneProgress &progress_;
  const std::vector<Problem> todo_;
  const size_t total_;
  std::vector<TunedProblem> &results_;
  std::vector<std::optional<Running>> slots_;
  size_t next_ = 0;
  // A search that ran this much past its minutes (the final retime included) is killed.
  const double limit_s_;
  bool stopping_ = false;
};

}  // namespace

std::vector<TunedProblem> tune_suite(const TuneOptions &o, TuneProgress &progress, const std::atomic<bool> &stop) {
  const std::vector<fs::path> specs = suite_specs(o);
  const std::map<std::string, std::string> sizes = suite_sizes(o, specs);
  if (o.devices.empty()) throw UserError("error: ksmith tune needs a device");
  make_out_dir(o);
  std::vector<TunedProblem> results;
  std::vector<Problem> todo = problems_left(o, specs, sizes, progress, &results);
  char minutes[32];
  std::snprintf(minutes, sizeof minutes, "%g", o.minutes);
  progress.note("tuning " + std::to_string(todo.size()) + " of " + std::to_string(specs.size()) + " problems (" +
                std::to_string(results.size()) + " done before) on " + std::to_string(o.devices.size()) + " device" +
                (o.devices.size() == 1 ? "" : "s") + ", " + minutes + " minutes each");
  SuiteRun(o, progress, std::move(todo), specs.size(), &results).run(stop);
  std::sort(results.begin(), results.end(),
            [](const TunedProblem &a, const TunedProblem &b) { return a.name < b.name; });
  return results;
}

}  // namespace ks
