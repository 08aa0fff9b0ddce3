// Constant folding and the identities of real arithmetic, bottom-up over a tree.
#include "ir/simplify.h"

#include <cmath>

#include "ir/visitor.h"

namespace ks {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

bool is_const(const Expr &e, double value) {
  std::optional<double> v = as_const_number(e);
  return v && *v == value;
}

// A constant of e's type with the given value (integers only when it is whole).
std::optional<Expr> constant_like(DType type, double value) {
  if (!std::isfinite(value)) return std::nullopt;
  if (is_float(type)) return FloatImm::make(type, value);
  if (is_int(type) && value == std::floor(value) && std::fabs(value) < 9e15) {
    if (type == DType::I32 && (value < INT32_MIN || value > INT32_MAX)) return std::nullopt;
    return IntImm::make(type, static_cast<int64_t>(value));
  }
  return std::nullopt;
}

// A bool written with integers: the IR has no bool literal.
Expr bool_constant(bool value) { return Binary::make(value ? BinaryOp::Eq : BinaryOp::Ne, make_int(0), make_int(0)); }

std::optional<double> fold_arithmetic(BinaryOp op, DType type, double a, double b) {
  if (is_int(type)) {
    const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    switch (op) {
      case BinaryOp::Add: return static_cast<double>(x + y);
      case BinaryOp::Sub: return static_cast<double>(x - y);
      case BinaryOp::Mul: return static_cast<double>(x * y);
      case BinaryOp::Div: return y == 0 ? std::nullopt : std::optional<double>(static_cast<double>(floor_div(x, y)));
      case BinaryOp::Mod: return y == 0 ? std::nullopt : std::optional<double>(static_cast<double>(floor_mod(x, y)));
      case BinaryOp::Min: return static_cast<double>(std::min(x, y));
      case BinaryOp::Max: return static_cast<double>(std::max(x, y));
      default: return std::nullopt;
    }
  }
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return b == 0 ? std::nullopt : std::optional<double>(a / b);
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::LogAddExp: return log_add_exp(a, b);
    default: return std::nullopt;
  }
}

class Simplifier : public IRMutator {
 public:
  using IRMutator::visit;

  Expr visit(const Unary *n, const Expr &self) override {
    Expr a = mutate(n->a);
    if (n->op == UnaryOp::Neg) {
      if (std::optional<double> v = as_const_number(a))
        if (auto c = constant_like(self.type(), -*v)) return *c;
      if (const Unary *inner = a.as<Unary>(); inner && inner->op == UnaryOp::Neg) return inner->a;
    } else if (std::optional<bool> v = as_const_bool(a)) {
      return bool_constant(!*v);
    }
    return a.same_as(n->a) ? self : Unary::make(n->op, a);
  }

  Expr visit(const Binary *n, const Expr &self) override {
    Expr a = mutate(n->a), b = mutate(n->b);
    const DType type = a.type();
    if (n->op == BinaryOp::And || n->op == BinaryOp::Or) {
      const bool is_and = n->op == BinaryOp::And;
      std::optional<bool> va = as_const_bool(a), vb = as_const_bool(b);
      if (va) return *va == is_and ? b : bool_constant(*va);
      if (vb) return *vb == is_and ? a : bool_constant(*vb);
    } else if (is_comparison(n->op)) {
      std::optional<double> va = as_const_number(a), vb = as_const_number(b);
      const bool canonical = (n->op == BinaryOp::Eq || n->op == BinaryOp::Ne) && a.as<IntImm>() && b.as<IntImm>() &&
                             va == 0.0 && vb == 0.0 && a.same_as(n->a) && b.same_as(n->b);
      if (canonical) return self;  // `0 == 0`: how a folded bool is written
      if (va && vb && !std::isnan(*va) && !std::isnan(*vb)) {
        switch (n->op) {
          case BinaryOp::Lt: return bool_constant(*va < *vb);
          case BinaryOp::Le: return bool_constant(*va <= *vb);
          case BinaryOp::Gt: return bool_constant(*va > *vb);
          case BinaryOp::Ge: return bool_constant(*va >= *vb);
          case BinaryOp::Eq: return bool_constant(*va == *vb);
          case BinaryOp::Ne: return bool_constant(*va != *vb);
          default: break;
        }
      }
    } else if (type != DType::Bool) {
      std::optional<double> va = as_const_number(a), vb = as_const_number(b);
      if (va && vb)
        if (auto folded = fold_arithmetic(n->op, type, *va, *vb))
          if (auto c = constant_like(type, *folded)) return *c;
      if (Expr e = identity(n->op, a, b); e.defined()) return e;
    }
    return a.same_as(n->a) && b.same_as(n->b) ? self : Binary::make(n->op, a, b);
  }

  Expr visit(const Call *n, const Expr &self) override {
    std::vector<Expr> args;
    std::vector<double> values;
    bool changed = false;
    for (const Expr &arg : n->args) {
      args.push_back(mutate(arg));
      changed = changed || !args.back().same_as(arg);
      if (std::optional<double> v = as_const_number(args.back())) values.push_back(*v);
    }
    if (values.size() == args.size() && is_function(n->fn))
      if (auto c = constant_like(self.type(), eval_builtin(n->fn, values.data()))) return *c;
    return changed ? Call::make(n->fn, args) : self;
  }

  Expr visit(const Cast *n, const Expr &self) override {
    Expr value = mutate(n->value);
    if (value.type() == self.type()) return value;
    // Integers convert to floats and to wider integers exactly; other casts stay.
    if (const IntImm *i = value.as<IntImm>(); i && (is_float(self.type()) || self.type() == DType::I64))
      if (auto c = constant_like(self.type(), static_cast<double>(i->value))) return *c;
    return value.same_as(n->value) ? self : Cast::make(self.type(), value);
  }

