// Loop IR -> GLSL 450 compute shaders, one per kernel (Vulkan's way: a pipeline per
// entry point). Global buffers are storage buffers at set 0, binding = the
// parameter's position; local arrays are `shared`; the work-group size is the
// shader's local_size. Printed by the same CPrinter as OpenCL C, from GLSL's table.
#pragma once

#include "codegen/opencl_c.h"

namespace ks {

/// Generates one GLSL compute shader per kernel of a verified program: each
/// GeneratedKernel's `source`; the program's `source` holds them all, in order.
/// With subgroups, group trees become subgroup reductions (the device must offer
/// subgroup arithmetic in compute shaders). Throws UserError when a buffer is too
/// large for a storage buffer's 32-bit index.
/// async_copy's copies print in order where async_copies says so, and tensorize's
/// matrix loops emulated where matrix_units says Emulated (the OpenCL C emulation's
/// arithmetic, in GLSL); else each is refused (SPIR-V has no mma.sync).
GeneratedProgram generate_glsl(const Program &program, bool subgroups = true,
                               AsyncCopies async_copies = AsyncCopies::Refused,
                               MatrixUnits matrix_units = MatrixUnits::Refused, Precision precision = Precision::F32);

}  // namespace ks
