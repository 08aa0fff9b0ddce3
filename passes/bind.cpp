// bind: a loop runs across work-groups or across the work-items of a group.
#include <algorithm>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> bind(const Program &program, const std::string &stage, const std::string &loop, ForKind kind,
                            std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  if (!is_group(kind) && !is_local(kind)) {
    *reason = std::string("bind takes group.x/y/z or local.x/y/z, not ") + for_kind_name(kind);
    return std::nullopt;
  }
  if (where.is_inner(loop)) {
    *reason = "loop " + loop + " is a reduction loop of " + stage +
              "; its iterations accumulate into one value, so work-items cannot share it";
    return std::nullopt;
  }
  if (f->kind != ForKind::Serial) {
    *reason = "loop " + loop + " is already " + for_kind_name(f->kind);
    return std::nullopt;
  }
  // Barriers were placed for the work-items the group had then (a local copy is
  // split among them, a tree reduction spans them): more work-items would race.
  if (is_local(kind) && has_barrier(program.kernels[where.kernel].body)) {
    *reason = "kernel " + program.kernels[where.kernel].name +
              " already synchronises its work-items (barriers); bind local loops before cache_read, cross_reduce "
              "and compute_at";
    return std::nullopt;
  }
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *n) { return For::make(n->var, n->extent, kind, n->body); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// The product of unrolled extents on the path from the kernel's root to loop.
int64_t unrolled_around(const Stmt &root, const std::string &loop) {
  struct Walk : IRVisitor {
    const std::string &loop;
    int64_t current = 1, found = 1;
    explicit Walk(const std::string &loop) : loop(loop) {}
    using IRVisitor::visit;
    void visit(const For *n) override {
      if (n->var == loop) found = current;
      int64_t saved = current;
      if (n->kind == ForKind::Unrolled) current *= n->extent;
      IRVisitor::visit(n);
      current = saved;
    }
  } walk(loop);
  walk.dispatch(root);
  return walk.found;
}

}  // namespace

