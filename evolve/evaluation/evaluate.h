// The evaluation of one spec on one device: compile, check against the float64
// interpreter on fresh random inputs at the check sizes; then, at the timed sizes,
// run the naive kernel (the reference there, and the baseline time), check the
// candidate against it, time the candidate from poisoned outputs, and check its
// outputs after timing again. The result is one structured record (EvalRecord),
// printable as JSON (evolve/evaluation/record.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evolve/evaluation/compile.h"
#include "evolve/evaluation/device_limits.h"
#include "evolve/evaluation/record.h"
#include "frontend/ast.h"
#include "frontend/body_check.h"
#include "frontend/elaborate.h"
#include "passes/schedule.h"
#include "runtime/device.h"

namespace ks {

class DeviceLock;
struct TimedFixture;

/// What a process that evaluates many candidates on one device keeps between them
/// (`ksmith worker`): the timed sizes' inputs on the device, the reference's outputs
/// there and the naive kernel's time, for the spec and sizes it evaluated last. The
/// next candidate of the same spec, sizes and device uses them; any other replaces
/// them. The inputs are checked after every candidate and written again if it
/// changed them (the candidate is flagged).
class EvalCache {
 public:
  EvalCache();
  ~EvalCache();
  EvalCache(const EvalCache &) = delete;
  EvalCache &operator=(const EvalCache &) = delete;
  std::unique_ptr<TimedFixture> fixture;
};

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
  // Time a kernel body from reset and from carried state (evolve/evaluation/README.md).
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
  // Kept between evaluations on the same device (a persistent worker's); none: this
  // evaluation draws its inputs and runs the reference and the naive kernel itself.
  EvalCache *cache = nullptr;
  // async_copy's copies on a device without cp.async: refused with the reason (what a
  // user gets), or, with this, run in order as plain stores: the same results, how
  // the tests check the rings of copies on PoCL and lavapipe.
  bool async_copies_in_order = false;
  // tensorize's matrix loops on a device without matrix units: refused, or, with
  // this, emulated in portable OpenCL C or GLSL with the instruction's fragment layout and
  // rounding (codegen/c_printer.h): how the tests check them on PoCL.
  bool emulate_matrix_units = false;
  // The matrix loops' arithmetic (ir/matrix_tile.h): fp32-accurate unless asked.
  Precision precision = Precision::F32;
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
                                               DeviceLock *lock = nullptr, Precision precision = Precision::F32);

}  // namespace ks
