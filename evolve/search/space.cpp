#include "evolve/search/space.h"

#include <algorithm>
#include <set>

#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

namespace {

// One try at a random step on *program, of one of the kinds allowed (all when
// none are named): on success the program and the schedule take it (with the steps
// it needs first) and true is returned. The cases are the registry's primitives in
// primitives.def's order, each as many times as its draw_cases (once where asked
// for by kind).
bool try_random_step(Program &program, Schedule &schedule, Rng &rng, int64_t max_group,
                     const std::set<PrimitiveKind> &kinds, int64_t max_copies) {
  std::vector<PrimitiveKind> cases;
  for (PrimitiveKind kind : all_primitive_kinds()) {
    const int n = primitive_info(kind).draw_cases;
    if (kinds.empty() || kinds.count(kind)) cases.insert(cases.end(), kinds.empty() ? n : std::max(n, 1), kind);
  }
  if (cases.empty()) return false;
  std::vector<std::string> stages = stage_names(program);
  if (stages.empty()) return false;
  const std::string stage = pick(stages, rng);
  std::string reason;
  auto loops = stage_loops(program, stage, &reason);
  if (!loops) return false;
  const PrimitiveKind kind = pick(cases, rng);
  StepDraw d(program, rng, max_group, max_copies, stages, *loops, kind, stage);
  primitive_info(kind).draw(d);
  if (!d.next) return false;
  program = *d.next;
  schedule.steps.insert(schedule.steps.end(), d.before.begin(), d.before.end());
  schedule.steps.push_back(d.p);
  return true;
}

}  // namespace

Schedule random_schedule(const Program &start, Rng &rng, int steps, int attempts, int64_t max_group) {
  Schedule schedule;
  Program program = start;
  for (int attempt = 0; attempt < attempts && static_cast<int>(schedule.steps.size()) < steps; ++attempt)
    try_random_step(program, schedule, rng, max_group, {}, kMaxUnroll);
  return schedule;
}

bool add_random_step(Program *program, Schedule *schedule, Rng &rng, int attempts, int64_t max_group,
                     const std::set<PrimitiveKind> &kinds, int64_t max_copies) {
  for (int attempt = 0; attempt < attempts; ++attempt)
    if (try_random_step(*program, *schedule, rng, max_group, kinds, max_copies)) return true;
  return false;
}

}  // namespace ks
