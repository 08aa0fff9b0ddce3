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
// input, 130 stopped. Under mpirun, rank 0 searches on every rank's devices.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "evolve/farm/farm.h"
#include "evolve/farm/mpi_farm.h"
#include "evolve/search/artifacts.h"
#include "evolve/search/cost_prior.h"
#include "evolve/search/library.h"
#include "evolve/search/proposer.h"
#include "evolve/search/search.h"
#ifdef KS_WITH_LLM
#include "llm/proposers.h"
#endif
#include "frontend/parser.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct EvolveOptions {
  std::string spec, config, db, out, device, target, proposer, cost_model, llm_url, llm_model, library;
  std::vector<std::string> sizes, check_sizes, starts, cost_priors;
  std::optional<int> budget, workers;
  std::optional<double> minutes;
  std::optional<uint64_t> seed;
  std::optional<int64_t> llm_max_calls, llm_max_run_tokens;
  bool resume = false, print_config = false, no_rewrites = false;
  double rank_timeout = 60;
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

// --proposer mutator, or mutator:0.6,llm-schedule:0.4 (weights).
std::map<std::string, double> proposer_weights(const std::string &text) {
  std::map<std::string, double> weights;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    double weight = 1;
    if (colon != std::string::npos) {
      const std::string w = item.substr(colon + 1);
      char *end = nullptr;
      weight = std::strtod(w.c_str(), &end);
      if (w.empty() || *end || !(weight >= 0) || weight > 1e6)
        throw UserError("error: --proposer: '" + item + "' needs a weight from 0 to 1e6 after the colon, as " +
                        "mutator:0.6,llm-schedule:0.3,llm-kernel:0.1");
    }
    if (name.empty() || weights.count(name))
      throw UserError("error: --proposer: '" + text + "' names a proposer twice or not at all");
    check_proposer_name(name, "--proposer");
    weights[name] = weight;
  }
  return weights;
}

