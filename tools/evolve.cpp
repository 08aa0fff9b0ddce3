// ksmith evolve SPEC [--config FILE.toml] [--budget N] [--minutes M] [--seed S] [--workers W]
//                    [--proposer NAME|NAME:W,NAME:W...] [--llm-url URL] [--llm-model NAME]
//                    [--llm-max-calls N] [--llm-max-run-tokens N]
//                    [--cost-model xgboost|none] [--cost-prior FILE]... [--library DIR] [--db FILE] [--out DIR]
//                    [--resume] [--start FILE.sched]... [--target T]
//                    [--device D] [--size N=V]... [--check-size N=V]... [--print-config]
//                    [--rank-timeout S]
// The search (evolve/search/search.h) from the naive kernel to a fast schedule; progress on
// the terminal; the best kernel and the report in --out. Ctrl-C stops after the
// transaction in hand and says how to resume. Exit 0 finished, 1 failed or bad
// input, 130 stopped. Under mpirun, rank 0 searches on every rank's devices. The flags
// that set configuration keys come with the keys, from evolve/search/config_keys.def.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <type_traits>
#include <variant>

#include "evolve/farm/farm.h"
#include "evolve/farm/mpi_farm.h"
#include "evolve/search/artifacts.h"
#include "evolve/search/cost_prior.h"
#include "evolve/search/library.h"
#include "evolve/search/search.h"
#ifdef KS_WITH_LLM
#include "llm/proposers.h"
#endif
#include "frontend/parser.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct EvolveOptions {
  std::string spec, config, db, out, device, target, dtype;
  std::vector<std::string> starts;
  bool resume = false, print_config = false;
  double rank_timeout = 60;
  std::vector<std::function<void(EvolveConfig &)>> set_keys;  // the flags of config_flags() given
};

std::atomic<bool> stop_requested{false};

void on_interrupt(int) { stop_requested = true; }

std::string duration(double seconds) {
  char text[32];
  int s = static_cast<int>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%d:%02d", s / 60, s % 60);
  return text;
}

// One line, rewritten in place on a terminal; otherwise a plain line every ten
// seconds. Notes print as lines of their own either way.
class TerminalProgress : public ProgressSink {
 public:
  TerminalProgress() : tty_(::isatty(STDERR_FILENO)) {}
  void update(const Progress &p) override {
    std::string failures;
    for (const auto &[status, count] : p.by_status) failures += " " + std::to_string(count) + " " + status;
    if (p.refused) failures += " " + std::to_string(p.refused) + " refused";
    if (p.duplicates) failures += " " + std::to_string(p.duplicates) + " duplicates";
    if (p.model_calls)
      failures += " " + std::to_string(p.model_calls) + " model calls (" + std::to_string(p.model_tokens) + " tokens)";
    char text[400];
    std::snprintf(text, sizeof text, "%lld/%lld evaluated (%.1f/min), %lld in flight, best %.3gx%s (%d steps)%s%s%s",
                  static_cast<long long>(p.evaluated), static_cast<long long>(p.budget), p.per_minute,
                  static_cast<long long>(p.in_flight), p.best_speedup, p.best_retimed ? " re-timed" : "", p.best_steps,
                  failures.empty() ? "" : ";", failures.c_str(),
                  p.left_s >= 0 ? ("; " + duration(p.left_s) + " left").c_str() : "");
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", text);
      shown_ = true;
    } else if (p.elapsed_s - last_ >= 10) {
      std::fprintf(stderr, "%s\n", text);
      last_ = p.elapsed_s;
    }
    std::fflush(stderr);
  }
  void note(const std::string &line) override {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s\n", line.c_str());
    shown_ = false;
  }
  void done() {
    if (shown_) std::fprintf(stderr, "\n");
    shown_ = false;
  }

 private:
  bool tty_, shown_ = false;
  double last_ = -10;
};

// A flag that sets a configuration key, bound to what the command line reads: given
// (a string or a list: not empty), it sets the key over the file's.
template <class T>
void add_key_flag(CLI::App *command, const ConfigFlag &flag, const FlagValue<T> &value,
                  std::vector<std::function<void(EvolveConfig &)>> *set_keys) {
  if constexpr (std::is_same_v<T, bool>) {
    auto given = std::make_shared<bool>(false);
    command->add_flag(flag.name, *given, flag.help);
    set_keys->push_back([given, set = value.set](EvolveConfig &c) {
      if (*given) set(c, true);
    });
  } else if constexpr (std::is_arithmetic_v<T>) {
    auto given = std::make_shared<std::optional<T>>();
    CLI::Option *option = command->add_option(flag.name, *given, flag.help);
    if (value.range) option->check(CLI::Range(value.range->first, value.range->second));
    set_keys->push_back([given, set = value.set](EvolveConfig &c) {
      if (*given) set(c, **given);
    });
  } else {
    auto given = std::make_shared<T>();
    CLI::Option *option = command->add_option(flag.name, *given, flag.help);
    if (!value.choices.empty()) option->check(CLI::IsMember(value.choices));
    set_keys->push_back([given, set = value.set](EvolveConfig &c) {
      if (!given->empty()) set(c, *given);
    });
  }
}

