// A candidate's genome is a schedule (graph rewrites, then primitives), replayed on
// the spec's graph at the timed sizes. Its identity is a hash of the scheduled Loop IR as printed: two schedules
// that give the same program are one candidate, evaluated once.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "passes/schedule.h"
#include "runtime/device.h"

namespace ks {

/// A schedule replayed: the final program (every pass of the pipeline), or why the
/// IR or the device refuses it ("split y.q: no loop named q in stage y; ...").
struct Replayed {
  std::optional<Program> program;
  std::string refusal;
};

/// Replays schedule on graph; with a device, also checks its limits (work-group
/// size, local memory, group counts, loop iterations) so that a proposal that would
/// be refused at launch costs no device time, the search's unrolling budget
/// (kCpuUnrollCopies on a CPU), and that it spreads its work (kMostSerialExcess).
Replayed replay(const Graph &graph, const Schedule &schedule, const runtime::DeviceInfo *device = nullptr);

/// How long a program would hold the device, in loop iterations: for each kernel,
/// the iterations one work-item runs times the waves of work-items the device runs
/// one after another (its compute units times kItemsAtOnce each), summed.
double serial_estimate(const Program &program, const runtime::DeviceInfo &device);
constexpr int64_t kGpuItemsAtOnce = 2048;  // an H100 SM's resident threads
constexpr int64_t kCpuItemsAtOnce = 16;    // a core's vector lanes
/// A proposal (not the naive kernel, the baseline) whose serial_estimate passes
/// kMostSerialExcess times the graph's points spread evenly (and kSerialFloor
/// iterations) is refused before it holds the device:
/// the steps that remove a tile's bindings leave a few work-items with the whole
/// GEMM (4.3e9 iterations each in one H200 search), a kernel that runs for minutes,
/// cannot be stopped, and holds the device's lock while the other workers wait.
/// A register tile of 16 x 16 outputs a work-item is 256 times the spread.
constexpr double kMostSerialExcess = 4096;
constexpr double kSerialFloor = 1e8;

/// The most copies of an innermost body a search unrolls on a CPU device. PoCL 3.1
/// compiled a 256-copy GEMM (k by 16 unrolled around a 16-chunk tile) in 43 s
/// against 12 s with k serial, on this 2-core machine; it ran 8.7 against 49 ms at
/// 256^3, but the search's children have 120 s for a candidate and CI's searches
/// must stay short, so on a CPU the budget stays the one before (64). GPU drivers
/// compile such kernels in about a second.
constexpr int64_t kCpuUnrollCopies = 64;
/// The copies of an innermost body a search unrolls on device: kMaxUnrollCopies on
/// a GPU, kCpuUnrollCopies on a CPU.
int64_t unroll_budget(const runtime::DeviceInfo &device);

/// The schedule with the steps the IR refuses left out: what replays of it, in
/// order, its rewrites first (a rewrite that no longer applies is left out too). A
/// mutation that removes or reorders steps leaves later steps that named loops (or
/// stages) no longer there; this drops them.
Schedule repaired(const Graph &graph, const Schedule &schedule);

/// 16 hex digits of a 64-bit FNV-1a hash of the program as printed.
std::string candidate_identity(const Program &scheduled);

/// FNV-1a, 64 bits, as 16 hex digits: stable across machines and runs.
std::string hash_text(const std::string &text);

}  // namespace ks
