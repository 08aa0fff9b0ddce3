// The head's own ceiling: how many evaluations a second one search can take when the
// evaluations cost nothing. Each of SLOTS simulated workers answers a job 1 ms after
// it was sent (DELAY_MS), with a record whose features are the naive kernel's and
// whose speedup is drawn from the job's ticket; what is left is rank 0's work per
// evaluation: proposals (the mutator, the cost model's ranking and retraining), the
// schedule file, the database's writes. Against a GPU evaluation's seconds this says
// how many devices one search can keep busy (evolve/farm/README.md).
//   ks_farm_bench SPEC SLOTS BUDGET [DELAY_MS [COST_MODEL]]   (COST_MODEL: xgboost, the default, or none)
// And the farm's own round trip, under mpirun: rank 0 sends JOBS jobs that a worker
// answers at once (`ksmith run --help`: 2 KB of text) to every device of the other ranks,
// SLOTS a device, through the relays, its broker, MPI and the ranks' workers:
//   mpirun -np N ks_farm_bench --relay JOBS SLOTS [DEVICES]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "evolve/evaluation/compile.h"
#include "evolve/evaluation/features.h"
#include "evolve/farm/farm.h"
#include "evolve/farm/mpi_farm.h"
#include "evolve/search/run_db.h"
#include "evolve/search/search.h"
#include "evolve/workers.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

using namespace ks;

namespace {

class SimulatedWorkers : public EvaluationQueue {
 public:
  SimulatedWorkers(size_t slots, double delay_s, nlohmann::json features)
      : slots_(slots), delay_s_(delay_s), features_(std::move(features)) {}
  size_t slots() const override { return slots_; }
  size_t running() const override { return jobs_.size(); }
  void submit(Job job) override { jobs_.emplace(monotonic_seconds() + delay_s_, std::move(job)); }
  std::vector<JobResult> wait(double timeout_s) override {
    std::vector<JobResult> done;
    if (jobs_.empty()) return done;
    const double until = std::min(jobs_.begin()->first, monotonic_seconds() + timeout_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, until - monotonic_seconds())));
    while (!jobs_.empty() && jobs_.begin()->first <= monotonic_seconds()) {
      const Job &job = jobs_.begin()->second;
      JobResult r;
      r.ticket = job.ticket;
      r.device = "simulated";
      r.child.started = true;
      r.child.exit_status = 0;
      if (job.args[0] == "run") {
        const double speedup = 0.5 + static_cast<double>((job.ticket * 2654435761u) % 2000) / 1000.0;
        r.child.out = nlohmann::json{{"ok", true},
                                     {"verdict", "correct"},
                                     {"features", features_},
                                     {"time", {{"median_ms", 10 / speedup}, {"cv", 0.01}, {"speedup", speedup}}}}
                          .dump();
      } else {  // timed again: the naive kernel and each schedule, as asked
        nlohmann::json times = nlohmann::json::array();
        for (const std::string &a : job.args)
          if (a == "--naive" || a == "--schedule") times.push_back({{"median_ms", 10.0}, {"cv", 0.002}});
        r.child.out = nlohmann::json{{"times", times}}.dump();
      }
      done.push_back(std::move(r));
      jobs_.erase(jobs_.begin());
    }
    return done;
  }
  void stop() override { jobs_.clear(); }

 private:
  size_t slots_;
  double delay_s_;
  nlohmann::json features_;
  std::multimap<double, Job> jobs_;  // by the time each is answered
};

class Quiet : public ProgressSink {
 public:
  void update(const Progress &) override {}
  void note(const std::string &) override {}
};

// Jobs a second through the farm: each answered by its worker at once.
int relay_round_trips(int jobs, int per_device, const std::string &devices) {
  std::atomic<bool> stop{false};
  const std::string ksmith = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ksmith").string();
  std::unique_ptr<Farm> farm = Farm::join({devices, "opencl", 60, &stop, "ks_farm_bench", ksmith});
  if (!farm->head()) return farm->serve();
  std::vector<runtime::DeviceInfo> remote;
  for (const runtime::DeviceInfo &d : farm->devices())
    if (!d.place.empty()) remote.push_back(d);
  if (remote.empty()) throw UserError("error: no other rank has a device");
  WorkerQueue queue(ksmith, device_slots(remote, per_device));
  int sent = 0, answered = 0;
  double start = 0;
  auto pump = [&](int count) {
    while (answered < count) {
      while (sent < count && queue.running() < queue.slots())
        queue.submit({static_cast<uint64_t>(++sent), {"run", "--help"}, 60});
      for (const JobResult &r : queue.wait(1.0))
        if (!r.child.out.empty()) ++answered;
    }
  };
  pump(static_cast<int>(queue.slots()));  // every worker started
  sent = answered = 0;
  start = monotonic_seconds();
  pump(jobs);
  const double seconds = monotonic_seconds() - start;
  std::printf("| %zu | %zu | %d | %.2f | %.0f |\n", remote.size(), queue.slots(), jobs, seconds, jobs / seconds);
  queue.stop();
  return farm->finish(0);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 4 && std::string(argv[1]) == "--relay") {
    try {
      return relay_round_trips(std::atoi(argv[2]), std::atoi(argv[3]), argc > 4 ? argv[4] : "all");
    } catch (const std::exception &e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: ks_farm_bench SPEC SLOTS BUDGET [DELAY_MS [xgboost|none]]\n");
    return 2;
  }
  try {
    const std::string spec_path = argv[1];
    const size_t slots = std::strtoul(argv[2], nullptr, 10);
    const int budget = std::atoi(argv[3]);
    const double delay_s = (argc > 4 ? std::atof(argv[4]) : 1.0) / 1000;
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("ks_farm_bench_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    Compiled naive = compile_spec(frontend::load_spec(spec_path), frontend::SizeSet::Default, {}, {}, Target::OpenCL);
    nlohmann::json features =
        program_features(naive.graph, naive.program, 0, static_cast<int64_t>(naive.code.source.size())).to_json();
    SearchSetup setup;
    setup.spec_path = spec_path;
    setup.config.budget = budget;
    setup.config.workers = static_cast<int>(slots);
    if (argc > 5) setup.config.cost_model = argv[5];
    setup.ksmith = "ksmith";
    setup.work_dir = dir;
    setup.device.api = "opencl";
    setup.device.name = "simulated";
    setup.device.gpu = true;
    setup.device.max_work_group_size = 1024;
    setup.device.max_work_item_sizes = {1024, 1024, 64};
    setup.device.local_memory_bytes = 48 * 1024;
    setup.device.global_memory_bytes = 1ull << 36;
    setup.device.max_allocation_bytes = 1ull << 34;
    setup.device.compute_units = 132;
    setup.target = "opencl";
    SimulatedWorkers queue(slots, delay_s, features);
    Quiet progress;
    std::atomic<bool> stop{false};
    double start;
    SearchOutcome outcome;
    {
      RunDatabase db(dir + "/evolve.db");
      start = monotonic_seconds();
      outcome = run_search(db, std::nullopt, setup, queue, progress, stop);
    }
    const double seconds = monotonic_seconds() - start;
    std::printf("| %s | %s | %zu | %d | %.2f | %.1f |\n", std::filesystem::path(spec_path).stem().c_str(),
                setup.config.cost_model.c_str(), slots, budget, seconds, budget / seconds);
    std::filesystem::remove_all(dir);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
