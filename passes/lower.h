// Naive lowering: Graph IR -> Loop IR, the eager baseline every speedup is measured
// against (like PyTorch eager: one kernel per operator).
#pragma once

#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

/// One kernel per stage; one work-item per output element (the element's flat
/// index split over group.x and local.x, with a guard where the last group runs
/// past the end); reductions run serially inside the work-item, accumulating in
/// private memory. Needs a verified graph; the result passes verify_program().
Program lower(const Graph &graph);

/// Work-items per group in naive kernels.
constexpr int64_t kNaiveGroupSize = 256;

}  // namespace ks
