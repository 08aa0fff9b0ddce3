// cross_reduce: a reduction shared by the work-items of a group, combined as a tree
// in local memory.
//
// Algorithm, for `cross_reduce y.d T -> t` on a block
//   allocate acc: T[1] private { acc[0] = init; <loops with d>; y[idx] = acc[0] }
// whose update is `acc[0] = op(acc[0], value)`:
//  1. Loop d (extent E) becomes `for dj in 0..ceil(E / T) { let d = dj * T + t;
//     if d < E { ... } }`: work-item t takes every T-th iteration.
//  2. The final store becomes: part[t] = acc[0]; barrier; then for s = T/2, T/4,
//     .., 1: `if t < s { part[t] = op(part[t], part[t + s]) }` and a barrier
//     between steps; last, `if t == 0 { y[idx] = part[0] }`.
//  3. `for t in 0..T local.x` wraps the block, inside the stage's group loops.
#include "ir/group_tree.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/regions.h"

namespace ks {

namespace {

// The accumulator update `acc[0] = op(acc[0], value)`, found anywhere in body.
struct FindUpdate : IRVisitor {
  std::string acc;  // a copy: callers pass a temporary where there is no accumulator
  std::optional<BinaryOp> op;
  explicit FindUpdate(std::string acc) : acc(std::move(acc)) {}
  using IRVisitor::visit;
  void visit(const Store *n) override {
    const Binary *b = n->value.as<Binary>();
    const Load *current = b ? b->a.as<Load>() : nullptr;
    if (n->buffer == acc && current && current->buffer == acc) op = b->op;
  }
};

}  // namespace

std::optional<Program> cross_reduce(const Program &program, const std::string &stage, const std::string &loop,
                                    int64_t threads, const std::string &thread, std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  if (!where.is_inner(loop)) {
    *reason = "loop " + loop + " is not a reduction loop of " + stage + " (bind spatial loops instead)";
    return std::nullopt;
  }
  if (f->kind != ForKind::Serial) {
    *reason = "loop " + loop + " is already " + for_kind_name(f->kind);
    return std::nullopt;
  }
  if (!power_of_two_work_items(threads, reason) || !outer_loops_on_groups(where, stage, nullptr, reason))
    return std::nullopt;
  const Kernel &kernel = program.kernels[where.kernel];
  if (!name_is_free(program, kernel, thread, reason)) return std::nullopt;
  NameSet names = kernel_names(program, kernel);
  names.reserve(thread);
  const std::string chunk = names.fresh(loop + "j"), part = names.fresh(stage + "_part");

  std::string failure;
  Program out = replace_block(program, stage, [&](const Block *block) -> Stmt {
    const Allocate *acc = block->body.as<Allocate>();
    const Seq *steps = acc ? acc->body.as<Seq>() : nullptr;
    const Store *final_store = steps && !steps->stmts.empty() ? steps->stmts.back().as<Store>() : nullptr;
    FindUpdate update(acc ? acc->buffer : std::string());
    if (acc) update.dispatch(acc->body);
    if (!acc || !final_store || final_store->buffer != stage || !update.op ||
        !(*update.op == BinaryOp::Add || *update.op == BinaryOp::Mul || *update.op == BinaryOp::Max ||
          *update.op == BinaryOp::Min || *update.op == BinaryOp::LogAddExp)) {
      failure = stage + " is not a sum, prod, max, min or logsumexp reduction into a private accumulator";
      return Stmt(std::make_shared<Block>(*block));
    }
    const BinaryOp op = *update.op;
    const DType type = acc->type;
    const DType index = index_type_for(threads);
    Expr t = Var::make(index, thread);

    // 1. Work-item t takes every threads-th iteration of the loop.
    struct Distribute : IRMutator {
      const std::string &loop, &chunk;
      int64_t threads;
      Expr t;
      Distribute(const std::string &loop, const std::string &chunk, int64_t threads, Expr t)
          : loop(loop), chunk(chunk), threads(threads), t(std::move(t)) {}
      using IRMutator::visit;
      Stmt visit(const For *n, const Stmt &self) override {
        if (n->var != loop) return IRMutator::visit(n, self);
        const int64_t chunks = (n->extent + threads - 1) / threads;
        const DType type = index_type_for(n->extent), wide = index_type_for(chunks * threads);
        Expr value =
            cast_to(wide, Var::make(index_type_for(chunks), chunk)) * make_int(threads, wide) + cast_to(wide, t);
        Stmt body = n->body;
        if (chunks * threads != n->extent)
          body = IfThenElse::make(Var::make(type, loop) < make_int(n->extent, type), body);
        return For::make(chunk, chunks, ForKind::Serial, LetStmt::make(loop, cast_to(type, value), body));
      }
    } distribute(loop, chunk, threads, t);
    std::vector<Stmt> body;
    for (size_t i = 0; i + 1 < steps->stmts.size(); ++i) body.push_back(distribute.mutate(steps->stmts[i]));

    // 2. Partial results meet in local memory and combine as a tree.
    std::vector<Stmt> tree =
        group_tree_stmts({op, type, part, thread, threads, Load::make(type, acc->buffer, {make_int(0)})});
    body.insert(body.end(), tree.begin(), tree.end());
    auto part_at = [&](Expr i) { return Load::make(type, part, {std::move(i)}); };
    body.push_back(
        IfThenElse::make(Binary::make(BinaryOp::Eq, t, make_int(0, index)),
                         Store::make(final_store->buffer, final_store->indices, part_at(make_int(0, index)))));
    Stmt inner = Allocate::make(acc->buffer, acc->type, acc->shape, acc->scope,
                                Allocate::make(part, type, {threads}, MemoryScope::Local, Seq::make(body)));
    // 3. The work-items of the group.
    Stmt new_block = Block::make(block->stage, read_regions(program, inner), block->writes, inner);
    return For::make(thread, threads, ForKind::LocalX, new_block);
  });
  if (!failure.empty()) {
    *reason = failure;
    return std::nullopt;
  }
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// The spatial loops bound to work-groups, then a reduction loop shared by work-items.
void draw_cross_reduce(StepDraw &d) {
  if (d.loops.inner.empty() || d.loops.outer.size() > 3) return;
  Program bound = d.program;
  std::vector<Primitive> binds;
  if (!d.bind_to_groups(d.loops.outer.size(), &bound, &binds)) return;
  d.p.loops = {pick(d.loops.inner, d.rng)->var};
  d.p.factors = {int64_t{1} << std::uniform_int_distribution<int>(1, 6)(d.rng)};
  d.p.results = {d.fresh_name()};
  d.next = cross_reduce(bound, d.p.stage, d.p.loops[0], d.p.factors[0], d.p.results[0], &d.reason);
  if (d.next) d.before = binds;
}

}  // namespace

const PrimitiveInfo cross_reduce_primitive = {
    {{ArgKind::StageLoop},
     {ArgKind::Factor},
     {ArgKind::Arrow, "before the work-item variable's name"},
     {ArgKind::Result, "the work-item variable's name"}},
    "cross_reduce y.d 256 -> t",
    "256 work-items t share reduction loop d, their partial results combined in a tree",
    [](const Program &program, const Primitive &p, std::string *reason) {
      return cross_reduce(program, p.stage, p.loops[0], p.factors[0], p.results[0], reason);
    },
    draw_cross_reduce};

}  // namespace ks
