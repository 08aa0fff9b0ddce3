// The pass list. Read top to bottom: this is the order the compiler runs.
#include "passes/pipeline.h"

#include <chrono>

#include "ir/verifier.h"
#include "passes/bind_unbound_kernels.h"
#include "passes/lower.h"
#include "passes/max_then_sum.h"
#include "passes/pack_half_stores.h"
#include "passes/skip_masked_steps.h"
#include "passes/unguard_accumulators.h"

namespace ks {

namespace {

// The passes after the schedule's steps, in order.
struct FinishingPass {
  const char *name;
  Program (*run)(const Program &);
};
const FinishingPass kFinishingPasses[] = {
    {"bind-unbound-kernels", bind_unbound_kernels},
    {"unguard-accumulators", [](const Program &p) { return unguard_accumulators(p); }},  // (its default)
    {"max-then-sum", max_then_sum},
    {"skip-masked-steps", skip_masked_steps},
    {"pack-half-stores", pack_half_stores},
};

}  // namespace

std::vector<std::string> finishing_pass_names() {
  std::vector<std::string> out;
  for (const FinishingPass &pass : kFinishingPasses) out.push_back(pass.name);
  return out;
}

Program run_pipeline(const Graph &graph, const Schedule &schedule, const PassObserver &observer,
                     const GraphObserver &graph_observer) {
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start).count();
    start = now;
    return s;
  };
  auto after = [&](const std::string &name, const Program &program) {
    verify_program(program);
    double s = seconds();
    if (observer) observer(name, program, s);
    start = std::chrono::steady_clock::now();
  };
  Graph rewritten = graph;
  for (const Rewrite &step : schedule.rewrites) {
    rewritten = apply_rewrite(rewritten, step);  // verified by the rule
    double s = seconds();
    if (graph_observer) graph_observer(print_rewrite(step), rewritten, s);
    start = std::chrono::steady_clock::now();
  }
  Program program = lower(rewritten);
  after("lower", program);
  for (const Primitive &step : schedule.steps) {
    program = apply_primitive(program, step);
    after("schedule: " + print_primitive(step), program);
  }
  for (const FinishingPass &pass : kFinishingPasses) {
    program = pass.run(program);
    after(pass.name, program);
  }
  return program;
}

Program reference_program(const Graph &graph, bool wide) {
  // 16-bit temporaries held in f32, as the interpreter (the oracle at the check sizes)
  // holds them exact: a reference that rounded them would carry their error, and a
  // rewritten candidate that never stores them (push_sum's GEMV in place of a bf16 GEMM)
  // would be held to its own, smaller bound from it.
  Graph exact = graph;
  for (TensorDecl &t : exact.tensors)
    if (t.role == TensorRole::Temp && is_half(t.type)) t.type = DType::F32;
  Program program = bind_unbound_kernels(lower(exact, wide));
  verify_program(program);
  return program;
}

}  // namespace ks
