// rfactor: a reduction split across work-groups (TVM's rfactor, with the split that
// makes its outer part). A stage whose outputs are too few to fill the device (a
// GEMM with a long K, statistics of large groups, a sum to one value) has each
// output's whole reduction in one group; split in parts, the parts' partial results
// are independent elements that groups compute side by side, and a second, short
// reduction combines them. Reassociation only: each part combines its values in
// order, and the parts combine in order.
//
//   rewrite rfactor y.k F -> y_rf ko ki
//   y[i] = op(k: K, r..) body(k)   becomes
//   y_rf[ko: P, i] = op(ki: min(F, K), r..) body(ko * F + ki)     P = ceil(K / F)
//   y[i] = op(ko: P) y_rf[ko, i]
//
// The part is the first index of y_rf, so that the combining stage reads along y's
// own contiguous index. Where F does not divide K the last part is short: its
// points past K read at K - 1 (in bounds) and add the identity (sum, prod); a max
// or min takes the repeated point as it is.
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<Graph> rfactor(const Graph &graph, const std::string &name, const std::string &loop, int64_t factor,
                             const std::vector<std::string> &results, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  std::string vars;
  for (const IterVar &v : stage.reduce_vars) vars += (vars.empty() ? "" : ", ") + v.name;
  for (const IterVar &v : stage.spatial)
    if (v.name == loop)
      return *reason = loop + " is a spatial variable of " + name + ", not a reduction" +
                       (vars.empty() ? std::string(" (" + name + " has none)") : " (its reduction: " + vars + ")"),
             std::nullopt;
  if (stage.reduce == ReduceOp::None) return *reason = name + " is elementwise: it has no reduction", std::nullopt;
  if (stage.reduce == ReduceOp::SoftmaxSum)
    return *reason = name + " is a softmax_sum: its parts would need their maxima and sums as well as their values",
           std::nullopt;
  if (stage.reduce == ReduceOp::ArgMax || stage.reduce == ReduceOp::ArgMin)
    return *reason = std::string(reduce_op_name(stage.reduce)) +
                     " cannot combine partial results (they would need "
                     "their values as well as their indices)",
           std::nullopt;
  auto var = std::find_if(stage.reduce_vars.begin(), stage.reduce_vars.end(),
                          [&](const IterVar &v) { return v.name == loop; });
  if (var == stage.reduce_vars.end())
    return *reason = name + " has no reduction variable " + loop + " (its reduction: " + vars + ")", std::nullopt;
  if (factor < 1) return *reason = "the factor must be at least 1, not " + std::to_string(factor), std::nullopt;
  if (results.size() != 3)
    return *reason =
               "rfactor names three results: the partial results' stage, its part variable and its "
               "reduction variable",
           std::nullopt;
  NameSet names = graph_names(graph);
  reserve_vars(stage, &names);
  names.reserve(name);
  for (size_t i = 0; i < results.size(); ++i) {
    const bool old_var = i == 2 && results[i] == loop;  // y_rf may keep y's name for the inner part
    if (!old_var && names.contains(results[i])) return *reason = "the name '" + results[i] + "' is taken", std::nullopt;
    for (size_t j = 0; j < i; ++j)
      if (results[i] == results[j]) return *reason = "the name '" + results[i] + "' is given twice", std::nullopt;
  }
  const std::string &partial = results[0], &part = results[1], &inner = results[2];

  const int64_t extent = var->extent, inner_extent = std::min(factor, extent);
  const int64_t parts = (extent + factor - 1) / factor;
  const DType index = index_type_for(extent);
  IterVar part_var{part, parts}, inner_var{inner, inner_extent};
  Expr point = cast_to(index, iter_var(part_var)) * make_int(factor, index) + cast_to(index, iter_var(inner_var));
  const bool ragged = extent % inner_extent != 0;
  Expr body = substitute(stage.body,
                         {{loop, ragged ? Binary::make(BinaryOp::Min, point, make_int(extent - 1, index)) : point}});
  if (ragged &&
      (stage.reduce == ReduceOp::Sum || stage.reduce == ReduceOp::Prod || stage.reduce == ReduceOp::LogSumExp)) {
    body = Select::make(point < make_int(extent, index), body, *identity_of(stage.reduce, body.type()));
  }

  const TensorDecl &out = *graph.find_tensor(name);
  Stage partial_stage = stage;
  partial_stage.output = partial;
  partial_stage.spatial.insert(partial_stage.spatial.begin(), part_var);
  for (IterVar &v : partial_stage.reduce_vars)
    if (v.name == loop) v = inner_var;
  partial_stage.body = body;

  Stage combine = stage;
  combine.reduce_vars = {part_var};
  std::vector<Expr> indices{iter_var(part_var)};
  for (const IterVar &v : stage.spatial) indices.push_back(iter_var(v));
  combine.body = Load::make(out.type, partial, indices);

  Graph result = graph;
  result.tensors.push_back(temp_tensor(partial, value_type(out.type), partial_stage.spatial));  // parts in f32
  result.stages[*at] = combine;
  result.stages.insert(result.stages.begin() + static_cast<std::ptrdiff_t>(*at), partial_stage);
  return finish_rewrite(std::move(result));
}

}  // namespace ks
