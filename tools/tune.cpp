// ksmith tune SUITE --sizes FILE --out DIR [--devices SEL,...|all] [--minutes-per-problem M]
//                   [--budget-per-problem N] [--workers W] [--config F.toml] [--target T]
//                   [--resume] [--peer FILE.json|SCRIPT.py] [--python PY] [--rank-timeout S]
// Every spec of SUITE searched by ksmith evolve, the problems spread over the devices
// (evolve/search/tune.h); DIR gets NAME.sched and NAME.json per problem (what ksmith
// bench --tuned reads) and runs/NAME (each search's folder and database). With
// --peer, the tuned suite's table beside the peer at the end (ksmith bench). Exit 0
// when every problem was tuned, 1 when one failed, 130 when stopped (--resume goes on).
// Under mpirun, rank 0 tunes on every rank's devices (evolve/farm/).
#include "evolve/search/tune.h"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "evolve/farm/mpi_farm.h"
#include "evolve/workers.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

std::atomic<bool> tune_stop{false};
void on_tune_interrupt(int) { tune_stop = true; }

struct TuneCommand {
  TuneOptions tune;
  std::string devices, peer, python = "/usr/bin/python3";
  double rank_timeout = 60;
  bool under_mpi = false;
};

class PrintedProgress : public TuneProgress {
 public:
  void note(const std::string &line) override {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
};

int tune_on(TuneCommand &o, const std::vector<runtime::DeviceInfo> &devices) {
  for (const runtime::DeviceInfo &d : devices) o.tune.devices.push_back(d.where());
  if (!o.peer.empty() && !devices.front().place.empty())
    throw UserError("error: --peer times the tuned suite on rank 0's device, and rank 0 has none");
  struct sigaction action {};
  action.sa_handler = on_tune_interrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  PrintedProgress progress;
  std::vector<TunedProblem> results = tune_suite(o.tune, progress, tune_stop);
  int failed = 0, stopped = 0;
  for (const TunedProblem &t : results) failed += t.status == "failed", stopped += t.status == "stopped";
  if (stopped || tune_stop) {
    std::fprintf(stderr, "stopped; go on with: %sksmith tune %s --sizes %s --out %s --resume\n",
                 o.under_mpi ? "mpirun ... " : "", o.tune.suite_dir.c_str(), o.tune.sizes_path.c_str(),
                 o.tune.out_dir.c_str());
    return 130;
  }
  std::printf("tuned %zu problems (%d failed) into %s\n", results.size(), failed, o.tune.out_dir.c_str());
  if (!o.peer.empty()) {
    std::vector<std::string> argv = {
        o.tune.ksmith, "bench",    o.tune.suite_dir, "--tuned",  o.tune.out_dir,        "--peer",
        o.peer,        "--python", o.python,         "--device", o.tune.devices.front()};
    if (!o.tune.sizes_path.empty()) argv.insert(argv.end(), {"--sizes", o.tune.sizes_path});
    if (!o.tune.target.empty()) argv.insert(argv.end(), {"--target", o.tune.target});
    if (!o.tune.dtype.empty()) argv.insert(argv.end(), {"--dtype", o.tune.dtype});
    ChildRun bench = run_child(argv, 6 * 3600);
    std::cout << bench.out;
    std::cerr << bench.err;
    if (bench.exit_status != 0) return 1;
  }
  return failed ? 1 : 0;
}

// Under mpirun (evolve/farm/mpi_farm.h) rank 0 tunes, one search on each device of
// every rank at a time, and the other ranks serve their devices until it ends.
int tune(TuneCommand &o) {
  o.tune.ksmith = std::filesystem::read_symlink("/proc/self/exe").string();
  std::optional<Target> target = parse_target(o.tune.target);
  const std::string api = target ? target_api(*target) : "";
  if (!launched_by_mpi()) return tune_on(o, runtime::find_devices(o.devices, api));
  std::unique_ptr<Farm> farm = Farm::join(
      {o.devices, api, o.rank_timeout, &tune_stop,
       "mpirun ... ksmith tune " + o.tune.suite_dir + " --sizes " + o.tune.sizes_path + " --out " + o.tune.out_dir});
  if (!farm->head()) return farm->serve();
  o.under_mpi = true;
  return farm->finish(tune_on(o, farm->devices()));
}

}  // namespace

Command add_tune(CLI::App &app) {
  auto o = std::make_shared<TuneCommand>();
  CLI::App *command = app.add_subcommand("tune", "Search every spec of a folder, the problems spread over the devices");
  command->add_option("suite", o->tune.suite_dir, "A folder of .ks specs")->required();
  command->add_option("--sizes", o->tune.sizes_path, "Sizes per problem: NAME SIZES lines (bench/sizes_*.txt)");
  command->add_option("--out", o->tune.out_dir, "The tuned folder: NAME.sched, NAME.json, runs/NAME")->required();
  command->add_option("--devices,--device", o->devices,
                      "Devices: one, several comma-separated, or 'all' (every GPU of the target's API); one search "
                      "on each at a time");
  command->add_option("--minutes-per-problem", o->tune.minutes, "Each problem's search, in minutes")
      ->check(CLI::Range(0.01, 1e5));
  command->add_option("--budget-per-problem", o->tune.budget, "Each problem's evaluations, at most")
      ->check(CLI::Range(1, 1000000));
  command->add_option("--workers", o->tune.workers, "Evaluations in flight on each device")->check(CLI::Range(1, 256));
  command->add_option("--config", o->tune.config, "An evolve configuration (TOML) for every search");
  add_target_option(command, &o->tune.target);
  add_dtype_option(command, &o->tune.dtype);
  command->add_flag("--resume", o->tune.resume, "Go on with the tuning in --out: done problems stay done");
  command->add_option("--peer", o->peer, "At the end, the tuned suite beside this peer (as ksmith bench --peer)");
  command->add_option("--python", o->python, "The Python that runs a peer script");
  add_rank_timeout_option(command, &o->rank_timeout);
  return {command, [o] { return tune(*o); }};
}

}  // namespace ks::cli