int search(const EvolveOptions &o, Farm *farm) {
  EvolveConfig config = o.config.empty() ? EvolveConfig{} : load_config(o.config);
  if (o.budget) config.budget = *o.budget;
  if (o.minutes) config.minutes = *o.minutes;
  if (o.seed) config.seed = *o.seed;
  if (o.workers) config.workers = *o.workers;
  if (!o.proposer.empty()) config.proposers = proposer_weights(o.proposer);
  if (!o.llm_url.empty()) config.llm.url = o.llm_url;
  if (!o.llm_model.empty()) config.llm.model = o.llm_model;
  if (o.llm_max_calls) config.llm.max_calls = *o.llm_max_calls;
  if (o.llm_max_run_tokens) config.llm.max_run_tokens = *o.llm_max_run_tokens;
  if (const char *url = std::getenv("OPENAI_BASE_URL"); config.llm.url.empty() && url) config.llm.url = url;
#ifdef KS_WITH_LLM
  llm::register_llm_proposers();
#endif
  if (!o.cost_model.empty()) config.cost_model = o.cost_model;
  if (o.no_rewrites) config.rewrites = false;
  if (!o.cost_priors.empty()) config.cost_prior = o.cost_priors;
  if (!o.library.empty()) config.library = o.library;
  if (farm && o.device.empty() && !config.device.empty())
    throw UserError(
        "error: under mpirun, give the devices with --devices: every rank reads its command line, and "
        "the configuration's device = \"" +
        config.device + "\" only rank 0");
  if (!o.device.empty()) config.device = o.device;
  if (!o.target.empty()) config.target = o.target;
  auto joined = [](const std::vector<std::string> &items) {
    std::string out;
    for (const std::string &s : items) out += (out.empty() ? "" : ",") + s;
    return out;
  };
  if (!o.sizes.empty()) config.sizes = joined(o.sizes);
  if (!o.check_sizes.empty()) config.check_sizes = joined(o.check_sizes);
  validate(config);
  frontend::SizeOverrides checked;
  if (!config.sizes.empty()) frontend::parse_size_assignments(config.sizes, &checked);  // an error before anything runs
  if (o.print_config) {
    std::cout << config.to_toml();
    return 0;
  }
  if (o.resume && !o.starts.empty())
    throw UserError("error: --start begins a new run; a resumed run goes on with its own candidates");
  if (!o.resume) {  // a bad spec, sizes, prior or library are errors before any folder or database is made
    frontend::Spec spec = frontend::load_spec(o.spec);
    frontend::elaborate(spec, frontend::SizeSet::Default, checked);
    if (config.cost_model == "xgboost")
      for (const std::string &path : config.cost_prior) read_cost_prior(path, "");
    if (!config.library.empty()) read_library(config.library, spec.name);
  }
  const std::string kernel = std::filesystem::path(o.spec).stem().string();
  const std::string out = o.out.empty() ? "evolve_" + kernel : o.out;
  const std::string db_path = o.db.empty() ? (std::filesystem::path(out) / "evolve.db").string() : o.db;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw UserError("error: cannot create the output folder '" + out + "': " + ec.message());
  if (!o.db.empty() && std::filesystem::path(o.db).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(o.db).parent_path(), ec);
  if (o.resume && !std::filesystem::exists(db_path))
    throw UserError("error: nothing to resume: there is no run database '" + db_path + "'");
  RunDatabase db(db_path);
  std::optional<int64_t> resume;
  if (o.resume) {
    for (const RunRow &r : db.runs())
      if (r.status != "finished") resume = r.id;
    if (!resume) throw UserError("error: every run in '" + db_path + "' has finished; nothing to resume");
  }
  SearchSetup setup;
  setup.spec_path = o.spec;
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
  WorkerQueue queue(setup.ksmith, device_slots(setup.devices, config.workers));
  TerminalProgress progress;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const std::string resume_hint = "ksmith evolve " + o.spec + " --db " + db_path + " --resume";
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
  std::string report = write_artifacts(db, outcome.run, out);
  std::optional<RunRow> run = db.run(outcome.run);
  nlohmann::json summary = run_summary(db, *run);
  if (summary.contains("best")) {
    const nlohmann::json &best = summary["best"];
    std::printf("%s: best %.3gx over the naive kernel%s after %lld evaluations (%s)\n", run->kernel.c_str(),
                best["speedup"].get<double>(), best["retimed"].get<bool>() ? " (timed again)" : "",
                static_cast<long long>(summary["evaluations"].get<int64_t>()), outcome.message.c_str());
    std::printf("  schedule: %s\n  report:   %s\n  database: %s (run %lld)\n",
                (std::filesystem::path(out) / "best.sched").c_str(), report.c_str(), db_path.c_str(),
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
  command->add_option("--budget", o->budget, "Device evaluations (default 200)")->check(CLI::Range(1, 10000000));
  command
      ->add_option("--minutes", o->minutes,
                   "Wall-clock limit, in minutes: no proposals after it; evaluations still running a tenth of it later "
                   "are stopped, left not evaluated")
      ->check(CLI::Range(0.0, 1e6));
  command->add_option("--seed", o->seed, "Seed of the search's random stream");
  command->add_option("--workers", o->workers, "Evaluations in flight at once on each device")
      ->check(CLI::Range(1, 256));
  command->add_option("--proposer", o->proposer,
                      "mutator (default), random (the baseline), llm-schedule, llm-kernel, or a mix with weights: "
                      "mutator:0.6,llm-schedule:0.3,llm-kernel:0.1");
  command->add_option("--llm-url", o->llm_url,
                      "The model's OpenAI-compatible base URL (default $OPENAI_BASE_URL; its key from "
                      "$OPENAI_API_KEY)");
  command->add_option("--llm-model", o->llm_model, "The model's name at that URL");
  command
      ->add_option("--llm-max-calls", o->llm_max_calls,
                   "Model calls the run may make in all, then the mutator takes the LLM proposers' share (default: "
                   "three per evaluation of the budget; 0: never ask; llm.max_calls)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
  command
      ->add_option("--llm-max-run-tokens", o->llm_max_run_tokens,
                   "Tokens (prompts and answers) the run's model calls may take in all (default: what the calls may "
                   "take; llm.max_run_tokens)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000000}));
  command
      ->add_option("--cost-model", o->cost_model,
                   "xgboost (default: rank a pool of proposals, send the best) or none (send each)")
      ->check(CLI::IsMember({"xgboost", "none"}));
  command->add_option("--cost-prior", o->cost_priors,
                      "Earlier runs' measurements on this device for the cost model (ksmith export DB --cost-rows; "
                      "repeatable; in place of cost_model.prior)");
  command->add_option("--library", o->library,
                      "A folder of other problems' tuned schedules on this device (NAME.sched, as bench/tuned/DEVICE): "
                      "the transfer mutation tries their stages' steps (in place of mutator.library)");
  command->add_option("--db", o->db, "The run database (default: OUT/evolve.db)");
  command->add_option("--out", o->out, "The run's folder: best kernel, report, database (default: evolve_NAME)");
  command->add_flag("--resume", o->resume, "Continue the last unfinished run of the database");
  command->add_flag("--no-rewrites", o->no_rewrites,
                    "Schedule the graph as written: no graph rewrite in any proposal (search.rewrites = false)");
  command->add_option("--start", o->starts,
                      "A schedule to evaluate right after the naive kernel and to go on from (an earlier run's "
                      "best; repeatable)");
  add_target_option(command, &o->target);
  command->add_option("--device,--devices", o->device,
                      "Device, as for run; or several, comma-separated (opencl:1,opencl:2), or 'all' (every GPU of "
                      "the target's API): the candidates spread over them, --workers on each");
  command->add_option("--size", o->sizes, "Override a size of the timed runs: NAME=VALUE");
  command->add_option("--check-size", o->check_sizes, "Override a size of the correctness checks: NAME=VALUE");
  command->add_flag("--print-config", o->print_config, "Print the resolved configuration as TOML and exit");
  add_rank_timeout_option(command, &o->rank_timeout);
  return {command, [o] { return evolve(*o); }};
}

}  // namespace ks::cli
