// Algebraic simplification of expressions: constants folded, and the identities of
// real arithmetic applied (x + 0, x * 1, x * 0, x - x, x / 1, x % 1, select with a
// known condition). Real arithmetic, not IEEE: x * 0 becomes 0 and x - x becomes 0
// even where x could be infinite, as a graph rewrite may assume (DESIGN.md: a rewrite
// holds by the algebra it implements, up to reassociation error).
#pragma once

#include <optional>

#include "ir/ir.h"

namespace ks {

/// e with constants folded and the identities above applied, bottom-up. Returns the
/// very same handle when nothing changes.
Expr simplify(const Expr &e);

/// Structural equality: the same tree of nodes with the same values and names.
bool equal(const Expr &a, const Expr &b);

/// The value of a float or integer constant (casts of constants included).
std::optional<double> as_const_number(const Expr &e);

/// The value of a condition made of constants only (`0 == 0`, `3 < 2 && ...`).
std::optional<bool> as_const_bool(const Expr &e);

}  // namespace ks
