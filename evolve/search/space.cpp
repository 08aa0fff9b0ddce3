#include "evolve/search/space.h"

#include <algorithm>
#include <set>

#include "ir/vector_form.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitives.h"

namespace ks {

namespace {

int64_t local_work_items(const Kernel &kernel) { return launch_shape(kernel).group_size(); }

// Binds stage.loop to kind in *program and records the step; false (and nothing
// changed) where bind refuses.
bool bind_step(Program *program, const std::string &stage, const std::string &loop, ForKind kind,
               std::vector<Primitive> *steps) {
  std::string reason;
  auto bound = ks::bind(*program, stage, loop, kind, &reason);
  if (!bound) return false;
  *program = *bound;
  Primitive b;
  b.kind = PrimitiveKind::Bind;
  b.stage = stage;
  b.loops = {loop};
  b.binding = kind;
  steps->push_back(b);
  return true;
}

// The kind of step each of the generator's twenty-one cases makes (split and reorder
// and bind have two cases each: they are the commonest steps of real schedules).
constexpr PrimitiveKind kCaseKinds[] = {
    PrimitiveKind::Split,     PrimitiveKind::Split,    PrimitiveKind::Fuse,          PrimitiveKind::Reorder,
    PrimitiveKind::Reorder,   PrimitiveKind::Tile,     PrimitiveKind::Bind,          PrimitiveKind::Bind,
    PrimitiveKind::Unroll,    PrimitiveKind::Inline,   PrimitiveKind::CrossReduce,   PrimitiveKind::CacheWrite,
    PrimitiveKind::CacheRead, PrimitiveKind::Pad,      PrimitiveKind::ComputeAt,     PrimitiveKind::Vectorize,
    PrimitiveKind::Transpose, PrimitiveKind::Prefetch, PrimitiveKind::ReverseInline, PrimitiveKind::Scan,
    PrimitiveKind::AsyncCopy};
// Drawn only where asked for by kind (the schedule fuzzer asks for every kind), so
// that the streams of the search and of the property tests stay as they were.
bool asked_for_only(PrimitiveKind kind) {
  return kind == PrimitiveKind::ReverseInline || kind == PrimitiveKind::Scan || kind == PrimitiveKind::AsyncCopy;
}
constexpr int kCases = sizeof kCaseKinds / sizeof kCaseKinds[0];

// One try at a random step on *program, of one of the kinds allowed (all when
// none are named): on success the program and the schedule take it (with the steps
// it needs first) and true is returned.
bool try_random_step(Program &program, Schedule &schedule, Rng &rng, int64_t max_group,
                     const std::set<PrimitiveKind> &kinds, int64_t max_copies) {
  // reverse_inline only where asked for (the mutator's toggle): the property tests'
  // random schedules stay the lists known to compile on PoCL 3.1 (a draw with it
  // among the any-kind cases gave matvec a schedule PoCL did not finish in 10
  // minutes); the sketches' device tests and the schedule fuzzer check it.
  std::vector<int> cases;
  for (int c = 0; c < kCases; ++c)
    if (kinds.empty() ? !asked_for_only(kCaseKinds[c]) : kinds.count(kCaseKinds[c]) > 0) cases.push_back(c);
  if (cases.empty()) return false;
  std::vector<std::string> stages = stage_names(program);
  if (stages.empty()) return false;
  // New loop and buffer names: t0, t1, ... skipping those the program uses.
  std::set<std::string> used;
  for (const Kernel &k : program.kernels) used.merge(names_in_kernel(k));
  for (const TensorDecl &t : program.buffers) used.insert(t.name);
  int fresh = 0;
  auto name = [&] {
    std::string n;
    do n = "t" + std::to_string(fresh++);
    while (used.count(n));
    used.insert(n);
    return n;
  };
  {
    Primitive p;
    p.stage = pick(stages, rng);
    std::string reason;
    auto loops = stage_loops(program, p.stage, &reason);
    if (!loops) return false;
    std::vector<const For *> all = loops->outer;
    all.insert(all.end(), loops->inner.begin(), loops->inner.end());
    std::optional<Program> next;
    const int c = pick(cases, rng);
    switch (c) {
      case 0:
      case 1: {  // split
        if (all.empty()) break;
        const For *f = pick(all, rng);
        p.kind = PrimitiveKind::Split;
        p.loops = {f->var};
        p.factors = {
            std::uniform_int_distribution<int64_t>(1, std::max<int64_t>(1, std::min<int64_t>(f->extent + 3, 40)))(rng)};
        p.results = {name(), name()};
        next = split(program, p.stage, f->var, p.factors[0], p.results[0], p.results[1], &reason);
        break;
      }
      case 2: {  // fuse a loop with the one directly inside it
        if (all.empty()) break;
        const For *f = pick(all, rng);
        const For *inner = f->body.as<For>();
        if (!inner) break;
        p.kind = PrimitiveKind::Fuse;
        p.loops = {f->var, inner->var};
        p.results = {name()};
        next = fuse(program, p.stage, p.loops, p.results[0], &reason);
        break;
      }
      case 3:
      case 4: {  // reorder two or three loops of one side
        const std::vector<const For *> &side =
            std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? loops->inner : loops->outer;
        if (side.size() < 2) break;
        std::vector<std::string> names;
        for (const For *f : side) names.push_back(f->var);
        std::shuffle(names.begin(), names.end(), rng);
        names.resize(std::min<size_t>(names.size(), std::uniform_int_distribution<size_t>(2, 3)(rng)));
        p.kind = PrimitiveKind::Reorder;
        p.loops = names;
        next = reorder(program, p.stage, p.loops, &reason);
        break;
      }
      case 5: {  // tile two spatial loops
        if (loops->outer.size() < 2) break;
        const For *a = loops->outer[0], *b = loops->outer[1];
        p.kind = PrimitiveKind::Tile;
        p.loops = {a->var, b->var};
        p.factors = {std::uniform_int_distribution<int64_t>(1, a->extent)(rng),
                     std::uniform_int_distribution<int64_t>(1, b->extent)(rng)};
        p.results = {name(), name(), name(), name()};
        next = tile(program, p.stage, a->var, b->var, p.factors[0], p.factors[1], p.results, &reason);
        break;
      }
      case 6:
      case 7: {  // bind a spatial loop
        if (loops->outer.empty()) break;
        const For *f = pick(loops->outer, rng);
        static const ForKind kinds[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ,
                                        ForKind::LocalX, ForKind::LocalY, ForKind::LocalZ};
        p.kind = PrimitiveKind::Bind;
        p.loops = {f->var};
        p.binding = kinds[std::uniform_int_distribution<int>(0, 5)(rng)];
        next = ks::bind(program, p.stage, f->var, p.binding, &reason);
        if (next && local_work_items(next->kernels[loops->kernel]) > max_group) next.reset();
        break;
      }
      case 8: {  // unroll
        if (all.empty()) break;
        const For *f = pick(all, rng);
        p.kind = PrimitiveKind::Unroll;
        p.loops = {f->var};
        next = unroll(program, p.stage, f->var, &reason);
        if (next && unrolled_copies(*next) > max_copies) next.reset();
        break;
      }
      case 15: {  // vectorize a loop of a vector width, or split the innermost spatial loop into one first
        std::vector<const For *> widths;
        for (const For *f : all)
          if (is_vector_width(f->extent)) widths.push_back(f);
        Program base = program;
        std::optional<Primitive> split_step;
        p.kind = PrimitiveKind::Vectorize;
        if (!widths.empty() && std::uniform_int_distribution<int>(0, 1)(rng)) {
          p.loops = {pick(widths, rng)->var};
        } else if (!loops->outer.empty()) {
          Primitive sp;
          sp.kind = PrimitiveKind::Split;
          sp.stage = p.stage;
          sp.loops = {loops->outer.back()->var};
          sp.factors = {int64_t{2} << std::uniform_int_distribution<int>(0, 2)(rng)};
          sp.results = {name(), name()};
          auto split_program =
              split(program, p.stage, sp.loops[0], sp.factors[0], sp.results[0], sp.results[1], &reason);
          if (!split_program) break;
          base = *split_program;
          split_step = sp;
          p.loops = {sp.results[1]};
        } else {
          break;
        }
        next = vectorize(base, p.stage, p.loops[0], &reason);
        if (next && split_step) schedule.steps.push_back(*split_step);
        break;
      }
      case 10: {  // bind the spatial loops to work-groups, then share a reduction loop
        if (loops->inner.empty() || loops->outer.size() > 3) break;
        static const ForKind groups[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ};
        Program bound = program;
        std::vector<Primitive> binds;
        for (size_t i = 0; i < loops->outer.size(); ++i)
          if (!bind_step(&bound, p.stage, loops->outer[i]->var, groups[i], &binds)) break;
        if (binds.size() != loops->outer.size()) break;
        p.kind = PrimitiveKind::CrossReduce;
        p.loops = {pick(loops->inner, rng)->var};
        p.factors = {int64_t{1} << std::uniform_int_distribution<int>(1, 6)(rng)};
        p.results = {name()};
        next = cross_reduce(bound, p.stage, p.loops[0], p.factors[0], p.results[0], &reason);
        if (next) schedule.steps.insert(schedule.steps.end(), binds.begin(), binds.end());
        break;
      }
      case 11: {  // accumulate a tile of a reduction in registers
        if (loops->outer.empty()) break;
        p.kind = PrimitiveKind::CacheWrite;
        p.loops = {pick(loops->outer, rng)->var};
        next = cache_write(program, p.stage, p.loops[0], p.memory, &reason);
        break;
      }
      case 12: {  // cache what one iteration of a loop reads of a buffer
        if (all.empty()) break;
        std::vector<std::string> read;
        for (const std::string &b : kernel_buffers(program, program.kernels[loops->kernel])) read.push_back(b);
        if (read.empty()) break;
        p.kind = PrimitiveKind::CacheRead;
        p.loops = {pick(all, rng)->var};
        p.buffer = pick(read, rng);
        p.memory = std::uniform_int_distribution<int>(0, 1)(rng) ? MemoryScope::Local : MemoryScope::Private;
        p.results = {name()};
        next = cache_read(program, p.stage, p.loops[0], p.buffer, p.memory, p.results[0], &reason);
        if (next && local_work_items(next->kernels[loops->kernel]) > max_group) next.reset();
        break;
      }
      case 13:
      case 16:
      case 17: {  // pad, transpose or prefetch a local buffer
        const std::vector<std::string> allocations = local_panels(program.kernels[loops->kernel]);
        if (allocations.empty()) break;
        p.buffer = pick(allocations, rng);
        if (c == 16) {
          p.kind = PrimitiveKind::Transpose;
          next = transpose(program, p.stage, p.buffer, &reason);
          break;
        }
        if (c == 17) {
          p.kind = PrimitiveKind::Prefetch;
          next = prefetch(program, p.stage, p.buffer, &reason);
          break;
        }
        p.kind = PrimitiveKind::Pad;
        p.factors = {std::uniform_int_distribution<int64_t>(1, 3)(rng)};
        next = pad(program, p.stage, p.buffer, p.factors[0], &reason);
        break;
      }
      case 14: {  // compute the stage inside a later stage's kernel, at the first loop where that is legal;
                  // first loops of equal extent, both serial, are bound to work-groups for it
        p.kind = PrimitiveKind::ComputeAt;
        for (const std::string &consumer : stages) {
          auto theirs = stage_loops(program, consumer, &reason);
          if (!theirs || theirs->kernel <= loops->kernel || next) continue;
          Program base = program;
          std::vector<Primitive> binds;
          if (!loops->outer.empty() && !theirs->outer.empty() && loops->outer[0]->kind == ForKind::Serial &&
              theirs->outer[0]->kind == ForKind::Serial && loops->outer[0]->extent == theirs->outer[0]->extent) {
            if (!bind_step(&base, p.stage, loops->outer[0]->var, ForKind::GroupX, &binds) ||
                !bind_step(&base, consumer, theirs->outer[0]->var, ForKind::GroupX, &binds)) {
              base = program;
              binds.clear();
            }
          }
          for (const For *f : theirs->outer)
            if (!next && (next = compute_at(base, p.stage, consumer, f->var, &reason))) {
              p.consumer = consumer;
              p.loops = {f->var};
              schedule.steps.insert(schedule.steps.end(), binds.begin(), binds.end());
            }
        }
        break;
      }
      case 9: {  // inline
        p.kind = PrimitiveKind::Inline;
        next = inline_stage(program, p.stage, &reason);
        break;
      }
      case 18: {  // an elementwise stage computed where the temporary it reads is stored
        p.kind = PrimitiveKind::ReverseInline;
        next = reverse_inline(program, p.stage, &reason);
        break;
      }
      case 19: {  // a running total scanned by a group: its other spatial loops bound to work-groups first
        if (loops->outer.empty() || loops->outer.size() > 4) break;
        static const ForKind groups[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ};
        Program bound = program;
        std::vector<Primitive> binds;
        for (size_t i = 0; i + 1 < loops->outer.size(); ++i)
          if (!bind_step(&bound, p.stage, loops->outer[i]->var, groups[i], &binds)) break;
        if (binds.size() + 1 != loops->outer.size()) break;
        p.kind = PrimitiveKind::Scan;
        p.loops = {loops->outer.back()->var};
        p.factors = {int64_t{1} << std::uniform_int_distribution<int>(1, 6)(rng)};
        p.results = {name()};
        next = scan(bound, p.stage, p.loops[0], p.factors[0], p.results[0], &reason);
        if (next) schedule.steps.insert(schedule.steps.end(), binds.begin(), binds.end());
        break;
      }
      case 20: {  // local copies at a serial loop's start copied ahead, in a ring of slots
        if (all.empty()) break;
        p.kind = PrimitiveKind::AsyncCopy;
        p.loops = {pick(all, rng)->var};
        p.factors = {std::uniform_int_distribution<int64_t>(2, 3)(rng)};
        next = async_copy(program, p.stage, p.loops[0], p.factors[0], &reason);
        break;
      }
    }
    if (!next) return false;
    program = *next;
    schedule.steps.push_back(p);
    return true;
  }
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
