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
/// be refused at launch costs no device time, and on a CPU device the search's
/// unrolling budget (kCpuUnrollCopies).
Replayed replay(const Graph &graph, const Schedule &schedule, const runtime::DeviceInfo *device = nullptr);

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
