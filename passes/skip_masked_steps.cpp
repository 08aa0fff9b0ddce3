// skip_masked_steps: see skip_masked_steps.h.
#include "passes/skip_masked_steps.h"

#include <limits>

#include "ir/affine.h"
#include "ir/bounds.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visitor.h"

namespace ks {

namespace {

struct Loop {
  std::string var;
  int64_t extent;
  ForKind kind;
  DType type;
};

// Where a walk is: the loops and lets around it, each let's value with the lets
// before it written out (bind).
struct Scope {
  std::vector<Loop> loops;
  std::map<std::string, Expr> lets;
  void bind(const std::string &var, const Expr &value) { lets[var] = substitute(value, lets); }
};

// A walk that keeps its scope.
class ScopedVisitor : public IRVisitor {
 public:
  explicit ScopedVisitor(Scope scope) : scope_(std::move(scope)) {}

 protected:
  using IRVisitor::visit;
  void visit(const LetStmt *n) override {
    dispatch(n->value);
    const std::map<std::string, Expr> saved = scope_.lets;
    scope_.bind(n->var, n->value);
    dispatch(n->body);
    scope_.lets = saved;
  }
  void visit(const For *n) override {
    scope_.loops.push_back({n->var, n->extent, n->kind, n->loop_var().type()});
    dispatch(n->body);
    scope_.loops.pop_back();
  }
  Scope scope_;
};

// The reads of `buffers` in a statement, each with the conditions it lies under (the
// first branches of selects, the bodies of ifs) and its scope; `bare` where one lies
// under none.
class MaskedReads : public ScopedVisitor {
 public:
  struct Read {
    std::vector<Expr> conditions;
    Scope scope;
  };
  MaskedReads(const std::set<std::string> &buffers, Scope scope) : ScopedVisitor(std::move(scope)), buffers_(buffers) {}
  std::vector<Read> reads;
  bool bare = false;

 protected:
  using ScopedVisitor::visit;
  void visit(const Load *n) override {
    if (buffers_.count(n->buffer)) {
      if (conditions_.empty()) bare = true;
      reads.push_back({conditions_, scope_});
    }
    IRVisitor::visit(n);
  }
  void visit(const Select *n) override {
    dispatch(n->condition);
    conditions_.push_back(n->condition);
    dispatch(n->true_value);
    conditions_.pop_back();
    dispatch(n->false_value);
  }
  void visit(const IfThenElse *n) override {
    dispatch(n->condition);
    conditions_.push_back(n->condition);
    dispatch(n->then_case);
    conditions_.pop_back();
    if (n->else_case.defined()) dispatch(n->else_case);
  }

 private:
  const std::set<std::string> &buffers_;
  std::vector<Expr> conditions_;
};

// The stores of a statement, each with its scope.
class Stores : public ScopedVisitor {
 public:
  struct At {
    const Store *store;
    Scope scope;
  };
  using ScopedVisitor::ScopedVisitor;
  std::vector<At> stores;

