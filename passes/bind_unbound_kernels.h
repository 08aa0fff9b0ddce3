// The default mapping of work to work-items, for kernels a schedule left unbound.
#pragma once

#include "ir/loop_ir.h"

namespace ks {

/// Every kernel with no bound loop gets one work-item per iteration of its outer
/// loop nest: the directly nested serial loops at its root are fused, split by
/// kDefaultGroupSize (or fewer, for small nests) and bound to group.x and local.x.
/// A kernel with no outer loop runs as one work-item. Kernels with a bound loop are
/// left as they are.
Program bind_unbound_kernels(const Program &program);

constexpr int64_t kDefaultGroupSize = 256;

}  // namespace ks
