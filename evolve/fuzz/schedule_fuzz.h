// The schedule fuzzer: a legal schedule never changes what is computed, at any size.
// Random schedules (rewrites, then every primitive) of the examples and of random
// specs are checked against the float64 interpreter by the evaluator, each at sizes
// chosen to cross the boundaries the schedule creates, on every device given. A wrong
// answer, a hacking flag, an internal error, code the device refuses, a crash or a
// hang is a finding: minimised (the schedule's steps, then each size) and written out
// with the command that replays it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/space.h"
#include "frontend/ast.h"
#include "ir/graph.h"
#include "passes/schedule.h"
#include "runtime/device.h"

namespace ks {

/// Sizes by name: what a case sets (every size of its spec).
using Sizes = std::map<std::string, int64_t>;

/// The numbers a schedule's steps make boundaries of: split and tile factors, a
/// cross_reduce's or scan's work-items, rfactor's factor, async_copy's slots.
std::vector<int64_t> schedule_factors(const Schedule &schedule);

/// The interpreter's work at sizes: every stage's elements times its reduction's
/// points, summed; none where the spec does not elaborate at them (a size its
/// `require` or its shapes refuse).
std::optional<double> interpreter_points(const frontend::Spec &spec, const Sizes &sizes);

/// The work a scheduled program does at sizes: its float operations and its element
/// accesses of device, local and private memory executed, over every launch (the cost
/// model's counts); none where the spec refuses the sizes or the schedule does not
/// apply at them. A schedule can do far more than the interpreter (a cache copied
/// again in every iteration of a loop around it): a serial device takes minutes.
std::optional<double> program_work(const frontend::Spec &spec, const Schedule &schedule, const Sizes &sizes);

/// Whether a case at these sizes is cheap enough to run (beside the interpreter's
/// budget): none is all of them.
using SizeFilter = std::function<bool(const Sizes &)>;

/// `count` sets of sizes for spec that cross the boundaries of a schedule with these
/// factors. Each starts from the check sizes, then sets one or two sizes to just
/// below, at or past one, two or three times a factor or a product of two (or to a
/// prime, a small size, one): a ragged edge of some split. Sets over max_points of the
/// interpreter's work (or that `fits` turns down) have their other sizes shrunk toward
/// 1 and are dropped where that is not enough; sets the spec refuses are dropped, and
/// so are repeats.
std::vector<Sizes> boundary_sizes(const frontend::Spec &spec, const std::vector<int64_t> &factors, Rng &rng, int count,
                                  double max_points, const SizeFilter &fits = nullptr);

/// Sizes past the largest tile of a schedule: from the check sizes, each size at most
/// its largest factor F (8 without one), in turn, raised to 2 F + 1, else F + 1,
/// wherever the spec takes it, the interpreter's work stays within max_points and
/// `fits` takes it; none where no size then exceeds F (the check sizes themselves
/// where they do).
std::optional<Sizes> past_largest_tile(const frontend::Spec &spec, const std::vector<int64_t> &factors,
                                       double max_points, const SizeFilter &fits = nullptr);

/// A random schedule of a graph for the fuzzer: with probability one half one or two
/// rewrites of any kind that apply (rfactor with a random variable and factor), then
/// up to `steps` primitives of every kind (scan, async_copy and reverse_inline too)
/// but tensorize. In kMatrixShare of the draws on a graph with a contraction, the
/// search's sketch as on a device with matrix units and cp.async instead (a warp tile,
/// tensorize), and up to two random steps on top; its cases run with the tiles
/// emulated and the copies in order where the device has neither.
Schedule fuzz_schedule(const Graph &graph, Rng &rng, int steps);
constexpr double kMatrixShare = 0.125;

/// What one check of a case came to.
enum class Outcome {
  Passed,
  Refused,   // the schedule does not fit these sizes or the device: a limit, said by name
  Wrong,     // a wrong answer, NaN, an unwritten element
  Flagged,   // a hacking flag: a write outside a buffer, state read before written
  Internal,  // an internal error of the compiler
  Build,     // code the device's compiler refuses
  Failed,    // the device failed running it
  Crash,     // the evaluating process died
  Hang,      // past the time limit, and past it again given FuzzOptions::hang_patience times it
  Slow,      // past the time limit, done within hang_patience times it: a slow driver compile, no finding
};
const char *outcome_name(Outcome outcome);  // "passed", "refused", "wrong", ...
bool is_finding(Outcome outcome);

/// One case: a spec, a schedule of it, and the sizes it is checked at on a device.
struct FuzzCase {
  std::string spec_label;  // an example's path, or "random spec 12"
  std::string spec_text;
  Schedule schedule;
  Sizes sizes;
  std::string device;   // a selector: "opencl:0"
  double patience = 1;  // times the runner's time limit it may take
};

/// What a case gave: its outcome and why (the verdict or the process's end).
struct CaseResult {
  Outcome outcome = Outcome::Passed;
  std::string why;
  double seconds = 0;  // the device's time on it (the process's wall time)
};

/// Runs cases and says what each gave: the fuzzer's device access (in a build of
/// ksmith, persistent `ksmith worker` processes; in tests, anything).
using CaseRunner = std::function<std::vector<CaseResult>(const std::vector<FuzzCase> &)>;

/// A finding made as small as it stays: steps left out one at a time (and the
/// rewrites), then each size lowered toward 1 (halving, then one less) while the case
/// gives the same outcome; at most max_runs cases run.
FuzzCase minimise(const FuzzCase &finding, Outcome outcome, const CaseRunner &run, int max_runs);

struct FuzzOptions {
  std::vector<std::string> spec_paths;  // checked in turn with the random specs
  // Schedules given (a spec's path and a schedule's: a tuned table's), each checked
  // first at sizes_per_schedule sets of sizes that cross its boundaries.
  std::vector<std::pair<std::string, std::string>> given;
  int random_specs = 0;  // random specs (random_spec.h), one per round
  // Every spec's f32 tensors (the random specs' too) declared this type instead
  // (frontend::with_dtype, --dtype): the schedules of 16-bit tensors.
  std::optional<DType> dtype;
  std::vector<std::string> devices;  // selectors: each case runs on every one
  uint64_t seed = 1;
  int schedules_per_spec = 2;
  int sizes_per_schedule = 6;
  int max_steps = 8;
  double max_points = 2e6;    // the interpreter's work per case
  double max_work = 1e8;      // the scheduled program's (program_work) per case
  int64_t max_schedules = 0;  // stop after this many schedules (0: no limit)
  double max_seconds = 0;     // or this long (0: no limit)
  int minimise_runs = 60;     // per finding
  // A case past the time limit runs again given this many times it: done then, it is
  // slow, not a hang (NVIDIA's OpenCL compiler took 87 s on a large private tile).
  double hang_patience = 4;
  int batch_cases = 1;  // cases gathered (of whole schedules) before they run: a few a worker keeps each busy
  std::string out;      // findings and the summary go here
  std::function<void(const std::string &line)> log;  // a progress line now and then
};

struct FuzzSummary {
  int64_t specs = 0, schedules = 0, pairs = 0;  // pairs: schedule, sizes and device
  std::map<std::string, int64_t> outcomes;      // by outcome_name
  std::map<std::string, int64_t> refusals;      // by the refusal's first words
  std::map<std::string, int64_t> primitives;    // steps drawn, by kind
  std::map<std::string, int64_t> rewrites;
  // By device: its pairs' wall time summed, which says which device's workers are the
  // campaign's bottleneck (ksmith fuzz --workers gives each device its own count).
  std::map<std::string, double> device_seconds;
  std::vector<std::string> findings;  // the folders written, one per finding
  double seconds = 0;
};

/// Runs the fuzzer: the given schedules first, then rounds of (a spec, its random
/// schedules, their sizes on every device) until a limit; each finding minimised into out/findings/NNN-OUTCOME/
/// (spec.ks, schedule.sched, sizes, what it gave, and repro.sh), the summary into out/summary.json and out/summary.md.
FuzzSummary fuzz(const FuzzOptions &options, const CaseRunner &run);

/// The runner of a build of ksmith: workers[i] persistent `ksmith worker` processes for
/// devices[i] (the executable at ksmith), each case a `ksmith run --no-time --json` job
/// with its time limit; spec and schedule files are written into work_dir.
CaseRunner worker_runner(const std::string &ksmith, const std::vector<std::string> &devices,
                         const std::vector<int> &workers, const std::string &work_dir, double time_limit_s);

}  // namespace ks
