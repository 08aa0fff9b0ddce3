// The verifier of both IRs.
#include "ir/verifier.h"

#include <cmath>
#include <map>
#include <set>

#include "ir/matrix_tile.h"
#include "ir/printer.h"
#include "ir/vector_form.h"
#include "ir/visitor.h"

namespace ks {

Interval tensor_value_interval(const TensorDecl &tensor) {
  if (!tensor.range || !is_int(tensor.type)) return Interval::everything();
  return Interval::of(static_cast<int64_t>(std::ceil(tensor.range->lo)),
                      static_cast<int64_t>(std::ceil(tensor.range->hi)) - 1);
}

Interval stage_value_interval(const Stage &stage, const BoundsScope &scope) {
  int64_t points = 1;
  for (const IterVar &v : stage.reduce_vars) points *= v.extent;
  switch (stage.reduce) {
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: return Interval::of(0, points - 1);
    case ReduceOp::None:
    case ReduceOp::Max:
    case ReduceOp::Min: return bounds_of(stage.body, scope);
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::LogSumExp:
    case ReduceOp::SoftmaxSum: return Interval::everything();
  }
  return Interval::everything();
}

namespace {

// Walks an expression: every load names a known tensor with the right rank, every
// variable is in scope, and unpadded loads stay in bounds.
class ExprChecker : public IRVisitor {
 public:
  ExprChecker(const std::map<std::string, const TensorDecl *> &tensors, const BoundsScope &scope, std::string *problem)
      : tensors_(tensors), scope_(scope), problem_(problem) {}

  using IRVisitor::visit;
  void visit(const Var *n) override {
    if (!scope_.vars.count(n->name)) fail("variable '" + n->name + "' is not in scope");
  }
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    auto it = tensors_.find(n->buffer);
    if (it == tensors_.end()) return fail("load of unknown buffer '" + n->buffer + "'");
    const TensorDecl &t = *it->second;
    if (value_type(t.type) != n->type) return fail("load of " + n->buffer + " has the wrong type");
    if (t.shape.size() != n->indices.size()) return fail("load of " + n->buffer + " has the wrong rank");
    if (n->pad) return;
    for (size_t d = 0; d < n->indices.size(); ++d)
      if (!bounds_of(n->indices[d], scope_).within(0, t.shape[d] - 1))
        return fail("index " + print_expr(n->indices[d]) + " of " + n->buffer + " may leave [0, " +
                    std::to_string(t.shape[d]) + ")");
  }

 private:
  void fail(const std::string &message) {
    if (problem_->empty()) *problem_ = message;
  }
  const std::map<std::string, const TensorDecl *> &tensors_;
  const BoundsScope &scope_;
  std::string *problem_;
};

// What is wrong with a stage's softmax_sum (ir/graph.h), or with a softmax_pair where
// there is no softmax_sum; empty when nothing is.
std::string softmax_sum_problem(const Stage &stage) {
  std::vector<const Call *> pairs;
  for (const Call *c : collect<Call>(stage.body))
    if (c->fn == Builtin::SoftmaxPair) pairs.push_back(c);
  if (stage.reduce != ReduceOp::SoftmaxSum)
    return !pairs.empty()          ? "softmax_pair outside a softmax_sum"
           : stage.score_vars != 0 ? "score variables without a softmax_sum"
                                   : "";
  const Call *pair = stage.body.as<Call>();
  if (!pair || pair->fn != Builtin::SoftmaxPair || pairs.size() != 1)
    return "a softmax_sum's body is one softmax_pair(score, value)";
  if (!is_float(stage.body.type())) return "a softmax_sum takes float values";
  if (stage.score_vars >= stage.reduce_vars.size()) return "a softmax_sum needs a variable outside its score's sum";
  std::set<std::string> inner;
  for (size_t r = stage.reduce_vars.size() - stage.score_vars; r < stage.reduce_vars.size(); ++r)
    inner.insert(stage.reduce_vars[r].name);
  if (mentions(pair->args[1], inner)) return "a softmax_sum's value uses a variable of its score's sum";
  return "";
}

[[noreturn]] void broken(const std::string &rule, const std::string &ir) {
  throw InternalError("IR verification failed: " + rule + "\n" + ir);
}

class ProgramChecker : public IRVisitor {
 public:
  ProgramChecker(const Program &program, std::string *problem) : problem_(problem) {
    for (const TensorDecl &b : program.buffers) {
      tensors_[b.name] = &b;
      globals_.insert(b.name);
      if (is_int(b.type)) scope_.buffer_values[b.name] = tensor_value_interval(b);
    }
  }

