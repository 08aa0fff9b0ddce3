// A step of a serial loop computes what it reads only where a mask may let it through.
#pragma once

#include "ir/loop_ir.h"

namespace ks {

/// In each serial loop L (attention's loop over panels of j), a statement S of L's
/// body runs only where what it computes may be read: `if G { S }`, where
///  - S holds no barrier nor asynchronous copy, and either
///    - stores only into buffers allocated in L's body (the step's own: the scores'
///      panel that compute_at puts there) or in S itself, every other read of which in
///      L's body is in the first branch of a select (or the body of an if) whose
///      condition compares integers, such as the causal mask select(j <= i, s[..],
///      -inf) (a conjunction: each comparison it has); or
///    - only accumulates, acc[p] = acc[p] + T, each T with a factor that is 0 where
///      its mask fails, whatever else it reads holds finite values: select(C, x, 0),
///      or exp(select(C, x, -inf) - y) (attention's weights; y, a row's logsumexp, is
///      -inf only where the whole row is masked), either rounded to 16 bits; then S
///      also runs at L's first step, which leaves such a row the NaN that its
///      unskipped steps would;
///  - G says that the comparison may hold somewhere in the step: as a - b >= 0, the
///    part of a - b in the variables fixed for the step (the group's indices, L's and
///    the loops around L that are not a work-item's) plus the most that the rest (the
///    work-items' indices and the loops inside L) can add, by interval analysis. A read
///    under several conditions needs each; S runs where any read's G holds.
/// G is the same for every work-item of a group, so a warp's matrix instructions in S
/// run in all its lanes or in none, and the barriers around S stay as they were.
/// Causal attention's panels above the diagonal are then not computed in either pass,
/// nor their zero weights summed, as flash attention skips its masked blocks.
Program skip_masked_steps(const Program &program);

}  // namespace ks
