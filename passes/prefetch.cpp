// prefetch: the copy of a local cache for the next iteration of its serial loop is
// read from global memory into registers while this iteration computes, and stored
// into the cache at the start of the next. The global loads' latency then overlaps
// the arithmetic instead of stalling the whole group between its two barriers (on
// the H100 a 4096^3 GEMM went from 3.6 to 3.2 ms: bench/results.md).
//
// Algorithm, for `prefetch y.b_s`, b_s a local cache that cache_read copies at the
// start of each iteration of serial loop L (`for L { allocate b_s { copy; barrier;
// work; barrier } }`, other caches' allocations between):
//  1. The copy is a loop of unrolled steps `b_s[c(f)] = b[s(L, f)]`, one value per
//     step and work-item; registers b_s_next[step] hold them.
//  2. Before L: b_s_next[step] = b[s(0, f)] (the first iteration's values).
//  3. In L: the copy becomes b_s[c(f)] = b_s_next[step]; after the barrier that
//     follows it, b_s_next[step] = b[s(min(L + 1, E - 1), f)], then the work. The
//     last iteration reads its own step again rather than branching around the
//     loads: behind a branch, NVIDIA's ptxas moved them after the work, where they
//     overlap nothing (4.07 against 3.39 ms, a 4096^3 GEMM on the H100).
// The second barrier still orders the next iteration's stores after this one's
// reads of b_s, and b is not written by the kernel (cache_read refuses that), so
// every value read is the one the copy read before.
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {
namespace {

// Finds the allocation of a buffer and the innermost loop around it.
struct FindCache : IRVisitor {
  const std::string &buffer;
  std::vector<const For *> loops;
  const Allocate *cache = nullptr;
  const For *loop = nullptr;  // innermost loop around the allocation
  explicit FindCache(const std::string &buffer) : buffer(buffer) {}
  using IRVisitor::visit;
  void visit(const For *n) override {
    loops.push_back(n);
    IRVisitor::visit(n);
    loops.pop_back();
  }
  void visit(const Allocate *n) override {
    if (n->buffer == buffer && !cache) {
      cache = n;
      loop = loops.empty() ? nullptr : loops.back();
    }
    IRVisitor::visit(n);
  }
};

// The copy's store to the cache, rewritten: into registers[step] with the loop
// variable replaced (to_registers), or from registers[step] (from_registers).
struct RewriteCopy : IRMutator {
  const std::string &cache, &registers;
  Expr step;
  std::map<std::string, Expr> loop_value;  // empty: from registers
  RewriteCopy(const std::string &cache, const std::string &registers, Expr step)
      : cache(cache), registers(registers), step(std::move(step)) {}
  using IRMutator::visit;
  Stmt visit(const Store *n, const Stmt &self) override {
    if (n->buffer != cache) return IRMutator::visit(n, self);
    if (loop_value.empty()) return Store::make(cache, n->indices, Load::make(n->value.type(), registers, {step}));
    return Store::make(registers, {step}, mutate(n->value));
  }
  Expr visit(const Var *n, const Expr &self) override {
    auto it = loop_value.find(n->name);
    return it == loop_value.end() ? self : it->second;
  }
};

}  // namespace

std::optional<Program> prefetch(const Program &program, const std::string &stage, const std::string &buffer,
                                std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  const Kernel &kernel = program.kernels[where->kernel];
  FindCache find(buffer);
  find.dispatch(kernel.body);
  if (!find.cache) {
    *reason = "kernel " + kernel.name + " allocates no buffer named " + buffer;
    return std::nullopt;
  }
  const std::string only = "; only a local cache copied in a serial loop (cache_read at that loop) is prefetched";
  for (const AsyncCopy *copy : collect<AsyncCopy>(kernel.body))
    if (buffers_used(copy->body).written.count(buffer)) {
      *reason = buffer + " is copied ahead already, by async_copy";
      return std::nullopt;
    }
  if (find.cache->scope != MemoryScope::Local) {
    *reason = buffer + " is in " + std::string(memory_scope_name(find.cache->scope)) + " memory" + only;
    return std::nullopt;
  }
  // The copy: a loop storing to the cache before the first barrier of what the
  // allocation (and the other caches' allocations inside it) scopes.
  Stmt inner = find.cache->body;
  while (const Allocate *a = inner.as<Allocate>()) inner = a->body;
  const Seq *seq = inner.as<Seq>();
  size_t barrier = 0, copy_at = 0;
  const For *copy = nullptr;
  if (seq)
    for (barrier = 0; barrier < seq->stmts.size() && !seq->stmts[barrier].as<Barrier>(); ++barrier)
      if (const For *f = seq->stmts[barrier].as<For>(); f && buffers_used(seq->stmts[barrier]).written.count(buffer))
        copy = f, copy_at = barrier;
  if (!copy || barrier == seq->stmts.size()) {
    *reason = buffer + " is no copy of a global buffer" + only;
    return std::nullopt;
  }
  // The loop whose iterations each make the copy: its body the allocations alone.
  const For *loop = find.loop;
  std::vector<const Allocate *> allocations;
  if (loop) {
    inner = loop->body;
    while (const Allocate *a = inner.as<Allocate>()) allocations.push_back(a), inner = a->body;
  }
  if (!loop || loop->kind != ForKind::Serial || inner.get() != seq || !seq->stmts.back().as<Barrier>()) {
    *reason = buffer +
              (loop && loop->kind != ForKind::Serial
                   ? " is copied in loop " + loop->var + ", which is " + for_kind_name(loop->kind)
                   : " is not copied at the start of each iteration of a loop") +
              only;
    return std::nullopt;
  }
  // The copy reads one buffer: a global one, or the registers of a prefetch.
  for (const std::string &source : buffers_used(copy->body).read)
    if (!program.find_buffer(source)) {
      *reason = buffer + " is already prefetched";
      return std::nullopt;
    }
  // 1. Registers: one per unrolled step of the copy.
  if (copy->kind != ForKind::Unrolled || copy->extent > kMaxPrefetchElements) {
    *reason = "the copy into " + buffer + " takes " + std::to_string(copy->extent) + " steps a work-item; at most " +
              std::to_string(kMaxPrefetchElements) + " fit in registers";
    return std::nullopt;
  }
  NameSet names = kernel_names(program, kernel);
  const std::string registers = names.fresh(buffer + "_next");
  // The copy again under fresh names (loop and lets), rewritten.
  auto copy_of = [&](const std::string &suffix, std::map<std::string, Expr> loop_value) {
    std::map<std::string, std::string> renamed{{copy->var, names.fresh(copy->var + suffix)}};
    struct Lets : IRVisitor {
      std::vector<std::string> out;
      using IRVisitor::visit;
      void visit(const LetStmt *n) override {
        out.push_back(n->var);
        IRVisitor::visit(n);
      }
    } lets;
    lets.dispatch(copy->body);
    for (const std::string &l : lets.out) renamed[l] = names.fresh(l + suffix);
    RewriteCopy rewrite(buffer, registers, Var::make(index_type_for(copy->extent), copy->var));
    rewrite.loop_value = std::move(loop_value);
    return rename(rewrite.mutate(Stmt(std::make_shared<For>(*copy))), renamed);
  };
  const Expr l = loop->loop_var();
  // 2. Before L, the first iteration's values.
  const Stmt first = copy_of("_first", {{loop->var, make_int(0, l.type())}});
  // 3. In L: stores from the registers; the next iteration's loads after the barrier.
  RewriteCopy from_registers(buffer, registers, Var::make(index_type_for(copy->extent), copy->var));
  std::vector<Stmt> stmts = seq->stmts;
  stmts[copy_at] = from_registers.mutate(seq->stmts[copy_at]);
  const Expr following = Binary::make(BinaryOp::Min, l + make_int(1, l.type()), make_int(loop->extent - 1, l.type()));
  stmts.insert(stmts.begin() + static_cast<long>(barrier) + 1, copy_of("_next", {{loop->var, following}}));
  Stmt body = Seq::make(stmts);
  for (auto a = allocations.rbegin(); a != allocations.rend(); ++a)
    body = Allocate::make((*a)->buffer, (*a)->type, (*a)->shape, (*a)->scope, body);
  Program out = replace_loop(program, where->kernel, loop->var, [&](const For *f) {
    return Allocate::make(registers, value_type(find.cache->type), {copy->extent}, MemoryScope::Private,
                          Seq::make({first, For::make(f->var, f->extent, f->kind, body)}));
  });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

void draw_prefetch(StepDraw &d) {
  if (!d.draw_panel()) return;
  d.next = prefetch(d.program, d.p.stage, d.p.buffer, &d.reason);
}

}  // namespace

const PrimitiveInfo prefetch_primitive = {{{ArgKind::StageBuffer}},
                                          "prefetch c.a_s",
                                          "local buffer a_s's next copy read into registers while this one is used",
                                          [](const Program &program, const Primitive &p, std::string *reason) {
                                            return prefetch(program, p.stage, p.buffer, reason);
                                          },
                                          draw_prefetch};

}  // namespace ks
