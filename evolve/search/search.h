// The search of `ksmith evolve`: starting from the naive kernel, proposers (the
// mutator, random search) suggest schedules for parents drawn from an island's
// grid; each proposal is replayed (the IR's refusal, or the device's limits, cost no
// device time), deduplicated by identity, and evaluated in a child process through
// the evaluation queue; each finished evaluation is one transaction of the run
// database with the archive's changes and the random state, so that a killed run
// resumes where it stopped. A close new best is timed again beside the old one
// before it is believed, and the best few again side by side at the end. The search
// knows no command line: it reports through a ProgressSink.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>

#include "evolve/search/config.h"
#include "evolve/search/run_db.h"
#include "evolve/workers.h"
#include "runtime/device.h"

namespace ks {

/// What a run is doing, for a progress line.
struct Progress {
  int64_t evaluated = 0, budget = 0;
  int64_t in_flight = 0;
  int64_t refused = 0, duplicates = 0;
  int64_t model_calls = 0, model_tokens = 0;  // the LLM proposers' calls and their tokens
  std::map<std::string, int64_t> by_status;   // the failed statuses by name (status_name): counts
  double elapsed_s = 0, per_minute = 0;
  double left_s = -1;  // by the budget or the minutes, whichever ends first; -1 when unknown
  double best_speedup = 0;
  int best_steps = 0;  // schedule steps of the best
  bool best_retimed = false;
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void update(const Progress &progress) = 0;
  /// A line to keep (a new best, a migration, a stop).
  virtual void note(const std::string &line) = 0;
};

struct SearchSetup {
  std::string spec_path;  // the spec as given (a new run reads it; a resume uses the text it stored)
  EvolveConfig config;
  std::string ksmith;          // the executable evaluations run in
  std::string work_dir;        // the run's folder: schedules and the spec for the children
  runtime::DeviceInfo device;  // the first of devices: the limits every proposal is checked against
  // Every device the run evaluates on (of one API; the queue's slots are on them);
  // empty: device alone.
  std::vector<runtime::DeviceInfo> devices;
  std::string target;          // "opencl" or "spirv": the device's
  std::optional<DType> dtype;  // a new run's spec with its f32 tensors at this type (frontend's with_dtype)
  // Schedules a new run evaluates right after the naive kernel, as every island's
  // parents once correct (an earlier run's best: bench/tuned/DEVICE/NAME.sched): a
  // search goes on from where the last one stopped. Each is (path, text); one that
  // does not parse or replay on the spec at the run's sizes is a UserError.
  std::vector<std::pair<std::string, std::string>> starts;
};

struct SearchOutcome {
  int64_t run = 0;
  std::string status;   // "finished", "stopped" (asked to), "failed"
  std::string message;  // why it stopped, in a sentence
};

/// Runs a new search (resume empty) or resumes run `*resume` of db. stop, when set
/// true by another thread (a signal handler), ends the search after the transaction
/// in hand: the children are killed, the run is left "stopped" for a resume. Throws
/// UserError for a bad spec, a database of another spec or a resume that cannot
/// continue; DatabaseError when the database cannot be written (a full disk): the
/// transaction in hand is rolled back and the run can be resumed.
SearchOutcome run_search(RunDatabase &db, std::optional<int64_t> resume, const SearchSetup &setup,
                         EvaluationQueue &queue, ProgressSink &progress, const std::atomic<bool> &stop);

}  // namespace ks
