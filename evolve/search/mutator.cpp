// The built-in mutator and random search.
#include "evolve/search/mutator.h"

#include <algorithm>
#include <functional>
#include <set>

#include "evolve/search/genome.h"
#include "evolve/search/sketch.h"
#include "ir/diagnostic.h"
#include "passes/loops.h"
#include "passes/lower.h"
#include "passes/primitives.h"

namespace ks {

namespace {

bool coin(Rng &rng) { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; }

// The program after the schedule's steps (no default binding), or none if the IR
// refuses one of them.
std::optional<Program> scheduled(const Graph &graph, const Schedule &schedule) {
  try {
    Program program = lower(rewritten_graph(graph, schedule));
    for (const Primitive &step : schedule.steps) program = apply_primitive(program, step);
    return program;
  } catch (const UserError &) {
    return std::nullopt;
  }
}

// The indices of the steps of some kinds.
std::vector<size_t> steps_of(const Schedule &s, std::initializer_list<PrimitiveKind> kinds) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.steps.size(); ++i)
    if (std::find(kinds.begin(), kinds.end(), s.steps[i].kind) != kinds.end()) out.push_back(i);
  return out;
}

int64_t clamp_factor(int64_t f) { return std::clamp<int64_t>(f, 1, 4096); }

// factor: one factor doubled or halved (an rfactor's too: the same loops, longer or
// shorter), or a divisor moved between a split and the split of its outer loop
// (their product, the loop's tiling, kept).
std::optional<std::string> mutate_factor(Schedule &s, Rng &rng) {
  std::vector<size_t> at =
      steps_of(s, {PrimitiveKind::Split, PrimitiveKind::Tile, PrimitiveKind::CrossReduce, PrimitiveKind::Scan});
  std::vector<size_t> splits;  // rfactor rewrites
  for (size_t i = 0; i < s.rewrites.size(); ++i)
    if (s.rewrites[i].kind == RewriteKind::Rfactor) splits.push_back(i);
  if (at.empty() && splits.empty()) return std::nullopt;
  if (!splits.empty() && (at.empty() || std::uniform_int_distribution<size_t>(0, at.size())(rng) == 0)) {
    Rewrite &r = s.rewrites[pick(splits, rng)];
    const std::string before = print_rewrite(r);
    r.factor = coin(rng) ? r.factor * 2 : std::max<int64_t>(1, r.factor / 2);
    return "factor: " + before + " -> " + print_rewrite(r);
  }
  Primitive &p = s.steps[pick(at, rng)];
  const std::string before = print_primitive(p);
  if (p.kind == PrimitiveKind::Split) {
    // A later split of this one's inner loop (a sketch's tile levels: work-items
    // inside the group's tile, outputs per work-item inside that): scale the group's
    // tile with its work-items (outputs per work-item kept), or the work-items alone
    // (the group's tile kept, its outputs moved between work-items and registers).
    for (Primitive &q : s.steps)
      if (q.kind == PrimitiveKind::Split && q.stage == p.stage && q.loops[0] == p.results[1] && coin(rng)) {
        const std::string inner = print_primitive(q);
        const bool up = coin(rng);
        if (coin(rng)) {
          if (!up && (p.factors[0] % 2 || q.factors[0] % 2)) break;
          p.factors[0] = up ? p.factors[0] * 2 : p.factors[0] / 2;
          q.factors[0] = up ? q.factors[0] * 2 : q.factors[0] / 2;
          return "factor: " + before + " and " + inner + ", outputs per work-item kept";
        }
        if (up ? q.factors[0] * 2 > p.factors[0] : q.factors[0] % 2) break;
        q.factors[0] = up ? q.factors[0] * 2 : q.factors[0] / 2;
        return "factor: " + inner + " -> " + print_primitive(q) + ", the tile of " + p.loops[0] + " kept";
      }
    // A later split of this one's outer loop: move a factor of two between them.
    for (Primitive &q : s.steps)
      if (q.kind == PrimitiveKind::Split && q.stage == p.stage && q.loops[0] == p.results[0] && coin(rng)) {
        if (coin(rng) && q.factors[0] % 2 == 0) {
          p.factors[0] *= 2, q.factors[0] /= 2;
        } else if (p.factors[0] % 2 == 0) {
          p.factors[0] /= 2, q.factors[0] *= 2;
        } else {
          break;
        }
        return "factor: " + before + " and " + print_primitive(q) + ", product kept";
      }
  }
  if (p.kind == PrimitiveKind::CrossReduce || p.kind == PrimitiveKind::Scan) {
    int64_t t = p.factors[0];
    p.factors[0] = coin(rng) ? std::min<int64_t>(t * 2, kMaxCrossReduceThreads) : std::max<int64_t>(t / 2, 2);
  } else {
    int64_t &f = p.factors[p.kind == PrimitiveKind::Tile ? std::uniform_int_distribution<size_t>(0, 1)(rng) : 0];
    f = clamp_factor(coin(rng) ? f * 2 : f / 2);
  }
  return "factor: " + before + " -> " + print_primitive(p);
}