 protected:
  using ScopedVisitor::visit;
  void visit(const Store *n) override { stores.push_back({n, scope_}); }
};

// The condition C of a term that is 0 where C fails, whatever else it reads holds
// finite values: a factor select(C, x, 0), or exp(select(C, x, -inf) - y) (attention's
// weights: y is the row's logsumexp, -inf only where every term of the row is masked),
// either rounded to 16 bits.
std::optional<Expr> zero_unless(const Expr &term) {
  if (const Binary *m = term.as<Binary>(); m && m->op == BinaryOp::Mul) {
    if (std::optional<Expr> c = zero_unless(m->a)) return c;
    return zero_unless(m->b);
  }
  Expr f = term;
  if (const Call *r = f.as<Call>(); r && (r->fn == Builtin::RoundBf16 || r->fn == Builtin::RoundF16)) f = r->args[0];
  auto is = [](const Expr &e, double v) {
    const FloatImm *c = e.as<FloatImm>();
    return c && c->value == v;
  };
  if (const Select *s = f.as<Select>(); s && is(s->false_value, 0)) return s->condition;
  if (const Call *e = f.as<Call>(); e && e->fn == Builtin::Exp)
    if (const Binary *d = e->args[0].as<Binary>(); d && d->op == BinaryOp::Sub)
      if (const Select *s = d->a.as<Select>(); s && is(s->false_value, -std::numeric_limits<double>::infinity()))
        return s->condition;
  return std::nullopt;
}

// The variables of a step: those that range over it (the work-items' and the loops
// inside L) and those fixed for it (the others around it), each with its interval
// and, for the fixed, its type.
struct StepVars {
  std::map<std::string, Interval> ranged, fixed;
  std::map<std::string, DType> types;
};

// Whether e >= 0 may hold for some value of the ranged variables, the others fixed:
// e's fixed part plus the most the ranged part adds, >= 0. Undefined where that holds
// for every value of the fixed variables too (no restriction), where a subexpression
// that is not affine mixes both kinds, or a ranged one is unbounded.
Expr may_be_nonnegative(const Expr &e, const StepVars &vars) {
  const std::map<std::string, Interval> &ranged = vars.ranged;
  BoundsScope scope;
  scope.vars = ranged;
  std::map<std::string, Interval> atoms;    // ranged subexpressions, by made-up name
  std::map<std::string, Expr> fixed_atoms;  // fixed ones
  std::map<std::string, DType> types = vars.types;
  bool mixed = false;
  auto atom = [&](const Expr &x) -> std::optional<Affine> {
    bool any_ranged = false, any_fixed = false;
    for (const std::string &v : vars_in(x)) (ranged.count(v) ? any_ranged : any_fixed) = true;
    if (any_ranged && any_fixed) return mixed = true, std::nullopt;
    const std::string name = "$" + std::to_string(atoms.size() + fixed_atoms.size());
    if (any_ranged) {
      atoms[name] = bounds_of(x, scope);
    } else {
      fixed_atoms[name] = x;
      types[name] = x.type();
    }
    return Affine{{{name, 1}}, 0};
  };
  std::optional<Affine> form = affine_of(e, {}, atom);
  if (!form || mixed) return Expr();
  Affine fixed_part;
  fixed_part.constant = form->constant;
  for (const auto &[v, c] : form->coeffs) {
    const Interval *range = ranged.count(v) ? &ranged.at(v) : atoms.count(v) ? &atoms.at(v) : nullptr;
    if (!range) {
      fixed_part.coeffs[v] = c;
      continue;
    }
    if (!range->bounded) return Expr();
    fixed_part.constant += c > 0 ? c * range->hi : c * range->lo;
  }
  std::map<std::string, Expr> back;
  for (const auto &[name, x] : fixed_atoms) back[name] = x;
  const Expr reach = simplify(substitute(affine_expr(fixed_part, types, DType::I64), back));
  BoundsScope fixed;
  fixed.vars = vars.fixed;
  if (const Interval r = bounds_of(reach, fixed); r.bounded && r.lo >= 0) return Expr();  // every step
  return Binary::make(BinaryOp::Ge, reach, make_int(0, DType::I64));
}

Expr both(const Expr &x, const Expr &y) {
  return !x.defined() ? y : !y.defined() ? x : Binary::make(BinaryOp::And, x, y);
}

// What `condition` (a comparison of integers, or a conjunction with some) needs to
// hold somewhere in the step: each comparison's may_be_nonnegative; undefined where
// that restricts nothing.
Expr may_hold(const Expr &condition, const StepVars &vars) {
  const Binary *b = condition.as<Binary>();
  if (!b) return Expr();
  if (b->op == BinaryOp::And) return both(may_hold(b->a, vars), may_hold(b->b, vars));
  if (!is_int(b->a.type()) || !is_int(b->b.type())) return Expr();
  const Expr a = cast_to(DType::I64, b->a), c = cast_to(DType::I64, b->b), one = make_int(1, DType::I64);
  switch (b->op) {
    case BinaryOp::Le: return may_be_nonnegative(c - a, vars);
    case BinaryOp::Lt: return may_be_nonnegative(c - a - one, vars);
    case BinaryOp::Ge: return may_be_nonnegative(a - c, vars);
    case BinaryOp::Gt: return may_be_nonnegative(a - c - one, vars);
    default: return Expr();
  }
}

class Skip : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const LetStmt *n, const Stmt &self) override {
    const std::map<std::string, Expr> saved = scope_.lets;
    scope_.bind(n->var, n->value);
    Stmt out = IRMutator::visit(n, self);
    scope_.lets = saved;
    return out;
  }
  Stmt visit(const For *n, const Stmt &self) override {
    scope_.loops.push_back({n->var, n->extent, n->kind, n->loop_var().type()});
    Stmt out = IRMutator::visit(n, self);
    if (n->kind == ForKind::Serial) {
      const For *f = out.as<For>();
      out = For::make(f->var, f->extent, f->kind, step(f->body, scope_, {}));
    }
    scope_.loops.pop_back();
    return out;
  }

 private:
  Scope scope_;

