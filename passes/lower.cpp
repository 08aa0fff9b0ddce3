// Graph IR -> naive Loop IR.
//
// Algorithm, for each stage `out[v0..vr) = reduce(k..) body`:
//  1. P = number of output elements; L = min(P, 256) work-items per group,
//     G = ceil(P / L) groups: `for g in 0..G group.x { for l in 0..L local.x {`.
//  2. i = g * L + l (i64 when P needs it); guard `if i < P` unless G * L == P.
//  3. Recover the output indices from i, innermost fastest:
//     v(r-1) = i % E(r-1), v(r-2) = i / E(r-1) % E(r-2), ..., v0 = i / (E1 * ... * E(r-1)).
//  4. A block for the stage: without a reduction, store body; with one, allocate a
//     private accumulator, initialise it with the reduction's identity, run the
//     reduction loops serially (first variable outermost) and store the result.
#include "passes/lower.h"

#include <cmath>
#include <limits>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "passes/names.h"

namespace ks {

namespace {

// Whether e mentions any of the given variables.
struct Mentions : IRVisitor {
  const std::set<std::string> &names;
  bool found = false;
  explicit Mentions(const std::set<std::string> &names) : names(names) {}
  using IRVisitor::visit;
  void visit(const Var *n) override { found |= names.count(n->name) > 0; }
};

bool mentions(const Expr &e, const std::set<std::string> &names) {
  Mentions m(names);
  m.dispatch(e);
  return m.found;
}

// The regions a stage reads: per buffer and dimension, the index itself where every
// read agrees and none depends on a reduction variable, else the whole dimension.
struct CollectReads : IRVisitor {
  const Graph &graph;
  const std::set<std::string> &reduce_vars;
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::optional<Expr>>> points;  // nullopt: whole dimension
  CollectReads(const Graph &graph, const std::set<std::string> &reduce_vars) : graph(graph), reduce_vars(reduce_vars) {}
  using IRVisitor::visit;
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    auto [it, inserted] = points.try_emplace(n->buffer);
    if (inserted) order.push_back(n->buffer);
    std::vector<std::optional<Expr>> &dims = it->second;
    bool first = inserted;
    if (first) dims.resize(n->indices.size());
    for (size_t d = 0; d < n->indices.size(); ++d) {
      const Expr &index = n->indices[d];
      bool point = !n->pad && !mentions(index, reduce_vars);
      if (first)
        dims[d] = point ? std::optional<Expr>(index) : std::nullopt;
      else if (dims[d] && (!point || print_expr(*dims[d]) != print_expr(index)))
        dims[d] = std::nullopt;
    }
  }
  std::vector<Region> regions() const {
    std::vector<Region> out;
    for (const std::string &name : order) {
      const TensorDecl *t = graph.find_tensor(name);
      Region region{name, {}};
      const auto &dims = points.at(name);
      for (size_t d = 0; d < dims.size(); ++d)
        region.ranges.push_back(dims[d] ? Range{*dims[d], 1} : Range{make_int(0), t->shape[d]});
      out.push_back(region);
    }
    return out;
  }
};

Expr type_min(DType type) {
  if (type == DType::I32) return make_int(INT32_MIN, DType::I32);
  if (type == DType::I64) return make_int(INT64_MIN, DType::I64);
  return make_f32(-std::numeric_limits<double>::infinity());
}

Expr type_max(DType type) {
  if (type == DType::I32) return make_int(INT32_MAX, DType::I32);
  if (type == DType::I64) return make_int(INT64_MAX, DType::I64);
  return make_f32(std::numeric_limits<double>::infinity());
}

Expr constant(DType type, double value) {
  return is_int(type) ? make_int(static_cast<int64_t>(value), type) : make_f32(value);
}

// The serial loops of the reduction around body, first variable outermost.
Stmt reduction_loops(const Stage &stage, Stmt body) {
  for (size_t r = stage.reduce_vars.size(); r-- > 0;)
    body = For::make(stage.reduce_vars[r].name, stage.reduce_vars[r].extent, ForKind::Serial, body);
  return body;
}

Stmt lower_stage_block(const Graph &graph, const Stage &stage, NameSet &names) {
  const TensorDecl &out = *graph.find_tensor(stage.output);
  std::vector<Expr> out_index;
  for (const IterVar &v : stage.spatial) out_index.push_back(Var::make(index_type_for(v.extent), v.name));

  std::set<std::string> reduce_names;
  for (const IterVar &v : stage.reduce_vars) reduce_names.insert(v.name);
  CollectReads reads(graph, reduce_names);
  reads.dispatch(stage.body);
  std::vector<Region> writes = {Region{out.name, {}}};
  for (const Expr &index : out_index) writes[0].ranges.push_back(Range{index, 1});

  Stmt body;
  const DType value_type = stage.body.type();
  auto acc_at = [](const std::string &acc, DType type) { return Load::make(type, acc, {make_int(0)}); };
  switch (stage.reduce) {
    case ReduceOp::None: body = Store::make(out.name, out_index, stage.body); break;
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Max:
    case ReduceOp::Min: {
      std::string acc = names.fresh(stage.output + "_acc");
      Expr current = acc_at(acc, value_type);
      Expr init = stage.reduce == ReduceOp::Max   ? type_min(value_type)
                  : stage.reduce == ReduceOp::Min ? type_max(value_type)
                                                  : constant(value_type, reduce_identity(stage.reduce));
      BinaryOp op = stage.reduce == ReduceOp::Sum    ? BinaryOp::Add
                    : stage.reduce == ReduceOp::Prod ? BinaryOp::Mul
                    : stage.reduce == ReduceOp::Max  ? BinaryOp::Max
                                                     : BinaryOp::Min;
      Stmt update = Store::make(acc, {make_int(0)}, Binary::make(op, current, stage.body));
      body = Allocate::make(acc, value_type, {1}, MemoryScope::Private,
                            Seq::make({Store::make(acc, {make_int(0)}, init), reduction_loops(stage, update),
                                       Store::make(out.name, out_index, current)}));
      break;
    }
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      // The row-major linear index of the reduction point, as the output's type.
      Expr linear;
      for (const IterVar &v : stage.reduce_vars) {
        Expr var = cast_to(out.type, Var::make(index_type_for(v.extent), v.name));
        linear = linear.defined() ? linear * make_int(v.extent, out.type) + var : var;
      }
      std::string best = names.fresh(stage.output + "_best");
      std::string best_index = names.fresh(stage.output + "_index");
      std::string value = names.fresh(stage.output + "_value");
      Expr current_best = acc_at(best, value_type);
      Expr value_var = Var::make(value_type, value);
      Expr better = stage.reduce == ReduceOp::ArgMax ? Binary::make(BinaryOp::Gt, value_var, current_best)
                                                     : Binary::make(BinaryOp::Lt, value_var, current_best);
      Stmt update =
          LetStmt::make(value, stage.body,
                        IfThenElse::make(better, Seq::make({Store::make(best, {make_int(0)}, value_var),
                                                            Store::make(best_index, {make_int(0)}, linear)})));
      Expr init = stage.reduce == ReduceOp::ArgMax ? type_min(value_type) : type_max(value_type);
      body = Allocate::make(
          best, value_type, {1}, MemoryScope::Private,
          Allocate::make(
              best_index, out.type, {1}, MemoryScope::Private,
              Seq::make({Store::make(best, {make_int(0)}, init),
                         Store::make(best_index, {make_int(0)}, make_int(0, out.type)), reduction_loops(stage, update),
                         Store::make(out.name, out_index, acc_at(best_index, out.type))})));
      break;
    }
  }
  return Block::make(stage.output, reads.regions(), writes, body);
}