  Expr visit(const Select *n, const Expr &self) override {
    Expr condition = mutate(n->condition), t = mutate(n->true_value), f = mutate(n->false_value);
    if (std::optional<bool> v = as_const_bool(condition)) return *v ? t : f;
    if (equal(t, f)) return t;
    return condition.same_as(n->condition) && t.same_as(n->true_value) && f.same_as(n->false_value)
               ? self
               : Select::make(condition, t, f);
  }

 private:
  // The identities of real arithmetic on simplified operands; undefined when none applies.
  static Expr identity(BinaryOp op, const Expr &a, const Expr &b) {
    const DType type = a.type();
    auto zero = [&] { return *constant_like(type, 0); };
    switch (op) {
      case BinaryOp::Add:
        if (is_const(a, 0)) return b;
        if (is_const(b, 0)) return a;
        if (std::optional<double> v = as_const_number(b); v && *v < 0)  // x + -c is x - c
          if (auto c = constant_like(type, -*v)) return Binary::make(BinaryOp::Sub, a, *c);
        break;
      case BinaryOp::Sub:
        if (is_const(b, 0)) return a;
        if (std::optional<double> v = as_const_number(b); v && *v < 0)  // x - -c is x + c
          if (auto c = constant_like(type, -*v)) return Binary::make(BinaryOp::Add, a, *c);
        if (is_const(a, 0)) return Unary::make(UnaryOp::Neg, b);
        if (equal(a, b)) return zero();
        break;
      case BinaryOp::Mul:
        if (is_const(a, 1)) return b;
        if (is_const(b, 1)) return a;
        if (is_const(a, 0) || is_const(b, 0)) return zero();
        break;
      case BinaryOp::Div:
        if (is_const(b, 1)) return a;
        if (is_const(a, 0) && !is_const(b, 0)) return zero();
        break;
      case BinaryOp::Mod:
        if (is_const(b, 1)) return zero();
        break;
      case BinaryOp::Min:
      case BinaryOp::Max:
        if (equal(a, b)) return a;
        break;
      default: break;
    }
    return Expr();
  }
};

}  // namespace

std::optional<double> as_const_number(const Expr &e) {
  if (const IntImm *i = e.as<IntImm>()) return static_cast<double>(i->value);
  if (const FloatImm *f = e.as<FloatImm>()) return f->value;
  if (const Cast *c = e.as<Cast>(); c && c->type != DType::Bool) {
    std::optional<double> v = as_const_number(c->value);
    if (v && is_int(c->type)) return std::trunc(*v);
    return v;
  }
  return std::nullopt;
}

std::optional<bool> as_const_bool(const Expr &e) {
  if (e.type() != DType::Bool) return std::nullopt;
  if (const Unary *u = e.as<Unary>(); u && u->op == UnaryOp::Not) {
    std::optional<bool> v = as_const_bool(u->a);
    return v ? std::optional<bool>(!*v) : std::nullopt;
  }
  const Binary *b = e.as<Binary>();
  if (!b) return std::nullopt;
  if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
    std::optional<bool> x = as_const_bool(b->a), y = as_const_bool(b->b);
    const bool is_and = b->op == BinaryOp::And;
    if ((x && *x != is_and) || (y && *y != is_and)) return !is_and;  // false && .., true || ..
    if (x && y) return is_and;
    return std::nullopt;
  }
  if (b->a.type() == DType::Bool) {  // == and != of two bools
    std::optional<bool> x = as_const_bool(b->a), y = as_const_bool(b->b);
    if (!x || !y) return std::nullopt;
    return b->op == BinaryOp::Eq ? *x == *y : *x != *y;
  }
  std::optional<double> x = as_const_number(b->a), y = as_const_number(b->b);
  if (!x || !y || std::isnan(*x) || std::isnan(*y)) return std::nullopt;
  switch (b->op) {
    case BinaryOp::Lt: return *x < *y;
    case BinaryOp::Le: return *x <= *y;
    case BinaryOp::Gt: return *x > *y;
    case BinaryOp::Ge: return *x >= *y;
    case BinaryOp::Eq: return *x == *y;
    case BinaryOp::Ne: return *x != *y;
    default: return std::nullopt;
  }
}

bool equal(const Expr &a, const Expr &b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.type() != b.type()) return false;
  switch (a.kind()) {
    case NodeKind::IntImm: return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::FloatImm: return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
    case NodeKind::Var: return a.as<Var>()->name == b.as<Var>()->name;
    case NodeKind::Unary: return a.as<Unary>()->op == b.as<Unary>()->op && equal(a.as<Unary>()->a, b.as<Unary>()->a);
    case NodeKind::Binary: {
      const Binary *x = a.as<Binary>(), *y = b.as<Binary>();
      return x->op == y->op && equal(x->a, y->a) && equal(x->b, y->b);
    }
    case NodeKind::Call: {
      const Call *x = a.as<Call>(), *y = b.as<Call>();
      if (x->fn != y->fn || x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!equal(x->args[i], y->args[i])) return false;
      return true;
    }
    case NodeKind::Cast: return equal(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::Select: {
      const Select *x = a.as<Select>(), *y = b.as<Select>();
      return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case NodeKind::Load: {
      const Load *x = a.as<Load>(), *y = b.as<Load>();
      if (x->buffer != y->buffer || x->pad != y->pad || x->indices.size() != y->indices.size()) return false;
      for (size_t i = 0; i < x->indices.size(); ++i)
        if (!equal(x->indices[i], y->indices[i])) return false;
      return true;
    }
    default: return false;
  }
}

Expr simplify(const Expr &e) {
  Simplifier s;
  return s.mutate(e);
}

}  // namespace ks