  void kernel(const Kernel &k) {
    bound_.clear();
    loops_.clear();
    locals_.clear();
    serial_depth_ = 0;
    local_seen_ = 0;
    kernel_body_ = k.body;
    dispatch(k.body);
  }

  using IRVisitor::visit;

 protected:
  void check(const Expr &e) {
    ExprChecker checker(tensors_, scope_, problem_);
    checker.dispatch(e);
    for (const Call *c : collect<Call>(e))
      if (!is_function(c->fn)) fail(std::string(builtin_info(c->fn).name) + " in Loop IR (lowering takes it apart)");
  }
  void fail(const std::string &message) {
    if (problem_->empty()) *problem_ = message;
  }
  void bind_var(const std::string &name, Interval range) {
    if (scope_.vars.count(name)) fail("variable '" + name + "' is defined twice");
    scope_.vars[name] = range;
  }

  void visit(const For *n) override {
    // Schedules name loops: a name two loops of one kernel share would name either.
    if (!loops_.insert(n->var).second) fail("loop " + n->var + " appears twice in one kernel");
    const bool serial = n->kind == ForKind::Serial || n->kind == ForKind::Unrolled || n->kind == ForKind::Vectorized ||
                        n->kind == ForKind::Matrix;
    if (!serial) {
      if (bound_.count(n->kind)) fail(std::string("loop kind ") + for_kind_name(n->kind) + " is bound twice");
      if (serial_depth_ > 0) fail(std::string("loop ") + n->var + " is bound inside a serial loop");
      if (is_group(n->kind) && local_seen_ > 0) fail("group loop " + n->var + " is inside a local loop");
      bound_.insert(n->kind);
    }
    std::string not_vector;
    if (n->kind == ForKind::Vectorized && !vector_form(*n, &not_vector)) fail("vectorized loop: " + not_vector);
    std::string not_matrix;
    if (n->kind == ForKind::Matrix && !matrix_tile(kernel_body_, *n, &not_matrix)) fail("matrix loop: " + not_matrix);
    serial_depth_ += serial;
    local_seen_ += is_local(n->kind);
    bind_var(n->var, Interval::of(0, n->extent - 1));
    dispatch(n->body);
    scope_.vars.erase(n->var);
    serial_depth_ -= serial;
    local_seen_ -= is_local(n->kind);
    if (!serial) bound_.erase(n->kind);
  }
  void visit(const Block *n) override {
    for (const auto *regions : {&n->reads, &n->writes})
      for (const Region &region : *regions) {
        auto it = tensors_.find(region.buffer);
        if (it == tensors_.end())
          fail("region of unknown buffer '" + region.buffer + "'");
        else if (it->second->shape.size() != region.ranges.size())
          fail("region of " + region.buffer + " has the wrong rank");
        for (const Range &range : region.ranges) check(range.min);
      }
    dispatch(n->body);
  }
  void visit(const Allocate *n) override {
    if (tensors_.count(n->buffer)) fail("allocation '" + n->buffer + "' shadows a buffer");
    // Registers hold values, not storage; local memory may hold a 16-bit tensor's copy.
    if (is_half(n->type) && n->scope != MemoryScope::Local)
      fail("allocation '" + n->buffer + "' of " + dtype_name(n->type) + ", a storage type, in " +
           memory_scope_name(n->scope) + " memory");
    // Local memory is declared once at the top of the kernel, whatever block allocates it.
    if (n->scope == MemoryScope::Local && !locals_.insert(n->buffer).second)
      fail("local allocation '" + n->buffer + "' appears twice in one kernel");
    TensorDecl local{n->buffer, n->type, n->shape, TensorRole::Temp, std::nullopt};
    tensors_[n->buffer] = &local;
    dispatch(n->body);
    tensors_.erase(n->buffer);
  }
  void visit(const IfThenElse *n) override {
    check(n->condition);
    BoundsScope outside = scope_;
    refine_with_condition(n->condition, &scope_);
    ++conditional_depth_;
    dispatch(n->then_case);
    scope_ = outside;
    dispatch(n->else_case);
    --conditional_depth_;
  }
  void visit(const Barrier *) override {
    // Work-items that skip a barrier others wait at deadlock the group.
    if (conditional_depth_ > 0) fail("barrier inside a conditional");
    if (async_depth_ > 0) fail("barrier inside an asynchronous copy");
  }
  // An asynchronous copy's stores are what the hardware copies by itself: a global
  // value (read as it is, or 0 outside its buffer) into a local buffer.
  void visit(const AsyncCopy *n) override {
    if (async_depth_ > 0) fail("asynchronous copy inside another");
    ++async_depth_;
    dispatch(n->body);
    --async_depth_;
  }
  void visit(const LetStmt *n) override {
    check(n->value);
    bind_var(n->var, bounds_of(n->value, scope_));
    dispatch(n->body);
    scope_.vars.erase(n->var);
  }
  void visit(const Store *n) override {
    auto it = tensors_.find(n->buffer);
    if (it == tensors_.end()) return fail("store to unknown buffer '" + n->buffer + "'");
    const TensorDecl &t = *it->second;
    if (t.role == TensorRole::Input) fail("store to input " + n->buffer);
    if (async_depth_ > 0) {
      const Load *from = n->value.as<Load>();
      if (!locals_.count(n->buffer))  // (an allocation never shadows a global buffer)
        fail("asynchronous copy into " + n->buffer + ", which is not local memory");
      if (!from || !globals_.count(from->buffer) || (from->pad && *from->pad != 0.0))
        fail("asynchronous copy into " + n->buffer + " of " + print_expr(n->value) +
             ", not a global buffer's element (0 outside it)");
      else if (tensors_.at(from->buffer)->type != t.type)  // the copy moves bits
        fail("asynchronous copy of " + std::string(dtype_name(tensors_.at(from->buffer)->type)) + " " + from->buffer +
             " into " + dtype_name(t.type) + " " + n->buffer + ": the copy converts nothing");
    }
    if (value_type(t.type) != n->value.type()) fail("store of the wrong type to " + n->buffer);
    if (t.shape.size() != n->indices.size()) fail("store to " + n->buffer + " has the wrong rank");
    for (size_t d = 0; d < n->indices.size() && d < t.shape.size(); ++d) {
      check(n->indices[d]);
      if (!bounds_of(n->indices[d], scope_).within(0, t.shape[d] - 1))
        fail("index " + print_expr(n->indices[d]) + " of a store to " + n->buffer + " may leave [0, " +
             std::to_string(t.shape[d]) + ")");
    }
    check(n->value);
  }

