// A test helper that composes schedule primitives at random: each step is tried on
// the program so far and kept only when the primitive accepts it, so the result is
// a legal schedule that replays on the same program.
#pragma once

#include <random>

#include "ir/loop_ir.h"
#include "passes/schedule.h"

namespace ks::test {

/// Up to `steps` accepted primitives on `program` (at most `attempts` tries).
/// Local bindings keep work-groups at most max_group work-items.
Schedule random_schedule(const Program &program, std::mt19937 &rng, int steps, int attempts = 60,
                         int64_t max_group = 256);

}  // namespace ks::test