// threads: the work-items of a group, redrawn. Where a split's inner loop is bound to
// local.*, its factor; else a cross_reduce's count; else a stage not yet mapped gets
// fuse, split by T, bind group.x and local.x.
std::optional<std::string> mutate_threads(const Graph &graph, Schedule &s, const runtime::DeviceInfo &device,
                                          Rng &rng) {
  std::vector<int64_t> counts;
  for (int64_t t = 32; t <= std::min<int64_t>(1024, static_cast<int64_t>(device.max_work_group_size)); t *= 2)
    counts.push_back(t);
  if (counts.empty()) counts.push_back(1);
  const int64_t threads = pick(counts, rng);
  std::vector<size_t> splits;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Primitive &p = s.steps[i];
    if (p.kind != PrimitiveKind::Split) continue;
    for (const Primitive &b : s.steps)
      if (b.kind == PrimitiveKind::Bind && is_local(b.binding) && b.stage == p.stage && b.loops[0] == p.results[1])
        splits.push_back(i);
  }
  std::vector<size_t> trees = steps_of(s, {PrimitiveKind::CrossReduce, PrimitiveKind::Scan});
  if (!splits.empty() || !trees.empty()) {
    bool split = !splits.empty() && (trees.empty() || coin(rng));
    const size_t chosen = split ? pick(splits, rng) : pick(trees, rng);
    Primitive &p = s.steps[chosen];
    const std::string before = print_primitive(p);
    const int64_t old = p.factors[0];
    // One of two work-item loops of a tile (local.y and local.x): 2 to 32 along it.
    int local_loops = 0;
    for (const Primitive &b : s.steps)
      local_loops += b.kind == PrimitiveKind::Bind && is_local(b.binding) && b.stage == p.stage;
    const int64_t count =
        split && local_loops > 1 ? int64_t{1} << std::uniform_int_distribution<int>(1, 5)(rng) : threads;
    // Stages computed in one kernel (compute_at) share their work-items: a row
    // chain's cross_reduces and its consumer's split change together.
    std::set<std::string> linked = {p.stage};
    for (bool grew = true; grew;) {
      grew = false;
      for (const Primitive &c : s.steps)
        if (c.kind == PrimitiveKind::ComputeAt && (linked.count(c.stage) != linked.count(c.consumer)))
          grew = linked.insert(c.stage).second || linked.insert(c.consumer).second || grew;
    }
    for (size_t i = 0; i < s.steps.size(); ++i) {
      Primitive &q = s.steps[i];
      const bool same_group =
          linked.count(q.stage) && q.factors.size() == 1 && q.factors[0] == old &&
          (std::count(splits.begin(), splits.end(), i) || std::count(trees.begin(), trees.end(), i));
      if (i == chosen || (linked.size() > 1 && same_group)) q.factors[0] = count;
    }
    return "threads: " + before + " -> " + print_primitive(s.steps[chosen]) +
           (linked.size() > 1 ? " (and the stages of its kernel)" : "");
  }
  std::optional<Program> program = scheduled(graph, s);
  if (!program) return std::nullopt;
  std::vector<std::string> stages = stage_names(*program);
  if (stages.empty()) return std::nullopt;
  const std::string stage = pick(stages, rng);
  std::string reason;
  std::optional<StageLoops> loops = stage_loops(*program, stage, &reason);
  if (!loops || loops->outer.empty()) return std::nullopt;
  for (const For *f : loops->outer)
    if (f->kind != ForKind::Serial) return std::nullopt;
  std::set<std::string> used = names_in_kernel(program->kernels[loops->kernel]);
  for (const TensorDecl &t : program->buffers) used.insert(t.name);
  auto fresh = [&](const std::string &base) {
    std::string n = base;
    for (int i = 0; used.count(n); ++i) n = base + std::to_string(i);
    used.insert(n);
    return n;
  };
  std::vector<Primitive> added;
  std::string loop = loops->outer[0]->var;
  if (loops->outer.size() > 1) {
    Primitive fuse;
    fuse.kind = PrimitiveKind::Fuse;
    fuse.stage = stage;
    for (const For *f : loops->outer) fuse.loops.push_back(f->var);
    loop = fresh("f");
    fuse.results = {loop};
    added.push_back(fuse);
  }
  Primitive split;
  split.kind = PrimitiveKind::Split;
  split.stage = stage;
  split.loops = {loop};
  split.factors = {threads};
  split.results = {fresh("g"), fresh("l")};
  added.push_back(split);
  for (auto [name, kind] :
       {std::pair{split.results[0], ForKind::GroupX}, std::pair{split.results[1], ForKind::LocalX}}) {
    Primitive bind;
    bind.kind = PrimitiveKind::Bind;
    bind.stage = stage;
    bind.loops = {name};
    bind.binding = kind;
    added.push_back(bind);
  }
  s.steps.insert(s.steps.end(), added.begin(), added.end());
  return "threads: " + stage + " mapped to groups of " + std::to_string(threads);
}

