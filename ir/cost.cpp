#include "ir/cost.h"

#include "ir/visitor.h"

namespace ks {

namespace {
// Counts float operations; index arithmetic is free.
struct CountFlops : IRVisitor {
  double count = 0;
  using IRVisitor::visit;
  void visit(const Unary *n) override {
    count += is_float(n->type);
    IRVisitor::visit(n);
  }
  void visit(const Binary *n) override {
    count += is_float(n->a.type());
    IRVisitor::visit(n);
  }
  void visit(const Call *n) override {
    count += 1;
    IRVisitor::visit(n);
  }
};
struct CountOperations : IRVisitor {
  int count = 0;
  using IRVisitor::visit;
  void visit(const Unary *n) override {
    count += is_float(n->a.type());
    IRVisitor::visit(n);
  }
  void visit(const Binary *n) override {
    count += is_float(n->a.type());
    IRVisitor::visit(n);
  }
  void visit(const Call *n) override {
    ++count;
    IRVisitor::visit(n);
  }
  void visit(const Select *n) override {
    count += is_float(n->type);
    IRVisitor::visit(n);
  }
  void visit(const Load *n) override {
    ++count;
    IRVisitor::visit(n);
  }
};

}  // namespace

int operation_count(const Expr &e) {
  CountOperations counter;
  counter.dispatch(e);
  return counter.count;
}

double stage_points(const Stage &stage) {
  double points = 1;
  for (const IterVar &v : stage.spatial) points *= static_cast<double>(v.extent);
  for (const IterVar &v : stage.reduce_vars) points *= static_cast<double>(v.extent);
  return points;
}

double graph_work(const Graph &graph) {
  double work = 0;
  for (const Stage &stage : graph.stages) work += stage_points(stage) * (1 + operation_count(stage.body));
  return work;
}

Cost graph_cost(const Graph &graph) {
  Cost cost;
  for (const TensorDecl &t : graph.tensors)
    if (t.role != TensorRole::Temp) cost.bytes += static_cast<double>(t.bytes());
  for (const Stage &stage : graph.stages) {
    CountFlops counter;
    counter.dispatch(stage.body);
    double points = static_cast<double>(graph.find_tensor(stage.output)->numel());
    for (const IterVar &v : stage.reduce_vars) points *= static_cast<double>(v.extent);
    cost.flops += points * (counter.count + (stage.reduce != ReduceOp::None ? 1 : 0));
  }
  return cost;
}

}  // namespace ks
