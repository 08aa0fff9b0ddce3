// fold_affine: a body as its canonical form (passes/canonical.h) where that has fewer
// operations: a chain of scalings and biases as one affine step (`(x * 2.0 + 3.0) *
// 4.0` is `x * 8.0 + 12.0`), like terms combined (`leaky_relu(v) + leaky_relu(v)` is
// `leaky_relu(v) * 2.0`), what cancels gone (`x * 2.0 - x` is `x`), exponentials
// multiplied as one (`exp(s) / exp(m)` is `exp(s - m)`), log(exp(x)) as x.
#include "ir/cost.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<Graph> fold_affine(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (!is_float(stage.body.type())) return *reason = name + " computes integers", std::nullopt;
  Expr body = canonical(stage.body);
  const int before = operation_count(stage.body), after = operation_count(body);
  if (after >= before)
    return *reason = name + "'s body has nothing to fold: " + std::to_string(before) + " operations as written, " +
                     std::to_string(after) + " in its canonical form",
           std::nullopt;
  Graph out = graph;
  out.stages[*at].body = body;
  return finish_rewrite(std::move(out));
}

}  // namespace ks
