// The search's jobs as types: what it asks of a child process (an evaluation, a timing
// of several schedules side by side) as `ksmith run` and `ksmith time` command lines,
// and what it reads back of their JSON, checked once here instead of key by key where
// used.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/run_db.h"
#include "evolve/workers.h"

namespace ks {

/// What every job of a run is told: the target, the timed sizes and the precision
/// (the queue's slot adds its device and that device's lock).
struct JobSettings {
  std::string target;              // "opencl" or "spirv"
  std::string sizes;               // "N=512,D=64", or "" for the spec's own
  std::string precision = "fp32";  // or "tf32"
};

/// One candidate's evaluation: `ksmith run SPEC --json`.
struct EvaluationRequest {
  std::string spec_file;
  std::string schedule_file;  // a schedule's file, or
  std::string body_file;      // a kernel body's
  JobSettings settings;
  int trials = 0, batches = 0;
  double min_batch_ms = 0;
  std::string check_sizes;           // "" for the spec's check sizes
  std::optional<double> give_up_ms;  // give up after one run slower than this
  std::vector<std::string> args() const;
};

/// Schedules timed side by side in rounds: `ksmith time SPEC --json`, the naive
/// kernel first where asked.
struct RetimeRequest {
  std::string spec_file;
  std::vector<std::string> schedule_files;
  bool with_naive = false;
  JobSettings settings;
  int batches = 0;
  double min_batch_ms = 0;
  std::vector<std::string> args() const;
};

/// What the search reads of an evaluation record (evolve/evaluation/record.h).
struct EvaluationResult {
  bool ok = false;       // correct, checked and timed
  bool failure = false;  // it stopped at a stage: compile, build, launch, run
  bool flagged = false;  // it games the check
  bool gave_up = false;  // given up on after one slow run: timed roughly, not checked there
  std::string verdict;
  // The timing, where it was timed: its median, spread and speedup over the naive kernel.
  double median_ms = 0, cv = 0, speedup = 0;
  nlohmann::json features;  // the candidate's features, by name (an object; empty where none)
  /// A record as `ksmith run --json` prints it; none where it is not one (a field of
  /// the wrong type included).
  static std::optional<EvaluationResult> from_json(const nlohmann::json &record);
  /// A feature's value, 0 where it has none.
  double feature(const std::string &name) const;
};

/// The status a finished evaluation gives a candidate: timeout where the time limit
/// killed the child, failed where it left no record, else what the record says.
CandidateStatus status_of(const ChildRun &child, const std::optional<EvaluationResult> &result);

/// One schedule's time of `ksmith time --json`.
struct Time {
  double median_ms = 0, cv = 0;
};

/// The times a retime job printed, in the order asked (the naive kernel's first where
/// it was timed); none where the child failed or printed other than `expected` times.
std::optional<std::vector<Time>> read_times(const ChildRun &child, size_t expected);

}  // namespace ks
