// What a device can launch: each kernel's work-group shape, group counts, loop
// iterations and local memory, and a kernel body's launches and scratch buffers,
// against the device's limits. An evaluation checks before it launches; the search
// checks each proposal before it costs device time (evolve/search/genome.h).
#pragma once

#include "frontend/kernel_body.h"
#include "ir/loop_ir.h"
#include "runtime/device.h"

namespace ks {

/// Throws UserError when a launch of a kernel body's plan exceeds a limit of the
/// device (work-group size, work-items along a dimension) or a scratch buffer its
/// largest allocation, naming the kernel or buffer.
void check_plan_limits(const frontend::ResolvedPlan &plan, const runtime::DeviceInfo &device);

/// Throws UserError when a kernel of the program exceeds a limit of the device
/// (work-group size, work-items along a dimension, group counts, loop iterations and
/// loop-indexed private arrays on lavapipe, local memory), naming the limit.
void check_device_limits(const Program &program, const runtime::DeviceInfo &device);

/// Why the device runs no asynchronous copies, as the end of codegen's refusal
/// (async_copy_refusal): "opencl:0 (NAME, PLATFORM) does not offer".
std::string async_copies_missing(const runtime::DeviceInfo &device);

}  // namespace ks
