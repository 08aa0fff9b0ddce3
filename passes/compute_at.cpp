// compute_at: a producer's kernel moves inside a consumer's kernel, at the
// consumer's innermost bound loop, so that (say) softmax runs as one kernel, or a
// contraction's tile and the row statistics of it in one (TVM's reverse_compute_at
// read the other way: the statistic's kernel takes the tile's in).
//
// Algorithm, for `compute_at P C.L`:
//  1. The loops from the root of C's kernel down to L must be nested with nothing
//     but lets between them, and L must be C's innermost bound loop; the outermost
//     loops of P's kernel must match them one for one (extent and binding; lets
//     between them go with P's rest) and include all of P's bound loops. P's
//     variables are renamed to C's (and P's other names, where they clash, to fresh
//     ones).
//  2. Legality: every element of a P-written buffer that C reads must be written in
//     the same iteration of L: by the same work-item (loads and stores agree on an
//     index that uses only the matched loops, and no guard around the store uses a
//     variable of that index), or, where L is a local loop, by any work-item of the
//     same work-group (they meet at a barrier first): checked by running both
//     sides' index arithmetic over every work-item of a group and every iteration
//     inside, for the first, the last, a middle work-group and one at each group
//     loop's last value. Kernels between P's and C's must not touch what P writes
//     nor write what P reads; C must not write what P reads or writes, nor read what
//     P writes outside L.
//  3. L's body becomes: P's remaining body; a barrier where L is a local loop (the
//     work-items of a group exchange results); C's body.
//  4. Storage: a temporary that now lives in this kernel alone moves to local
//     memory. Dimensions indexed by group loops alone disappear (one group needs one
//     element of them); the rest keep their extent. It stays global when the local
//     copy would exceed kMaxLocalBytes. Global barriers of the kernel
//     become local once no global buffer is both written and read in it.
//
// Inside a reduction (L a serial loop of C's block: TVM's and Halide's compute_at at an
// inner loop of an update), the same steps with these differences:
//  1. C's guards around L move inside it first (sink_guards), so that every work-item
//     meets the barriers; the path to L may pass C's block, allocations and sequences;
//     P's serial loop matches L (loops of one iteration on either side match nothing).
//     What P does between its work-item loops and its serial loops (a cache_read of q
//     there: local copies and a barrier) is P's prologue, run once at the start of C's
//     matching loop.
//  2. The group check takes L and the serial loops around it one iteration at a time,
//     as it takes the group loops: what C reads in an iteration, P writes in it.
//  3. L's body: P's part, a barrier, C's body, a barrier (the next iteration's P
//     overwrites what this one's C read). Where P's part starts by copying local caches
//     (cache_read at P's serial loop), its copies and C's leading copies become one copy
//     phase before the first barrier, the form async_copy rings.
//  4. The temporary is folded to one iteration's block: a dimension whose accesses are
//     all base + rest, base the same affine terms of the group and serial loops down to
//     L and rest of the others, becomes rest - lo, its extent rest's range.
#include <functional>
#include <limits>

#include "ir/affine.h"
#include "ir/bounds.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

