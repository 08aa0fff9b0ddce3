// The search space: schedules composed at random from the primitives. Each step is
// tried on the program so far and kept only where the primitive accepts it, so the
// result is a legal schedule that replays on the same program. Random search draws
// from it, the mutator inserts its steps, and the tests' property checks use it.
#pragma once

#include <set>

#include "ir/loop_ir.h"
#include "passes/primitive_info.h"
#include "passes/schedule.h"

namespace ks {

/// Up to `steps` accepted primitives on `program` (at most `attempts` tries), the
/// names they introduce ("t0", "t1", ...) starting after those `program` already
/// uses. Local bindings keep work-groups at most max_group work-items.
Schedule random_schedule(const Program &program, Rng &rng, int steps, int attempts = 60, int64_t max_group = 256);

/// One random step on `program` as the schedule so far left it (at most `attempts`
/// tries), of one of `kinds` (any when empty), appended to *schedule with any steps
/// it needs first (a split before a vectorize, binds before a cross_reduce); false
/// where none was accepted. An unroll keeps the innermost body to max_copies copies
/// (random_schedule's steps to kMaxUnroll: the fuzz tests compile them on PoCL).
bool add_random_step(Program *program, Schedule *schedule, Rng &rng, int attempts = 20, int64_t max_group = 256,
                     const std::set<PrimitiveKind> &kinds = {}, int64_t max_copies = 64);

}  // namespace ks
