// The canonical form of a float expression: one spelling for the many a spec may use
// for one computation, so that a rule's pattern matches however it is written
// (`s / sqrt(D) - m / sqrt(D)`, `(s - m) * 0.125`, `0.125 * s - m * 0.125` are one
// form). The laws, each a function of canonical.cpp, applied bottom-up:
//
//   folded             constants folded, identities of arithmetic (ir/simplify.h)
//   log_of_exp         log(exp(x)) = x
//   sum_of_products    a sum of products (linear_form.h): subtraction as a negative
//                      coefficient, division by a constant as its reciprocal's
//                      coefficient, a constant factor distributed over a sum
//   exp_of_sum         exp(a) * exp(b) = exp(a + b), exp(a) / exp(b) = exp(a - b)
//   like_terms         products with the same factors added together
//   ordered            factors, divisors and terms in one order (by their printed form)
//
// Real arithmetic, as the rewrites assume (rewrite.h): the form is for comparing and
// matching; a rule computes from the spec's own expressions or from the form's, whose
// difference is reassociation and the rounding of a reciprocal.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/ir.h"
#include "passes/linear_form.h"

namespace ks {

/// e's canonical form as a sum of products (a non-float expression: one product of it).
LinearForm canonical_form(const Expr &e);

/// e's canonical form as an expression (linear_form.h's rebuild of canonical_form).
Expr canonical(const Expr &e);

/// Whether a and b have the same canonical form.
bool same_canonical(const Expr &a, const Expr &b);

/// The most operations (ir/cost.h's operation_count) a body's canonical form may
/// have: kCanonicalGrowth times the spelling's, plus kCanonicalSlack. Opening sums
/// multiplied by constants grows a form by an operation a term; a form past this is
/// left as written.
constexpr int kCanonicalGrowth = 4;
constexpr int kCanonicalSlack = 16;

/// `canonicalize`: graph with each float stage's body in its canonical form, the form
/// the rewrite rules match (`ksmith inspect --print-after=canonicalize` prints it). A
/// body whose form grows past the limit above stays as written, and *notes says so,
/// one line a stage. A view: the pipeline computes the spec's own spelling, and the
/// rules that fewer operations make worth it (fold_affine) take the form.
Graph canonical_graph(const Graph &graph, std::vector<std::string> *notes);

}  // namespace ks