// Adds a random step of the given kinds, or removes one of them (half the time, where
// there is one).
std::optional<std::string> toggle_kinds(const Graph &graph, Schedule &s, const runtime::DeviceInfo &device, Rng &rng,
                                        const std::set<PrimitiveKind> &kinds, const char *label) {
  std::vector<size_t> present;
  for (size_t i = 0; i < s.steps.size(); ++i)
    if (kinds.count(s.steps[i].kind)) present.push_back(i);
  if (!present.empty() && coin(rng)) {
    size_t i = pick(present, rng);
    std::string removed = print_primitive(s.steps[i]);
    s.steps.erase(s.steps.begin() + static_cast<long>(i));
    s = repaired(graph, s);
    return std::string(label) + ": removed " + removed;
  }
  std::optional<Program> program = scheduled(graph, s);
  if (!program) return std::nullopt;
  if (!add_random_step(&*program, &s, rng, 12, static_cast<int64_t>(device.max_work_group_size), kinds,
                       unroll_budget(device)))
    return std::nullopt;
  return std::string(label) + ": added " + print_primitive(s.steps.back());  // the step asked for comes last
}

// The panels of one loop copied ahead the other way: its caches' prefetches (into
// registers) become one async_copy of 2 or 3 slots, an async_copy's slots change, or
// it becomes prefetches again. Drawn within toggle where the device has cp.async.
std::optional<std::string> toggle_copies_ahead(const Graph &graph, Schedule &s, Rng &rng) {
  // The loop each cache is copied at (its cache_read).
  std::map<std::string, std::pair<std::string, std::string>> copied_at;  // cache -> (stage, loop)
  for (const Primitive &p : s.steps)
    if (p.kind == PrimitiveKind::CacheRead && p.memory == MemoryScope::Local)
      copied_at[p.results[0]] = {p.stage, p.loops[0]};
  std::vector<size_t> rings = steps_of(s, {PrimitiveKind::AsyncCopy}),
                      prefetches = steps_of(s, {PrimitiveKind::Prefetch});
  std::string note;
  if (!rings.empty()) {
    const size_t i = pick(rings, rng);
    const Primitive gone = s.steps[i];
    const std::string before = print_primitive(gone);
    if (coin(rng)) {
      s.steps[i].factors[0] = gone.factors[0] == 2 ? 3 : 2;
      note = before + " -> " + print_primitive(s.steps[i]);
    } else {  // back to registers
      s.steps.erase(s.steps.begin() + static_cast<long>(i));
      for (const auto &[cache, where] : copied_at)
        if (where.first == gone.stage && where.second == gone.loops[0]) {
          Primitive p;
          p.kind = PrimitiveKind::Prefetch;
          p.stage = gone.stage;
          p.buffer = cache;
          s.steps.push_back(p);
        }
      note = before + " -> prefetch";
    }
  } else if (!prefetches.empty()) {
    auto at = copied_at.find(s.steps[pick(prefetches, rng)].buffer);
    if (at == copied_at.end()) return std::nullopt;
    const auto [stage, loop] = at->second;
    std::vector<Primitive> kept;  // the prefetches of the caches copied at the same loop go
    for (const Primitive &p : s.steps) {
      auto other = copied_at.find(p.buffer);
      if (p.kind != PrimitiveKind::Prefetch || other == copied_at.end() || other->second != at->second)
        kept.push_back(p);
    }
    s.steps = kept;
    Primitive ring;
    ring.kind = PrimitiveKind::AsyncCopy;
    ring.stage = stage;
    ring.loops = {loop};
    ring.factors = {coin(rng) ? 2 : 3};
    s.steps.push_back(ring);
    note = "prefetch -> " + print_primitive(ring);
  } else {
    return std::nullopt;
  }
  s = repaired(graph, s);
  return "toggle: " + note;
}

