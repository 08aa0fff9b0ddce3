// The evaluation of one spec on one device: compile, check against the float64
// interpreter on fresh random inputs at the check sizes; then, at the timed sizes,
// run the naive kernel (the reference there, and the baseline time), check the
// candidate against it, time the candidate from poisoned outputs, and check its
// outputs after timing again. The result is one structured record (EvalRecord),
// printable as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl_c.h"
#include "evolve/evaluation/features.h"
#include "frontend/ast.h"
#include "frontend/body_check.h"
#include "frontend/elaborate.h"
#include "frontend/kernel_body.h"
#include "ir/cost.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "passes/schedule.h"
#include "runtime/device.h"

namespace ks {

class DeviceLock;

/// The code a device runs: OpenCL C for OpenCL devices; SPIR-V, by way of GLSL,
/// for Vulkan devices.
enum class Target { OpenCL, SPIRV };

const char *target_name(Target target);  // "opencl", "spirv"
const char *target_api(Target target);   // the api of the devices that run it: "opencl", "vulkan"
Target target_for(const runtime::DeviceInfo &device);

/// A spec taken through the whole compiler at one set of sizes.
struct Compiled {
  Graph graph;
  Program program;
  Target target = Target::OpenCL;
  GeneratedProgram code;          // OpenCL C, or one GLSL shader per kernel
  runtime::DeviceProgram binary;  // what the device builds: the OpenCL C, or validated SPIR-V
  // A kernel body's own launch plan, at these sizes: program.buffers are then the
  // spec's inputs and outputs and the plan's scratch buffers, launched by the plan
  // (program.kernels, the naive program's, are not run).
  std::optional<frontend::ResolvedPlan> plan;
};

/// Throws UserError for a bad spec, schedule or sizes, or code the target refuses.
/// subgroups: SPIR-V may use subgroup reductions (evaluate() asks the device).
Compiled compile_spec(const frontend::Spec &spec, frontend::SizeSet sizes, const frontend::SizeOverrides &overrides,
                      const Schedule &schedule = {}, Target target = Target::OpenCL, bool subgroups = true);

/// The reference at the timed sizes (passes/pipeline.h's reference_program: the
/// naive program with f64 sums), compiled for target.
Compiled compile_reference(const frontend::Spec &spec, const frontend::SizeOverrides &overrides, Target target);

/// A kernel body slower than this from reset state than from the state its last run
/// left (the fastest of five rounds of each) does less work when it finds that
/// state: flagged. Honest bodies on a busy 2-core machine stay within 7%.
constexpr double kStateTimingLimit = 1.25;
/// The same for one launch: its own time follows the memory state the fills leave
/// (an honest softmax's exp kernel ran 1.9 times slower after its buffer was filled,
/// at 8 x 1024 on PoCL), while a launch that skips its work drops to almost nothing
/// (the kept row maxima: 0.35 to 0.0008 ms on PoCL, 0.98 to 0.0033 ms on the H100).
constexpr double kStateTimingLaunchLimit = 4;

struct EvalOptions {
  frontend::SizeOverrides sizes;        // timed run (--size)
  frontend::SizeOverrides check_sizes;  // correctness check (--check-size)
  Schedule schedule;                    // applied at both sizes
  // A kernel body (frontend/kernel_body.h), run in place of the generated code;
  // empty: the generated code. With a launch plan it is built as written and
  // launched by its plan. Without one it defines the program's kernels (same names
  // and parameters, as `ksmith compile SPEC` prints them), is compiled with every
  // size as a macro (`#define N 4096`) and launched with the program's geometry (ids
  // past the end included: guard them); the program is the naive one, or the
  // schedule's when one is given (an edit of what `ksmith compile --schedule`
  // prints). kernel_label names it in errors.
  std::string kernel_source;
  std::string kernel_label = "kernel body";
  // A kernel body is checked with Clang before any device (frontend/body_check.h),
  // where the build has Clang; off only to test the evaluator's own defences.
  bool clang_check = true;
  std::optional<uint64_t> seed;  // fixed inputs; fresh random ones when absent
  int trials = 2;                // check runs, each with fresh inputs
  bool time = true;
  runtime::TimingOptions timing;
  // The naive kernel's time at the timed sizes, measured before (a search measures
  // it once per run): given, the naive kernel is not timed again.
  std::optional<runtime::Timing> baseline;
  // Time a kernel body from reset and from carried state (evolve/README.md).
  bool state_timing = true;
  // Shared with other evaluations on the device (evolve/workers.h): held shared
  // while checking, building and drawing inputs, alone from the first run at the
  // timed sizes to the reference's last; none when the device is this process's.
  DeviceLock *lock = nullptr;
  // A candidate whose first run at the timed sizes takes longer (ms), and its second
  // too, is not timed further nor checked there: its record has that run
  // (TimeRecord::gave_up_ms). A search passes a multiple of its best time, so that a
  // slow mutant costs a run or two.
  std::optional<double> give_up_ms;
};

struct CheckRecord {
  std::string sizes;  // "M=64, N=48"
  bool passed = false;
  double worst_error = 0;
  std::string tensor;  // of the worst element
  std::vector<int64_t> index;
  double expected = 0, got = 0;
  int64_t bad_elements = 0;
  int trials = 0;
};

struct TimeRecord {
  std::string sizes;
  runtime::Timing timing;
  // The naive kernel at the same sizes; for a naive candidate, the candidate itself.
  runtime::Timing baseline;
  double speedup() const { return timing.median_ms > 0 ? baseline.median_ms / timing.median_ms : 0; }
  // A candidate other than the naive kernel against the reference's outputs, on the
  // same inputs: the naive program with its sums in f64 where the device has fp64
  // (reference "naive, f64 sums"), else the naive kernel itself ("naive, f32 sums")
  // with a tolerance that grows with the longest reduction.
  std::optional<CheckRecord> versus_naive;
  std::string reference;
  // With the f64 reference: the naive float32 kernel's own worst error against it on
  // the same inputs, and the tolerance it sets (compare.h's naive_relative_tolerance).
  double naive_error = 0;
  double tolerance = 0;
  // A kernel body timed from reset state and from the state its last run left, in
  // alternating rounds (evolve/README.md): the fastest round of each and their ratio,
  // for the whole plan and for the launch whose time changed most; flagged where the
  // plan's is over kStateTimingLimit or the launch's over kStateTimingLaunchLimit.
  struct StateTiming {
    double reset_ms = 0, carried_ms = 0, ratio = 0;  // the plan: the fastest round of each, their ratio
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
  } phases;
  bool ok() const {
    return !failure && check.passed && hacking_flags.empty() && (!time || (time->passed() && !time->gave_up_ms));
  }
  /// One line: "correct", or the first reason it is not.
  std::string verdict() const;
  nlohmann::json to_json() const;
};

/// Evaluates spec on device. A candidate that does not compile, or that the device
/// refuses or fails on, gives a record with its failure; UserError is thrown only
/// for options that contradict each other (a kernel body with a schedule, or on a
/// Vulkan device).
EvalRecord evaluate(const frontend::Spec &spec, const std::string &spec_label, runtime::Device &device,
                    const EvalOptions &options);

/// Whether this build checks kernel bodies with Clang (frontend/body_check.h): the
/// GPU machine's build may go without libTooling.
bool have_body_check();

/// Clang's check of options.kernel_source at the spec's check sizes, as evaluate()
/// runs it before any device. UserError for a spec, sizes or plan refused before
/// Clang, or a build without Clang.
frontend::BodyCheck check_kernel_body(const frontend::Spec &spec, const EvalOptions &options);

/// Candidates timed side by side in one process, so that their times compare: each
/// schedule (an empty one is the naive kernel) compiled at the timed sizes, then
/// `rounds` rounds, each timing every candidate in turn (the order rotating by one
/// each round) on fresh random inputs, the naive kernel's rounds after all of them.
/// Each candidate's Timing: the median of its rounds' medians, and their spread (cv).
/// Throws UserError for a schedule the IR or the device refuses, DeviceError for a
/// device failure. lock, when given, is owned throughout.
std::vector<runtime::Timing> time_side_by_side(const frontend::Spec &spec, const frontend::SizeOverrides &sizes,
                                               const std::vector<Schedule> &schedules, runtime::Device &device,
                                               const runtime::TimingOptions &timing, int rounds,
                                               DeviceLock *lock = nullptr);

/// Throws UserError when a launch of a kernel body's plan exceeds a limit of the
/// device (work-group size, work-items along a dimension) or a scratch buffer its
/// largest allocation, naming the kernel or buffer.
void check_plan_limits(const frontend::ResolvedPlan &plan, const runtime::DeviceInfo &device);

/// Throws UserError when a kernel of the program exceeds a limit of the device
/// (work-group size, work-items along a dimension, group counts, loop iterations on
/// lavapipe, local memory), naming the limit.
void check_device_limits(const Program &program, const runtime::DeviceInfo &device);

/// A device as JSON, as records and `ksmith devices --json` show it.
nlohmann::json device_json(const runtime::DeviceInfo &device);

/// "M=64, N=48"
std::string describe_sizes(const Graph &graph);

}  // namespace ks
