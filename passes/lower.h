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
Program lower(const Graph &graph);

}  // namespace ks
