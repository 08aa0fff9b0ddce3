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
#include "ir/affine.h"
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

// Rewrites the accesses of a demoted buffer: the kept dimensions, or [0].
Stmt demote(const Stmt &s, const std::string &buffer, const std::vector<bool> &keep) {
  struct Demote : IRMutator {
    const std::string &buffer;
    const std::vector<bool> &keep;
    Demote(const std::string &buffer, const std::vector<bool> &keep) : buffer(buffer), keep(keep) {}
    std::vector<Expr> kept(const std::vector<Expr> &indices) const {
      std::vector<Expr> out;
      for (size_t d = 0; d < indices.size(); ++d)
        if (keep[d]) out.push_back(indices[d]);
      if (out.empty()) out.push_back(make_int(0));
      return out;
    }
    using IRMutator::visit;
    Expr visit(const Load *n, const Expr &self) override {
      Expr e = IRMutator::visit(n, self);
      const Load *l = e.as<Load>();
      return l->buffer == buffer ? Load::make(l->type, l->buffer, kept(l->indices), l->pad) : e;
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      Stmt s = IRMutator::visit(n, self);
      const Store *st = s.as<Store>();
      return st->buffer == buffer ? Store::make(st->buffer, kept(st->indices), st->value) : s;
    }
    Stmt visit(const Block *n, const Stmt &self) override {
      auto strip = [&](const std::vector<Region> &regions) {
        std::vector<Region> out;
        for (const Region &r : regions)
          if (r.buffer != buffer) out.push_back(r);
        return out;
      };
      return Block::make(n->stage, strip(n->reads), strip(n->writes), mutate(n->body));
    }
  } d(buffer, keep);
  return d.mutate(s);
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
  std::map<std::string, std::string> names;   // P's loop -> C's (and P's clashing names -> fresh)
  std::set<std::string> matched, group_vars;  // C's loops down to L; those bound to groups
  bool local_matched = false;                 // whether a local loop is among them
  Stmt rest;                                  // P's kernel inside the matched loops (and P's lets between them)
  std::vector<const For *> chain;             // C's loops down to L, outer first
  std::map<std::string, Expr> lets;           // C's lets between them
};