 private:
  std::map<std::string, const TensorDecl *> tensors_;
  BoundsScope scope_;
  std::set<ForKind> bound_;
  Stmt kernel_body_;  // the kernel being checked (a matrix loop's form reads its surroundings)
  std::set<std::string> loops_, locals_, globals_;
  int serial_depth_ = 0, local_seen_ = 0, conditional_depth_ = 0, async_depth_ = 0;
  std::string *problem_;
};

}  // namespace

void verify_graph(const Graph &graph) {
  std::map<std::string, const TensorDecl *> all;
  for (const TensorDecl &t : graph.tensors) {
    if (all.count(t.name)) broken("tensor '" + t.name + "' is declared twice", print_graph(graph));
    if (t.type == DType::Bool) broken("tensor '" + t.name + "' holds bool", print_graph(graph));
    for (int64_t extent : t.shape)
      if (extent < 1) broken("tensor '" + t.name + "' has an empty dimension", print_graph(graph));
    all[t.name] = &t;
  }
  std::map<std::string, const TensorDecl *> visible;
  BoundsScope values;
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Input) {
      visible[t.name] = &t;
      if (is_int(t.type)) values.buffer_values[t.name] = tensor_value_interval(t);
    }
  for (const Stage &stage : graph.stages) {
    auto it = all.find(stage.output);
    if (it == all.end()) broken("stage of undeclared tensor '" + stage.output + "'", print_graph(graph));
    const TensorDecl &out = *it->second;
    if (out.role == TensorRole::Input) broken("stage writes input '" + out.name + "'", print_graph(graph));
    if (visible.count(out.name)) broken("tensor '" + out.name + "' is defined twice", print_graph(graph));
    if (stage.spatial.size() != out.shape.size())
      broken("stage '" + out.name + "' has the wrong number of variables", print_graph(graph));
    BoundsScope scope = values;
    for (size_t d = 0; d < stage.spatial.size(); ++d) {
      if (stage.spatial[d].extent != out.shape[d])
        broken("stage '" + out.name + "' variable " + stage.spatial[d].name + " does not span its dimension",
               print_graph(graph));
      scope.vars[stage.spatial[d].name] = Interval::of(0, stage.spatial[d].extent - 1);
    }
    for (const IterVar &v : stage.reduce_vars) {
      if (scope.vars.count(v.name)) broken("variable '" + v.name + "' is defined twice", print_graph(graph));
      scope.vars[v.name] = Interval::of(0, v.extent - 1);
    }
    if ((stage.reduce == ReduceOp::None) != stage.reduce_vars.empty())
      broken("stage '" + out.name + "' has reduction variables without a reduction", print_graph(graph));
    bool arg = stage.reduce == ReduceOp::ArgMax || stage.reduce == ReduceOp::ArgMin;
    if (!stage.body.defined()) broken("stage '" + out.name + "' has no body", print_graph(graph));
    if (arg ? !is_int(out.type) || stage.body.type() == DType::Bool : stage.body.type() != value_type(out.type))
      broken("stage '" + out.name + "' computes " + dtype_name(stage.body.type()) + " into " + dtype_name(out.type),
             print_graph(graph));
    std::string problem;
    ExprChecker checker(visible, scope, &problem);
    checker.dispatch(stage.body);
    if (!problem.empty()) broken("stage '" + out.name + "': " + problem, print_graph(graph));
    if (std::string why = softmax_sum_problem(stage); !why.empty())
      broken("stage '" + out.name + "': " + why, print_graph(graph));
    visible[out.name] = &out;
    if (is_int(out.type)) values.buffer_values[out.name] = stage_value_interval(stage, scope);
  }
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Output && !visible.count(t.name))
      broken("output '" + t.name + "' is never defined", print_graph(graph));
}

void verify_program(const Program &program) {
  std::set<std::string> names;
  for (const TensorDecl &b : program.buffers)
    if (!names.insert(b.name).second) broken("buffer '" + b.name + "' is declared twice", print_program(program));
  std::set<std::string> kernel_names;
  for (const Kernel &k : program.kernels) {
    if (!kernel_names.insert(k.name).second)
      broken("kernel '" + k.name + "' is declared twice", print_program(program));
    std::string problem;
    ProgramChecker checker(program, &problem);
    checker.kernel(k);
    if (!problem.empty()) broken("kernel '" + k.name + "': " + problem, print_program(program));
  }
}

}  // namespace ks
