// Dispatch and the default (recursing) behaviour of the walkers.
#include "ir/visitor.h"

namespace ks {

// The X-macro tables below read best as written.
// clang-format off

void IRVisitorStrict::dispatch(const Expr &e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define KS_EXPR_NODE(N)                     \
  case NodeKind::N:                         \
    visit(static_cast<const N *>(e.get())); \
    return;
#define KS_STMT_NODE(N)
#include "ir/nodes.def"
    default: throw InternalError("statement node in an expression");
  }
}

void IRVisitorStrict::dispatch(const Stmt &s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define KS_EXPR_NODE(N)
#define KS_STMT_NODE(N)                     \
  case NodeKind::N:                         \
    visit(static_cast<const N *>(s.get())); \
    return;
#include "ir/nodes.def"
    default: throw InternalError("expression node in a statement");
  }
}

void IRVisitor::visit(const IntImm *) {}
void IRVisitor::visit(const FloatImm *) {}
void IRVisitor::visit(const Var *) {}
void IRVisitor::visit(const Unary *n) { dispatch(n->a); }
void IRVisitor::visit(const Binary *n) {
  dispatch(n->a);
  dispatch(n->b);
}
void IRVisitor::visit(const Call *n) {
  for (const Expr &arg : n->args) dispatch(arg);
}
void IRVisitor::visit(const Cast *n) { dispatch(n->value); }
void IRVisitor::visit(const Select *n) {
  dispatch(n->condition);
  dispatch(n->true_value);
  dispatch(n->false_value);
}
void IRVisitor::visit(const Load *n) {
  for (const Expr &index : n->indices) dispatch(index);
}
void IRVisitor::visit(const For *n) { dispatch(n->body); }
void IRVisitor::visit(const Block *n) {
  for (const auto *regions : {&n->reads, &n->writes})
    for (const Region &region : *regions)
      for (const Range &range : region.ranges) dispatch(range.min);
  dispatch(n->body);
}
void IRVisitor::visit(const Allocate *n) { dispatch(n->body); }
void IRVisitor::visit(const Barrier *) {}
void IRVisitor::visit(const AsyncCopy *n) { dispatch(n->body); }
void IRVisitor::visit(const IfThenElse *n) {
  dispatch(n->condition);
  dispatch(n->then_case);
  dispatch(n->else_case);
}
void IRVisitor::visit(const LetStmt *n) {
  dispatch(n->value);
  dispatch(n->body);
}
void IRVisitor::visit(const Store *n) {
  for (const Expr &index : n->indices) dispatch(index);
  dispatch(n->value);
}
void IRVisitor::visit(const Seq *n) {
  for (const Stmt &stmt : n->stmts) dispatch(stmt);
}

Expr IRMutator::mutate(const Expr &e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define KS_EXPR_NODE(N) \
  case NodeKind::N:     \
    return visit(static_cast<const N *>(e.get()), e);
#define KS_STMT_NODE(N)
#include "ir/nodes.def"
    default: throw InternalError("statement node in an expression");
  }
}

Stmt IRMutator::mutate(const Stmt &s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define KS_EXPR_NODE(N)
#define KS_STMT_NODE(N) \
  case NodeKind::N: return visit(static_cast<const N *>(s.get()), s);
#include "ir/nodes.def"
    default: throw InternalError("expression node in a statement");
  }
}

// clang-format on

