// Interval analysis of integer expressions: the range of values an index can take
// given the ranges of the variables in it. The frontend uses it to prove reads in
// bounds, the verifier to re-check, and code generators to pick cheap division.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/ir.h"

namespace ks {

/// A closed integer interval [lo, hi], or "anything" when not bounded.
struct Interval {
  int64_t lo = 0, hi = 0;
  bool bounded = false;
  static Interval everything() { return Interval{}; }
  static Interval of(int64_t lo, int64_t hi) { return Interval{lo, hi, true}; }
  bool within(int64_t min, int64_t max) const { return bounded && lo >= min && hi <= max; }
};

struct BoundsScope {
  std::map<std::string, Interval> vars;           // loop and let variables
  std::map<std::string, Interval> buffer_values;  // values held by integer buffers
};

Interval bounds_of(const Expr &e, const BoundsScope &scope);

/// Narrows the ranges of variables in scope to what holds where condition is true:
/// understands `v < e`, `v <= e`, `v > e`, `v >= e` (either side) and `&&`.
void refine_with_condition(const Expr &condition, BoundsScope *scope);

}  // namespace ks
