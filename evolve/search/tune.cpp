// ksmith tune's suite: searches in child processes, spread over the devices.
#include "evolve/search/tune.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

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

}  // namespace

std::vector<TunedProblem> tune_suite(const TuneOptions &o, TuneProgress &progress, const std::atomic<bool> &stop) {
  std::error_code ec;
  std::vector<fs::path> specs;
  for (const auto &entry : fs::directory_iterator(o.suite_dir, ec))
    if (entry.path().extension() == ".ks") specs.push_back(entry.path());
  if (ec) throw UserError("error: cannot read the suite folder '" + o.suite_dir + "': " + ec.message());
  if (specs.empty()) throw UserError("error: the suite folder '" + o.suite_dir + "' holds no .ks specs");
  std::sort(specs.begin(), specs.end());
  std::map<std::string, std::string> sizes;
  if (!o.sizes_path.empty()) sizes = frontend::read_sizes_file(o.sizes_path);
  for (const auto &entry : sizes) {
    const std::string &name = entry.first;  // (Clang 15 captures no structured binding)
    if (std::none_of(specs.begin(), specs.end(), [&](const fs::path &s) { return s.stem() == name; }))
      throw UserError("error: " + o.sizes_path + " gives sizes for " + name + ", which is not a spec of " +
                      o.suite_dir + " (its specs: " + specs.front().stem().string() + ", ...)");
  }
  if (o.devices.empty()) throw UserError("error: ksmith tune needs a device");
  const fs::path out = o.out_dir;
  const bool earlier = fs::exists(out / "runs");
  if (earlier && !o.resume)
    throw UserError("error: '" + o.out_dir + "' holds an earlier tuning (" + (out / "runs").string() +
                    "); go on with it with --resume, or give another --out");
  if (!earlier && o.resume) throw UserError("error: nothing to resume: '" + o.out_dir + "' holds no tuning");
  fs::create_directories(out / "runs", ec);
  if (ec) throw UserError("error: cannot create '" + (out / "runs").string() + "': " + ec.message());

  std::vector<Problem> todo;
  std::vector<TunedProblem> results;
  for (const fs::path &spec : specs) {
    Problem p;
    p.name = spec.stem().string();
    p.spec = spec.string();
    if (sizes.count(p.name)) p.sizes = sizes.at(p.name);
    p.run_dir = out / "runs" / p.name;
    p.db = p.run_dir / "evolve.db";
    p.sched = out / (p.name + ".sched");
    p.summary = out / (p.name + ".json");
    if (std::optional<TunedProblem> done = done_problem(p)) {
      results.push_back(*done);
      continue;
    }
    const std::optional<std::string> status = last_run_status(p);
    if (status == "finished") {  // killed after its search, before its export
      results.push_back(export_problem(p, "(finished before)"));
      continue;
    }
    p.resume = status.has_value();
    if (!o.sizes_path.empty() && p.sizes.empty())
      progress.note("note: " + p.name + " is not in " + o.sizes_path + ": searched at its spec's sizes");
    todo.push_back(p);
  }
  const size_t total = specs.size();
  char minutes[32];
  std::snprintf(minutes, sizeof minutes, "%g", o.minutes);
  progress.note("tuning " + std::to_string(todo.size()) + " of " + std::to_string(total) + " problems (" +
                std::to_string(results.size()) + " done before) on " + std::to_string(o.devices.size()) + " device" +
                (o.devices.size() == 1 ? "" : "s") + ", " + minutes + " minutes each");

  struct Running {
    Problem problem;
    std::unique_ptr<Child> child;
    double started = 0;
  };
  std::vector<std::optional<Running>> slots(o.devices.size());
  size_t next = 0;
  // A search that ran this much past its minutes (the final retime included) is killed.
  const double limit_s = o.minutes * 60 * 1.5 + 600;
  bool stopping = false;
  auto finish = [&](size_t slot, const ChildRun &run, bool late) {
    const Problem &p = slots[slot]->problem;
    const std::string &device = o.devices[slot];
    TunedProblem t;
    t.name = p.name;
    t.device = device;
    write_text_file((p.run_dir / "log.txt").string(), run.out + run.err);
    if (!late && run.exit_status == 0) {
      t = export_problem(p, device);
    } else if (!late && run.exit_status == 130) {
      t.status = "stopped";
      stopping = true;
    } else {
      t.status = "failed";
      t.message = late ? "ran past " + std::to_string(static_cast<int>(limit_s)) + " s and was killed"
                       : last_line(run.err.empty() ? run.out : run.err);
      // Said in the tuned folder too: a resume does not search it again.
      write_text_file(
          p.summary.string(),
          nlohmann::json{{"kernel", p.name}, {"status", "failed"}, {"message", t.message}, {"tuned_on", device}}.dump(
              2) +
              "\n");
    }
    results.push_back(t);
    progress.note("[" + std::to_string(results.size()) + "/" + std::to_string(total) + "] " + p.name + " on " + device +
                  ": " + (t.status == "failed" ? "failed: " + t.message : describe(t)));
    slots[slot].reset();
  };
  while (true) {
    if (stop && !stopping) {
      stopping = true;
      for (auto &s : slots)
        if (s) s->child->interrupt();
    }
    for (size_t slot = 0; slot < slots.size() && !stopping; ++slot) {
      if (slots[slot] || next >= todo.size()) continue;
      Problem p = todo[next++];
      std::vector<std::string> argv = {
          o.ksmith,      "evolve",    p.spec,          "--out",     p.run_dir.string(),       "--db",
          p.db.string(), "--devices", o.devices[slot], "--minutes", std::to_string(o.minutes)};
      if (!p.sizes.empty()) argv.insert(argv.end(), {"--size", p.sizes});
      if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
      if (o.budget) argv.insert(argv.end(), {"--budget", std::to_string(*o.budget)});
      if (o.workers) argv.insert(argv.end(), {"--workers", std::to_string(*o.workers)});
      if (!o.target.empty()) argv.insert(argv.end(), {"--target", o.target});
      if (p.resume) argv.push_back("--resume");
      fs::create_directories(p.run_dir, ec);
      progress.note("   " + p.name + " on " + o.devices[slot] + (p.resume ? " (resumed)" : ""));
      // In this process's group: a kill of the tuning's group, or a Ctrl-C, reaches
      // the search too (its workers end with their standard input).
      slots[slot] = Running{p, std::make_unique<Child>(argv, false, false), monotonic_seconds()};
      if (!slots[slot]->child->started()) {
        finish(slot, slots[slot]->child->result(), false);
        continue;
      }
    }
    bool any = false;
    for (size_t slot = 0; slot < slots.size(); ++slot) {
      if (!slots[slot]) continue;
      any = true;
      Child &c = *slots[slot]->child;
      const bool exited = c.poll(100);
      const bool late = !exited && monotonic_seconds() - slots[slot]->started > limit_s;
      if (late) {
        c.kill();
        while (!c.poll(1000)) {
        }
      }
      if (exited || late) finish(slot, c.result(), late);
    }
    if (!any && (stopping || next >= todo.size())) break;
  }
  std::sort(results.begin(), results.end(),
            [](const TunedProblem &a, const TunedProblem &b) { return a.name < b.name; });
  return results;
}

}  // namespace ks
