// ksmith time SPEC --schedule A.sched [--schedule B.sched ...] [--naive] [--rounds R]
//                  [--size N=V]... [--device SEL] [--target T] [--device-lock FILE] [--json]
// Candidates timed side by side in one process (evolve/evaluation/evaluate.h's
// time_side_by_side): the search times a close new best again beside the old one, and
// its best few again at the end. Not a check: run each through `ksmith run` first.
#include <cstdio>
#include <iostream>

#include "evolve/workers.h"
#include "frontend/parser.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct TimeOptions {
  std::string spec, device, target, lock;
  std::vector<std::string> schedules, sizes;
  bool naive = false, json = false;
  std::string precision = "fp32", dtype;
  int rounds = 3, batches = 3;
  double min_batch_ms = 2;
  Served *served = nullptr;  // a worker's: its device
};

int time_candidates(const TimeOptions &o) {
  frontend::Spec spec = frontend::load_spec(o.spec, frontend::parse_spec_dtype(o.dtype));
  std::vector<Schedule> schedules;
  std::vector<std::string> labels;
  if (o.naive) schedules.push_back({}), labels.push_back("naive");
  for (const std::string &path : o.schedules) schedules.push_back(load_schedule(path)), labels.push_back(path);
  if (schedules.empty()) throw UserError("error: nothing to time: give --schedule FILE (repeatable) or --naive");
  std::optional<Target> target = parse_target(o.target);
  std::unique_ptr<runtime::Device> own;
  runtime::Device *device = &open_device_for(o.served, &own, o.device, target ? target_api(*target) : "");
  std::optional<DeviceLock> lock;
  if (!o.lock.empty()) lock.emplace(o.lock);
  runtime::TimingOptions timing;
  timing.batches = o.batches;
  timing.min_batch_ms = o.min_batch_ms;
  std::vector<runtime::Timing> times =
      time_side_by_side(spec, size_overrides(o.sizes, "--size"), schedules, *device, timing, o.rounds,
                        lock ? &*lock : nullptr, *parse_precision(o.precision));
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < times.size(); ++i)
      out.push_back({{"candidate", labels[i]},
                     {"median_ms", times[i].median_ms},
                     {"cv", times[i].cv},
                     {"rounds", times[i].batches}});
    std::cout << nlohmann::json{{"device", device_json(device->info())}, {"times", out}}.dump(2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < times.size(); ++i)
    std::printf("%-40s median %.4f ms  spread %.2f%% over %d rounds\n", labels[i].c_str(), times[i].median_ms,
                100 * times[i].cv, times[i].batches);
  return 0;
}

}  // namespace

Command add_time(CLI::App &app, Served *served) {
  auto o = std::make_shared<TimeOptions>();
  o->served = served;
  CLI::App *command = app.add_subcommand("time", "Time several schedules of a spec side by side, in rounds");
  command->add_option("spec", o->spec, "The .ks spec")->required();
  command->add_option("--schedule", o->schedules, "A schedule to time (repeatable)");
  command->add_flag("--naive", o->naive, "Time the naive kernel too (listed first, timed after the others)");
  command->add_option("--size", o->sizes, "Override a size: NAME=VALUE");
  command->add_option("--rounds", o->rounds, "Rounds, each timing every candidate")->check(CLI::Range(1, 100));
  command->add_option("--batches", o->batches, "Batches per timing")->check(CLI::Range(1, 1000));
  command->add_option("--min-batch-ms", o->min_batch_ms, "Shortest batch, in milliseconds")
      ->check(CLI::Range(0.0, 1e5));
  add_target_option(command, &o->target);
  command->add_option("--device", o->device, "Device, as for run");
  command->add_option("--device-lock", o->lock, "A lock file shared with evaluations on the device, owned throughout");
  command->add_flag("--json", o->json, "Print JSON");
  add_precision_option(command, &o->precision);
  add_dtype_option(command, &o->dtype);
  return {command, [o] { return time_candidates(*o); }};
}

}  // namespace ks::cli
