// A register tile's accumulation runs past the edge of the iteration space, only its
// stores guarded.
#pragma once

#include "ir/loop_ir.h"

namespace ks {

/// Drops the guard `if G { P[i, ...] = ... }` of a store into a private buffer P
/// (cache_write's accumulators) where computing the elements past the edge is
/// harmless and cheaper than branching around them:
///  - G depends only on P's indices (plain loop variables) and on variables fixed
///    for P's lifetime (work-item and group indices, enclosing loops), so the
///    elements where G is false are never updated where it is true;
///  - every other read of P sits directly under the same guard (its indices
///    renamed), so those elements are never read: the write-back keeps its guard;
///  - without G every load and the store stay inside their buffers (panels copied
///    by cache_read cover the whole tile, padded with zeros past the edge), and the
///    value divides no integer by a loaded one.
/// On the H100 a conv whose 128-wide tile overhangs its 126 columns ran 56 ms with
/// the branch in its unrolled accumulation and 8.6 ms without (bench/results.md).
/// With pad_reads, a float load that might leave its buffer without G reads 0 there
/// (a padded load) instead of keeping G: tensorize's instruction must cover the whole
/// tile, and a row's value read from memory (attention's 1 / total[i]) is no panel.
Program unguard_accumulators(const Program &program, bool pad_reads = false);

}  // namespace ks