std::optional<Match> match_loops(const Kernel &pk, const Kernel &ck, const For &at, const std::string &producer,
                                 const std::string &consumer, std::string *reason) {
  const std::string &loop = at.var;
  Match m;
  std::vector<const For *> &chain = m.chain;
  for (Stmt s = ck.body;;) {
    if (const LetStmt *l = s.as<LetStmt>()) {
      m.lets[l->var] = l->value;
      s = l->body;
      continue;
    }
    const For *f = s.as<For>();
    if (!f) {
      *reason =
          "loop " + loop + " of " + consumer + " is not in its kernel's outer loop nest (only loops may enclose it)";
      return std::nullopt;
    }
    chain.push_back(f);
    if (f->var == loop) break;
    s = f->body;
  }
  if (at.kind == ForKind::Serial || at.kind == ForKind::Unrolled || at.kind == ForKind::Vectorized) {
    *reason = "loop " + loop + " is " + for_kind_name(at.kind) + "; compute_at goes at " + consumer +
              "'s innermost bound loop (bind its loops first)";
    return std::nullopt;
  }
  if (has_bound_loop(at.body)) {
    *reason = "loop " + loop + " is not " + consumer + "'s innermost bound loop";
    return std::nullopt;
  }
  m.rest = pk.body;
  std::vector<const LetStmt *> lets;  // P's, between its matched loops
  for (const For *c : chain) {
    while (const LetStmt *l = m.rest.as<LetStmt>()) {
      lets.push_back(l);
      m.rest = l->body;
    }
    const For *p = m.rest.as<For>();
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
    m.local_matched |= is_local(c->kind);
    m.rest = p->body;
  }
  for (auto l = lets.rbegin(); l != lets.rend(); ++l) m.rest = LetStmt::make((*l)->var, (*l)->value, m.rest);
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
  GroupPoints(const std::set<std::string> &shared, std::map<std::string, Expr> lets)
      : shared_(shared), lets_(std::move(lets)) {}

  // Runs s with the loop values in env; false (and *reason) where an index cannot be
  // evaluated or the points run past the limit.
  bool run(const Stmt &s, std::map<std::string, int64_t> env, bool stores, std::string *reason) {
    env_ = std::move(env);
    stores_ = stores;
    return walk(s, reason);
  }
  struct Read {
    std::string buffer;
    std::vector<int64_t> at;
    std::string written_as, work_item;  // the load's indices as printed; the local loops' values
  };
  std::set<std::pair<std::string, std::vector<int64_t>>> written;
  std::vector<Read> read;
  std::vector<std::string> locals;  // the work-item's loops, named in a refusal

  // The next work-group: what was written and read forgotten (which statements touch
  // the buffers is not: the same for every group).
  void next_group() {
    written.clear();
    read.clear();
    points_ = 0;
  }

 private:
  static constexpr int64_t kMaxPoints = 1 << 20;  // attention's 128 x 64 tile: about 100,000
  const std::set<std::string> &shared_;
  std::map<std::string, Expr> lets_;
  std::map<std::string, int64_t> env_;
  bool stores_ = false;
  int64_t points_ = 0;
  std::map<const BaseStmtNode *, bool> touches_;

  bool touches(const Stmt &s) {
    auto [it, inserted] = touches_.try_emplace(s.get(), false);
    if (inserted) it->second = !accesses(s, shared_).empty();
    return it->second;
  }
  // The indices of buffer[indices] at the current point; none (and *reason) where one
  // is not integer arithmetic of the loops.
  std::optional<std::vector<int64_t>> values(const std::string &buffer, const std::vector<Expr> &indices,
                                             std::string *reason) const {
    std::vector<int64_t> out;
    for (const Expr &i : indices) {
      std::optional<int64_t> v = evaluate_index(i, env_, lets_);
      if (!v)
        return *reason = "the index of " + buffer + "[" + print_indices(indices) + "] is not one it can evaluate",
               std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  bool loads_in(const Expr &e, std::string *reason) {
    if (stores_ || !e.defined()) return true;
    for (const Load *l : collect<Load>(e)) {
      if (!shared_.count(l->buffer)) continue;
      std::optional<std::vector<int64_t>> at = values(l->buffer, l->indices, reason);
      if (!at) return false;
      std::string item;
      for (const std::string &v : locals) item += (item.empty() ? "" : ", ") + v + " = " + std::to_string(env_.at(v));
      read.push_back({l->buffer, *at, print_indices(l->indices), item});
    }
    return true;
  }
  bool walk(const Stmt &s, std::string *reason) {
    if (!s.defined() || !touches(s)) return true;
    if (++points_ > kMaxPoints) return *reason = "a work-group's accesses are too many to check", false;
    if (const For *f = s.as<For>()) {
      for (int64_t i = 0; i < f->extent; ++i) {
        env_[f->var] = i;
        if (!walk(f->body, reason)) return false;
      }
      env_.erase(f->var);
      return true;
    }
    if (const LetStmt *l = s.as<LetStmt>()) {
      lets_[l->var] = l->value;
      return loads_in(l->value, reason) && walk(l->body, reason);
    }
    if (const IfThenElse *n = s.as<IfThenElse>()) {
      if (!loads_in(n->condition, reason)) return false;
      if (std::optional<int64_t> holds = evaluate_index(n->condition, env_, lets_))
        return walk(*holds ? n->then_case : n->else_case, reason);
      return stores_ || (walk(n->then_case, reason) && walk(n->else_case, reason));
    }
    if (const Store *n = s.as<Store>()) {
      for (const Expr &i : n->indices)
        if (!loads_in(i, reason)) return false;
      if (!loads_in(n->value, reason)) return false;
      if (!stores_ || !shared_.count(n->buffer)) return true;
      std::optional<std::vector<int64_t>> at = values(n->buffer, n->indices, reason);
      if (!at) return false;
      written.emplace(n->buffer, *at);
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
  for (const For *f : m.chain) (is_group(f->kind) ? groups : locals).push_back(f);
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
  GroupPoints p(shared, m.lets);
  for (const For *l : locals) p.locals.push_back(l->var);
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
    for (const GroupPoints::Read &r : p.read)
      if (!p.written.count({r.buffer, r.at})) {
        std::string index;
        for (int64_t v : r.at) index += (index.empty() ? "" : ", ") + std::to_string(v);
        *reason = consumer + " reads " + r.buffer + "[" + r.written_as + "] = " + r.buffer + "[" + index + "] at " +
                  r.work_item + " in the work-group" + (where.empty() ? "" : " at " + where) + ", which " + producer +
                  " does not write in that group";
        return false;
      }
  }
  return true;
}

// Step 4: the temporaries that only the fused kernel uses, shared between P and C,
// allocated in local memory around *fused_at (their dimensions indexed by group
// loops alone dropped) where they fit; the buffers the program keeps.
std::vector<TensorDecl> demote_temporaries(const Program &program, const Program &out, size_t fused,
                                           const std::set<std::string> &shared, const std::set<std::string> &group_vars,
                                           Stmt *fused_at) {
  std::set<std::string> elsewhere;  // buffers the other kernels use
  for (size_t k = 0; k < out.kernels.size(); ++k)
    if (k != fused) {
      const KernelBuffers other = buffers_of(out.kernels[k].body);
      elsewhere.insert(other.read.begin(), other.read.end());
      elsewhere.insert(other.written.begin(), other.written.end());
    }
  std::vector<TensorDecl> buffers;
  for (const TensorDecl &t : program.buffers) {
    if (t.role != TensorRole::Temp || !shared.count(t.name) || elsewhere.count(t.name)) {
      buffers.push_back(t);
      continue;
    }
    const std::vector<Access> uses = accesses(*fused_at, {t.name});
    std::vector<bool> keep;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      std::set<std::string> vars;
      for (const Access &a : uses)
        for (const std::string &v : vars_in(a.indices[d])) vars.insert(v);
      bool group_only = true;
      for (const std::string &v : vars) group_only &= group_vars.count(v) > 0;
      keep.push_back(!group_only);
      if (!group_only) shape.push_back(t.shape[d]);
    }
    if (shape.empty()) shape.push_back(1);
    // A 16-bit temporary kept in local memory holds f32 values (unrounded, as
    // PyTorch's fused kernels keep theirs).
    if (shape_numel(shape) * dtype_bytes(value_type(t.type)) > kMaxLocalBytes) {
      buffers.push_back(t);
      continue;
    }
    *fused_at = Allocate::make(t.name, value_type(t.type), shape, MemoryScope::Local, demote(*fused_at, t.name, keep));
  }
  return buffers;
}

}  // namespace

std::optional<Program> compute_at(const Program &program, const std::string &producer, const std::string &consumer,
                                  const std::string &loop, std::string *reason) {
  auto pw = stage_loops(program, producer, reason);
  if (!pw) return std::nullopt;
  StageLoops cw;
  const For *at = find_loop(program, consumer, loop, &cw, reason);
  if (!at) return std::nullopt;
  if (cw.is_inner(loop)) {
    *reason = "loop " + loop + " is a reduction loop of " + consumer + "; compute_at needs a loop around its block";
    return std::nullopt;
  }
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
  std::optional<Match> m = match_loops(pk, ck, *at, producer, consumer, reason);
  if (!m) return std::nullopt;
  // Names of P that would clash in C's kernel become fresh.
  const std::set<std::string> consumer_names = names_in_kernel(ck);
  NameSet used = kernel_names(program, ck);
  for (const std::string &n : names_in_kernel(pk)) used.reserve(n);
  for (const std::string &n : names_in_kernel(Kernel{"", m->rest}))
    if (consumer_names.count(n)) m->names[n] = used.fresh(n);
  const Stmt rest = rename(m->rest, m->names);

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

  // 3. One kernel.
  std::vector<Stmt> body{rest};
  if (m->local_matched && !shared.empty()) body.push_back(Barrier::make(MemoryScope::Global));
  body.push_back(at->body);
  Stmt fused_at = Seq::make(body);

  // 4. Temporaries used only here move to local memory.
  Program out = program;
  out.kernels.clear();
  for (size_t k = 0; k < program.kernels.size(); ++k)
    if (k != pw->kernel) out.kernels.push_back(program.kernels[k]);
  const size_t fused = cw.kernel - 1;
  out.buffers = demote_temporaries(program, out, fused, shared, m->group_vars, &fused_at);
  out = replace_loop(out, fused, loop, [&](const For *f) { return For::make(f->var, f->extent, f->kind, fused_at); });
  Kernel &k = out.kernels[fused];
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
                                            "total's kernel inside y's, at loop t",
                                            [](const Program &program, const Primitive &p, std::string *reason) {
                                              return compute_at(program, p.stage, p.consumer, p.loops[0], reason);
                                            },
                                            draw_compute_at};

}  // namespace ks
