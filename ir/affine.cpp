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

std::optional<Affine> affine_of(const Expr &e, const std::map<std::string, Affine> &lets,
                                const std::function<std::optional<Affine>(const Expr &)> &atom) {
  if (!is_int(e.type())) return std::nullopt;
  auto other = [&]() { return atom ? atom(e) : std::nullopt; };  // not affine
  if (auto c = as_const_int(e)) return Affine{{}, *c};
  if (const Var *v = e.as<Var>()) {
    auto it = lets.find(v->name);
    return it != lets.end() ? it->second : Affine{{{v->name, 1}}, 0};
  }
  if (const Cast *c = e.as<Cast>()) return is_int(c->value.type()) ? affine_of(c->value, lets, atom) : other();
  if (const Unary *u = e.as<Unary>()) {
    if (u->op != UnaryOp::Neg) return other();
    auto a = affine_of(u->a, lets, atom);
    return a ? std::optional<Affine>(scaled(*a, -1)) : std::nullopt;
  }
  const Binary *b = e.as<Binary>();
  if (!b || (b->op != BinaryOp::Add && b->op != BinaryOp::Sub && b->op != BinaryOp::Mul)) return other();
  auto x = affine_of(b->a, lets, atom), y = affine_of(b->b, lets, atom);
  if (!x || !y) return std::nullopt;
  switch (b->op) {
    case BinaryOp::Add: return sum(*x, *y);
    case BinaryOp::Sub: return sum(*x, scaled(*y, -1));
    default:  // Mul
      if (x->coeffs.empty()) return scaled(*y, x->constant);
      if (y->coeffs.empty()) return scaled(*x, y->constant);
      return other();
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

namespace {

// a op b for an index's or a guard's operator (conditions 1 or 0); none for a division
// by zero or an operator that is neither.
std::optional<int64_t> apply_index_op(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return b ? std::optional<int64_t>(a / b) : std::nullopt;
    case BinaryOp::Mod: return b ? std::optional<int64_t>(a % b) : std::nullopt;
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::And: return a && b;
    case BinaryOp::Or: return a || b;
    default: return std::nullopt;
  }
}

}  // namespace

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
    return is_int(n->type) || n->type == DType::Bool ? evaluate_index(n->value, env, lets, depth + 1) : std::nullopt;
  if (const Unary *n = e.as<Unary>()) {
    std::optional<int64_t> a = evaluate_index(n->a, env, lets, depth + 1);
    if (!a) return std::nullopt;
    return n->op == UnaryOp::Not ? !*a : -*a;
  }
  if (const Binary *n = e.as<Binary>()) {
    std::optional<int64_t> a = evaluate_index(n->a, env, lets, depth + 1),
                           b = evaluate_index(n->b, env, lets, depth + 1);
    if (!a || !b) return std::nullopt;
    return apply_index_op(n->op, *a, *b);
  }
  return std::nullopt;
}

std::optional<IndexProgram> IndexProgram::compile(const Expr &e, const std::vector<std::string> &vars,
                                                  const std::map<std::string, Expr> &lets) {
  std::map<std::string, size_t> slots;
  for (size_t i = 0; i < vars.size(); ++i) slots.emplace(vars[i], i);
  IndexProgram p;
  if (!compile_into(e, slots, lets, 0, &p.ops_)) return std::nullopt;
  return p;
}

std::optional<int64_t> IndexProgram::operator()(const std::vector<int64_t> &values) const {
  int64_t stack[96];  // compile_into nests 65 deep at most
  size_t top = 0;
  for (const Op &op : ops_) {
    switch (op.kind) {
      case Op::Const: stack[top++] = op.value; break;
      case Op::Var: stack[top++] = values[op.value]; break;
      case Op::Neg: stack[top - 1] = -stack[top - 1]; break;
      case Op::Not: stack[top - 1] = !stack[top - 1]; break;
      case Op::Apply: {
        const int64_t b = stack[--top];
        std::optional<int64_t> r = apply_index_op(op.op, stack[top - 1], b);
        if (!r) return std::nullopt;
        stack[top - 1] = *r;
        break;
      }
    }
  }
  return stack[0];
}

// Appends e's postfix form; false where evaluate_index would give none whatever the
// values (what it cannot evaluate), or it nests past 64.
bool IndexProgram::compile_into(const Expr &e, const std::map<std::string, size_t> &slots,
                                const std::map<std::string, Expr> &lets, int depth, std::vector<Op> *ops) {
  if (depth > 64) return false;
  if (const IntImm *n = e.as<IntImm>()) return ops->push_back({Op::Const, BinaryOp::Add, n->value}), true;
  if (const Var *n = e.as<Var>()) {
    if (auto it = slots.find(n->name); it != slots.end())
      return ops->push_back({Op::Var, BinaryOp::Add, static_cast<int64_t>(it->second)}), true;
    if (auto it = lets.find(n->name); it != lets.end()) return compile_into(it->second, slots, lets, depth + 1, ops);
    return ops->push_back({Op::Const, BinaryOp::Add, 0}), true;
  }
  if (const Cast *n = e.as<Cast>())
    return (is_int(n->type) || n->type == DType::Bool) && compile_into(n->value, slots, lets, depth + 1, ops);
  if (const Unary *n = e.as<Unary>()) {
    if (!compile_into(n->a, slots, lets, depth + 1, ops)) return false;
    return ops->push_back({n->op == UnaryOp::Not ? Op::Not : Op::Neg, BinaryOp::Add, 0}), true;
  }
  if (const Binary *n = e.as<Binary>()) {
    if (n->op == BinaryOp::LogAddExp) return false;
    if (!compile_into(n->a, slots, lets, depth + 1, ops) || !compile_into(n->b, slots, lets, depth + 1, ops))
      return false;
    return ops->push_back({Op::Apply, n->op, 0}), true;
  }
  return false;
}

}  // namespace ks
