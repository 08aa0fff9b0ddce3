// Checks the invariants of Graph IR and Loop IR. A failure is the compiler's own
// error (InternalError) naming the broken rule and printing the offending IR; every
// pass is followed by a verification.
#pragma once

#include "ir/bounds.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

/// Graph IR: tensors declared once; each stage defines a temp or output tensor once,
/// reading only inputs and earlier stages; ranks, extents and types agree; every
/// read without a pad value stays inside its tensor; every output is defined.
void verify_graph(const Graph &graph);

/// Loop IR: names resolve, ranks and types agree, inputs are never written, reads
/// without pad stay inside their buffers, bound loops nest as launches need (group
/// outside local outside the rest, each hardware index bound once per path), and no
/// barrier sits inside a conditional.
void verify_program(const Program &program);

/// The interval of values an integer tensor holds, from its declared range.
Interval tensor_value_interval(const TensorDecl &tensor);

/// The interval of values an integer stage writes, given its variables' ranges.
Interval stage_value_interval(const Stage &stage, const BoundsScope &scope);

}  // namespace ks