// compute_at: one compute_at moved into another consumer's kernel (softmax's row
// maximum into the kernel of the sum rather than of the output), at that consumer's
// innermost bound loop, the only loop compute_at accepts.
std::optional<std::string> move_compute_at(const Graph &graph, Schedule &s, Rng &rng) {
  std::vector<size_t> at = steps_of(s, {PrimitiveKind::ComputeAt});
  if (at.empty()) return std::nullopt;
  const size_t i = pick(at, rng);
  Schedule before_step;
  before_step.rewrites = s.rewrites;
  before_step.steps.assign(s.steps.begin(), s.steps.begin() + static_cast<long>(i));
  std::optional<Program> program = scheduled(graph, before_step);
  if (!program) return std::nullopt;
  Primitive &p = s.steps[i];
  std::vector<Primitive> moves;
  for (const std::string &consumer : stage_names(*program)) {
    if (consumer == p.stage || consumer == p.consumer) continue;
    std::string reason;
    std::optional<StageLoops> loops = stage_loops(*program, consumer, &reason);
    if (!loops) continue;
    const For *innermost = nullptr;
    for (const For *f : loops->outer)
      if (is_group(f->kind) || is_local(f->kind)) innermost = f;
    if (!innermost) continue;
    Primitive moved = p;
    moved.consumer = consumer;
    moved.loops = {innermost->var};
    if (compute_at(*program, moved.stage, moved.consumer, moved.loops[0], &reason)) moves.push_back(moved);
  }
  if (moves.empty()) return std::nullopt;
  const std::string before = print_primitive(p);
  p = pick(moves, rng);
  const std::string after = print_primitive(p);
  s = repaired(graph, s);
  return "compute_at: " + before + " -> " + after;
}

