// scan: a running total computed by the work-items of a group as a scan.
//
// A stage `y[.., i] = sum(k: 0..i + 1) V(k)` lowers to a reduction over k's box
// with the guard `k < i + 1`: every i visits every k, a square of work for what a
// running total does in a line. The four running totals (running_total_form):
//   k < i + 1      forward, inclusive    (k over i's extent)
//   k < i          forward, exclusive    (k over one less)
//   i <= k         reversed, inclusive   (sum(k: i..N))
//   i + 1 <= k     reversed, exclusive
// Algorithm, for `scan y.i T -> t`, with i the stage's innermost spatial loop, k its
// only reduction loop, every other spatial loop bound to work-groups, and the
// positions p of i (N of them) cut into T chunks of C = ceil(N / T) consecutive ones:
//  1. Work-item t totals V over its chunk (positions k may take: p < k's extent).
//  2. The T totals meet in local memory, part[t], and become inclusive prefixes
//     there, or suffixes for a reversed total (Hillis and Steele: for s = 1, 2, 4,
//     .. < T, part[t] combines part[t - s], or part[t + s], where that exists, the
//     identity otherwise; a barrier around each step, none inside a branch).
//  3. Work-item t starts again from what the chunks before its own hold (after it,
//     reversed), runs its chunk once more in the total's direction and stores y at
//     each position: after adding V(p) for an inclusive total, before for an
//     exclusive one.
// Each element is combined in order within a chunk and the chunks' totals in a
// tree, as a sum over cross_reduce's tree is; V is evaluated twice per element.
#include "ir/visitor.h"
#include "passes/canonical.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/regions.h"

