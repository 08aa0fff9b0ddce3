// A spec taken through the whole compiler for the code a device runs: Graph IR, Loop
// IR with the schedule applied, then OpenCL C, or GLSL and SPIR-V; and the reference
// program (f64 sums) likewise. What an evaluation builds, and what a run's best
// kernel is written as (best.cl, best.glsl and best.*.spv).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "codegen/opencl_c.h"
#include "frontend/ast.h"
#include "frontend/elaborate.h"
#include "frontend/kernel_body.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "passes/schedule.h"
#include "runtime/device.h"

namespace ks {

/// The code a device runs: OpenCL C for OpenCL devices; SPIR-V, by way of GLSL,
/// for Vulkan devices.
enum class Target { OpenCL, SPIRV };

const char *target_name(Target target);  // "opencl", "spirv"
const char *target_api(Target target);   // the api of the devices that run it: "opencl", "vulkan"
Target target_for(const runtime::DeviceInfo &device);

/// What a device offers the generated code beyond its API's core.
struct CodeFeatures {
  bool subgroups = true;  // SPIR-V may use subgroup reductions
  // How OpenCL C writes async_copy's copies, and why not where Refused.
  AsyncCopies async_copies = AsyncCopies::Refused;
  std::string async_copies_missing = "this target does not offer";  // and matrix units likewise
  // How OpenCL C writes tensorize's matrix loops, and in what precision.
  MatrixUnits matrix_units = MatrixUnits::Refused;
  Precision precision = Precision::F32;
};
/// The device's: subgroup arithmetic (Vulkan), cp.async and matrix units (NVIDIA's
/// OpenCL, 8.0+).
CodeFeatures code_features(const runtime::DeviceInfo &device);
/// How a target writes a device's matrix units: mma.sync through OpenCL C's inline PTX,
/// cooperative matrices in GLSL.
MatrixUnits native_matrix_units(Target target);

/// A spec taken through the whole compiler at one set of sizes.
struct Compiled {
  Graph graph;
  // What the program computes: graph after the schedule's rewrites (equal to graph in
  // real arithmetic, not in its rounding: the error bound is this one's).
  Graph computed;
  Program program;
  Target target = Target::OpenCL;
  GeneratedProgram code;          // OpenCL C, or one GLSL shader per kernel
  runtime::DeviceProgram binary;  // what the device builds: the OpenCL C, or validated SPIR-V
  // A kernel body's own launch plan, at these sizes: program.buffers are then the
  // spec's inputs and outputs and the plan's scratch buffers, launched by the plan
  // (program.kernels, the naive program's, are not run).
  std::optional<frontend::ResolvedPlan> plan;
};

/// Throws UserError for a bad spec, schedule or sizes, or code the target refuses.
/// features: what the device offers (evaluate() asks it: code_features).
Compiled compile_spec(const frontend::Spec &spec, frontend::SizeSet sizes, const frontend::SizeOverrides &overrides,
                      const Schedule &schedule = {}, Target target = Target::OpenCL, const CodeFeatures &features = {});

/// The launch plan of c's kernels over its buffers by name (ids): the generated
/// program's kernels with their shapes, or a kernel body's own plan.
runtime::LaunchPlan launch_plan(const Compiled &c, const std::map<std::string, runtime::BufferId> &ids);

/// The reference at the timed sizes: a graph with its error bounds (error_bound.h) as
/// the naive program (passes/pipeline.h's reference_program, f64 sums where wide),
/// compiled for target. Its outputs are the graph's and their bounds (in precision's
/// arithmetic: error_bound.h).
struct Reference {
  Compiled compiled;
  std::map<std::string, std::string> bound_of;  // an output's bound tensor (none: exact)
};
Reference compile_reference(const Graph &graph, Target target, bool wide, Precision precision = Precision::F32);

}  // namespace ks