// sketch: a fresh schedule drawn from the program's sketches (evolve/search/sketch.h): the
// search's way to a stage pattern's skeleton, which single edits rarely assemble.
std::optional<std::string> resketch(const Graph &graph, Schedule &s, const runtime::DeviceInfo &device, Rng &rng,
                                    bool rewrites) {
  static const std::vector<Rewrite> none;
  std::optional<Sketch> sketch = sample_sketch(graph, device, rng, 8, rewrites ? nullptr : &none);
  if (!sketch) return std::nullopt;
  s = sketch->schedule;
  return "sketch: " + sketch->note;
}

// A softmax's statistics in one pass (online_softmax), for each stage where it applies:
// what the rewrite edit adds on a GPU, where the statistics are passes over memory and
// one beats two (attention on the H100: 4.88 -> 4.78 ms); on a CPU its logaddexp an
// element loses (bench/results.md).
std::vector<Rewrite> online_softmaxes(const Graph &graph) {
  std::vector<Rewrite> out;
  for (const Stage &stage : graph.stages) {
    Rewrite online{RewriteKind::OnlineSoftmax, stage.output, {}, {}, 0, {}};
    std::string reason;
    if (try_rewrite(graph, online, &reason)) out.push_back(online);
  }
  return out;
}

// rewrite: a graph rewrite removed (with the later ones that then no longer apply) or
// one that applies to the graph the parent's rewrites leave added at the end (an
// rfactor as the sketches draw it, where a reduction is too narrow for the device; on a
// GPU, a softmax's online form); the
// primitives, which name the stages of the graph before, are the parent's repaired
// (half the time) or a fresh sketch of the new graph.
std::optional<std::string> mutate_rewrites(const Graph &graph, Schedule &s, const runtime::DeviceInfo &device,
                                           Rng &rng) {
  std::string note;
  if (!s.rewrites.empty() && coin(rng)) {
    const size_t i = std::uniform_int_distribution<size_t>(0, s.rewrites.size() - 1)(rng);
    note = "rewrite: removed " + print_rewrite(s.rewrites[i]);
    s.rewrites.erase(s.rewrites.begin() + static_cast<long>(i));
  } else {
    const Graph now = rewritten_graph(graph, s);
    std::vector<Rewrite> options = applicable_rewrites(now);
    for (const Stage &stage : now.stages)  // a split of a reduction too narrow for the device
      if (std::optional<Rewrite> split = draw_rfactor(now, stage, device, rng)) options.push_back(*split);
    if (device.gpu)
      for (const Rewrite &online : online_softmaxes(now)) options.push_back(online);
    if (options.empty()) return std::nullopt;
    s.rewrites.push_back(pick(options, rng));
    note = "rewrite: added " + print_rewrite(s.rewrites.back());
  }
  s = repaired(graph, s);
  if (coin(rng)) {
    std::optional<Sketch> sketch = sample_sketch(graph, device, rng, 8, &s.rewrites);
    if (!sketch) return std::nullopt;
    s = sketch->schedule;
    note += ", a fresh sketch";
  }
  return note;
}

// The steps of `mine` whose stage `keep` accepts, then `theirs`, renamed where a name
// they introduce is one the kept steps introduce (and their later uses with it).
Schedule mixed(const Schedule &mine, const std::function<bool(const std::string &)> &keep,
               std::vector<Primitive> theirs) {
  Schedule child;
  child.rewrites = mine.rewrites;  // the stages both sets of steps name are those of mine's graph
  std::set<std::string> names;
  for (const Primitive &p : mine.steps)
    if (keep(p.stage)) {
      child.steps.push_back(p);
      for (const std::string &n : p.results) names.insert(n);
    }
  std::map<std::string, std::string> renamed;
  auto rename = [&](std::string &n) {
    auto it = renamed.find(n);
    if (it != renamed.end()) n = it->second;
  };
  for (Primitive &p : theirs) {
    for (std::string &n : p.loops) rename(n);
    rename(p.buffer);
    for (std::string &n : p.results)
      if (names.count(n)) {
        std::string fresh;
        for (int i = 0; fresh.empty() || names.count(fresh); ++i) fresh = n + "x" + std::to_string(i);
        renamed[n] = fresh;
        n = fresh;
      }
    for (const std::string &n : p.results) names.insert(n);
    child.steps.push_back(p);
  }
  return child;
}

