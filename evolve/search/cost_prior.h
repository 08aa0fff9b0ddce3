// The cost model's prior: the measurements of earlier runs on a device, carried so
// that a new run's model ranks well from its first proposal instead of after a
// warm-up of its own (Ansor and MetaSchedule learn from the task's own measurements;
// MetaSchedule's database and TVM's transfer learning carry them across tasks).
//
// A prior file is JSON Lines, written by `ksmith export DB --cost-rows`: a line per
// run, then a line per candidate it evaluated, each a schedule with its status and
// speedup over the run's naive kernel, and the features the exporting build read off
// its program. Each run keeps its spec and sizes, so that a build whose features
// differ reads them again from the schedules (the file outlives a change of the
// features); a schedule that no longer replays is left out and counted.
#pragma once

#include <string>
#include <vector>

#include "evolve/search/run_db.h"

namespace ks {

/// One earlier run as the model trains on it.
struct CostRun {
  std::string kernel, sizes, device;         // the spec's kernel, "N=512, D=64", cost_device's
  std::vector<float> naive;                  // the naive program's features
  std::vector<std::vector<float>> features;  // each evaluated candidate's
  std::vector<float> labels;                 // its speedup over the run's best; 0 when it was not timed
};

/// Every run of db with its evaluated schedules (kernel bodies have no Loop IR and
/// are left out), as a prior file's text.
std::string export_cost_rows(RunDatabase &db);

struct CostPrior {
  std::vector<CostRun> runs;
  int64_t rows = 0;
  int64_t stale = 0;        // rows whose schedule no longer replays: left out
  int64_t skipped = 0;      // runs of other devices or targets: left out
  bool refeatured = false;  // written with other features: read again from the schedules
};

/// What a prior's runs are matched on: the device's name and the target
/// ("NVIDIA H100 80GB HBM3 (opencl)"): the same kernel runs at another speed through
/// another API, and the selector's index differs between machines.
std::string cost_device(const std::string &name, const std::string &target);

/// A prior file's runs, those of other devices (cost_device) left out when device is
/// not empty.
/// UserError naming the file and line for a file that is not one.
CostPrior read_cost_prior(const std::string &path, const std::string &device);

/// The cost features of `schedule` (as printed) replayed on graph; none where it no
/// longer parses or replays (a schedule of an older build).
std::optional<std::vector<float>> schedule_features(const Graph &graph, const std::string &schedule);

/// The label of a candidate as the model learns it: its speedup over the best of its
/// run (best_so_far, online), 1 at most; 0 when the device did not time it.
float cost_label(bool timed, double speedup, double best);

}  // namespace ks
