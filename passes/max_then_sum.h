// An unrolled loop's logaddexp chain computed as its maximum, then a sum of
// exponentials.
#pragma once

#include "ir/loop_ir.h"

namespace ks {

/// Rewrites each unrolled loop whose body (under lets and guards) is
/// `acc[I] = logaddexp(acc[I], x)`, acc a private buffer that x does not read and I
/// the same at every iteration, as
///
///     m = -inf; for ... { m = max(m, x) }
///     s = 0;    for ... { s = s + exp(x - m) }
///     acc[I] = logaddexp(acc[I], m + log(s))      (m itself where it is infinite)
///
/// A logaddexp is a maximum, a minimum, an exp and a log, each waiting on the one
/// before; the two loops take one exp an element and no log, their values in
/// registers once unrolled (the loop's loads read the same elements twice). On an
/// H200 attention's logsumexp of 1,024 scores a row, one warp a row, took about
/// 0.5 ms for 1 GiB as a chain (bench/results.md). The error is within what the
/// evaluator allows a logsumexp computed online (error_bound.cpp): one rounding of
/// the log instead of one a step.
Program max_then_sum(const Program &program);

}  // namespace ks