Kernel lower_stage(const Graph &graph, const Stage &stage) {
  const TensorDecl &out = *graph.find_tensor(stage.output);
  NameSet names;
  for (const TensorDecl &t : graph.tensors) names.reserve(t.name);
  for (const IterVar &v : stage.spatial) names.reserve(v.name);
  for (const IterVar &v : stage.reduce_vars) names.reserve(v.name);

  Stmt body = lower_stage_block(graph, stage, names);

  const int64_t points = out.numel();
  const int64_t local = std::min(points, kNaiveGroupSize);
  const int64_t groups = (points + local - 1) / local;
  const DType flat_type = index_type_for(groups * local);
  const std::string g = names.fresh("g"), l = names.fresh("l"), i = names.fresh("i");
  Expr flat = Var::make(flat_type, i);

  // Output indices from the flat index, innermost first; the outermost needs no %.
  int64_t stride = 1;
  for (size_t d = stage.spatial.size(); d-- > 0;) {
    const IterVar &v = stage.spatial[d];
    Expr value = flat;
    if (stride != 1) value = value / make_int(stride, flat_type);
    if (d > 0 && v.extent != 1) value = value % make_int(v.extent, flat_type);
    if (d > 0 && v.extent == 1) value = make_int(0, flat_type);
    body = LetStmt::make(v.name, cast_to(index_type_for(v.extent), value), body);
    stride *= v.extent;
  }
  if (groups * local != points) body = IfThenElse::make(flat < make_int(points, flat_type), body);
  Expr group_var = cast_to(flat_type, Var::make(index_type_for(groups), g));
  Expr linear = local == 1
                    ? group_var
                    : group_var * make_int(local, flat_type) + cast_to(flat_type, Var::make(index_type_for(local), l));
  if (groups == 1) linear = cast_to(flat_type, Var::make(index_type_for(local), l));
  body = LetStmt::make(i, linear, body);
  body = For::make(l, local, ForKind::LocalX, body);
  body = For::make(g, groups, ForKind::GroupX, body);
  return Kernel{stage.output, body};
}

}  // namespace

Program lower(const Graph &graph) {
  Program program;
  program.name = graph.name;
  program.buffers = graph.tensors;
  for (const Stage &stage : graph.stages) program.kernels.push_back(lower_stage(graph, stage));
  return program;
}

}  // namespace ks
