// A kernel body: OpenCL C written by a user (`ksmith run SPEC --kernel FILE`) or a
// model (`<kernel>` in its answer) in place of the generated code. With a launch
// plan, a comment at its head, it is a whole program of its own: its kernels, in
// order, their geometry as expressions of the spec's sizes, their arguments (the
// spec's inputs and outputs by name, scratch buffers it declares, sizes as `int`):
//
//   /* ksmith plan
//      scratch partial: f32[M, 16]          # a buffer of the body's own, M*16 floats
//      launch row_sum global [M * 16] local [16] (x, partial, N)
//      launch row_out global [M] local [64] (partial, y, M)
//   */
//   __kernel void row_sum(__global const float *x, __global float *partial, int N) { ... }
//
// Without a plan, the body defines the generated program's kernels with the same
// names and parameters and is launched with that program's geometry, every size a
// macro (the older form, for editing what `ksmith compile` prints).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/graph.h"

namespace ks::frontend {

/// `scratch NAME: TYPE[expr, ...]`
struct PlanScratch {
  std::string name;
  SourceLoc loc;
  std::string dtype;
  SourceLoc dtype_loc;
  std::vector<AstExprPtr> shape;
};

/// `launch KERNEL global [expr, ...] local [expr, ...] (NAME, ...)`
struct PlanLaunch {
  std::string kernel;
  SourceLoc loc;
  std::vector<AstExprPtr> global, local;
  std::vector<std::pair<std::string, SourceLoc>> args;
};

struct LaunchPlanText {
  SourceLoc loc;  // of the comment
  std::vector<PlanScratch> scratch;
  std::vector<PlanLaunch> launches;
};

struct KernelBody {
  std::shared_ptr<const SourceFile> file;  // the whole text, plan comment included: what the device builds
  std::optional<LaunchPlanText> plan;      // none: the older form (above)
};

/// Finds and parses the plan comment (`/* ksmith plan ... */`, at most one; `#`
/// starts a comment inside it). Throws UserError at the bad token: the body's
/// file, line and column. An empty body is an error too.
KernelBody parse_kernel_body(const std::shared_ptr<const SourceFile> &file);

/// A kernel argument at given sizes.
struct ResolvedArg {
  enum class Kind { Tensor, Scratch, Size };
  Kind kind = Kind::Tensor;
  std::string name;
  int64_t value = 0;  // Size: its value, passed as a 32-bit int
};

struct ResolvedLaunch {
  std::string kernel;
  int dims = 1;
  std::array<int64_t, 3> global{1, 1, 1};  // work-items, rounded up to a multiple of local
  std::array<int64_t, 3> local{1, 1, 1};
  std::vector<ResolvedArg> args;
};

struct ResolvedPlan {
  std::vector<TensorDecl> scratch;  // role Temp: the candidate's state, as intermediates are
  std::vector<ResolvedLaunch> launches;
};

/// The plan at the graph's sizes; UserError at the plan's text for a name that is
/// neither an input or output of the spec, a scratch buffer nor a size, a size past
/// 32 bits, an empty or overflowing extent, local and global of different
/// dimensions, an output no launch is given, a scratch buffer named twice.
ResolvedPlan resolve_plan(const LaunchPlanText &plan, const Graph &graph);

}  // namespace ks::frontend
