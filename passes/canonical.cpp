// The canonical form of a float expression: see canonical.h.
#include "passes/canonical.h"

#include <algorithm>
#include <cstdio>

#include "ir/cost.h"
#include "ir/printer.h"
#include "ir/simplify.h"

namespace ks {

namespace {

// log_of_exp: log(exp(x)) = x.
Expr log_of_exp(const Expr &e) {
  const Call *log = e.as<Call>();
  const Call *exp = log && log->fn == Builtin::Log ? log->args[0].as<Call>() : nullptr;
  return exp && exp->fn == Builtin::Exp ? exp->args[0] : e;
}

Expr inside(const Expr &e);

// An operand the sum of products does not open: its own canonical form where it is a
// float, its insides' where not.
Expr operand(const Expr &e) { return e.type() == DType::F32 ? canonical(e) : inside(e); }

// The operands of what sum_of_products does not look into (a call, a select, a min
// or max, a comparison, a cast) in their canonical forms; arithmetic is left to
// sum_of_products, which opens it.
Expr inside(const Expr &e) {
  if (const Binary *b = e.as<Binary>()) {
    const bool arithmetic =
        b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul || b->op == BinaryOp::Div;
    Expr x = arithmetic ? inside(b->a) : operand(b->a), y = arithmetic ? inside(b->b) : operand(b->b);
    return x.same_as(b->a) && y.same_as(b->b) ? e : Binary::make(b->op, x, y);
  }
  if (const Unary *u = e.as<Unary>()) {
    Expr a = inside(u->a);
    return a.same_as(u->a) ? e : Unary::make(u->op, a);
  }
  if (const Call *c = e.as<Call>()) {
    std::vector<Expr> args;
    for (const Expr &arg : c->args) args.push_back(operand(arg));
    return log_of_exp(Call::make(c->fn, args));
  }
  if (const Select *s = e.as<Select>())
    return Select::make(operand(s->condition), operand(s->true_value), operand(s->false_value));
  if (const Cast *c = e.as<Cast>()) return Cast::make(c->type, operand(c->value));
  return e;  // a load (its indices as written), a variable, a constant
}

// exp_of_sum: a product's exponentials as one, exp(a) * exp(b) / exp(c) = exp(a + b - c).
Product exp_of_sum(Product p) {
  Expr sum;
  std::vector<Expr> factors, divisors;
  auto take = [&](const std::vector<Expr> &from, std::vector<Expr> *rest, bool divide) {
    for (const Expr &f : from) {
      const Call *exp = f.as<Call>();
      if (!exp || exp->fn != Builtin::Exp || exp->args[0].type() != DType::F32) {
        rest->push_back(f);
        continue;
      }
      const Expr arg = exp->args[0];
      sum = !sum.defined() ? (divide ? Unary::make(UnaryOp::Neg, arg) : arg)
                           : Binary::make(divide ? BinaryOp::Sub : BinaryOp::Add, sum, arg);
    }
  };
  take(p.factors, &factors, false);
  take(p.divisors, &divisors, true);
  if (sum.defined()) factors.push_back(Call::make(Builtin::Exp, {canonical(sum)}));
  p.factors = factors;
  p.divisors = divisors;
  return p;
}

// ordered: factors and divisors by their printed form (a product of two sums, which
// sum_of_products keeps whole, with its operands canonical first); terms by theirs.
// (Each expression printed once, its text the sort key.)
LinearForm ordered(LinearForm form) {
  for (Product &p : form) {
    for (std::vector<Expr> *part : {&p.factors, &p.divisors}) {
      std::vector<std::pair<std::string, Expr>> keyed;
      for (const Expr &f : *part) {
        Expr e = f;
        if (const Binary *b = f.as<Binary>(); b && f.type() == DType::F32 && b->op == BinaryOp::Mul) {
          Expr x = canonical(b->a), y = canonical(b->b);
          if (print_expr(y) < print_expr(x)) std::swap(x, y);
          e = Binary::make(BinaryOp::Mul, x, y);
        }
        keyed.push_back({print_expr(e), e});
      }
      std::sort(keyed.begin(), keyed.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
      part->clear();
      for (const auto &[key, e] : keyed) part->push_back(e);
    }
  }
  std::vector<std::pair<std::string, Product>> keyed;
  for (const Product &p : form) keyed.push_back({product_key(p), p});
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first < b.first : a.second.coefficient < b.second.coefficient;
  });
  form.clear();
  for (const auto &[key, p] : keyed) form.push_back(p);
  return form;
}

// A coefficient as an f32 number (the form's constants are f32 ones).
std::string coefficient_key(double c) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(static_cast<float>(c)));
  return buffer;
}

}  // namespace

LinearForm canonical_form(const Expr &e) {
  const Expr folded = simplify(e);
  if (e.type() != DType::F32) return {Product{1, {inside(folded)}, {}}};
  LinearForm form = expand(inside(folded));  // sum_of_products
  for (Product &p : form) p = exp_of_sum(p);
  return ordered(combine_like_terms(form));  // like_terms, ordered
}

Expr canonical(const Expr &e) {
  if (e.type() != DType::F32) return inside(simplify(e));
  // Written with the positive terms first and constants after the others, so that
  // negatives are subtractions (`x - m`, not `-m + x`) and a bias comes last.
  LinearForm form = canonical_form(e);
  std::stable_sort(form.begin(), form.end(), [](const Product &a, const Product &b) {
    auto rank = [](const Product &p) { return 2 * (p.coefficient < 0) + (p.factors.empty() && p.divisors.empty()); };
    return rank(a) < rank(b);
  });
  return simplify(rebuild(form));
}

bool same_canonical(const Expr &a, const Expr &b) {
  if (a.type() != b.type()) return false;
  auto text = [](const LinearForm &form) {
    std::string out;
    for (const Product &p : form) out += coefficient_key(p.coefficient) + "*" + product_key(p) + ";";
    return out;
  };
  return text(canonical_form(a)) == text(canonical_form(b));
}

Graph canonical_graph(const Graph &graph, std::vector<std::string> *notes) {
  Graph out = graph;
  for (Stage &stage : out.stages) {
    if (stage.body.type() != DType::F32) continue;
    Expr form = canonical(stage.body);
    const int written = operation_count(stage.body), grown = operation_count(form);
    if (grown > kCanonicalGrowth * written + kCanonicalSlack) {
      notes->push_back(stage.output + "'s canonical form has " + std::to_string(grown) + " operations against " +
                       std::to_string(written) + " as written: left as written");
      continue;
    }
    stage.body = form;
  }
  return out;
}

}  // namespace ks
