// A float expression as a sum of products, the form in which push_sum and
// fold_affine see a stage's body:
//
//   e = sum_t c_t * (f_t1 * f_t2 * ...) / (g_t1 * g_t2 * ...)
//
// where each c_t is a number and each f and g an expression the expansion does not
// look into (a load, a call, a select, a min or max, a product of two sums). Sums are
// distributed over products and quotients only where one side is a single product,
// so (a - b) * (a - b) stays one factor rather than becoming four terms.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ks {

struct Product {
  double coefficient = 1;
  std::vector<Expr> factors;   // multiplied together
  std::vector<Expr> divisors;  // divided by
};

/// The sum of its products (an empty form is 0).
using LinearForm = std::vector<Product>;

struct ExpandOptions {
  /// The most products an expansion may give; past it a product stays one factor.
  size_t max_terms = 64;
  /// For a load, the expression to expand in its place (an elementwise temporary read
  /// through); undefined keeps the load as a factor.
  std::function<Expr(const Load &load)> through;
};

/// e (a float expression) as a sum of products.
LinearForm expand(const Expr &e, const ExpandOptions &options = {});

/// A product as an expression: factors in order, then divisors, then the coefficient.
Expr rebuild(const Product &product);
/// A sum of products as an expression (0.0 for an empty form), negative coefficients
/// written as subtractions.
Expr rebuild(const LinearForm &form);

/// A product's factors and divisors as text, in any order the same (its coefficient left out).
std::string product_key(const Product &product);

/// Products with the same factors and divisors (in any order) added together; those
/// whose coefficient is then 0 dropped. The first occurrence keeps its place.
LinearForm combine_like_terms(const LinearForm &form);

}  // namespace ks