namespace {

struct Access {
  std::string buffer;
  std::vector<Expr> indices;
  std::set<std::string> guard_vars;  // variables of the conditions around it
  bool store = false;
};

// Every load and store of the given buffers, with the variables of the guards
// around each.
struct CollectAccesses : IRVisitor {
  const std::set<std::string> &buffers;
  std::vector<Access> found;
  std::vector<std::set<std::string>> guards;
  explicit CollectAccesses(const std::set<std::string> &buffers) : buffers(buffers) {}
  std::set<std::string> guard_vars() const {
    std::set<std::string> all;
    for (const auto &g : guards) all.insert(g.begin(), g.end());
    return all;
  }
  using IRVisitor::visit;
  void visit(const Load *n) override {
    if (buffers.count(n->buffer)) found.push_back({n->buffer, n->indices, guard_vars(), false});
    IRVisitor::visit(n);
  }
  void visit(const Store *n) override {
    if (buffers.count(n->buffer)) found.push_back({n->buffer, n->indices, guard_vars(), true});
    IRVisitor::visit(n);
  }
  void visit(const IfThenElse *n) override {
    dispatch(n->condition);
    guards.push_back(vars_in(n->condition));
    dispatch(n->then_case);
    if (n->else_case.defined()) dispatch(n->else_case);
    guards.pop_back();
  }
};

std::vector<Access> accesses(const Stmt &s, const std::set<std::string> &buffers) {
  CollectAccesses c(buffers);
  c.dispatch(s);
  return c.found;
}

std::string print_indices(const std::vector<Expr> &indices) {
  std::string out;
  for (const Expr &e : indices) out += (out.empty() ? "" : ", ") + print_expr(e);
  return out;
}

struct KernelBuffers {
  std::set<std::string> read, written;
};

KernelBuffers buffers_of(const Stmt &body) {
  const Kernel k{"", body};
  std::vector<std::string> read = kernel_read_buffers(k), written = kernel_written_buffers(k);
  return {{read.begin(), read.end()}, {written.begin(), written.end()}};
}

std::string first_common(const std::set<std::string> &a, const std::set<std::string> &b) {
  for (const std::string &x : a)
    if (b.count(x)) return x;
  return "";
}

Stmt local_barriers(const Stmt &s) {
  struct Local : IRMutator {
    using IRMutator::visit;
    Stmt visit(const Barrier *n, const Stmt &self) override {
      return n->scope == MemoryScope::Global ? Barrier::make(MemoryScope::Local) : self;
    }
  } l;
  return l.mutate(s);
}

// Step 1: P's kernel's loops matched, down to L, to the loops around C's block.
struct Match {
  std::map<std::string, std::string> names;  // P's loop -> C's (and P's clashing names -> fresh)
  std::set<std::string> matched,
      group_vars;                    // C's loops down to L (one-iteration loops left out); those bound to groups
  bool local_matched = false;        // whether a local loop is among them
  Stmt rest;                         // P's kernel inside the matched loops (and P's lets between them)
  std::vector<const For *> chain;    // C's loops down to L, outer first
  std::map<std::string, Expr> lets;  // C's lets between them
  std::vector<std::pair<std::string, Expr>> let_order;  // the same, outer first
  std::set<std::string> serial_vars;  // C's serial loops among them (inside a reduction: L and those around it)
  // Inside a reduction: P's statements between its work-item loops and its serial ones,
  // the local buffers they fill allocated around them; C's loop whose body they start.
  std::vector<const Allocate *> prologue_allocations;
  std::vector<Stmt> prologue;
  std::string prologue_at;
};

// The guards (conditions without an else) on the path from s to loop L, below the
// work-item loops, moved inside: around L's body and around each other statement they
// held. They test the loops around them alone (a tile's rows past the sizes), so each
// holds wherever it is moved to; then what compute_at puts at the start of L's body, and
// the barriers after it, run in every work-item of the group.
Stmt guarded_inside(const Stmt &s, const Expr &condition, const std::string &loop) {
  if (const For *f = s.as<For>(); f && f->var == loop)
    return For::make(f->var, f->extent, f->kind, IfThenElse::make(condition, f->body));
  if (path_to(s, loop).empty()) return IfThenElse::make(condition, s);
  if (const Seq *q = s.as<Seq>()) {
    std::vector<Stmt> stmts;
    for (const Stmt &t : q->stmts) stmts.push_back(guarded_inside(t, condition, loop));
    return Seq::make(stmts);
  }
  if (const Stmt in = inside(s); in.defined()) return wrap({s}, guarded_inside(in, condition, loop));
  return IfThenElse::make(condition, s);
}

Stmt sink_guards(const Stmt &s, const std::string &loop) {
  if (path_to(s, loop).empty()) return s;
  if (const For *f = s.as<For>(); f && f->var == loop) return s;
  if (const IfThenElse *n = s.as<IfThenElse>(); n && !n->else_case.defined() && !mentions(n->condition, {loop}))
    return guarded_inside(sink_guards(n->then_case, loop), n->condition, loop);
  if (const Seq *q = s.as<Seq>()) {
    std::vector<Stmt> stmts;
    for (const Stmt &t : q->stmts) stmts.push_back(sink_guards(t, loop));
    return Seq::make(stmts);
  }
  if (const Stmt in = inside(s); in.defined()) return wrap({s}, sink_guards(in, loop));
  return s;
}

// Inside a reduction, what P does once a work-item between its work-item loops and
// its serial loops (a cache_read there: local allocations, copies, a barrier) is P's
// prologue: C runs it at the start of its loop `at`, before its own block, once, not in
// every iteration of L. One step of taking it from m->rest (an allocation, or the
// statements before the one that holds the loops, P's lets put in place): true where
// one was taken, false where m->rest starts with neither, nullopt where P has a
// prologue at another loop already.
std::optional<bool> take_prologue(Match *m, const std::vector<const LetStmt *> &lets, const std::string &at) {
  if (const Allocate *a = m->rest.as<Allocate>(); a && a->scope == MemoryScope::Local) {
    m->prologue_allocations.push_back(a);
    m->rest = a->body;
    return true;
  }
  const Seq *q = m->rest.as<Seq>();
  if (!q) return false;
  // (copies; barrier; what holds the serial loops; a barrier or none)
  size_t next = q->stmts.size();
  while (next > 0 && q->stmts[next - 1].as<Barrier>()) --next;
  if (next < 2) return false;
  if (!m->prologue_at.empty() && m->prologue_at != at) return std::nullopt;
  m->prologue_at = at;
  for (size_t i = 0; i + 1 < next; ++i) {
    Stmt stmt = q->stmts[i];
    for (auto l = lets.rbegin(); l != lets.rend(); ++l) stmt = substitute(stmt, {{(*l)->var, (*l)->value}});
    m->prologue.push_back(stmt);
  }
  m->rest = q->stmts[next - 1];
  return true;
}

std::optional<Match> match_loops(const Kernel &pk, const Kernel &ck, const For &at, bool inner,
                                 const std::string &producer, const std::string &consumer, std::string *reason) {
  const std::string &loop = at.var;
  Match m;
  std::vector<const For *> &chain = m.chain;
  // Down to L through loops and lets; inside a reduction (inner) also through the
  // consumer's block and what it puts around its loops (allocations, a sequence).
  for (Stmt s = ck.body;;) {
    if (const LetStmt *l = s.as<LetStmt>()) {
      m.lets[l->var] = l->value;
      m.let_order.push_back({l->var, l->value});
      s = l->body;
      continue;
    }
    if (inner) {
      if (s.as<Block>() || s.as<Allocate>()) {
        s = inside(s);
        continue;
      }
      if (const Seq *q = s.as<Seq>()) {
        Stmt next;
        for (const Stmt &t : q->stmts)
          if (!path_to(t, loop).empty()) next = t;
        if (next.defined()) {
          s = next;
          continue;
        }
      }
    }
    const For *f = s.as<For>();
    if (!f) {
      *reason = "loop " + loop + " of " + consumer + " is not in its kernel's outer loop nest (only loops" +
                (inner ? ", lets, allocations and its block" : "") + " may enclose it)";
      return std::nullopt;
    }
    chain.push_back(f);
    if (f->var == loop) break;
    s = f->body;
  }
  if (inner ? at.kind != ForKind::Serial
            : at.kind == ForKind::Serial || at.kind == ForKind::Unrolled || at.kind == ForKind::Vectorized) {
    *reason = "loop " + loop + " is " + for_kind_name(at.kind) + "; compute_at goes at " + consumer +
              (inner ? "'s serial reduction loops" : "'s innermost bound loop (bind its loops first)");
    return std::nullopt;
  }
  if (has_bound_loop(at.body)) {
    *reason = "loop " + loop + " is not " + consumer + "'s innermost bound loop";
    return std::nullopt;
  }
  m.rest = pk.body;
  std::vector<const LetStmt *> lets;  // P's, between its matched loops
  std::vector<std::string> unit;      // P's loops of one iteration that C lacks
  std::vector<const For *> matched_chain;
  for (const For *c : chain) {
    for (;;) {
      while (const LetStmt *l = m.rest.as<LetStmt>()) {
        lets.push_back(l);
        m.rest = l->body;
      }
      // Inside a reduction, P's prologue: what P does once a work-item before its
      // serial loops.
      if (inner && !matched_chain.empty() && is_local(matched_chain.back()->kind)) {
        const std::optional<bool> took = take_prologue(&m, lets, matched_chain.back()->var);
        if (!took) {
          *reason = producer + " does work between more than one pair of its loops; compute_at inside " + consumer +
                    "'s reduction moves one prologue";
          return std::nullopt;
        }
        if (*took) continue;
      }
      const For *p = m.rest.as<For>();
      // A loop of one iteration on either side matches nothing: its variable is 0.
      if (p && p->extent == 1 && (p->extent != c->extent || p->kind != c->kind)) {
        unit.push_back(p->var);
        m.rest = p->body;
        continue;
      }
      break;
    }
    const For *p = m.rest.as<For>();
    if (c->extent == 1 && (!p || p->extent != 1 || p->kind != c->kind)) continue;
    if (!p || p->extent != c->extent || p->kind != c->kind) {
      *reason = "the loops of " + producer + "'s kernel do not match " + consumer + "'s down to " + loop + ": " +
                (p ? p->var + " (" + std::to_string(p->extent) + ", " + for_kind_name(p->kind) + ")"
                   : std::string("no loop")) +
                " where " + consumer + " has " + c->var + " (" + std::to_string(c->extent) + ", " +
                for_kind_name(c->kind) + ")";
      return std::nullopt;
    }
    m.names[p->var] = c->var;
    m.matched.insert(c->var);
    if (is_group(c->kind)) m.group_vars.insert(c->var);
    if (c->kind == ForKind::Serial) m.serial_vars.insert(c->var);
    m.local_matched |= is_local(c->kind);
    matched_chain.push_back(c);
    m.rest = p->body;
  }
  chain = matched_chain;
  for (auto l = lets.rbegin(); l != lets.rend(); ++l) m.rest = LetStmt::make((*l)->var, (*l)->value, m.rest);
  for (const std::string &v : unit) m.rest = LetStmt::make(v, make_int(0), m.rest);
  if (has_bound_loop(m.rest)) {
    *reason = producer + "'s kernel has more bound loops than " + consumer + " has down to " + loop;
    return std::nullopt;
  }
  return m;
}

// Step 2, by buffers: no kernel between them uses what P's kernel writes or writes
// what it reads, and C's kernel writes nothing P's reads or writes.
bool kernels_allow(const Program &program, const StageLoops &pw, const StageLoops &cw, const KernelBuffers &pb,
                   const KernelBuffers &cb, const std::string &producer, const std::string &consumer,
                   std::string *reason) {
  for (size_t k = pw.kernel + 1; k < cw.kernel; ++k) {
    const KernelBuffers between = buffers_of(program.kernels[k].body);
    std::string b = first_common(between.read, pb.written);
    if (b.empty()) b = first_common(between.written, pb.read);
    if (b.empty()) b = first_common(between.written, pb.written);
    if (!b.empty()) {
      *reason = "kernel " + program.kernels[k].name + ", between them, uses " + b + " which " + producer +
                "'s kernel " + (pb.written.count(b) ? "writes" : "reads");
      return false;
    }
  }
  if (std::string b = first_common(cb.written, pb.read); !b.empty()) {
    *reason = consumer + "'s kernel writes " + b + ", which " + producer + "'s kernel reads";
    return false;
  }
  if (std::string b = first_common(cb.written, pb.written); !b.empty()) {
    *reason = "both kernels write " + b;
    return false;
  }
  return true;
}

// Step 2, by elements: every element of a shared buffer that one iteration of L
// reads is the one element P writes in the same iteration, unguarded.
bool reads_what_is_written(const Stmt &rest, const For &at, const std::set<std::string> &shared,
                           const std::set<std::string> &matched, const std::string &producer,
                           const std::string &consumer, std::string *reason) {
  const std::string &loop = at.var;
  const std::vector<Access> reads = accesses(at.body, shared);
  std::map<std::string, std::string> point;  // buffer -> the one index every access uses
  for (const Access &a : accesses(rest, shared)) {
    if (!a.store) continue;
    std::set<std::string> used_vars;
    for (const Expr &i : a.indices)
      for (const std::string &v : vars_in(i)) used_vars.insert(v);
    for (const std::string &v : used_vars)
      if (!matched.count(v)) {
        *reason = producer + " writes " + a.buffer + "[" + print_indices(a.indices) + "], which uses " + v +
                  ", not only loops shared with " + consumer;
        return false;
      }
    if (std::string g = first_common(a.guard_vars, used_vars); !g.empty()) {
      *reason = producer + "'s store to " + a.buffer + " is guarded by a condition on " + g +
                ", so some iterations of " + consumer + " would read what was never written";
      return false;
    }
    auto [it, inserted] = point.try_emplace(a.buffer, print_indices(a.indices));
    if (!inserted && it->second != print_indices(a.indices)) {
      *reason = producer + " writes " + a.buffer + " at more than one index in one iteration";
      return false;
    }
  }
  for (const Access &a : reads) {
    auto it = point.find(a.buffer);
    if (it == point.end() || it->second != print_indices(a.indices)) {
      *reason = consumer + " reads " + a.buffer + "[" + print_indices(a.indices) + "], but in one iteration of " +
                loop + " " + producer + " writes " +
                (it == point.end() ? "no element of it" : a.buffer + "[" + it->second + "]");
      return false;
    }
  }
  return true;
}

// Step 2, by work-groups, where L is a local loop: the element-wise rule failed, but
// C's work-items may still read what others of their group wrote (a row's statistic
// of a contraction's tile): every element a work-group of C reads must be one that P
// writes in that group, outside any condition that fails, at the work-groups
// reads_what_the_group_writes picks. Both sides' index arithmetic is run over every
// work-item of the group and every iteration inside (the sizes are the program's, so
// this is exact at those groups); a condition that reads memory leaves P's stores
// under it unwritten and C's loads under it read.
class GroupPoints {
 public:
  // vars: every loop variable a run may bind (the loops of the statements walked and the
  // group's and work-item's loops); locals: the work-item's loops, named in a refusal.
  // The indices are compiled once each (IndexProgram) over the loops' numbers, since the
  // check evaluates about a million (attention's two passes).
  GroupPoints(const std::set<std::string> &shared, std::map<std::string, Expr> lets, std::vector<std::string> vars,
              const std::vector<std::string> &locals)
      : shared_(shared), lets_(std::move(lets)), vars_(std::move(vars)), values_(vars_.size(), 0) {
    for (size_t v = 0; v < vars_.size(); ++v) slots_.emplace(vars_[v], v);
    for (const std::string &l : locals) locals_.push_back({l, slots_.at(l)});
    for (const std::string &b : shared) buffers_.emplace(b, static_cast<int64_t>(buffers_.size()));
  }