// crossover: the parent's steps for a random half of the stages, the other
// parent's for the rest, the second's new names renamed where they clash.
std::optional<std::string> crossover(const Graph &graph, Schedule &s, const Schedule &other, Rng &rng) {
  if (other.steps.empty()) return std::nullopt;
  std::set<std::string> stages;
  for (const Schedule *x : {static_cast<const Schedule *>(&s), &other})
    for (const Primitive &p : x->steps) stages.insert(p.stage);
  std::set<std::string> mine;
  for (const std::string &stage : stages)
    if (coin(rng)) mine.insert(stage);
  std::vector<Primitive> theirs;
  for (const Primitive &p : other.steps)
    if (!mine.count(p.stage)) theirs.push_back(p);
  s = repaired(graph, mixed(
                          s, [&](const std::string &stage) { return mine.count(stage) > 0; }, theirs));
  return "crossover: " + std::to_string(mine.size()) + " of " + std::to_string(stages.size()) +
         " stages from the parent";
}

// transfer: the parent's steps but one stage's, then that stage's steps from a
// library schedule (fitting_stages: those that replay on this graph on their own;
// with the parent's other steps the IR decides again, and what no longer replays is
// dropped). Nothing when none of them survives.
std::optional<std::string> transfer(const Graph &graph, Schedule &s, const LibraryStage &source) {
  s = repaired(graph, mixed(
                          s, [&](const std::string &other) { return other != source.stage; }, source.steps));
  size_t kept = 0;
  for (const Primitive &p : s.steps) kept += p.stage == source.stage;
  if (kept == 0) return std::nullopt;
  return "transfer: " + source.stage + " from " + source.name + " (" + std::to_string(kept) + " of " +
         std::to_string(source.of) + " steps)";
}

}  // namespace

Mutator::Mutator(const std::map<std::string, double> &weights) : weights_(default_mutation_weights()) {
  for (const auto &[kind, weight] : weights) weights_[kind] = weight;
}

