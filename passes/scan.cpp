// scan: a cumulative reduction computed by the work-items of a group as a scan.
//
// A stage `y[.., i] = sum(k: 0..i + 1) V(k)` lowers to a reduction over k's box
// with the guard `k < i + 1`: every i visits every k, a square of work for what a
// running total does in a line. Algorithm, for `scan y.i T -> t`, with i the
// stage's innermost spatial loop, k its only reduction loop (extent E, i's own),
// and every other spatial loop bound to work-groups:
//  1. Work-item t totals its own chunk of C = ceil(E / T) consecutive iterations
//     (k = t * C + c) into the accumulator.
//  2. The T totals meet in local memory, part[t], and become inclusive prefixes
//     there (Hillis and Steele: for s = 1, 2, 4, .. < T, part[t] combines
//     part[t - s] where t >= s, the identity otherwise; a barrier around each
//     step, none inside a branch).
//  3. Work-item t starts again from the prefix of the chunks before its own
//     (part[t - 1], the identity for t = 0), runs its chunk once more, and stores
//     the running value at y[.., k] after each iteration.
// Each element is combined in order within a chunk and the chunks' totals in a
// tree, as a sum over cross_reduce's tree is; V is evaluated twice per element.
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitives.h"
#include "passes/regions.h"

namespace ks {

namespace {

// The parts of a lowered cumulative block:
//   allocate acc { acc[0] = init; for k { acc[0] = op(acc[0], [cast](select(k < i + 1, V, _))) }; y[..] = acc }
struct Cumulative {
  const Allocate *acc = nullptr;
  Expr init;
  const For *k = nullptr;
  BinaryOp op = BinaryOp::Add;
  Expr value;  // V, as the accumulator's type
  const Store *result = nullptr;
};

}  // namespace

bool is_running_total_guard(const Expr &e, const std::string &k, const std::string &i) {
  auto var_named = [](const Expr &x, const std::string &name) {
    const Expr *inner = &x;
    while (const Cast *c = inner->as<Cast>()) inner = &c->value;
    const Var *v = inner->as<Var>();
    return v && v->name == name;
  };
  const Binary *lt = e.as<Binary>();
  if (!lt || lt->op != BinaryOp::Lt || !var_named(lt->a, k)) return false;
  const Binary *plus = lt->b.as<Binary>();
  auto one = plus ? as_const_int(plus->b) : std::nullopt;
  return plus && plus->op == BinaryOp::Add && var_named(plus->a, i) && one && *one == 1;
}

namespace {

std::optional<Cumulative> match_cumulative(const Block *block, const std::string &i, int64_t extent,
                                           std::string *reason) {
  const std::string cumulative = " is not a cumulative reduction y[.., " + i + "] = sum(k: 0.." + i +
                                 " + 1) ... (or prod, max, min) as lowering writes it";
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
  const Select *guarded = term.as<Select>();
  if (!guarded || !is_running_total_guard(guarded->condition, c.k->var, i))
    return *reason = block->stage + cumulative, std::nullopt;
  if (c.k->extent != extent) {
    *reason = "the reduction loop " + c.k->var + " of " + block->stage + " runs over " +
              std::to_string(c.k->extent) + " values, " + i + " over " + std::to_string(extent) +
              "; scan takes a range from 0 to " + i + " + 1 over the same extent";
    return std::nullopt;
  }
  if (mentions(guarded->true_value, {i})) {
    *reason = "the value " + block->stage + " accumulates depends on " + i + " itself, not only on " + c.k->var;
    return std::nullopt;
  }
  c.value = cast_to(c.acc->type, guarded->true_value);
  return c;
}

}  // namespace

std::optional<Program> scan(const Program &program, const std::string &stage, const std::string &loop,
                            int64_t threads, const std::string &thread, std::string *reason) {
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
  if (threads < 2 || threads > kMaxCrossReduceThreads || (threads & (threads - 1)) != 0) {
    *reason = "the number of work-items must be a power of two from 2 to " + std::to_string(kMaxCrossReduceThreads) +
              ", not " + std::to_string(threads);
    return std::nullopt;
  }
  for (const For *outer : where.outer)
    if (outer != f && !is_group(outer->kind)) {
      *reason = "loop " + outer->var + " of " + stage + " is " + for_kind_name(outer->kind) +
                "; bind every other spatial loop of the stage to a work-group first";
      return std::nullopt;
    }
  std::optional<Cumulative> c = match_cumulative(f->body.as<Block>(), loop, f->extent, reason);
  if (!c) return std::nullopt;

  const Kernel &kernel = program.kernels[where.kernel];
  if (!name_is_free(program, kernel, thread, reason)) return std::nullopt;
  NameSet names;
  for (const TensorDecl &b : program.buffers) names.reserve(b.name);
  for (const std::string &n : names_in_kernel(kernel)) names.reserve(n);
  names.reserve(thread);
  const std::string chunk = names.fresh(c->k->var + "c"), part = names.fresh(stage + "_part"),
                    carry = names.fresh(stage + "_carry");
  const DType type = c->acc->type, index = index_type_for(threads);
  const int64_t extent = f->extent, chunks = (extent + threads - 1) / threads;
  const DType k_type = index_type_for(extent), wide = index_type_for(chunks * threads);
  Expr t = Var::make(index, thread), k = Var::make(k_type, c->k->var);
  auto acc_at = [&] { return Load::make(type, c->acc->buffer, {make_int(0)}); };
  auto part_at = [&](Expr at) { return Load::make(type, part, {std::move(at)}); };
  auto combine = [&](Expr a, Expr b) { return Binary::make(c->op, std::move(a), std::move(b)); };
  auto at_least = [&](int64_t s) { return Binary::make(BinaryOp::Ge, t, make_int(s, index)); };
  auto back = [&](int64_t s) {  // part[max(t - s, 0)]: in bounds where t < s too, where it is not used
    return part_at(Binary::make(BinaryOp::Max, t - make_int(s, index), make_int(0, index)));
  };

  // Work-item t's chunk, around each iteration's body.
  auto over_chunk = [&](Stmt body) {
    Expr first = cast_to(wide, t) * make_int(chunks, wide) + cast_to(wide, Var::make(index_type_for(chunks), chunk));
    if (chunks * threads != extent) body = IfThenElse::make(k < make_int(extent, k_type), body);
    return For::make(chunk, chunks, ForKind::Serial, LetStmt::make(c->k->var, cast_to(k_type, first), body));
  };
  Stmt accumulate = Store::make(c->acc->buffer, {make_int(0)}, combine(acc_at(), c->value));
  std::map<std::string, Expr> at_k = {{loop, k}};
  std::vector<Expr> out_index;
  for (const Expr &e : c->result->indices) out_index.push_back(substitute(e, at_k));
  Stmt store = Store::make(c->result->buffer, out_index, substitute(c->result->value, at_k));

  std::vector<Stmt> body = {Store::make(c->acc->buffer, {make_int(0)}, c->init), over_chunk(accumulate),
                            Store::make(part, {t}, acc_at()), Barrier::make(MemoryScope::Local)};
  for (int64_t s = 1; s < threads; s *= 2) {
    body.push_back(Store::make(carry, {make_int(0)}, Select::make(at_least(s), back(s), c->init)));
    body.push_back(Barrier::make(MemoryScope::Local));
    body.push_back(Store::make(part, {t}, combine(part_at(t), Load::make(type, carry, {make_int(0)}))));
    body.push_back(Barrier::make(MemoryScope::Local));
  }
  body.push_back(Store::make(c->acc->buffer, {make_int(0)}, Select::make(at_least(1), back(1), c->init)));
  body.push_back(over_chunk(Seq::make({accumulate, store})));
  Stmt inner = Allocate::make(
      c->acc->buffer, type, c->acc->shape, c->acc->scope,
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

}  // namespace ks
