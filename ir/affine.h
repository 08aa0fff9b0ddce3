// Affine forms of integer index expressions: sum of coefficient * variable plus a
// constant, with lets expanded. cache_read finds the box of a buffer a loop body
// reads with them; vectorize the stride of an access along a loop, and the OpenCL
// printer whether a vector access is aligned.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ir/ir.h"

namespace ks {

struct Affine {
  std::map<std::string, int64_t> coeffs;  // no zero coefficients
  int64_t constant = 0;
};

/// The affine form of e, with each let variable in `lets` replaced by its form;
/// nullopt when e is not affine (a product of variables, a division, a load). Where
/// given, `atom` gives the form of an integer subexpression that is not affine
/// (compute_at's fold: `z / 16`, a let's value written out, as that let's variable),
/// or nullopt.
std::optional<Affine> affine_of(const Expr &e, const std::map<std::string, Affine> &lets,
                                const std::function<std::optional<Affine>(const Expr &)> &atom = {});

/// The value of an integer index expression with the variables in `env` (others 0)
/// and the lets around it (expanded as met, 64 deep at most); none when it reads
/// memory or divides by zero. A condition of indices (a guard: <, ==, &&, !) gives 1
/// or 0. Not ir/bounds.h's bounds_of on point intervals: its
/// remainder widens to [0, c - 1] unless the operand already lies there, and it needs
/// every variable in scope.
std::optional<int64_t> evaluate_index(const Expr &e, const std::map<std::string, int64_t> &env,
                                      const std::map<std::string, Expr> &lets = {}, int depth = 0);

/// An integer index expression compiled once for evaluation at many points (the
/// matrix-tile check evaluates operands' indices at every lane of every point): the
/// variables numbered as in `vars` (others 0), lets expanded as evaluate_index expands
/// them, the same values, without its name lookups.
class IndexProgram {
 public:
  /// Nullopt where evaluate_index gives none at every point (a load, a float).
  static std::optional<IndexProgram> compile(const Expr &e, const std::vector<std::string> &vars,
                                             const std::map<std::string, Expr> &lets = {});
  /// The value at values[i] for vars[i]; none where it divides by zero.
  std::optional<int64_t> operator()(const std::vector<int64_t> &values) const;

 private:
  struct Op {
    enum Kind : uint8_t { Const, Var, Neg, Not, Apply } kind;
    BinaryOp op;
    int64_t value;  // the constant, or the variable's number
  };
  std::vector<Op> ops_;  // postfix
  static bool compile_into(const Expr &e, const std::map<std::string, size_t> &slots,
                           const std::map<std::string, Expr> &lets, int depth, std::vector<Op> *ops);
};

/// a as an expression of the given type: coefficient * variable terms, then the
/// constant; `types` gives each variable's type.
Expr affine_expr(const Affine &a, const std::map<std::string, DType> &types, DType type);

}  // namespace ks