  // Runs s with the loop values in env: the stores (what the group writes, remembered)
  // or the loads (each checked against them). False (and *reason) where an index cannot
  // be evaluated or the points run past the limit, or (*missing set) where a load reads
  // what the group does not write.
  bool run(const Stmt &s, const std::map<std::string, int64_t> &env, bool stores, std::string *reason) {
    std::fill(values_.begin(), values_.end(), 0);
    for (const auto &[var, value] : env) values_[slots_.at(var)] = value;
    stores_ = stores;
    return walk(s, reason);
  }
  // A read of an element the group does not write: the load, its element, the work-item.
  struct Missing {
    const Load *load;
    std::vector<int64_t> at;
    std::string work_item;  // "r = 3, lane = 7"
  };
  std::optional<Missing> missing;

  // The next work-group: what was written forgotten (which statements touch the buffers
  // is not: the same for every group).
  void next_group() {
    written_.clear();
    points_ = 0;
  }

 private:
  // attention's 128 x 64 tile: about 100,000; its weighted sum over panels of 32 scores
  // computed in the same kernel (compute_at inside the reduction): about 1,100,000
  static constexpr int64_t kMaxPoints = 1 << 22;
  const std::set<std::string> &shared_;
  std::map<std::string, Expr> lets_;  // the lets met so far (a kernel names each once)
  std::set<const LetStmt *> lets_met_;
  std::vector<std::string> vars_;
  std::map<std::string, size_t> slots_;
  std::vector<std::pair<std::string, size_t>> locals_;
  std::map<std::string, int64_t> buffers_;  // the shared buffers' numbers
  std::vector<int64_t> values_;             // the loops' values now, by slot; 0 outside a loop
  std::set<std::vector<int64_t>> written_;  // the buffer's number, then the element's indices
  bool stores_ = false;
  int64_t points_ = 0;
  std::map<const BaseStmtNode *, bool> touches_;
  // Each index or condition compiled where first met, with the lets around it then
  // (none where it cannot be evaluated); each expression's loads of shared buffers.
  std::map<const BaseExprNode *, std::optional<IndexProgram>> programs_;
  std::map<const BaseExprNode *, std::vector<const Load *>> shared_loads_;

