// `ksmith tune`: every spec of a folder searched by `ksmith evolve` in a child
// process, the problems spread over the devices (one search on each device at a
// time, with that device's workers), each in its own run folder and database
// (OUT/runs/NAME), its best copied to OUT/NAME.sched and its summary to OUT/NAME.json:
// the folder `ksmith bench --tuned` reads, a tuning log per device as
// bench/tuned/DEVICE is. Resumable: a problem whose NAME.json is written is done; one
// with a database is resumed (`ksmith evolve --resume`), so a kill of the tuning
// loses at most the evaluations in flight and repeats none.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct TuneOptions {
  std::string ksmith;  // the executable the searches run in
  std::string suite_dir, sizes_path, out_dir;
  std::vector<std::string> devices;  // selectors: one search at a time on each
  double minutes = 1;                // each problem's search
  std::optional<int> budget, workers;
  std::string config;  // an evolve configuration (TOML) for every search
  std::string target;
  std::string dtype;  // each spec's f32 tensors at this type (ksmith evolve --dtype); "" as written
  bool resume = false;
};

struct TunedProblem {
  std::string name, device;
  std::string status;   // "tuned", "failed", "stopped"
  std::string message;  // the search's last line, or why it failed
  double best = 0;      // speedup over the naive kernel
  int64_t evaluations = 0;
  double seconds = 0;
};

class TuneProgress {
 public:
  virtual ~TuneProgress() = default;
  virtual void note(const std::string &line) = 0;
};

/// The problems of the suite, in name order. Throws UserError for a folder without
/// specs, a sizes file that names a problem the suite does not have, an output folder
/// holding an earlier tuning without resume (or none to resume). stop, set by another
/// thread, stops the searches (each resumable) and returns.
std::vector<TunedProblem> tune_suite(const TuneOptions &options, TuneProgress &progress, const std::atomic<bool> &stop);

}  // namespace ks