namespace ks {

namespace {

// The parts of a lowered running total:
//   allocate acc { acc[0] = init; for k { acc[0] = op(acc[0], [cast](select(GUARD, V, _))) }; y[..] = acc }
struct Cumulative {
  const Allocate *acc = nullptr;
  Expr init;
  const For *k = nullptr;
  BinaryOp op = BinaryOp::Add;
  Expr value;  // V, as the accumulator's type
  const Store *result = nullptr;
  RunningTotal form;
};

bool var_named(const Expr &x, const std::string &name) {
  const Expr *inner = &x;
  while (const Cast *c = inner->as<Cast>()) inner = &c->value;
  const Var *v = inner->as<Var>();
  return v && v->name == name;
}

// Whether x is `i + 1` (casts aside).
bool next_of(const Expr &x, const std::string &i) {
  const Binary *plus = x.as<Binary>();
  auto one = plus ? as_const_int(plus->b) : std::nullopt;
  return plus && plus->op == BinaryOp::Add && var_named(plus->a, i) && one && *one == 1;
}

}  // namespace

std::optional<RunningTotal> running_total_form(const Expr &guard, const std::string &k, int64_t k_extent,
                                               const std::string &i, int64_t i_extent) {
  const Binary *b = guard.as<Binary>();
  if (!b) return std::nullopt;
  std::optional<RunningTotal> form;
  if (b->op == BinaryOp::Lt && var_named(b->a, k) && next_of(b->b, i)) form = RunningTotal{false, false};
  if (b->op == BinaryOp::Lt && var_named(b->a, k) && var_named(b->b, i)) form = RunningTotal{false, true};
  if (b->op == BinaryOp::Le && var_named(b->a, i) && var_named(b->b, k)) form = RunningTotal{true, false};
  if (b->op == BinaryOp::Le && next_of(b->a, i) && var_named(b->b, k)) form = RunningTotal{true, true};
  // k's box: all of i's positions, but the last for a forward exclusive total.
  if (form && k_extent != (form->exclusive && !form->reversed ? i_extent - 1 : i_extent)) return std::nullopt;
  return form;
}

namespace {

std::optional<Cumulative> match_cumulative(const Block *block, const std::string &i, int64_t extent,
                                           std::string *reason) {
  const std::string cumulative = " is not a running total y[.., " + i + "] = sum(k: 0.." + i + " + 1), (k: 0.." + i +
                                 "), (k: " + i + "..N) or (k: " + i +
                                 " + 1..N) (or prod, max, min) as lowering writes it";
  Cumulative c;
  c.acc = block->body.as<Allocate>();
  const Seq *steps = c.acc ? c.acc->body.as<Seq>() : nullptr;
  if (!steps || steps->stmts.size() != 3) return *reason = block->stage + cumulative, std::nullopt;
  const Store *init = steps->stmts[0].as<Store>();
  c.k = steps->stmts[1].as<For>();
  c.result = steps->stmts[2].as<Store>();
  const Store *update = c.k ? c.k->body.as<Store>() : nullptr;
  const Binary *combine = update ? update->value.as<Binary>() : nullptr;
  const Load *current = combine ? combine->a.as<Load>() : nullptr;
  if (!init || init->buffer != c.acc->buffer || !c.k || c.k->kind != ForKind::Serial || !c.result || !update ||
      update->buffer != c.acc->buffer || !combine || !current || current->buffer != c.acc->buffer)
    return *reason = block->stage + cumulative, std::nullopt;
  c.init = init->value;
  c.op = combine->op;
  if (!(c.op == BinaryOp::Add || c.op == BinaryOp::Mul || c.op == BinaryOp::Max || c.op == BinaryOp::Min))
    return *reason = block->stage + cumulative, std::nullopt;
  Expr term = combine->b;
  while (const Cast *cast = term.as<Cast>()) term = cast->value;
  // The guarded value however the spec spells it (`select(...) * 2.0 / 2.0`,
  // `log(exp(select(...)))`): its canonical form, whose value is the guard's.
  if (term.type() == DType::F32) term = canonical(term);
  const Select *guarded = term.as<Select>();
  std::optional<RunningTotal> form =
      guarded ? running_total_form(guarded->condition, c.k->var, c.k->extent, i, extent) : std::nullopt;
  if (!form) return *reason = block->stage + cumulative, std::nullopt;
  c.form = *form;
  if (mentions(guarded->true_value, {i})) {
    *reason = "the value " + block->stage + " accumulates depends on " + i + " itself, not only on " + c.k->var;
    return std::nullopt;
  }
  c.value = cast_to(c.acc->type, guarded->true_value);
  return c;
}

}  // namespace

std::optional<Program> scan(const Program &program, const std::string &stage, const std::string &loop, int64_t threads,
                            const std::string &thread, std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  if (where.is_inner(loop) || where.outer.empty() || where.outer.back() != f) {
    *reason = "loop " + loop + " is not the innermost spatial loop of " + stage +
              " (scan takes the spatial loop the cumulative range names)";
    return std::nullopt;
  }
  if (f->kind != ForKind::Serial || !f->body.as<Block>()) {
    *reason = "loop " + loop + " of " + stage + " must be serial and hold the stage's block directly";
    return std::nullopt;
  }
  if (!power_of_two_work_items(threads, reason) || !outer_loops_on_groups(where, stage, f, reason)) return std::nullopt;
  std::optional<Cumulative> c = match_cumulative(f->body.as<Block>(), loop, f->extent, reason);
  if (!c) return std::nullopt;

  const Kernel &kernel = program.kernels[where.kernel];
  if (!name_is_free(program, kernel, thread, reason)) return std::nullopt;
  NameSet names = kernel_names(program, kernel);
  names.reserve(thread);
  // Each pass over the chunk has a loop of its own: schedules name loops.
  const std::string chunk = names.fresh(c->k->var + "c"), again = names.fresh(c->k->var + "c"),
                    part = names.fresh(stage + "_part"), carry = names.fresh(stage + "_carry");
  const DType type = c->acc->type, index = index_type_for(threads);
  const int64_t extent = f->extent, chunks = (extent + threads - 1) / threads;
  const DType k_type = index_type_for(c->k->extent), wide = index_type_for(chunks * threads);
  const bool reversed = c->form.reversed;
  Expr t = Var::make(index, thread), k = Var::make(k_type, c->k->var);
  auto acc_at = [&] { return Load::make(type, c->acc->buffer, {make_int(0)}); };
  auto part_at = [&](Expr at) { return Load::make(type, part, {std::move(at)}); };
  auto combine = [&](Expr a, Expr b) { return Binary::make(c->op, std::move(a), std::move(b)); };
  // The chunk s places before t's in the total's direction, where there is one;
  // its index clamped, so that the load stays in bounds where it is not used.
  auto has_before = [&](int64_t s) {
    return reversed ? Binary::make(BinaryOp::Lt, t, make_int(threads - s, index))
                    : Binary::make(BinaryOp::Ge, t, make_int(s, index));
  };
  auto before = [&](int64_t s) {
    return part_at(reversed ? Binary::make(BinaryOp::Min, t + make_int(s, index), make_int(threads - 1, index))
                            : Binary::make(BinaryOp::Max, t - make_int(s, index), make_int(0, index)));
  };

  // Work-item t's chunk of positions, in the total's direction, around body.
  auto over_chunk = [&](const std::string &chunk, Stmt body) {
    Expr c_var = cast_to(wide, Var::make(index_type_for(chunks), chunk));
    Expr step = reversed ? make_int(chunks - 1, wide) - c_var : c_var;
    Expr position = cast_to(wide, t) * make_int(chunks, wide) + step;
    if (chunks * threads != extent) body = IfThenElse::make(k < make_int(extent, k_type), body);
    return For::make(chunk, chunks, ForKind::Serial, LetStmt::make(c->k->var, cast_to(k_type, position), body));
  };
  // V where k takes it (a forward exclusive total's box stops one short of i's).
  Stmt accumulate = Store::make(c->acc->buffer, {make_int(0)}, combine(acc_at(), c->value));
  if (c->k->extent < extent) accumulate = IfThenElse::make(k < make_int(c->k->extent, k_type), accumulate);
  std::map<std::string, Expr> at_k = {{loop, cast_to(index_type_for(extent), k)}};
  std::vector<Expr> out_index;
  for (const Expr &e : c->result->indices) out_index.push_back(substitute(e, at_k));
  Stmt store = Store::make(c->result->buffer, out_index, substitute(c->result->value, at_k));

  std::vector<Stmt> body = {Store::make(c->acc->buffer, {make_int(0)}, c->init), over_chunk(chunk, accumulate),
                            Store::make(part, {t}, acc_at()), Barrier::make(MemoryScope::Local)};
  for (int64_t s = 1; s < threads; s *= 2) {
    body.push_back(Store::make(carry, {make_int(0)}, Select::make(has_before(s), before(s), c->init)));
    body.push_back(Barrier::make(MemoryScope::Local));
    body.push_back(Store::make(part, {t}, combine(part_at(t), Load::make(type, carry, {make_int(0)}))));
    body.push_back(Barrier::make(MemoryScope::Local));
  }
  body.push_back(Store::make(c->acc->buffer, {make_int(0)}, Select::make(has_before(1), before(1), c->init)));
  body.push_back(
      over_chunk(again, c->form.exclusive ? Seq::make({store, accumulate}) : Seq::make({accumulate, store})));
  Stmt inner = Allocate::make(c->acc->buffer, type, c->acc->shape, c->acc->scope,
                              Allocate::make(part, type, {threads}, MemoryScope::Local,
                                             Allocate::make(carry, type, {1}, MemoryScope::Private, Seq::make(body))));

  // The block writes the whole row along i.
  const Block *block = f->body.as<Block>();
  std::vector<Region> writes = block->writes;
  for (Region &w : writes)
    for (Range &r : w.ranges)
      if (mentions(r.min, {loop})) r = Range{make_int(0, r.min.type()), extent};
  Stmt scanned = For::make(thread, threads, ForKind::LocalX,
                           Block::make(block->stage, read_regions(program, inner), writes, inner));
  Program out = replace_loop(program, where.kernel, loop, [&](const For *) { return scanned; });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// A running total scanned by a group: its other spatial loops bound to work-groups first.
void draw_scan(StepDraw &d) {
  if (d.loops.outer.empty() || d.loops.outer.size() > 4) return;
  Program bound = d.program;
  std::vector<Primitive> binds;
  if (!d.bind_to_groups(d.loops.outer.size() - 1, &bound, &binds)) return;
  d.p.loops = {d.loops.outer.back()->var};
  d.p.factors = {int64_t{1} << std::uniform_int_distribution<int>(1, 6)(d.rng)};
  d.p.results = {d.fresh_name()};
  d.next = scan(bound, d.p.stage, d.p.loops[0], d.p.factors[0], d.p.results[0], &d.reason);
  if (d.next) d.before = binds;
}

}  // namespace

// Drawn only where asked for (draw_cases 0): it applies to running totals alone.
const PrimitiveInfo scan_primitive = {{{ArgKind::StageLoop},
                                       {ArgKind::Factor},
                                       {ArgKind::Arrow, "before the work-item variable's name"},
                                       {ArgKind::Result, "the work-item variable's name"}},
                                      "scan y.i 256 -> t",
                                      "a running total along i as a work-group scan of 256 work-items t",
                                      [](const Program &program, const Primitive &p, std::string *reason) {
                                        return scan(program, p.stage, p.loops[0], p.factors[0], p.results[0], reason);
                                      },
                                      draw_scan,
                                      0};

}  // namespace ks
