// fold_affine: a chain of scalings and biases as one affine step. The body is
// expanded into a sum of products (passes/linear_form.h), its constants multiplied
// through and its like terms combined (`leaky_relu(v) + leaky_relu(v)` is
// `leaky_relu(v) * 2.0`, `(x * 2.0 + 3.0) * 4.0` is `x * 8.0 + 12.0`); kept only where
// the body has fewer operations after.
#include "ir/cost.h"
#include "ir/simplify.h"
#include "passes/graph_edit.h"
#include "passes/linear_form.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<Graph> fold_affine(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (!is_float(stage.body.type())) return *reason = name + " computes integers", std::nullopt;
  Expr body = simplify(rebuild(combine_like_terms(expand(stage.body))));
  const int before = operation_count(stage.body), after = operation_count(body);
  if (after >= before)
    return *reason = name + "'s body has no affine chain to fold (" + std::to_string(before) +
                     " operations, and as one affine step " + std::to_string(after) + ")",
           std::nullopt;
  Graph out = graph;
  out.stages[*at].body = body;
  return finish_rewrite(std::move(out));
}

}  // namespace ks
