// max_then_sum: an unrolled loop's logaddexp chain as its maximum, then a sum of
// exponentials (max_then_sum.h).
#include "passes/max_then_sum.h"

#include <cmath>
#include <optional>

#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/loops.h"

namespace ks {
namespace {

// An unrolled loop's body as the lets and guards around its one store
// `acc[I] = logaddexp(acc[I], x)`.
struct Chain {
  std::vector<Stmt> path;  // LetStmt and IfThenElse (no else), outermost first
  const Store *store = nullptr;
  Expr x;
};

std::optional<Chain> chain_of(const For &loop, const std::set<std::string> &privates) {
  Chain c;
  std::set<std::string> varying{loop.var};
  Stmt s = loop.body;
  for (;;) {
    if (const LetStmt *let = s.as<LetStmt>()) {
      varying.insert(let->var);
      c.path.push_back(s);
      s = let->body;
    } else if (const IfThenElse *guard = s.as<IfThenElse>()) {
      if (guard->else_case.defined()) return std::nullopt;
      c.path.push_back(s);
      s = guard->then_case;
    } else {
      break;
    }
  }
  c.store = s.as<Store>();
  if (!c.store || !privates.count(c.store->buffer)) return std::nullopt;
  const Binary *update = c.store->value.as<Binary>();
  if (!update || update->op != BinaryOp::LogAddExp) return std::nullopt;
  const std::string &acc = c.store->buffer;
  auto is_acc = [&](const Expr &e) {
    const Load *l = e.as<Load>();
    if (!l || l->buffer != acc || l->pad || l->indices.size() != c.store->indices.size()) return false;
    for (size_t d = 0; d < l->indices.size(); ++d)
      if (!equal(l->indices[d], c.store->indices[d])) return false;
    return true;
  };
  c.x = is_acc(update->a) ? update->b : is_acc(update->b) ? update->a : Expr();
  if (!c.x.defined() || reads_buffer(c.x, acc)) return std::nullopt;
  for (const Expr &index : c.store->indices)
    if (mentions(index, varying)) return std::nullopt;  // not one accumulator for the whole loop
  for (const Stmt &step : c.path) {
    const LetStmt *let = step.as<LetStmt>();
    if (reads_buffer(let ? let->value : step.as<IfThenElse>()->condition, acc)) return std::nullopt;
  }
  return c;
}

// The loop's path around another store.
Stmt with_store(const Chain &c, Stmt store) {
  for (size_t i = c.path.size(); i-- > 0;) {
    if (const LetStmt *let = c.path[i].as<LetStmt>())
      store = LetStmt::make(let->var, let->value, store);
    else
      store = IfThenElse::make(c.path[i].as<IfThenElse>()->condition, store);
  }
  return store;
}

class MaxThenSum : public IRMutator {
 public:
  MaxThenSum(std::set<std::string> privates, NameSet names)
      : privates_(std::move(privates)), names_(std::move(names)) {}
  using IRMutator::visit;
  bool changed = false;

 protected:
  Stmt visit(const For *n, const Stmt &self) override {
    if (n->kind != ForKind::Unrolled || n->extent < 2) return IRMutator::visit(n, self);
    std::optional<Chain> c = chain_of(*n, privates_);
    if (!c) return IRMutator::visit(n, self);
    changed = true;
    const DType type = c->store->value.type();
    const std::string max = names_.fresh(c->store->buffer + "_max"), sum = names_.fresh(c->store->buffer + "_sum");
    const Expr m = Load::make(type, max, {make_int(0)}), s = Load::make(type, sum, {make_int(0)});
    const Stmt maxima =
        For::make(n->var, n->extent, n->kind,
                  with_store(*c, Store::make(max, {make_int(0)}, Binary::make(BinaryOp::Max, m, cast_to(type, c->x)))));
    const std::string var = names_.fresh(n->var);
    const Stmt sums =
        For::make(var, n->extent, n->kind,
                  substitute(with_store(*c, Store::make(sum, {make_int(0)}, s + Call::make(Builtin::Exp, {c->x - m}))),
                             {{n->var, Var::make(index_type_for(n->extent), var)}}));
    const double inf = std::numeric_limits<double>::infinity();
    // m + log(s) is NaN where m is infinite (no element, or an infinite one): m then.
    const Expr infinite = Binary::make(BinaryOp::Eq, Call::make(Builtin::Abs, {m}), FloatImm::make(type, inf));
    const Expr lse = Select::make(infinite, m, m + Call::make(Builtin::Log, {s}));
    const Expr acc = Load::make(type, c->store->buffer, c->store->indices);
    return Allocate::make(max, type, {1}, MemoryScope::Private,
                          Allocate::make(sum, type, {1}, MemoryScope::Private,
                                         Seq::make({Store::make(max, {make_int(0)}, FloatImm::make(type, -inf)), maxima,
                                                    Store::make(sum, {make_int(0)}, FloatImm::make(type, 0)), sums,
                                                    Store::make(c->store->buffer, c->store->indices,
                                                                Binary::make(BinaryOp::LogAddExp, acc, lse))})));
  }

 private:
  const std::set<std::string> privates_;
  NameSet names_;
};

}  // namespace

Program max_then_sum(const Program &input) {
  Program program = input;
  for (Kernel &kernel : program.kernels) {
    std::set<std::string> privates;
    for (const Allocate *a : collect<Allocate>(kernel.body))
      if (a->scope == MemoryScope::Private) privates.insert(a->buffer);
    MaxThenSum rewrite(privates, kernel_names(program, kernel));
    Stmt body = rewrite.mutate(kernel.body);
    if (rewrite.changed) kernel.body = body;
  }
  return program;
}

}  // namespace ks
