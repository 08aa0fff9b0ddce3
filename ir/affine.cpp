#include "ir/affine.h"

namespace ks {

namespace {

Affine scaled(Affine a, int64_t factor) {
  if (factor == 0) return Affine{};
  for (auto &[v, c] : a.coeffs) c *= factor;
  a.constant *= factor;
  return a;
}

Affine sum(Affine a, const Affine &b) {
  for (const auto &[v, c] : b.coeffs)
    if ((a.coeffs[v] += c) == 0) a.coeffs.erase(v);
  a.constant += b.constant;
  return a;
}

}  // namespace

std::optional<Affine> affine_of(const Expr &e, const std::map<std::string, Affine> &lets) {
  if (!is_int(e.type())) return std::nullopt;
  if (auto c = as_const_int(e)) return Affine{{}, *c};
  if (const Var *v = e.as<Var>()) {
    auto it = lets.find(v->name);
    return it != lets.end() ? it->second : Affine{{{v->name, 1}}, 0};
  }
  if (const Cast *c = e.as<Cast>()) return is_int(c->value.type()) ? affine_of(c->value, lets) : std::nullopt;
  if (const Unary *u = e.as<Unary>()) {
    if (u->op != UnaryOp::Neg) return std::nullopt;
    auto a = affine_of(u->a, lets);
    return a ? std::optional<Affine>(scaled(*a, -1)) : std::nullopt;
  }
  const Binary *b = e.as<Binary>();
  if (!b) return std::nullopt;
  auto x = affine_of(b->a, lets), y = affine_of(b->b, lets);
  if (!x || !y) return std::nullopt;
  switch (b->op) {
    case BinaryOp::Add: return sum(*x, *y);
    case BinaryOp::Sub: return sum(*x, scaled(*y, -1));
    case BinaryOp::Mul:
      if (x->coeffs.empty()) return scaled(*y, x->constant);
      if (y->coeffs.empty()) return scaled(*x, y->constant);
      return std::nullopt;
    default: return std::nullopt;
  }
}

Expr affine_expr(const Affine &a, const std::map<std::string, DType> &types, DType type) {
  Expr e;
  for (const auto &[v, c] : a.coeffs) {
    Expr term = cast_to(type, Var::make(types.at(v), v));
    if (c != 1) term = term * make_int(c, type);
    e = e.defined() ? e + term : term;
  }
  if (!e.defined()) return make_int(a.constant, type);
  if (a.constant > 0) return e + make_int(a.constant, type);
  if (a.constant < 0) return e - make_int(-a.constant, type);
  return e;
}

std::optional<int64_t> evaluate_index(const Expr &e, const std::map<std::string, int64_t> &env,
                                      const std::map<std::string, Expr> &lets, int depth) {
  if (depth > 64) return std::nullopt;
  if (const IntImm *n = e.as<IntImm>()) return n->value;
  if (const Var *n = e.as<Var>()) {
    if (auto it = env.find(n->name); it != env.end()) return it->second;
    if (auto it = lets.find(n->name); it != lets.end()) return evaluate_index(it->second, env, lets, depth + 1);
    return 0;
  }
  if (const Cast *n = e.as<Cast>())
    return is_int(n->type) ? evaluate_index(n->value, env, lets, depth + 1) : std::nullopt;
  if (const Binary *n = e.as<Binary>()) {
    std::optional<int64_t> a = evaluate_index(n->a, env, lets, depth + 1),
                           b = evaluate_index(n->b, env, lets, depth + 1);
    if (!a || !b) return std::nullopt;
    switch (n->op) {
      case BinaryOp::Add: return *a + *b;
      case BinaryOp::Sub: return *a - *b;
      case BinaryOp::Mul: return *a * *b;
      case BinaryOp::Div: return *b ? std::optional<int64_t>(*a / *b) : std::nullopt;
      case BinaryOp::Mod: return *b ? std::optional<int64_t>(*a % *b) : std::nullopt;
      case BinaryOp::Min: return std::min(*a, *b);
      case BinaryOp::Max: return std::max(*a, *b);
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace ks
