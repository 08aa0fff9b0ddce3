// Interval arithmetic over the integer subset of the expression language.
#include "ir/bounds.h"

#include <algorithm>

#include "ir/visitor.h"

namespace ks {

namespace {

constexpr int64_t kLimit = int64_t{1} << 62;  // beyond this an interval is "anything"

Interval make_checked(__int128 lo, __int128 hi) {
  if (lo < -kLimit || hi > kLimit) return Interval::everything();
  return Interval::of(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

class Bounds : public IRVisitorStrict {
 public:
  explicit Bounds(const BoundsScope &scope) : scope_(scope) {}
  Interval result;

  Interval of(const Expr &e) {
    dispatch(e);
    return result;
  }

 protected:
  void visit(const IntImm *n) override { result = Interval::of(n->value, n->value); }
  void visit(const FloatImm *) override { result = Interval::everything(); }
  void visit(const Var *n) override {
    auto it = scope_.vars.find(n->name);
    result = it == scope_.vars.end() ? Interval::everything() : it->second;
  }
  void visit(const Unary *n) override {
    Interval a = of(n->a);
    if (n->op == UnaryOp::Not)
      result = Interval::of(0, 1);
    else
      result = a.bounded ? make_checked(-static_cast<__int128>(a.hi), -static_cast<__int128>(a.lo)) : a;
  }
  void visit(const Binary *n) override {
    if (is_comparison(n->op) || n->op == BinaryOp::And || n->op == BinaryOp::Or) {
      result = Interval::of(0, 1);
      return;
    }
    if (!is_int(n->type)) {
      result = Interval::everything();
      return;
    }
    Interval a = of(n->a), b = of(n->b);
    if (n->op == BinaryOp::Mod) {
      // Floor modulo by a positive constant lands in [0, c - 1] whatever the operand.
      auto c = as_const_int(n->b);
      if (c && *c > 0)
        result = a.within(0, *c - 1) ? a : Interval::of(0, *c - 1);
      else
        result = Interval::everything();
      return;
    }
    if (!a.bounded || !b.bounded) {
      result = Interval::everything();
      return;
    }
    using I = __int128;
    switch (n->op) {
      case BinaryOp::Add: result = make_checked(I(a.lo) + b.lo, I(a.hi) + b.hi); break;
      case BinaryOp::Sub: result = make_checked(I(a.lo) - b.hi, I(a.hi) - b.lo); break;
      case BinaryOp::Mul: {
        I p[4] = {I(a.lo) * b.lo, I(a.lo) * b.hi, I(a.hi) * b.lo, I(a.hi) * b.hi};
        result = make_checked(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
        break;
      }
      case BinaryOp::Div:
        if (b.lo > 0) {
          // Floor division is monotone in the numerator and, for a non-negative
          // numerator, antitone in a positive denominator.
          int64_t lo = a.lo >= 0 ? floor_div(a.lo, b.hi) : floor_div(a.lo, b.lo);
          int64_t hi = a.hi >= 0 ? floor_div(a.hi, b.lo) : floor_div(a.hi, b.hi);
          result = Interval::of(lo, hi);
        } else {
          result = Interval::everything();
        }
        break;
      case BinaryOp::Min: result = Interval::of(std::min(a.lo, b.lo), std::min(a.hi, b.hi)); break;
      case BinaryOp::Max: result = Interval::of(std::max(a.lo, b.lo), std::max(a.hi, b.hi)); break;
      default: result = Interval::everything(); break;
    }
  }
  void visit(const Call *) override { result = Interval::everything(); }
  void visit(const Cast *n) override {
    Interval a = of(n->value);
    if (is_int(n->type) && is_int(n->value.type()) && a.bounded &&
        (n->type == DType::I64 || (a.lo >= INT32_MIN && a.hi <= INT32_MAX)))
      result = a;
    else if (n->value.type() == DType::Bool)
      result = Interval::of(0, 1);
    else
      result = Interval::everything();
  }
  void visit(const Select *n) override {
    Interval a = of(n->true_value), b = of(n->false_value);
    if (a.bounded && b.bounded)
      result = Interval::of(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
    else
      result = Interval::everything();
  }
  void visit(const Load *n) override {
    auto it = scope_.buffer_values.find(n->buffer);
    result = Interval::everything();
    if (is_int(n->type) && it != scope_.buffer_values.end()) {
      result = it->second;
      // A padded read may also yield the pad value.
      if (n->pad && result.bounded) {
        int64_t pad = static_cast<int64_t>(*n->pad);
        result = Interval::of(std::min(result.lo, pad), std::max(result.hi, pad));
      }
    }
  }
#define KS_EXPR_NODE(N)
#define KS_STMT_NODE(N) \
  void visit(const N *) override { throw InternalError("bounds of a statement"); }
#include "ir/nodes.def"

 private:
  const BoundsScope &scope_;
};

}  // namespace

Interval bounds_of(const Expr &e, const BoundsScope &scope) { return Bounds(scope).of(e); }

void refine_with_condition(const Expr &condition, BoundsScope *scope) {
  const Binary *b = condition.as<Binary>();
  if (!b) return;
  if (b->op == BinaryOp::And) {
    refine_with_condition(b->a, scope);
    refine_with_condition(b->b, scope);
    return;
  }
  // Put the variable on the left: `e > v` is `v < e`.
  BinaryOp op = b->op;
  Expr var = b->a, other = b->b;
  if (!var.as<Var>()) {
    std::swap(var, other);
    switch (op) {
      case BinaryOp::Lt: op = BinaryOp::Gt; break;
      case BinaryOp::Le: op = BinaryOp::Ge; break;
      case BinaryOp::Gt: op = BinaryOp::Lt; break;
      case BinaryOp::Ge: op = BinaryOp::Le; break;
      default: return;
    }
  }
  const Var *v = var.as<Var>();
  if (!v || !is_int(v->type)) return;
  auto it = scope->vars.find(v->name);
  if (it == scope->vars.end() || !it->second.bounded) return;
  Interval limit = bounds_of(other, *scope);
  if (!limit.bounded) return;
  Interval &range = it->second;
  switch (op) {
    case BinaryOp::Lt: range.hi = std::min(range.hi, limit.hi - 1); break;
    case BinaryOp::Le: range.hi = std::min(range.hi, limit.hi); break;
    case BinaryOp::Gt: range.lo = std::max(range.lo, limit.lo + 1); break;
    case BinaryOp::Ge: range.lo = std::max(range.lo, limit.lo); break;
    default: return;
  }
  if (range.lo > range.hi) range.hi = range.lo;  // an empty branch: keep a valid interval
}

}  // namespace ks