std::optional<Proposal> Mutator::propose(const ProposalContext &context, Rng &rng) {
  std::vector<std::string> kinds;
  std::vector<double> weights;
  const bool library = context.library && !context.library->empty();
  // A graph no rewrite applies to (and a parent without one) never draws "rewrite".
  const bool rewrites =
      context.rewrites && (!context.parent.schedule.rewrites.empty() || rewrites_apply(context.graph) ||
                           (context.device.gpu && !online_softmaxes(context.graph).empty()));
  for (const auto &[kind, weight] : weights_)
    if (weight > 0 && (kind != "transfer" || library) && (kind != "rewrite" || rewrites))
      kinds.push_back(kind), weights.push_back(weight);
  if (kinds.empty()) return std::nullopt;
  std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
  const std::string parent_text = print_schedule(context.parent.schedule);
  const int64_t max_group = static_cast<int64_t>(context.device.max_work_group_size);
  for (int attempt = 0; attempt < 16; ++attempt) {
    Schedule s = context.parent.schedule;
    // The naive kernel has nothing to edit: its children are sketches.
    const std::string kind = s.naive() ? "sketch" : kinds[draw(rng)];
    std::optional<std::string> note;
    if (kind == "sketch") {
      note = resketch(context.graph, s, context.device, rng, context.rewrites);
    } else if (kind == "compute_at") {
      note = move_compute_at(context.graph, s, rng);
    } else if (kind == "factor") {
      note = mutate_factor(s, rng);
    } else if (kind == "threads") {
      note = mutate_threads(context.graph, s, context.device, rng);
    } else if (kind == "unroll") {
      note = toggle_kinds(context.graph, s, context.device, rng, {PrimitiveKind::Unroll}, "unroll");
    } else if (kind == "vectorize") {
      note = toggle_kinds(context.graph, s, context.device, rng, {PrimitiveKind::Vectorize}, "vectorize");
    } else if (kind == "toggle" && context.device.async_copies &&
               std::uniform_real_distribution<double>(0, 1)(rng) < 0.3 &&
               !steps_of(s, {PrimitiveKind::Prefetch, PrimitiveKind::AsyncCopy}).empty()) {
      note = toggle_copies_ahead(context.graph, s, rng);
    } else if (kind == "toggle") {
      note = toggle_kinds(context.graph, s, context.device, rng,
                          {PrimitiveKind::Inline, PrimitiveKind::ReverseInline, PrimitiveKind::ComputeAt,
                           PrimitiveKind::CacheRead, PrimitiveKind::CacheWrite},
                          "toggle");
    } else if (kind == "insert") {
      std::optional<Program> program = scheduled(context.graph, s);
      if (program && add_random_step(&*program, &s, rng, 12, max_group, {}, unroll_budget(context.device)))
        note = "insert: " + print_primitive(s.steps.back());
    } else if (kind == "remove" && !s.steps.empty()) {
      size_t i = std::uniform_int_distribution<size_t>(0, s.steps.size() - 1)(rng);
      note = "remove: " + print_primitive(s.steps[i]);
      s.steps.erase(s.steps.begin() + static_cast<long>(i));
      s = repaired(context.graph, s);
    } else if (kind == "swap" && s.steps.size() >= 2) {
      size_t i = std::uniform_int_distribution<size_t>(0, s.steps.size() - 2)(rng);
      std::swap(s.steps[i], s.steps[i + 1]);
      note = "swap: " + print_primitive(s.steps[i]) + " before " + print_primitive(s.steps[i + 1]);
      s = repaired(context.graph, s);
    } else if (kind == "crossover") {
      std::vector<const CandidateView *> mates;
      for (const CandidateView &c : context.inspirations)
        if (c.speedup > 0 && !c.schedule.naive()) mates.push_back(&c);
      if (!mates.empty()) note = crossover(context.graph, s, pick(mates, rng)->schedule, rng);
    } else if (kind == "transfer") {
      note = transfer(context.graph, s, pick(*context.library, rng));
    } else if (kind == "rewrite") {
      note = mutate_rewrites(context.graph, s, context.device, rng);
    }
    // Only schedules that replay leave the mutator (a factor the IR refuses is tried
    // again as another edit); the device's limits are the search's to check.
    if (note && print_schedule(s) != parent_text && replay(context.graph, s).program) return Proposal{s, *note};
  }
  return std::nullopt;
}

std::optional<Proposal> RandomProposer::propose(const ProposalContext &context, Rng &rng) {
  static const std::vector<Rewrite> none;
  std::optional<Sketch> sketch =
      sample_sketch(context.graph, context.device, rng, 8, context.rewrites ? nullptr : &none);
  if (!sketch) return std::nullopt;
  return Proposal{sketch->schedule, "random: " + sketch->note};
}

namespace {
std::map<std::string, ProposerFactory> &registered() {
  static std::map<std::string, ProposerFactory> factories;
  return factories;
}
}  // namespace

void register_proposer(const std::string &name, ProposerFactory factory) { registered()[name] = std::move(factory); }

std::unique_ptr<Proposer> make_proposer(const std::string &name, const EvolveConfig &config) {
  if (name == "mutator") return std::make_unique<Mutator>(config.mutations);
  if (name == "random") return std::make_unique<RandomProposer>();
  if (auto it = registered().find(name); it != registered().end()) return it->second(config);
  check_proposer_name(name, "");
  throw UserError("error: proposer '" + name + "' needs the model client, which this build of ksmith lacks " +
                  "(libcurl and tinyxml2 were not found when it was built)");
}

}  // namespace ks