namespace {
std::vector<Expr> mutate_all(IRMutator &m, const std::vector<Expr> &exprs, bool *changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr &e : exprs) {
    out.push_back(m.mutate(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}
}  // namespace

std::vector<Region> IRMutator::mutate_regions(const std::vector<Region> &regions, bool *changed) {
  std::vector<Region> out = regions;
  for (Region &region : out)
    for (Range &range : region.ranges) {
      Expr min = mutate(range.min);
      if (!min.same_as(range.min)) *changed = true;
      range.min = min;
    }
  return out;
}

Expr IRMutator::visit(const IntImm *, const Expr &self) { return self; }
Expr IRMutator::visit(const FloatImm *, const Expr &self) { return self; }
Expr IRMutator::visit(const Var *, const Expr &self) { return self; }
Expr IRMutator::visit(const Unary *n, const Expr &self) {
  Expr a = mutate(n->a);
  return a.same_as(n->a) ? self : Unary::make(n->op, a);
}
Expr IRMutator::visit(const Binary *n, const Expr &self) {
  Expr a = mutate(n->a), b = mutate(n->b);
  return a.same_as(n->a) && b.same_as(n->b) ? self : Binary::make(n->op, a, b);
}
Expr IRMutator::visit(const Call *n, const Expr &self) {
  bool changed = false;
  std::vector<Expr> args = mutate_all(*this, n->args, &changed);
  return changed ? Call::make(n->fn, std::move(args)) : self;
}
Expr IRMutator::visit(const Cast *n, const Expr &self) {
  Expr value = mutate(n->value);
  return value.same_as(n->value) ? self : Cast::make(n->type, value);
}
Expr IRMutator::visit(const Select *n, const Expr &self) {
  Expr c = mutate(n->condition), t = mutate(n->true_value), f = mutate(n->false_value);
  if (c.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value)) return self;
  return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load *n, const Expr &self) {
  bool changed = false;
  std::vector<Expr> indices = mutate_all(*this, n->indices, &changed);
  return changed ? Load::make(n->type, n->buffer, std::move(indices), n->pad) : self;
}
Stmt IRMutator::visit(const For *n, const Stmt &self) {
  Stmt body = mutate(n->body);
  return body.same_as(n->body) ? self : For::make(n->var, n->extent, n->kind, body);
}
Stmt IRMutator::visit(const Block *n, const Stmt &self) {
  bool changed = false;
  std::vector<Region> reads = mutate_regions(n->reads, &changed);
  std::vector<Region> writes = mutate_regions(n->writes, &changed);
  Stmt body = mutate(n->body);
  if (!changed && body.same_as(n->body)) return self;
  return Block::make(n->stage, std::move(reads), std::move(writes), body);
}
Stmt IRMutator::visit(const Allocate *n, const Stmt &self) {
  Stmt body = mutate(n->body);
  return body.same_as(n->body) ? self : Allocate::make(n->buffer, n->type, n->shape, n->scope, body);
}
Stmt IRMutator::visit(const Barrier *, const Stmt &self) { return self; }
Stmt IRMutator::visit(const AsyncCopy *n, const Stmt &self) {
  Stmt body = mutate(n->body);
  return body.same_as(n->body) ? self : AsyncCopy::make(body);
}
Stmt IRMutator::visit(const IfThenElse *n, const Stmt &self) {
  Expr c = mutate(n->condition);
  Stmt t = mutate(n->then_case), f = mutate(n->else_case);
  if (c.same_as(n->condition) && t.same_as(n->then_case) && f.same_as(n->else_case)) return self;
  return IfThenElse::make(c, t, f);
}
Stmt IRMutator::visit(const LetStmt *n, const Stmt &self) {
  Expr value = mutate(n->value);
  Stmt body = mutate(n->body);
  return value.same_as(n->value) && body.same_as(n->body) ? self : LetStmt::make(n->var, value, body);
}
Stmt IRMutator::visit(const Store *n, const Stmt &self) {
  bool changed = false;
  std::vector<Expr> indices = mutate_all(*this, n->indices, &changed);
  Expr value = mutate(n->value);
  if (!changed && value.same_as(n->value)) return self;
  return Store::make(n->buffer, std::move(indices), value);
}
Stmt IRMutator::visit(const Seq *n, const Stmt &self) {
  bool changed = false;
  std::vector<Stmt> stmts;
  for (const Stmt &stmt : n->stmts) {
    stmts.push_back(mutate(stmt));
    if (!stmts.back().same_as(stmt)) changed = true;
  }
  return changed ? Seq::make(std::move(stmts)) : self;
}

std::set<std::string> vars_in(const Expr &e) {
  struct Vars : IRVisitor {
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Var *n) override { names.insert(n->name); }
  } vars;
  vars.dispatch(e);
  return vars.names;
}

bool mentions(const Expr &e, const std::set<std::string> &vars) {
  for (const std::string &v : vars_in(e))
    if (vars.count(v)) return true;
  return false;
}

namespace {

struct Substitute : IRMutator {
  const std::map<std::string, Expr> &values;
  explicit Substitute(const std::map<std::string, Expr> &values) : values(values) {}
  using IRMutator::visit;
  Expr visit(const Var *n, const Expr &self) override {
    auto it = values.find(n->name);
    return it == values.end() ? self : it->second;
  }
};

}  // namespace

Expr substitute(const Expr &e, const std::map<std::string, Expr> &values) { return Substitute(values).mutate(e); }

Stmt substitute(const Stmt &s, const std::map<std::string, Expr> &values) { return Substitute(values).mutate(s); }

}  // namespace ks
