// A spec through the compiler for a target: Graph IR, Loop IR, then OpenCL C, or GLSL
// and SPIR-V.
#include "evolve/evaluation/compile.h"

#include "codegen/glsl.h"
#include "codegen/spirv.h"
#include "evolve/evaluation/device_limits.h"
#include "evolve/evaluation/error_bound.h"
#include "passes/pipeline.h"

namespace ks {

const char *target_name(Target target) { return target == Target::SPIRV ? "spirv" : "opencl"; }

const char *target_api(Target target) { return target == Target::SPIRV ? "vulkan" : "opencl"; }

Target target_for(const runtime::DeviceInfo &device) { return device.api == "vulkan" ? Target::SPIRV : Target::OpenCL; }

CodeFeatures code_features(const runtime::DeviceInfo &device) {
  CodeFeatures f;
  f.subgroups = device.subgroup_arithmetic;
  f.async_copies = device.async_copies ? AsyncCopies::Ptx : AsyncCopies::Refused;
  f.async_copies_missing = async_copies_missing(device);
  f.matrix_units = device.matrix_units ? native_matrix_units(target_for(device)) : MatrixUnits::Refused;
  return f;
}

MatrixUnits native_matrix_units(Target target) {
  return target == Target::SPIRV ? MatrixUnits::Cooperative : MatrixUnits::Ptx;
}

namespace {

// The code of c.program for target.
void generate(Compiled &c, Target target, const CodeFeatures &features) {
  c.target = target;
  if (target == Target::OpenCL) {
    c.code = generate_opencl_c(c.program, features.async_copies, features.async_copies_missing, features.matrix_units,
                               features.precision);
    c.binary.opencl_c = c.code.source;
    return;
  }
  c.code =
      generate_glsl(c.program, features.subgroups, features.async_copies, features.matrix_units, features.precision);
  for (const GeneratedKernel &k : c.code.kernels)
    c.binary.spirv.push_back({k.name, compile_glsl_to_spirv(k.source, k.name), k.buffers.size()});
}

}  // namespace

runtime::LaunchPlan launch_plan(const Compiled &c, const std::map<std::string, runtime::BufferId> &ids) {
  runtime::LaunchPlan plan;
  if (c.plan) {
    for (const frontend::ResolvedLaunch &l : c.plan->launches) {
      runtime::KernelLaunch launch;
      launch.kernel = l.kernel;
      for (int d = 0; d < 3; ++d) {
        launch.local[d] = static_cast<size_t>(l.local[d]);
        launch.global[d] = static_cast<size_t>(l.global[d]);
      }
      for (const frontend::ResolvedArg &a : l.args)
        launch.args.push_back(a.kind == frontend::ResolvedArg::Kind::Size
                                  ? runtime::LaunchArg::of_int(static_cast<int32_t>(a.value))
                                  : runtime::LaunchArg(ids.at(a.name)));
      plan.launches.push_back(launch);
    }
    return plan;
  }
  for (const GeneratedKernel &k : c.code.kernels) {
    runtime::KernelLaunch launch;
    launch.kernel = k.name;
    for (int d = 0; d < 3; ++d) {
      launch.local[d] = static_cast<size_t>(k.shape.local[d]);
      launch.global[d] = static_cast<size_t>(k.shape.groups[d] * k.shape.local[d]);
    }
    for (const std::string &name : k.buffers) launch.args.push_back(ids.at(name));
    plan.launches.push_back(launch);
  }
  return plan;
}

Compiled compile_spec(const frontend::Spec &spec, frontend::SizeSet sizes, const frontend::SizeOverrides &overrides,
                      const Schedule &schedule, Target target, const CodeFeatures &features) {
  Compiled c;
  c.graph = c.computed = frontend::elaborate(spec, sizes, overrides);
  c.program = run_pipeline(c.graph, schedule, nullptr,
                           [&](const std::string &, const Graph &rewritten, double) { c.computed = rewritten; });
  generate(c, target, features);
  return c;
}

Reference compile_reference(const Graph &graph, Target target, bool wide, Precision precision) {
  Reference r;
  ErrorBounds bounds = with_error_bounds(graph, precision);
  r.bound_of = std::move(bounds.bound_of);
  r.compiled.graph = r.compiled.computed = std::move(bounds.graph);
  r.compiled.program = reference_program(r.compiled.graph, wide);
  CodeFeatures features;
  features.subgroups = false;
  generate(r.compiled, target, features);
  return r;
}

}  // namespace ks
