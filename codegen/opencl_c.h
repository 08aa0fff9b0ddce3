// Loop IR -> OpenCL C 1.2 (accepted by PoCL and NVIDIA's driver): one __kernel per
// Loop IR kernel, global buffers as restrict pointers in the program's buffer order,
// the launch geometry fixed by reqd_work_group_size. Readable and deterministic.
#pragma once

#include <string>
#include <vector>

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

/// Generates OpenCL C for a verified program.
GeneratedProgram generate_opencl_c(const Program &program);

}  // namespace ks
