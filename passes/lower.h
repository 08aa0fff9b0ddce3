// Naive lowering: Graph IR -> Loop IR, the eager baseline every speedup is measured
// against (like PyTorch eager: one kernel per operator).
#pragma once

#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

/// One kernel per stage: the stage's spatial variables as serial loops (first
/// outermost, named as in the spec) around the stage's block; reductions run as
/// serial loops inside the block, accumulating in private memory. No loop is bound
/// yet: schedules bind loops, and bind_unbound_kernels() gives every kernel left
/// unbound one work-item per output element. Needs a verified graph; the result
/// passes verify_program().
/// wide_accumulators: sum and product reductions accumulate in f64 (the body's value
/// converted, the result converted back to the output's type), as the reference at
/// the timed sizes does; max, min and the arg reductions are exact in any type.
Program lower(const Graph &graph, bool wide_accumulators = false);

}  // namespace ks