// The flags that set configuration keys (evolve/search/config_keys.def).
void add_key_flags(CLI::App *command, std::vector<std::function<void(EvolveConfig &)>> *set_keys) {
  for (const ConfigFlag &flag : config_flags())
    std::visit([&](const auto &value) { add_key_flag(command, flag, value, set_keys); }, flag.value);
}

// The file's configuration under the flags, checked before anything runs.
EvolveConfig resolved_config(const EvolveOptions &o, Farm *farm) {
  EvolveConfig config = o.config.empty() ? EvolveConfig{} : load_config(o.config);
  for (const auto &set : o.set_keys) set(config);
  if (const char *url = std::getenv("OPENAI_BASE_URL"); config.llm.url.empty() && url) config.llm.url = url;
#ifdef KS_WITH_LLM
  llm::register_llm_proposers();
#endif
  if (farm && o.device.empty() && !config.device.empty())
    throw UserError(
        "error: under mpirun, give the devices with --devices: every rank reads its command line, and "
        "the configuration's device = \"" +
        config.device + "\" only rank 0");
  if (!o.device.empty()) config.device = o.device;
  if (!o.target.empty()) config.target = o.target;
  validate(config);
  frontend::SizeOverrides checked;
  if (!config.sizes.empty()) frontend::parse_size_assignments(config.sizes, &checked);  // an error before anything runs
  return config;
}

// A bad spec, sizes, prior or library is an error before any folder or database is made.
void check_inputs(const EvolveOptions &o, const EvolveConfig &config) {
  if (o.resume && !o.starts.empty())
    throw UserError("error: --start begins a new run; a resumed run goes on with its own candidates");
  if (o.resume && !o.dtype.empty())
    throw UserError("error: --dtype begins a new run; a resumed run goes on with the spec it stored");
  if (o.resume) return;  // the run goes on with the spec and configuration it stored
  frontend::SizeOverrides sizes;
  if (!config.sizes.empty()) frontend::parse_size_assignments(config.sizes, &sizes);
  frontend::Spec spec = frontend::load_spec(o.spec, frontend::parse_spec_dtype(o.dtype));
  frontend::elaborate(spec, frontend::SizeSet::Default, sizes);
  if (config.cost_model == "xgboost")
    for (const std::string &path : config.cost_prior) read_cost_prior(path, "");
  if (!config.library.empty()) read_library(config.library, spec.name);
}

// Where the run writes: its folder (made), and its database, in it unless --db names another.
struct RunPlace {
  std::string out, db;
};

RunPlace run_place(const EvolveOptions &o) {
  RunPlace at;
  at.out = o.out.empty() ? "evolve_" + std::filesystem::path(o.spec).stem().string() : o.out;
  at.db = o.db.empty() ? (std::filesystem::path(at.out) / "evolve.db").string() : o.db;
  std::error_code ec;
  std::filesystem::create_directories(at.out, ec);
  if (ec) throw UserError("error: cannot create the output folder '" + at.out + "': " + ec.message());
  if (!o.db.empty() && std::filesystem::path(o.db).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(o.db).parent_path(), ec);
  if (o.resume && !std::filesystem::exists(at.db))
    throw UserError("error: nothing to resume: there is no run database '" + at.db + "'");
  return at;
}

// With --resume, the database's last unfinished run.
std::optional<int64_t> run_to_resume(RunDatabase &db, const std::string &path, bool resume) {
  if (!resume) return std::nullopt;
  std::optional<int64_t> run;
  for (const RunRow &r : db.runs())
    if (r.status != "finished") run = r.id;
  if (!run) throw UserError("error: every run in '" + path + "' has finished; nothing to resume");
  return run;
}

SearchSetup search_setup(const EvolveOptions &o, const EvolveConfig &config, Farm *farm, const std::string &out) {
  SearchSetup setup;
  setup.spec_path = o.spec;
  setup.dtype = frontend::parse_spec_dtype(o.dtype);
  setup.config = config;
  setup.ksmith = std::filesystem::read_symlink("/proc/self/exe").string();
  setup.work_dir = out;
  for (const std::string &path : o.starts) setup.starts.push_back({path, read_source_file(path, "schedule")->text});
  const std::string api =
      config.target.empty() ? "" : target_api(config.target == "spirv" ? Target::SPIRV : Target::OpenCL);
  // A farm's devices were found on each rank with this API already (Farm::join).
  setup.devices = farm ? farm->devices() : find_run_devices(config.device, api);
  setup.device = setup.devices.front();
  setup.target = target_name(target_for(setup.device));
  return setup;
}