  // L's body: the allocations and lets around its sequence, then the sequence's
  // statements, each guarded where it can be.
  Stmt step(const Stmt &body, Scope scope, std::set<std::string> own) {
    if (const Allocate *a = body.as<Allocate>()) {
      own.insert(a->buffer);
      return Allocate::make(a->buffer, a->type, a->shape, a->scope, step(a->body, scope, own));
    }
    if (const LetStmt *l = body.as<LetStmt>()) {
      scope.bind(l->var, l->value);
      return LetStmt::make(l->var, l->value, step(l->body, scope, own));
    }
    const Seq *seq = body.as<Seq>();
    if (!seq) return body;
    std::vector<Stmt> stmts = seq->stmts;
    for (size_t i = 0; i < stmts.size(); ++i)
      if (std::optional<Expr> g = guard(*seq, i, scope, own)) stmts[i] = IfThenElse::make(*g, stmts[i], Stmt());
    return Seq::make(stmts);
  }

  // The condition under which statement i of the step is needed, where it is one:
  // where a masked read of what it computes may be let through, or, for an
  // accumulation whose every term is 0 where its mask fails, where a term's mask may
  // hold (or at L's first step, which leaves a row whose every term is masked the
  // NaN of exp(-inf - -inf) that its unskipped steps would).
  std::optional<Expr> guard(const Seq &seq, size_t i, const Scope &scope, const std::set<std::string> &own) const {
    const Stmt &s = seq.stmts[i];
    if (!collect<Barrier>(s).empty() || !collect<AsyncCopy>(s).empty() || s.as<IfThenElse>()) return std::nullopt;
    std::set<std::string> inside, written;
    for (const Allocate *a : collect<Allocate>(s)) inside.insert(a->buffer);
    std::vector<MaskedReads::Read> reads;
    bool accumulates = true;  // every store acc[p] = acc[p] + T, T 0 where its mask fails
    bool outside = false;     // a store into a buffer the step does not own
    Stores stores(scope);
    stores.dispatch(s);
    for (const Stores::At &at : stores.stores) {
      const Store &st = *at.store;
      if (own.count(st.buffer)) written.insert(st.buffer);
      const Binary *add = st.value.as<Binary>();
      const Load *acc = add && add->op == BinaryOp::Add ? add->a.as<Load>() : nullptr;
      bool same = acc && acc->buffer == st.buffer && acc->indices.size() == st.indices.size() &&
                  !own.count(st.buffer) && !inside.count(st.buffer);
      for (size_t d = 0; same && d < st.indices.size(); ++d) same = equal(acc->indices[d], st.indices[d]);
      std::optional<Expr> mask = same ? zero_unless(add->b) : std::nullopt;
      if (mask) reads.push_back({{*mask}, at.scope});
      accumulates = accumulates && mask;
      outside = outside || (!own.count(st.buffer) && !inside.count(st.buffer));
    }
    if (stores.stores.empty()) return std::nullopt;
    if (!accumulates) {
      if (written.empty() || outside) return std::nullopt;
      reads.clear();
      for (size_t j = 0; j < seq.stmts.size(); ++j) {
        if (j == i) continue;
        MaskedReads finder(written, scope);
        finder.dispatch(seq.stmts[j]);
        if (finder.bare) return std::nullopt;
        reads.insert(reads.end(), finder.reads.begin(), finder.reads.end());
      }
      if (reads.empty()) return std::nullopt;
    }
    // The step's fixed variables: the loops around it (L's too) that are not a
    // work-item's; the work-items' and the loops inside L range.
    Expr any;
    std::set<std::string> seen;
    for (const MaskedReads::Read &r : reads) {
      StepVars vars;
      for (size_t l = 0; l < r.scope.loops.size(); ++l) {
        const Loop &loop = r.scope.loops[l];
        (l >= scope_.loops.size() || is_local(loop.kind) ? vars.ranged : vars.fixed)[loop.var] =
            Interval::of(0, loop.extent - 1);
        vars.types[loop.var] = loop.type;
      }
      Expr needed;
      for (const Expr &c : r.conditions) needed = both(needed, may_hold(substitute(c, r.scope.lets), vars));
      if (!needed.defined()) return std::nullopt;  // read at every step
      needed = simplify(needed);
      if (seen.insert(print_expr(needed)).second)
        any = any.defined() ? Binary::make(BinaryOp::Or, any, needed) : needed;
    }
    if (accumulates) {
      const Loop &l = scope_.loops.back();
      any = Binary::make(BinaryOp::Or, Binary::make(BinaryOp::Eq, Var::make(l.type, l.var), make_int(0, l.type)), any);
    }
    return simplify(any);
  }
};

}  // namespace

Program skip_masked_steps(const Program &program) {
  Program out = program;
  for (Kernel &k : out.kernels) k.body = Skip().mutate(k.body);
  return out;
}

}  // namespace ks
