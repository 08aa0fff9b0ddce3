// A spec through the compiler for a target: Graph IR, Loop IR, then OpenCL C, or GLSL
// and SPIR-V.
#include "evolve/evaluation/compile.h"

#include "codegen/glsl.h"
#include "codegen/spirv.h"
#include "passes/pipeline.h"

namespace ks {

const char *target_name(Target target) { return target == Target::SPIRV ? "spirv" : "opencl"; }

const char *target_api(Target target) { return target == Target::SPIRV ? "vulkan" : "opencl"; }

Target target_for(const runtime::DeviceInfo &device) { return device.api == "vulkan" ? Target::SPIRV : Target::OpenCL; }

namespace {

// The code of c.program for target.
void generate(Compiled &c, Target target, bool subgroups) {
  c.target = target;
  if (target == Target::OpenCL) {
    c.code = generate_opencl_c(c.program);
    c.binary.opencl_c = c.code.source;
    return;
  }
  c.code = generate_glsl(c.program, subgroups);
  for (const GeneratedKernel &k : c.code.kernels)
    c.binary.spirv.push_back({k.name, compile_glsl_to_spirv(k.source, k.name), k.buffers.size()});
}

}  // namespace

Compiled compile_spec(const frontend::Spec &spec, frontend::SizeSet sizes, const frontend::SizeOverrides &overrides,
                      const Schedule &schedule, Target target, bool subgroups) {
  Compiled c;
  c.graph = frontend::elaborate(spec, sizes, overrides);
  c.program = run_pipeline(c.graph, schedule);
  generate(c, target, subgroups);
  return c;
}

Compiled compile_reference(const frontend::Spec &spec, const frontend::SizeOverrides &overrides, Target target) {
  Compiled c;
  c.graph = frontend::elaborate(spec, frontend::SizeSet::Default, overrides);
  c.program = reference_program(c.graph);
  generate(c, target, false);
  return c;
}

}  // namespace ks
