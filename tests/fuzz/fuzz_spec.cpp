// The DSL: parse, elaborate at the check sizes, print the Graph IR and parse it back
// (the same text again), lower and verify, emit OpenCL C, and run the reference
// interpreter where the work is small.
#include "codegen/opencl_c.h"
#include "evolve/evaluation/inputs.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pipeline.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

namespace {

// Elements the interpreter would touch: each stage's spatial points times its
// reduction's, and every tensor's elements (capped, not overflowing).
int64_t work(const Graph &g, int64_t limit) {
  int64_t total = 0;
  for (const Stage &s : g.stages) {
    int64_t points = 1;
    for (const IterVar &v : s.spatial) points = fuzz::capped_product(points, v.extent, limit);
    for (const IterVar &v : s.reduce_vars) points = fuzz::capped_product(points, v.extent, limit);
    total = std::min(limit, total + points);
  }
  for (const TensorDecl &t : g.tensors) {
    int64_t n = 1;
    for (int64_t e : t.shape) n = fuzz::capped_product(n, e, limit);
    total = std::min(limit, total + n);
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = fuzz::source(data, size, "fuzz.ks");
  std::optional<frontend::Spec> spec;
  fuzz::guarded(file->name, true, [&] { spec = frontend::parse_spec(file); });
  if (!spec) return 0;
  std::optional<Graph> graph;
  fuzz::guarded(file->name, true, [&] { graph = frontend::elaborate(*spec, frontend::SizeSet::Check, {}); });
  if (!graph) return 0;
  fuzz::round_trip("Graph IR", print_graph(*graph), parse_graph, print_graph);
  if (work(*graph, 1 << 20) >= (1 << 18)) return 0;  // lowering is symbolic, but the interpreter is not
  fuzz::must("lowering, verification or code generation failed on an elaborated spec",
             [&] { generate_opencl_c(run_pipeline(*graph)); });
  TensorMap inputs;
  for (const TensorDecl &t : graph->tensors) {
    if (t.role != TensorRole::Input) continue;
    inputs[t.name] = to_tensor_data(random_input(t, 1));  // as the evaluator draws them
  }
  fuzz::must("the interpreter failed on an elaborated spec", [&] { interpret(*graph, inputs); });
  return 0;
}
