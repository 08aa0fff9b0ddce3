// Helpers of the graph rewrites (passes/rewrite.h).
#include "passes/graph_edit.h"

#include <cmath>

#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<size_t> stage_index(const Graph &graph, const std::string &name) {
  for (size_t i = 0; i < graph.stages.size(); ++i)
    if (graph.stages[i].output == name) return i;
  return std::nullopt;
}

bool reads_buffer(const Expr &e, const std::string &buffer) {
  for (const Load *load : collect<Load>(e))
    if (load->buffer == buffer) return true;
  return false;
}

int readers_of(const Graph &graph, const std::string &name, const std::string &except) {
  int count = 0;
  for (const Stage &s : graph.stages)
    if (s.output != except && reads_buffer(s.body, name)) ++count;
  return count;
}

Expr replace_loads(const Expr &e, const std::function<Expr(const Load &load, const Expr &self)> &replace) {
  struct Replace : IRMutator {
    const std::function<Expr(const Load &, const Expr &)> &replace;
    explicit Replace(const std::function<Expr(const Load &, const Expr &)> &replace) : replace(replace) {}
    using IRMutator::visit;
    Expr visit(const Load *n, const Expr &self) override {
      Expr inner = IRMutator::visit(n, self);
      Expr out = replace(*inner.as<Load>(), inner);
      return out.defined() ? out : inner;
    }
  } mutator(replace);
  return mutator.mutate(e);
}

Expr iter_var(const IterVar &v) { return Var::make(index_type_for(v.extent), v.name); }

Expr instantiate(const Stage &stage, const std::vector<Expr> &indices,
                 const std::map<std::string, std::string> &renames) {
  std::map<std::string, Expr> values;
  for (size_t d = 0; d < stage.spatial.size(); ++d)
    values[stage.spatial[d].name] = cast_to(index_type_for(stage.spatial[d].extent), indices[d]);
  for (const IterVar &v : stage.reduce_vars)
    if (auto it = renames.find(v.name); it != renames.end())
      values[v.name] = Var::make(index_type_for(v.extent), it->second);
  return substitute(stage.body, values);
}

std::optional<double> value_at(const Expr &e,
                               const std::function<double(const Load &load, const std::string &key)> &load_value,
                               const std::function<double(const Var &var)> &var_value) {
  Expr loaded = replace_loads(e, [&](const Load &load, const Expr &) -> Expr {
    std::string key;
    for (const Expr &i : load.indices) key += print_expr(i) + ",";
    const double x = load_value(load, key);
    return is_float(load.type) ? FloatImm::make(load.type, x)
                               : make_int(static_cast<int64_t>(std::fabs(x) * 3), load.type);
  });
  std::map<std::string, Expr> vars;
  for (const Var *v : collect<Var>(loaded)) {
    const double x = var_value(*v);
    vars[v->name] = is_int(v->type) ? make_int(static_cast<int64_t>(x), v->type) : FloatImm::make(v->type, x);
  }
  return as_const_number(simplify(substitute(loaded, vars)));
}

NameSet graph_names(const Graph &graph) {
  NameSet names;
  for (const TensorDecl &t : graph.tensors) names.reserve(t.name);
  for (const SizeBinding &s : graph.sizes) names.reserve(s.name);
  for (const ConstantBinding &c : graph.constants) names.reserve(c.name);
  return names;
}

void reserve_vars(const Stage &stage, NameSet *names) {
  for (const IterVar &v : stage.spatial) names->reserve(v.name);
  for (const IterVar &v : stage.reduce_vars) names->reserve(v.name);
}

std::optional<Expr> identity_of(ReduceOp op, DType type) {
  const double value = reduce_identity(op);
  if (is_float(type)) return FloatImm::make(type, value);
  if (op == ReduceOp::Sum || op == ReduceOp::Prod) return make_int(static_cast<int64_t>(value), type);
  return std::nullopt;
}

TensorDecl temp_tensor(const std::string &name, DType type, const std::vector<IterVar> &spatial) {
  TensorDecl t;
  t.name = name;
  t.type = type;
  for (const IterVar &v : spatial) t.shape.push_back(v.extent);
  t.role = TensorRole::Temp;
  return t;
}

Graph remove_dead_stages(const Graph &graph) {
  // Walk the stages backwards: a stage is needed when it is an output or a needed
  // stage after it reads it.
  std::set<std::string> needed;
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Output) needed.insert(t.name);
  std::vector<bool> keep(graph.stages.size(), false);
  for (size_t i = graph.stages.size(); i-- > 0;) {
    const Stage &s = graph.stages[i];
    if (!needed.count(s.output)) continue;
    keep[i] = true;
    for (const Load *load : collect<Load>(s.body)) needed.insert(load->buffer);
  }
  Graph out = graph;
  out.stages.clear();
  for (size_t i = 0; i < graph.stages.size(); ++i)
    if (keep[i]) out.stages.push_back(graph.stages[i]);
  out.tensors.clear();
  for (const TensorDecl &t : graph.tensors)
    if (t.role != TensorRole::Temp || needed.count(t.name)) out.tensors.push_back(t);
  return out;
}

Graph finish_rewrite(Graph graph) {
  graph = remove_dead_stages(graph);
  verify_graph(graph);
  return graph;
}

}  // namespace ks