  bool touches(const Stmt &s) {
    auto [it, inserted] = touches_.try_emplace(s.get(), false);
    if (inserted) it->second = !accesses(s, shared_).empty();
    return it->second;
  }
  std::optional<int64_t> evaluate(const Expr &e) {
    auto [it, inserted] = programs_.try_emplace(e.get());
    if (inserted) it->second = IndexProgram::compile(e, vars_, lets_);
    return it->second ? (*it->second)(values_) : std::nullopt;
  }
  // The buffer's number and the indices of buffer[indices] at the current point; none
  // (and *reason) where one is not integer arithmetic of the loops.
  std::optional<std::vector<int64_t>> element(const std::string &buffer, const std::vector<Expr> &indices,
                                              std::string *reason) {
    std::vector<int64_t> out{buffers_.at(buffer)};
    for (const Expr &i : indices) {
      std::optional<int64_t> v = evaluate(i);
      if (!v)
        return *reason = "the index of " + buffer + "[" + print_indices(indices) + "] is not one it can evaluate",
               std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  bool loads_in(const Expr &e, std::string *reason) {
    if (stores_ || !e.defined()) return true;
    auto [loads, inserted] = shared_loads_.try_emplace(e.get());
    if (inserted)
      for (const Load *l : collect<Load>(e))
        if (shared_.count(l->buffer)) loads->second.push_back(l);
    for (const Load *l : loads->second) {
      std::optional<std::vector<int64_t>> at = element(l->buffer, l->indices, reason);
      if (!at) return false;
      if (written_.count(*at)) continue;
      std::string item;
      for (const auto &[name, slot] : locals_)
        item += (item.empty() ? "" : ", ") + name + " = " + std::to_string(values_[slot]);
      missing = Missing{l, std::vector<int64_t>(at->begin() + 1, at->end()), item};
      return false;
    }
    return true;
  }
  bool walk(const Stmt &s, std::string *reason) {
    if (!s.defined() || !touches(s)) return true;
    if (++points_ > kMaxPoints) return *reason = "a work-group's accesses are too many to check", false;
    if (const For *f = s.as<For>()) {
      int64_t &value = values_[slots_.at(f->var)];
      for (int64_t i = 0; i < f->extent; ++i) {
        value = i;
        if (!walk(f->body, reason)) return false;
      }
      value = 0;
      return true;
    }
    if (const LetStmt *l = s.as<LetStmt>()) {
      if (lets_met_.insert(l).second) lets_[l->var] = l->value;
      return loads_in(l->value, reason) && walk(l->body, reason);
    }
    if (const IfThenElse *n = s.as<IfThenElse>()) {
      if (!loads_in(n->condition, reason)) return false;
      if (std::optional<int64_t> holds = evaluate(n->condition))
        return walk(*holds ? n->then_case : n->else_case, reason);
      return stores_ || (walk(n->then_case, reason) && walk(n->else_case, reason));
    }
    if (const Store *n = s.as<Store>()) {
      for (const Expr &i : n->indices)
        if (!loads_in(i, reason)) return false;
      if (!loads_in(n->value, reason)) return false;
      if (!stores_ || !shared_.count(n->buffer)) return true;
      std::optional<std::vector<int64_t>> at = element(n->buffer, n->indices, reason);
      if (!at) return false;
      written_.insert(std::move(*at));
      return true;
    }
    if (const Seq *n = s.as<Seq>()) {
      for (const Stmt &t : n->stmts)
        if (!walk(t, reason)) return false;
      return true;
    }
    if (const Block *n = s.as<Block>()) return walk(n->body, reason);
    if (const Allocate *n = s.as<Allocate>()) return walk(n->body, reason);
    if (const AsyncCopy *n = s.as<AsyncCopy>()) return walk(n->body, reason);
    return true;  // a barrier
  }
};

bool reads_what_the_group_writes(const Stmt &rest, const Match &m, const std::set<std::string> &shared,
                                 const std::string &producer, const std::string &consumer, std::string *reason) {
  std::vector<const For *> groups, locals;
  // (inside a reduction, L and the serial loops around it are checked as the group
  // loops are, one iteration at a time: P's stores in that iteration against C's reads)
  for (const For *f : m.chain) (is_local(f->kind) ? locals : groups).push_back(f);
  const Stmt &body = m.chain.back()->body;
  // The work-groups checked: the first, the last, a middle one, and for each group
  // loop the one at its last value and the others' first (a swap of two group loops
  // shows there).
  std::vector<std::vector<int64_t>> points(3 + groups.size());
  for (size_t p = 0; p < points.size(); ++p)
    for (size_t g = 0; g < groups.size(); ++g) {
      const int64_t last = groups[g]->extent - 1;
      points[p].push_back(p == 0 ? 0 : p == 1 ? last : p == 2 ? last / 2 : p - 3 == g ? last : 0);
    }
  std::set<std::string> vars;
  for (const Stmt &walked : {rest, body})
    for (const For *f : collect<For>(walked)) vars.insert(f->var);
  for (const For *f : m.chain) vars.insert(f->var);
  std::vector<std::string> local_names;
  for (const For *l : locals) local_names.push_back(l->var);
  GroupPoints p(shared, m.lets, std::vector<std::string>(vars.begin(), vars.end()), local_names);
  for (const std::vector<int64_t> &point : points) {
    std::map<std::string, int64_t> group_env;
    std::string where;
    for (size_t g = 0; g < groups.size(); ++g) {
      group_env[groups[g]->var] = point[g];
      where += (where.empty() ? "" : ", ") + groups[g]->var + " = " + std::to_string(point[g]);
    }
    p.next_group();
    for (bool stores : {true, false}) {
      // every work-item of the group: the local loops' values, odometer order
      std::map<std::string, int64_t> env = group_env;
      for (const For *l : locals) env[l->var] = 0;
      for (bool more = true; more;) {
        if (!p.run(stores ? rest : body, env, stores, reason)) {
          if (const std::optional<GroupPoints::Missing> &r = p.missing) {
            std::string index;
            for (int64_t v : r->at) index += (index.empty() ? "" : ", ") + std::to_string(v);
            *reason = consumer + " reads " + r->load->buffer + "[" + print_indices(r->load->indices) +
                      "] = " + r->load->buffer + "[" + index + "] at " + r->work_item + " in the work-group" +
                      (where.empty() ? "" : " at " + where) + ", which " + producer + " does not write in that group";
            return false;
          }
          *reason = "compute_at cannot check the work-group's accesses: " + *reason;
          return false;
        }
        more = false;
        for (auto l = locals.rbegin(); l != locals.rend() && !more; ++l)
          if (++env[(*l)->var] < (*l)->extent)
            more = true;
          else
            env[(*l)->var] = 0;
      }
    }
  }
  return true;
}

// Inside a reduction, a dimension of a temporary P writes and C reads is folded to
// what one iteration of L touches: where every access's index is base + rest, base
// the same affine terms of the outer loops (the group loops and the serial ones down
// to L, fixed in one iteration) and rest of the others (the work-items', the tile's),
// the dimension becomes rest - lo over [lo, hi], rest's range. Attention's scores
// s[b, h, io * 64 + r, ko * 16 + c] become s[r, c]: one block of rows and columns, in
// local memory, where the whole row of scores would not fit.
class IndexScope {
 public:
  void loop(const std::string &var, int64_t extent) { bounds_.vars[var] = Interval::of(0, extent - 1); }
  void let(const std::string &var, const Expr &value) {
    std::optional<Affine> a = affine_of(value, affine_);
    if (!a) {  // a division: a variable of its own, one for each value (P's b = z / 16 is C's)
      auto [same, fresh] = opaque_.try_emplace(key(value), var);
      if (!fresh) {
        affine_[var] = affine_.at(same->second);
        loops_of_[var] = loops_of_.at(same->second);
        bounds_.vars[var] = bounds_.vars.at(same->second);
        types_[var] = value.type();
        return;
      }
    }
    affine_[var] = a ? *a : Affine{{{var, 1}}, 0};
    std::set<std::string> &deps = loops_of_[var];
    deps.clear();
    for (const std::string &u : vars_in(value))
      for (const std::string &l : loops(u)) deps.insert(l);
    bounds_.vars[var] = bounds_of(value, bounds_);
    types_[var] = value.type();
  }
  // The loops var depends on (itself where it is a loop).
  std::set<std::string> loops(const std::string &var) const {
    auto it = loops_of_.find(var);
    return it == loops_of_.end() ? std::set<std::string>{var} : it->second;
  }
  struct Split {
    Affine base, rest;
  };
  // index as base (terms of outer loops alone) + rest (terms of no outer loop).
  std::optional<Split> split(const Expr &index, const std::set<std::string> &outer) const {
    std::optional<Affine> a = linear(index);
    if (!a) return std::nullopt;
    Split out;
    out.rest.constant = a->constant;
    for (const auto &[v, c] : a->coeffs) {
      const std::set<std::string> deps = loops(v);
      size_t in_outer = 0;
      for (const std::string &l : deps) in_outer += outer.count(l);
      if (in_outer == deps.size())
        out.base.coeffs[v] = c;
      else if (in_outer == 0)
        out.rest.coeffs[v] = c;
      else
        return std::nullopt;
    }
    return out;
  }
  Expr expr(const Affine &a, const Expr &like) const {
    std::map<std::string, DType> types = types_;
    for (const Var *v : collect<Var>(like)) types.try_emplace(v->name, v->type);
    for (const auto &[v, c] : a.coeffs) types.try_emplace(v, DType::I32);
    return affine_expr(a, types, like.type());
  }
  Interval range(const Affine &a, const Expr &like) const { return bounds_of(expr(a, like), bounds_); }

 private:
  // A division's value printed with its variables' canonical names: the key of the
  // variable that stands for it.
  std::string key(const Expr &value) const {
    std::map<std::string, Expr> canonical;
    for (const Var *v : collect<Var>(value))
      if (auto c = affine_.find(v->name); c != affine_.end() && c->second.coeffs.size() == 1 &&
                                          c->second.constant == 0 && c->second.coeffs.begin()->second == 1)
        canonical[v->name] = Var::make(v->type, c->second.coeffs.begin()->first);
    return print_expr(substitute(value, canonical));
  }
  // e's affine form, a division written out (a let put in place: z / 16) taken as the
  // variable of a let with that value.
  std::optional<Affine> linear(const Expr &e) const {
    return affine_of(e, affine_, [&](const Expr &division) -> std::optional<Affine> {
      auto it = opaque_.find(key(division));
      return it == opaque_.end() ? std::nullopt : std::optional<Affine>(affine_.at(it->second));
    });
  }
  std::map<std::string, Affine> affine_;
  std::map<std::string, std::set<std::string>> loops_of_;
  std::map<std::string, DType> types_;
  std::map<std::string, std::string> opaque_;  // a division's value, printed -> the variable that stands for it
  BoundsScope bounds_;
};

struct FoldedDim {
  bool foldable = true;
  std::optional<std::map<std::string, int64_t>> base;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
};

// The scope around fused_at: C's loops and lets down to L.
IndexScope chain_scope(const Match &m) {
  IndexScope scope;
  for (const For *f : m.chain) scope.loop(f->var, f->extent);
  for (const auto &[var, value] : m.let_order) scope.let(var, value);
  return scope;
}

// s with each access of buffer at the indices `index` gives for its indices and the
// scope around it.
using Reindex = std::function<std::vector<Expr>(const std::vector<Expr> &, const IndexScope &)>;
Stmt reindexed(const Stmt &s, IndexScope scope, const std::string &buffer, const Reindex &index) {
  struct Mutator : IRMutator {
    IndexScope scope;
    const std::string &buffer;
    const Reindex &index;
    Mutator(IndexScope scope, const std::string &buffer, const Reindex &index)
        : scope(std::move(scope)), buffer(buffer), index(index) {}
    using IRMutator::visit;
    Expr visit(const Load *n, const Expr &self) override {
      Expr e = IRMutator::visit(n, self);
      const Load *l = e.as<Load>();
      return l->buffer == buffer ? Load::make(l->type, l->buffer, index(l->indices, scope), l->pad) : e;
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      Stmt st = IRMutator::visit(n, self);
      const Store *x = st.as<Store>();
      return x->buffer == buffer ? Store::make(x->buffer, index(x->indices, scope), x->value) : st;
    }
    Stmt visit(const For *n, const Stmt &self) override {
      IndexScope saved = scope;
      scope.loop(n->var, n->extent);
      Stmt out = IRMutator::visit(n, self);
      scope = saved;
      return out;
    }
    Stmt visit(const LetStmt *n, const Stmt &self) override {
      const Expr value = mutate(n->value);
      IndexScope saved = scope;
      scope.let(n->var, n->value);
      const Stmt body = mutate(n->body);
      scope = saved;
      return LetStmt::make(n->var, value, body);
    }
  } m(std::move(scope), buffer, index);
  return m.mutate(s);
}

// The loops fixed in one iteration of L: the group loops and the serial ones down to L.
std::set<std::string> outer_loops(const Match &m) {
  std::set<std::string> outer = m.group_vars;
  outer.insert(m.serial_vars.begin(), m.serial_vars.end());
  return outer;
}

// Each dimension of buffer's accesses in fused_at as base + rest (IndexScope::split):
// foldable where every access has one base, rest's range over them.
std::vector<FoldedDim> fold_plan(const Stmt &fused_at, const Match &m, const std::set<std::string> &outer,
                                 const std::string &buffer, size_t rank) {
  std::vector<FoldedDim> dims(rank);
  reindexed(fused_at, chain_scope(m), buffer, [&](const std::vector<Expr> &indices, const IndexScope &scope) {
    for (size_t d = 0; d < rank; ++d) {
      FoldedDim &dim = dims[d];
      if (!dim.foldable) continue;
      std::optional<IndexScope::Split> split = scope.split(indices[d], outer);
      const Interval r = split ? scope.range(split->rest, indices[d]) : Interval::everything();
      if (!split || !r.bounded || (dim.base && *dim.base != split->base.coeffs) || split->base.constant != 0) {
        dim.foldable = false;
        continue;
      }
      dim.base = split->base.coeffs;
      dim.lo = std::min(dim.lo, r.lo);
      dim.hi = std::max(dim.hi, r.hi);
    }
    return indices;  // (the plan only)
  });
  return dims;
}

// The blocks of s without regions of the given buffers: local to the kernel now (inside
// a reduction, allocated in a loop inside the consumer's block).
Stmt without_regions(const Stmt &s, const std::set<std::string> &buffers) {
  struct Strip : IRMutator {
    const std::set<std::string> &buffers;
    explicit Strip(const std::set<std::string> &buffers) : buffers(buffers) {}
    std::vector<Region> kept(const std::vector<Region> &regions) const {
      std::vector<Region> out;
      for (const Region &r : regions)
        if (!buffers.count(r.buffer)) out.push_back(r);
      return out;
    }
    using IRMutator::visit;
    Stmt visit(const Block *n, const Stmt &self) override {
      return Block::make(n->stage, kept(n->reads), kept(n->writes), mutate(n->body));
    }
  } strip(buffers);
  return strip.mutate(s);
}

// Step 4: the temporaries that only the fused kernel uses, shared between P and C,
// allocated in local memory around *fused_at (their dimensions indexed by group
// loops alone dropped; inside a reduction, folded to one iteration's block) where they
// fit; the buffers the program keeps.
std::vector<TensorDecl> demote_temporaries(const Program &program, const Program &out, size_t fused,
                                           const std::set<std::string> &shared, const Match &m, bool inner,
                                           Stmt *fused_at) {
  std::set<std::string> elsewhere;  // buffers the other kernels use
  for (size_t k = 0; k < out.kernels.size(); ++k)
    if (k != fused) {
      const KernelBuffers other = buffers_of(out.kernels[k].body);
      elsewhere.insert(other.read.begin(), other.read.end());
      elsewhere.insert(other.written.begin(), other.written.end());
    }
  const std::set<std::string> outer = outer_loops(m);
  std::vector<TensorDecl> buffers;
  for (const TensorDecl &t : program.buffers) {
    if (t.role != TensorRole::Temp || !shared.count(t.name) || elsewhere.count(t.name)) {
      buffers.push_back(t);
      continue;
    }
    // Each dimension kept whole, dropped (one element: rest at [0]) or folded.
    std::vector<FoldedDim> dims(t.shape.size());
    if (inner) {
      dims = fold_plan(*fused_at, m, outer, t.name, t.shape.size());
    } else {
      const std::vector<Access> uses = accesses(*fused_at, {t.name});
      for (size_t d = 0; d < t.shape.size(); ++d) {
        bool group_only = true;
        for (const Access &a : uses)
          for (const std::string &v : vars_in(a.indices[d])) group_only &= m.group_vars.count(v) > 0;
        dims[d] = group_only ? FoldedDim{true, std::nullopt, 0, 0} : FoldedDim{false, std::nullopt, 0, 0};
      }
    }
    std::vector<int64_t> shape;
    for (size_t d = 0; d < dims.size(); ++d)
      if (!dims[d].foldable)
        shape.push_back(t.shape[d]);
      else if (dims[d].hi > dims[d].lo)
        shape.push_back(dims[d].hi - dims[d].lo + 1);
    if (shape.empty()) shape.push_back(1);
    // A 16-bit temporary kept in local memory holds f32 values (unrounded, as
    // PyTorch's fused kernels keep theirs).
    if (shape_numel(shape) * dtype_bytes(value_type(t.type)) > kMaxLocalBytes) {
      buffers.push_back(t);
      continue;
    }
    // A folded dimension's index rest - lo; one of one element dropped.
    *fused_at = Allocate::make(
        t.name, value_type(t.type), shape, MemoryScope::Local,
        reindexed(*fused_at, chain_scope(m), t.name, [&](const std::vector<Expr> &indices, const IndexScope &around) {
          std::vector<Expr> out;
          for (size_t d = 0; d < indices.size(); ++d) {
            if (!dims[d].foldable) {
              out.push_back(indices[d]);
            } else if (dims[d].hi > dims[d].lo) {
              Affine rest = around.split(indices[d], outer)->rest;
              rest.constant -= dims[d].lo;
              out.push_back(around.expr(rest, indices[d]));
            }
          }
          if (out.empty()) out.push_back(make_int(0));
          return out;
        }));
  }
  return buffers;
}

// A part of the fused loop's body as cache_read leaves it (loops.h's CacheReadBody),
// every allocation local: its allocations, copies and work.
struct CopiedBody {
  std::vector<const Allocate *> allocations;
  std::vector<Stmt> copies, work;
};

std::optional<CopiedBody> copied_body(const Stmt &s) {
  std::optional<CacheReadBody> c = cache_read_body(s);
  if (!c || c->allocations.empty() || c->barrier + 1 >= c->seq->stmts.size()) return std::nullopt;
  for (const Allocate *a : c->allocations)
    if (a->scope != MemoryScope::Local) return std::nullopt;
  const std::vector<Stmt> &stmts = c->seq->stmts;
  for (size_t i = 0; i < c->barrier; ++i)
    if (!stmts[i].as<For>() || has_barrier(stmts[i])) return std::nullopt;
  return CopiedBody{c->allocations,
                    {stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(c->barrier)},
                    {stmts.begin() + static_cast<std::ptrdiff_t>(c->barrier) + 1, stmts.end() - 1}};
}

// Inside a reduction, where P's part starts by copying local caches (cache_read at P's
// matched loop), and L's body too or not at all: one copy phase of both, then P's work, the
// barrier, C's work, so that async_copy can copy them all ahead in one ring. P's lets
// (renamed where they clash: b1 = z / 16) go into its statements, so the copies stand
// first. Nullopt where P's part is not in that form.
std::optional<Stmt> one_copy_phase(Stmt rest, const Stmt &body) {
  std::vector<std::pair<std::string, Expr>> lets;
  while (const LetStmt *l = rest.as<LetStmt>()) {
    lets.push_back({l->var, l->value});
    rest = l->body;
  }
  for (auto l = lets.rbegin(); l != lets.rend(); ++l) rest = substitute(rest, {{l->first, l->second}});
  std::optional<CopiedBody> p = copied_body(rest), c = copied_body(body);
  if (!p) return std::nullopt;
  if (!c) c = CopiedBody{{}, {}, {body}};  // C copies nothing: its body is all work
  std::vector<Stmt> stmts = p->copies;
  stmts.insert(stmts.end(), c->copies.begin(), c->copies.end());
  stmts.push_back(Barrier::make(MemoryScope::Local));
  stmts.insert(stmts.end(), p->work.begin(), p->work.end());
  stmts.push_back(Barrier::make(MemoryScope::Global));
  stmts.insert(stmts.end(), c->work.begin(), c->work.end());
  stmts.push_back(Barrier::make(MemoryScope::Local));
  Stmt out = Seq::make(stmts);
  std::vector<const Allocate *> all = p->allocations;
  all.insert(all.end(), c->allocations.begin(), c->allocations.end());
  for (auto a = all.rbegin(); a != all.rend(); ++a)
    out = Allocate::make((*a)->buffer, (*a)->type, (*a)->shape, (*a)->scope, out);
  return out;
}

}  // namespace

std::optional<Program> compute_at(const Program &given, const std::string &producer, const std::string &consumer,
                                  const std::string &loop, std::string *reason) {
  auto pw = stage_loops(given, producer, reason);
  if (!pw) return std::nullopt;
  StageLoops cw;
  if (!find_loop(given, consumer, loop, &cw, reason)) return std::nullopt;
  // Inside C's reduction (a serial loop of its block): P computes, in each iteration,
  // what that iteration reads; C's guards around L go inside it first.
  const bool inner = cw.is_inner(loop);
  Program program = given;
  if (inner) program.kernels[cw.kernel].body = sink_guards(program.kernels[cw.kernel].body, loop);
  const For *at = find_loop(program, consumer, loop, &cw, reason);
  if (!at) return std::nullopt;
  if (pw->kernel == cw.kernel) {
    *reason = producer + " and " + consumer + " are already in one kernel";
    return std::nullopt;
  }
  if (pw->kernel > cw.kernel) {
    *reason = producer + " runs after " + consumer;
    return std::nullopt;
  }
  const Kernel &pk = program.kernels[pw->kernel], &ck = program.kernels[cw.kernel];

  // 1. The loop chain down to L, and P's matching loops.
  std::optional<Match> m = match_loops(pk, ck, *at, inner, producer, consumer, reason);
  if (!m) return std::nullopt;
  // Names of P that would clash in C's kernel become fresh.
  const std::set<std::string> consumer_names = names_in_kernel(ck);
  NameSet used = kernel_names(program, ck);
  for (const std::string &n : names_in_kernel(pk)) used.reserve(n);
  Stmt prologue;
  if (!m->prologue.empty()) {
    prologue = Seq::make(m->prologue);
    for (auto a = m->prologue_allocations.rbegin(); a != m->prologue_allocations.rend(); ++a)
      prologue = Allocate::make((*a)->buffer, (*a)->type, (*a)->shape, (*a)->scope, prologue);
  }
  for (const std::string &n : names_in_kernel(Kernel{"", m->rest}))
    if (consumer_names.count(n)) m->names[n] = used.fresh(n);
  if (prologue.defined())
    for (const std::string &n : names_in_kernel(Kernel{"", prologue}))
      if (consumer_names.count(n) && !m->names.count(n)) m->names[n] = used.fresh(n);
  const Stmt rest = rename(m->rest, m->names);
  if (prologue.defined()) prologue = rename(prologue, m->names);

  // 2. Legality.
  const KernelBuffers pb = buffers_of(pk.body), cb = buffers_of(ck.body);
  if (!kernels_allow(program, *pw, cw, pb, cb, producer, consumer, reason)) return std::nullopt;
  std::set<std::string> shared;  // written by P, read by C
  for (const std::string &b : pb.written)
    if (cb.read.count(b)) shared.insert(b);
  if (accesses(at->body, shared).size() != accesses(ck.body, shared).size()) {
    *reason = consumer + "'s kernel reads what " + producer + " writes outside loop " + loop;
    return std::nullopt;
  }
  if (!reads_what_is_written(rest, *at, shared, m->matched, producer, consumer, reason) &&
      (!m->local_matched || !reads_what_the_group_writes(rest, *m, shared, producer, consumer, reason)))
    return std::nullopt;

  // 3. One kernel: inside a reduction, where both start by copying, one copy phase
  // (one_copy_phase); else P's part, a barrier, C's body, and inside a reduction a
  // barrier last (the next iteration's P overwrites what this one's C reads, as
  // cache_read's copies end theirs).
  std::optional<Stmt> merged = inner && m->local_matched ? one_copy_phase(rest, at->body) : std::nullopt;
  Stmt fused_at;
  if (merged) {
    fused_at = *merged;
  } else {
    const bool barriers = m->local_matched && !shared.empty();
    std::vector<Stmt> body{rest};
    if (barriers) body.push_back(Barrier::make(MemoryScope::Global));
    body.push_back(at->body);
    if (inner && barriers) body.push_back(Barrier::make(MemoryScope::Global));
    fused_at = Seq::make(body);
  }

  // 4. Temporaries used only here move to local memory.
  Program out = program;
  out.kernels.clear();
  for (size_t k = 0; k < program.kernels.size(); ++k)
    if (k != pw->kernel) out.kernels.push_back(program.kernels[k]);
  const size_t fused = cw.kernel - 1;
  out.buffers = demote_temporaries(program, out, fused, shared, *m, inner, &fused_at);
  out = replace_loop(out, fused, loop, [&](const For *f) { return For::make(f->var, f->extent, f->kind, fused_at); });
  // P's prologue starts the body of C's loop it belongs to, its buffers around that body.
  if (prologue.defined())
    out = replace_loop(out, fused, m->prologue_at, [&](const For *f) {
      std::vector<const Allocate *> allocations;
      Stmt copies = prologue;
      while (const Allocate *a = copies.as<Allocate>()) allocations.push_back(a), copies = a->body;
      Stmt body = Seq::make({copies, f->body});
      for (auto a = allocations.rbegin(); a != allocations.rend(); ++a)
        body = Allocate::make((*a)->buffer, (*a)->type, (*a)->shape, (*a)->scope, body);
      return For::make(f->var, f->extent, f->kind, body);
    });
  Kernel &k = out.kernels[fused];
  std::set<std::string> local;  // the temporaries now local memory
  for (const std::string &b : shared)
    if (!out.find_buffer(b)) local.insert(b);
  k.body = without_regions(k.body, local);
  const KernelBuffers now = buffers_of(k.body);
  if (first_common(now.read, now.written).empty()) k.body = local_barriers(k.body);
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// The stage computed inside a later stage's kernel, at the first loop where that is
// legal; first loops of equal extent, both serial, are bound to work-groups for it.
void draw_compute_at(StepDraw &d) {
  for (const std::string &consumer : d.stages) {
    auto theirs = stage_loops(d.program, consumer, &d.reason);
    if (!theirs || theirs->kernel <= d.loops.kernel || d.next) continue;
    Program base = d.program;
    std::vector<Primitive> binds;
    const std::vector<const For *> &mine = d.loops.outer;
    if (!mine.empty() && !theirs->outer.empty() && mine[0]->kind == ForKind::Serial &&
        theirs->outer[0]->kind == ForKind::Serial && mine[0]->extent == theirs->outer[0]->extent) {
      if (!d.bind(&base, d.p.stage, mine[0]->var, ForKind::GroupX, &binds) ||
          !d.bind(&base, consumer, theirs->outer[0]->var, ForKind::GroupX, &binds)) {
        base = d.program;
        binds.clear();
      }
    }
    for (const For *f : theirs->outer)
      if (!d.next && (d.next = compute_at(base, d.p.stage, consumer, f->var, &d.reason))) {
        d.p.consumer = consumer;
        d.p.loops = {f->var};
        d.before = binds;
      }
  }
}

}  // namespace

const PrimitiveInfo compute_at_primitive = {{{ArgKind::Stage, "the producer stage"}, {ArgKind::ConsumerLoop}},
                                            "compute_at total y.t",
                                            "total's kernel inside y's, at loop t (or at a serial loop of y's "
                                            "reduction: each iteration computes what it reads)",
                                            [](const Program &program, const Primitive &p, std::string *reason) {
                                              return compute_at(program, p.stage, p.consumer, p.loops[0], reason);
                                            },
                                            draw_compute_at};

}  // namespace ks
