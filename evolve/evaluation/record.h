// The record of one evaluation (EvalRecord): what compiled, the check at the check
// sizes, the hacking flags, the timing at the timed sizes against the naive kernel,
// the candidate's features and where the time went; one line of verdict and the JSON
// that `ksmith run --json` prints and the search reads back from its child processes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evolve/evaluation/features.h"
#include "ir/cost.h"
#include "ir/graph.h"
#include "ir/matrix_tile.h"
#include "runtime/device.h"

namespace ks {

/// A kernel body slower than this from reset state than from the state its last run
/// left (the fastest of five rounds of each) does less work when it finds that
/// state: flagged. Honest bodies on a busy 2-core machine stay within 7%.
constexpr double kStateTimingLimit = 1.25;
/// The same for one launch: its own time follows the memory state the fills leave
/// (an honest softmax's exp kernel ran 1.9 times slower after its buffer was filled,
/// at 8 x 1024 on PoCL), while a launch that skips its work drops to almost nothing
/// (the kept row maxima: 0.35 to 0.0008 ms on PoCL, 0.98 to 0.0033 ms on the H100).
constexpr double kStateTimingLaunchLimit = 4;

/// A comparison with a reference: every element within `allowance` times its rounding
/// bound (compare.h, error_bound.h), and where the worst element is.
struct CheckRecord {
  std::string sizes;  // "M=64, N=48"
  bool passed = false;
  // The reference compared with: "the float64 interpreter", or at the timed sizes
  // the reference program ("naive, f64 sums").
  std::string against = "the float64 interpreter";
  double allowance = 1;  // times each element's bound
  // Where the user asked for TF32: an element within closeness * (1 + |expected|)
  // passes too (compare.h's Tolerance, KernelBench's); 0 otherwise.
  double closeness = 0;
  double worst_fraction = 0;  // the largest |got - expected| / allowed: at most 1 passes
  std::string tensor;         // of the worst element
  std::vector<int64_t> index;
  double expected = 0, got = 0;
  double allowed = 0;  // there: allowance times its bound
  int64_t bad_elements = 0;
  int trials = 0;
  /// "each element within 2 x its rounding bound of the reference (naive, f64 sums)".
  std::string tolerance() const;
};

struct TimeRecord {
  std::string sizes;
  runtime::Timing timing;
  // The naive kernel at the same sizes; for a naive candidate, the candidate itself.
  runtime::Timing baseline;
  double speedup() const { return timing.median_ms > 0 ? baseline.median_ms / timing.median_ms : 0; }
  // A candidate other than the naive kernel against the reference's outputs, on the
  // same inputs: the naive program with its sums in f64 where the device has fp64
  // (reference "naive, f64 sums"), else in f32 ("naive, f32 sums"); each element
  // within `allowance` times its rounding bound, computed beside it.
  std::optional<CheckRecord> versus_naive;
  std::string reference;
  // compare.h's kReferenceAllowance, or more where the naive float32 kernel, timed
  // beside an f64 reference on the same inputs, needed more: naive_fraction is its
  // worst fraction of that (above 1: the bound's model missed something of this
  // graph, and the allowance grew to 1.5 times what the naive kernel needed).
  double allowance = 0;
  double naive_fraction = 0;
  // A kernel body timed from reset state and from the state its last run left, in
  // alternating rounds (evolve/evaluation/README.md): the fastest round of each and
  // their ratio, for the whole plan and for the launch whose time changed most;
  // flagged where the plan's is over kStateTimingLimit or the launch's over
  // kStateTimingLaunchLimit.
  struct StateTiming {
    double reset_ms = 0, carried_ms = 0, ratio = 0;  // the plan: the fastest batch of each, their ratio
    // Where the device times each launch (OpenCL): among the launches that take at
    // least a twentieth of the plan from reset state (shorter ones are noise), the
    // one with the largest ratio.
    std::string kernel;
    double kernel_reset_ms = 0, kernel_carried_ms = 0, kernel_ratio = 0;
    bool flagged() const { return ratio > kStateTimingLimit || kernel_ratio > kStateTimingLaunchLimit; }
  };
  std::optional<StateTiming> state_timing;
  Cost cost;
  // After the timed batches (run from poisoned outputs), every output is written and
  // equals the naive kernel's (for a naive candidate: holds no NaN).
  bool after_timing_correct = true;
  std::string problem;  // set when after_timing_correct is false
  // Set when the runs took longer than EvalOptions::give_up_ms (this value): timing
  // holds the last run alone, and the outputs were not checked at these sizes.
  std::optional<double> gave_up_ms;
  bool passed() const { return after_timing_correct && (!versus_naive || versus_naive->passed); }
};

/// Where an evaluation stopped: the candidate did not compile, or the device
/// refused or failed it. The record keeps what was measured before.
struct EvalFailure {
  std::string sizes;  // "check" or "timed": the sizes it happened at
  // "compile": kernelsmith refused the spec, schedule or sizes; "build": the device's
  // compiler refused the code (the message holds its log); "launch": the kernel
  // exceeds a limit of the device; "run": the device failed while running it.
  std::string stage;
  std::string message;
};

struct EvalRecord {
  std::string spec;    // path or name
  std::string kernel;  // the spec's kernel name
  runtime::DeviceInfo device;
  CandidateFeatures features;  // at the timed sizes, once compiled there; else at the check sizes
  // What the user allowed (EvalOptions::precision): fp32-accurate, or TF32, which the
  // check's tolerance widens to KernelBench's.
  Precision precision = Precision::F32;
  // The float types the spec declares its inputs and outputs in, as "bf16" or "f16, f32":
  // what the times' bytes are of, beside the arithmetic's precision.
  std::string tensor_types;
  std::optional<EvalFailure> failure;
  CheckRecord check;
  // Ways the candidate games the check, each a sentence: it changed an input, or
  // it left a previous answer in place when given new inputs without poisoned
  // outputs. Any flag fails the evaluation.
  std::vector<std::string> hacking_flags;
  std::optional<TimeRecord> time;
  // Where the evaluation's time went, in seconds: compiling (kernelsmith's
  // compiler, both sizes), checking (the device's build and the check trials) and
  // the timed sizes (build, runs, timing, the reference); waiting for the device lock
  // included in the phase that waited.
  // wait_s: of check_s and timed_s, the waits for the device lock.
  struct Phases {
    double compile_s = 0, check_s = 0, timed_s = 0, wait_s = 0;
    // The device's calls (evolve/evaluation/device_clock.h), in seconds by phase and
    // call: "check.run", "timed.time", "reference.run", "compare.read", ... The
    // driver's compiles are "*.build".
    std::map<std::string, double> device;
  } phases;
  bool ok() const {
    return !failure && check.passed && hacking_flags.empty() && (!time || (time->passed() && !time->gave_up_ms));
  }
  /// One line: "correct", or the first reason it is not.
  std::string verdict() const;
  nlohmann::json to_json() const;
};

/// A device as JSON, as records and `ksmith devices --json` show it.
nlohmann::json device_json(const runtime::DeviceInfo &device);

/// "M=64, N=48"
std::string describe_sizes(const Graph &graph);

/// An element's index as a record and its verdict write it: "2, 10".
std::string index_text(const std::vector<int64_t> &index);

}  // namespace ks
