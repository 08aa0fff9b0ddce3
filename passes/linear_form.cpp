// Expansion of float expressions into sums of products, and back.
#include "passes/linear_form.h"

#include <algorithm>
#include <cmath>

#include "ir/printer.h"
#include "ir/simplify.h"

namespace ks {

namespace {

LinearForm atom(const Expr &e) { return {Product{1, {e}, {}}}; }

LinearForm scaled(LinearForm form, double by) {
  for (Product &p : form) p.coefficient *= by;
  return form;
}

Product times(const Product &a, const Product &b) {
  Product p{a.coefficient * b.coefficient, a.factors, a.divisors};
  p.factors.insert(p.factors.end(), b.factors.begin(), b.factors.end());
  p.divisors.insert(p.divisors.end(), b.divisors.begin(), b.divisors.end());
  return p;
}

Expr multiply_all(const std::vector<Expr> &factors) {
  Expr out;
  for (const Expr &f : factors) out = out.defined() ? Binary::make(BinaryOp::Mul, out, f) : f;
  return out;
}

}  // namespace

std::string product_key(const Product &p) {
  std::vector<std::string> f, g;
  for (const Expr &e : p.factors) f.push_back(print_expr(e));
  for (const Expr &e : p.divisors) g.push_back(print_expr(e));
  std::sort(f.begin(), f.end());
  std::sort(g.begin(), g.end());
  std::string key;
  for (const std::string &s : f) key += s + "\x1f";
  key += "/";
  for (const std::string &s : g) key += s + "\x1f";
  return key;
}

LinearForm expand(const Expr &e, const ExpandOptions &options) {
  if (!is_float(e.type())) return atom(e);
  if (std::optional<double> v = as_const_number(e)) return {Product{*v, {}, {}}};
  if (const Unary *u = e.as<Unary>(); u && u->op == UnaryOp::Neg) return scaled(expand(u->a, options), -1);
  if (const Load *load = e.as<Load>(); load && options.through) {
    Expr value = options.through(*load);
    if (value.defined()) return expand(value, options);
  }
  const Binary *b = e.as<Binary>();
  if (!b) return atom(e);
  switch (b->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      LinearForm x = expand(b->a, options), y = expand(b->b, options);
      if (x.size() + y.size() > options.max_terms) return atom(e);
      if (b->op == BinaryOp::Sub) y = scaled(y, -1);
      x.insert(x.end(), y.begin(), y.end());
      return x;
    }
    case BinaryOp::Mul: {
      LinearForm x = expand(b->a, options), y = expand(b->b, options);
      if ((x.size() != 1 && y.size() != 1) || x.size() * y.size() > options.max_terms) return atom(e);
      LinearForm out;
      for (const Product &p : x)
        for (const Product &q : y) out.push_back(times(p, q));
      return out;
    }
    case BinaryOp::Div: {
      LinearForm y = expand(b->b, options);
      if (y.size() != 1 || y[0].coefficient == 0) {
        LinearForm x = expand(b->a, options);
        for (Product &p : x) p.divisors.push_back(b->b);
        return x;
      }
      const Product inverse{1 / y[0].coefficient, y[0].divisors, y[0].factors};
      LinearForm out;
      for (const Product &p : expand(b->a, options)) out.push_back(times(p, inverse));
      return out;
    }
    default: return atom(e);
  }
}

Expr rebuild(const Product &p) {
  Expr out = multiply_all(p.factors);
  if (!p.divisors.empty()) {
    Expr denominator = multiply_all(p.divisors);
    out = Binary::make(BinaryOp::Div, out.defined() ? out : make_f32(1.0), denominator);
  }
  if (!out.defined()) return make_f32(p.coefficient);
  if (p.coefficient == -1) return Unary::make(UnaryOp::Neg, out);
  if (p.coefficient != 1) return Binary::make(BinaryOp::Mul, out, make_f32(p.coefficient));
  return out;
}

Expr rebuild(const LinearForm &form) {
  // A coefficient every product shares (but 1) is written once, outside the sum:
  // (a - b) * c rather than a * c - b * c.
  if (form.size() > 1 && std::fabs(form[0].coefficient) != 1 && form[0].coefficient != 0) {
    const double common = std::fabs(form[0].coefficient);
    bool shared = true;
    for (const Product &p : form) shared = shared && std::fabs(p.coefficient) == common;
    if (shared) {
      LinearForm unit = form;
      for (Product &p : unit) p.coefficient = p.coefficient > 0 ? 1 : -1;
      return Binary::make(BinaryOp::Mul, rebuild(unit), make_f32(common));
    }
  }
  Expr out;
  for (const Product &p : form) {
    if (!out.defined()) {
      out = rebuild(p);
    } else if (p.coefficient < 0) {
      Product positive = p;
      positive.coefficient = -p.coefficient;
      out = Binary::make(BinaryOp::Sub, out, rebuild(positive));
    } else {
      out = Binary::make(BinaryOp::Add, out, rebuild(p));
    }
  }
  return out.defined() ? out : make_f32(0.0);
}

LinearForm combine_like_terms(const LinearForm &form) {
  LinearForm out;
  std::vector<std::string> keys;
  for (const Product &p : form) {
    std::string key = product_key(p);
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      out.push_back(p);
    } else {
      out[it - keys.begin()].coefficient += p.coefficient;
    }
  }
  LinearForm kept;
  for (const Product &p : out)
    if (p.coefficient != 0) kept.push_back(p);
  return kept;
}

}  // namespace ks