// What the run found, on the terminal; the exit status.
int report_outcome(RunDatabase &db, const SearchOutcome &outcome, const RunPlace &at, const std::string &resume_hint) {
  std::string report = write_artifacts(db, outcome.run, at.out);
  std::optional<RunRow> run = db.run(outcome.run);
  nlohmann::json summary = run_summary(db, *run);
  if (summary.contains("best")) {
    const nlohmann::json &best = summary["best"];
    std::printf("%s: best %.3gx over the naive kernel%s after %lld evaluations (%s)\n", run->kernel.c_str(),
                best["speedup"].get<double>(), best["retimed"].get<bool>() ? " (timed again)" : "",
                static_cast<long long>(summary["evaluations"].get<int64_t>()), outcome.message.c_str());
    std::printf("  schedule: %s\n  report:   %s\n  database: %s (run %lld)\n",
                (std::filesystem::path(at.out) / "best.sched").c_str(), report.c_str(), at.db.c_str(),
                static_cast<long long>(outcome.run));
  } else {
    std::printf("%s: no correct candidate (%s); report: %s\n", run->kernel.c_str(), outcome.message.c_str(),
                report.c_str());
  }
  if (outcome.status == "stopped") {
    std::fprintf(stderr, "stopped; resume with: %s\n", resume_hint.c_str());
    return 130;
  }
  if (outcome.status == "failed") {
    std::fprintf(stderr, "error: the run failed: %s\n", outcome.message.c_str());
    return 1;
  }
  return 0;
}

int search(const EvolveOptions &o, Farm *farm) {
  const EvolveConfig config = resolved_config(o, farm);
  if (o.print_config) {
    std::cout << config.to_toml();
    return 0;
  }
  check_inputs(o, config);
  const RunPlace at = run_place(o);
  RunDatabase db(at.db);
  const std::optional<int64_t> resume = run_to_resume(db, at.db, o.resume);
  const SearchSetup setup = search_setup(o, config, farm, at.out);
  WorkerQueue queue(setup.ksmith, device_slots(setup.devices, config.workers));
  TerminalProgress progress;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const std::string resume_hint = "ksmith evolve " + o.spec + " --db " + at.db + " --resume";
  SearchOutcome outcome;
  try {
    outcome = run_search(db, resume, setup, queue, progress, stop_requested);
  } catch (const DatabaseError &e) {
    progress.done();
    throw UserError("error: the run database cannot be written: " + std::string(e.what()) +
                    "; it holds every evaluation up to the last one finished: once that is fixed, resume with " +
                    resume_hint);
  }
  progress.done();
  return report_outcome(db, outcome, at, resume_hint);
}

// Under mpirun (evolve/farm/mpi_farm.h) rank 0 searches, on every rank's devices,
// and the other ranks serve their devices until it ends.
int evolve(const EvolveOptions &o) {
  if (!farm_dir().empty()) follow_farm_head();  // a search of `mpirun ksmith tune`
  if (!launched_by_mpi() || o.print_config) return search(o, nullptr);
  std::optional<Target> target = parse_target(o.target);
  std::unique_ptr<Farm> farm = Farm::join({o.device, target ? target_api(*target) : "", o.rank_timeout, &stop_requested,
                                           "mpirun ... ksmith evolve " + o.spec});
  if (!farm->head()) return farm->serve();
  return farm->finish(search(o, farm.get()));
}

}  // namespace

Command add_evolve(CLI::App &app) {
  auto o = std::make_shared<EvolveOptions>();
  CLI::App *command = app.add_subcommand("evolve", "Search for a fast schedule of a spec, from its naive kernel");
  command->add_option("spec", o->spec, "The .ks spec")->required();
  command->add_option("--config", o->config,
                      "A TOML configuration (ksmith evolve SPEC --print-config shows every key)");
  add_key_flags(command, &o->set_keys);
  command->add_option("--db", o->db, "The run database (default: OUT/evolve.db)");
  command->add_option("--out", o->out, "The run's folder: best kernel, report, database (default: evolve_NAME)");
  command->add_flag("--resume", o->resume, "Continue the last unfinished run of the database");
  command->add_option("--start", o->starts,
                      "A schedule to evaluate right after the naive kernel and to go on from (an earlier run's "
                      "best; repeatable)");
  add_target_option(command, &o->target);
  add_dtype_option(command, &o->dtype);
  command->add_option("--device,--devices", o->device,
                      "Device, as for run; or several, comma-separated (opencl:1,opencl:2), or 'all' (every GPU of "
                      "the target's API): the candidates spread over them, --workers on each");
  command->add_flag("--print-config", o->print_config, "Print the resolved configuration as TOML and exit");
  add_rank_timeout_option(command, &o->rank_timeout);
  return {command, [o] { return evolve(*o); }};
}

}  // namespace ks::cli
