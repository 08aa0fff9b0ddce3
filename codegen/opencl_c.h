// Loop IR -> OpenCL C 1.2 (accepted by PoCL and NVIDIA's driver): one __kernel per
// Loop IR kernel, global buffers as restrict pointers in the program's buffer order,
// the launch geometry fixed by reqd_work_group_size. Readable and deterministic.
#pragma once

#include <string>
#include <vector>

#include "codegen/c_printer.h"
#include "ir/loop_ir.h"

namespace ks {

struct GeneratedKernel {
  std::string name;                  // as spelled in the source
  std::vector<std::string> buffers;  // the kernel's parameters, in order
  LaunchShape shape;
  std::string source;  // the kernel's own module where each kernel is one (GLSL); else empty
};

struct GeneratedProgram {
  std::string source;
  std::vector<GeneratedKernel> kernels;  // in launch order
};

/// Generates OpenCL C for a verified program. Its asynchronous copies (async_copy)
/// print as async_copies says, its matrix loops (tensorize) as matrix_units says in
/// the precision given; where Refused, a UserError says why: "the schedule's
/// async_copy needs ... , which " + why_not.
GeneratedProgram generate_opencl_c(const Program &program, AsyncCopies async_copies = AsyncCopies::Refused,
                                   const std::string &why_not = "this target does not offer",
                                   MatrixUnits matrix_units = MatrixUnits::Refused,
                                   Precision precision = Precision::F32);

}  // namespace ks
