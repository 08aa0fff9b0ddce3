// drop_unit_reduction: a reduction over one point is the value at that point.
// (KernelBench's level 2 reduces over axes of extent 1 after keepdim pools: a max,
// mean or logsumexp over one channel.)
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<Graph> drop_unit_reduction(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (stage.reduce == ReduceOp::None) return *reason = name + " is elementwise: it has no reduction", std::nullopt;
  if (stage.reduce == ReduceOp::SoftmaxSum)
    return *reason = name +
                     " is a softmax_sum: a point of it is a weight of 1 times its value, which this rule "
                     "does not write",
           std::nullopt;
  std::map<std::string, Expr> zeros;
  std::vector<IterVar> kept;
  for (const IterVar &v : stage.reduce_vars) {
    if (v.extent == 1)
      zeros[v.name] = make_int(0, index_type_for(v.extent));
    else
      kept.push_back(v);
  }
  if (zeros.empty()) {
    std::string extents;
    for (const IterVar &v : stage.reduce_vars)
      extents += (extents.empty() ? "" : ", ") + v.name + ": " + std::to_string(v.extent);
    return *reason = name + " reduces over no variable of extent 1 (" + extents + ")", std::nullopt;
  }
  Graph out = graph;
  Stage &s = out.stages[*at];
  // argmax and argmin give the row-major index of the best point; a variable of
  // extent 1 adds nothing to it (its value is 0, and the strides of the others are
  // products of extents), so the remaining box gives the same index.
  s.body = simplify(substitute(s.body, zeros));
  s.reduce_vars = kept;
  if (kept.empty()) {
    if (s.reduce == ReduceOp::ArgMax || s.reduce == ReduceOp::ArgMin)
      s.body = make_int(0, graph.find_tensor(name)->type);  // the one point's index
    s.reduce = ReduceOp::None;
  }
  return finish_rewrite(std::move(out));
}

}  // namespace ks
