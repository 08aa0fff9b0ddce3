#include "evolve/evaluation/features.h"

#include <algorithm>

#include "ir/visitor.h"

namespace ks {

namespace {

struct Walk : IRVisitor {
  int barriers = 0, depth = 0, max_depth = 0, unrolled = 0, vectorized = 0;
  using IRVisitor::visit;
  void visit(const Barrier *n) override {
    ++barriers;
    IRVisitor::visit(n);
  }
  void visit(const For *n) override {
    // Bound loops are the launch's work-items and groups, not loops a work-item runs.
    bool in_item = !is_group(n->kind) && !is_local(n->kind);
    unrolled += n->kind == ForKind::Unrolled;
    vectorized += n->kind == ForKind::Vectorized;
    depth += in_item;
    max_depth = std::max(max_depth, depth);
    IRVisitor::visit(n);
    depth -= in_item;
  }
};

}  // namespace

CandidateFeatures program_features(const Graph &graph, const Program &program, int schedule_steps, int64_t code_bytes) {
  CandidateFeatures f;
  f.kind = schedule_steps > 0 ? "schedule" : "naive";
  f.schedule_steps = schedule_steps;
  f.stages = static_cast<int>(graph.stages.size());
  f.kernels = static_cast<int>(program.kernels.size());
  f.code_bytes = code_bytes;
  for (const Kernel &kernel : program.kernels) {
    LaunchShape shape = launch_shape(kernel);
    f.max_group_size = std::max(f.max_group_size, shape.group_size());
    f.max_work_items = std::max(f.max_work_items, shape.work_items());
    f.local_memory_bytes = std::max(f.local_memory_bytes, local_memory_bytes(kernel));
    Walk walk;
    walk.dispatch(kernel.body);
    f.barriers += walk.barriers;
    f.max_loop_depth = std::max(f.max_loop_depth, walk.max_depth);
    f.unrolled_loops += walk.unrolled;
    f.vectorized_loops += walk.vectorized;
  }
  return f;
}

CandidateFeatures body_features(const Graph &graph, const std::string &source, const frontend::ResolvedPlan *plan,
                                const frontend::BodyFeatures *ast) {
  CandidateFeatures f;
  f.kind = "kernel body";
  f.stages = static_cast<int>(graph.stages.size());
  f.code_bytes = static_cast<int64_t>(source.size());
  if (plan)
    for (const frontend::ResolvedLaunch &l : plan->launches) {
      f.max_group_size = std::max(f.max_group_size, l.local[0] * l.local[1] * l.local[2]);
      f.max_work_items = std::max(f.max_work_items, l.global[0] * l.global[1] * l.global[2]);
    }
  f.parsed = ast != nullptr;
  if (ast) {
    f.kernels = plan ? static_cast<int>(plan->launches.size()) : ast->kernels;
    f.max_loop_depth = ast->max_loop_depth;
    f.local_memory_bytes = ast->local_memory_bytes;
    f.barriers = ast->barriers;
    f.vector_width = ast->vector_width;
  }
  return f;
}

nlohmann::json CandidateFeatures::to_json() const {
  nlohmann::json j = {{"kind", kind}, {"stages", stages}, {"code_bytes", code_bytes}};
  if (kind == "kernel body" && !parsed) return j;  // the rest needs the body parsed
  j.update({{"schedule_steps", schedule_steps},
            {"kernels", kernels},
            {"max_group_size", max_group_size},
            {"max_work_items", max_work_items},
            {"local_memory_bytes", local_memory_bytes},
            {"barriers", barriers},
            {"max_loop_depth", max_loop_depth},
            {"unrolled_loops", unrolled_loops},
            {"vectorized_loops", vectorized_loops}});
  if (kind == "kernel body") j["vector_width"] = vector_width;
  return j;
}

}  // namespace ks