std::optional<Program> unroll(const Program &program, const std::string &stage, const std::string &loop,
                              std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  if (f->kind != ForKind::Serial) {
    *reason = "loop " + loop + " is already " + for_kind_name(f->kind);
    return std::nullopt;
  }
  if (f->extent > kMaxUnroll) {
    *reason = "loop " + loop + " has " + std::to_string(f->extent) + " iterations; unroll loops of at most " +
              std::to_string(kMaxUnroll) + " (split it first)";
    return std::nullopt;
  }
  // Nested unrolled loops multiply: bound the copies of the innermost body. The loops
  // inside are copied too, and compilers then unroll the small constant ones among the
  // copies (PoCL took 260 s on a conv with an unrolled loop around serial loops around
  // an unrolled one): bound the iterations the copies hold as well.
  const int64_t around = f->extent * unrolled_around(program.kernels[where.kernel].body, loop);
  const int64_t copies = around * nested_iterations(f->body, true);
  if (copies > kMaxUnrollCopies) {
    *reason = "unrolling loop " + loop + " would make " + std::to_string(copies) +
              " copies of the innermost body with the unrolled loops around and inside it; at most " +
              std::to_string(kMaxUnrollCopies);
    return std::nullopt;
  }
  const int64_t iterations = around * nested_iterations(f->body, false);
  if (iterations > kMaxUnrolledIterations) {
    *reason = "unrolling loop " + loop + " would copy " + std::to_string(iterations) +
              " iterations of the loops inside it; at most " + std::to_string(kMaxUnrolledIterations);
    return std::nullopt;
  }
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *n) { return For::make(n->var, n->extent, ForKind::Unrolled, n->body); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

std::optional<Program> tile(const Program &program, const std::string &stage, const std::string &loop_a,
                            const std::string &loop_b, int64_t factor_a, int64_t factor_b,
                            const std::vector<std::string> &names, std::string *reason) {
  if (names.size() != 4) {
    *reason = "tile names four new loops: outer a, outer b, inner a, inner b";
    return std::nullopt;
  }
  auto a = split(program, stage, loop_a, factor_a, names[0], names[2], reason);
  if (!a) return std::nullopt;
  auto b = split(*a, stage, loop_b, factor_b, names[1], names[3], reason);
  if (!b) return std::nullopt;
  return reorder(*b, stage, names, reason);
}

namespace {

// A spatial loop bound to work-groups or work-items, the group within max_group.
void draw_bind(StepDraw &d) {
  if (d.loops.outer.empty()) return;
  const For *f = pick(d.loops.outer, d.rng);
  static const ForKind kinds[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ,
                                  ForKind::LocalX, ForKind::LocalY, ForKind::LocalZ};
  d.p.loops = {f->var};
  d.p.binding = kinds[std::uniform_int_distribution<int>(0, 5)(d.rng)];
  d.next = ks::bind(d.program, d.p.stage, f->var, d.p.binding, &d.reason);
  if (d.next && d.group_too_large(*d.next)) d.next.reset();
}

void draw_unroll(StepDraw &d) {
  if (d.all.empty()) return;
  const For *f = pick(d.all, d.rng);
  d.p.loops = {f->var};
  d.next = unroll(d.program, d.p.stage, f->var, &d.reason);
  if (d.next && unrolled_copies(*d.next) > d.max_copies) d.next.reset();
}

// The first two spatial loops tiled.
void draw_tile(StepDraw &d) {
  if (d.loops.outer.size() < 2) return;
  const For *a = d.loops.outer[0], *b = d.loops.outer[1];
  d.p.loops = {a->var, b->var};
  d.p.factors = {std::uniform_int_distribution<int64_t>(1, a->extent)(d.rng),
                 std::uniform_int_distribution<int64_t>(1, b->extent)(d.rng)};
  d.p.results = {d.fresh_name(), d.fresh_name(), d.fresh_name(), d.fresh_name()};
  d.next = tile(d.program, d.p.stage, a->var, b->var, d.p.factors[0], d.p.factors[1], d.p.results, &d.reason);
}

}  // namespace

const PrimitiveInfo bind_primitive = {{{ArgKind::StageLoop}, {ArgKind::Binding}},
                                      "bind y.mo group.y",
                                      "loop mo runs as work-groups along y (local.x/y/z: as a group's work-items)",
                                      [](const Program &program, const Primitive &p, std::string *reason) {
                                        return ks::bind(program, p.stage, p.loops[0], p.binding, reason);
                                      },
                                      draw_bind,
                                      2};

const PrimitiveInfo unroll_primitive = {{{ArgKind::StageLoop}},
                                        "unroll y.ki",
                                        "loop ki unrolled (at most 64 iterations)",
                                        [](const Program &program, const Primitive &p, std::string *reason) {
                                          return unroll(program, p.stage, p.loops[0], reason);
                                        },
                                        draw_unroll};

const PrimitiveInfo tile_primitive = {{{ArgKind::Stage},
                                       {ArgKind::Loop, "the first loop"},
                                       {ArgKind::Loop, "the second loop"},
                                       {ArgKind::Factor},
                                       {ArgKind::Factor},
                                       {ArgKind::Arrow, "before the names of the new loops"},
                                       {ArgKind::Result, "a new loop's name"},
                                       {ArgKind::Result, "a new loop's name"},
                                       {ArgKind::Result, "a new loop's name"},
                                       {ArgKind::Result, "a new loop's name"}},
                                      "tile y m n 64 32 -> mo no mi ni",
                                      "m and n split by 64 and 32, then reordered mo no mi ni",
                                      [](const Program &program, const Primitive &p, std::string *reason) {
                                        return tile(program, p.stage, p.loops[0], p.loops[1], p.factors[0],
                                                    p.factors[1], p.results, reason);
                                      },
                                      draw_tile};

}  // namespace ks
