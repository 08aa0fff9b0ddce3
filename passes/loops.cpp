#include "passes/loops.h"

#include <algorithm>
#include <tuple>

#include "ir/vector_form.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "passes/primitives.h"

namespace ks {

const For *StageLoops::find(const std::string &loop) const {
  for (const auto *list : {&outer, &inner})
    for (const For *f : *list)
      if (f->var == loop) return f;
  return nullptr;
}

bool StageLoops::is_inner(const std::string &loop) const {
  for (const For *f : inner)
    if (f->var == loop) return true;
  return false;
}

std::string StageLoops::names() const {
  std::string out;
  for (const auto *list : {&outer, &inner})
    for (const For *f : *list) out += (out.empty() ? "" : ", ") + f->var;
  return out.empty() ? "none" : out;
}

namespace {

// Finds the block of a stage and the loops on the path to it.
struct FindBlock : IRVisitor {
  const std::string &stage;
  std::vector<const For *> path;
  std::vector<const For *> found_path;
  const Block *block = nullptr;
  explicit FindBlock(const std::string &stage) : stage(stage) {}
  using IRVisitor::visit;
  void visit(const For *n) override {
    path.push_back(n);
    IRVisitor::visit(n);
    path.pop_back();
  }
  void visit(const Block *n) override {
    if (n->stage == stage && !block) {
      block = n;
      found_path = path;
    }
    IRVisitor::visit(n);
  }
};

struct CollectNames : IRVisitor {
  std::set<std::string> names;
  using IRVisitor::visit;
  void visit(const For *n) override {
    names.insert(n->var);
    IRVisitor::visit(n);
  }
  void visit(const LetStmt *n) override {
    names.insert(n->var);
    IRVisitor::visit(n);
  }
  void visit(const Allocate *n) override {
    names.insert(n->buffer);
    IRVisitor::visit(n);
  }
};

}  // namespace

std::vector<std::string> stage_names(const Stmt &body) {
  struct Blocks : IRVisitor {
    std::vector<std::string> names;
    using IRVisitor::visit;
    void visit(const Block *n) override {
      names.push_back(n->stage);
      IRVisitor::visit(n);
    }
  } blocks;
  blocks.dispatch(body);
  return blocks.names;
}

std::vector<std::string> stage_names(const Program &program) {
  std::vector<std::string> names;
  for (const Kernel &kernel : program.kernels) {
    std::vector<std::string> in_kernel = stage_names(kernel.body);
    names.insert(names.end(), in_kernel.begin(), in_kernel.end());
  }
  return names;
}

std::optional<StageLoops> stage_loops(const Program &program, const std::string &stage, std::string *reason) {
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    FindBlock find(stage);
    find.dispatch(program.kernels[k].body);
    if (!find.block) continue;
    StageLoops loops;
    loops.kernel = k;
    loops.outer = find.found_path;
    loops.inner = collect<For>(find.block->body);
    return loops;
  }
  std::string stages;
  for (const std::string &name : stage_names(program)) stages += (stages.empty() ? "" : ", ") + name;
  *reason = "no stage named " + stage + "; stages are " + (stages.empty() ? "none" : stages);
  return std::nullopt;
}

const For *find_loop(const Program &program, const std::string &stage, const std::string &loop, StageLoops *where,
                     std::string *reason) {
  auto loops = stage_loops(program, stage, reason);
  if (!loops) return nullptr;
  *where = *loops;
  const For *f = loops->find(loop);
  if (!f) *reason = "no loop named " + loop + " in stage " + stage + "; loops are " + loops->names();
  return f;
}

std::set<std::string> names_in_kernel(const Kernel &kernel) {
  CollectNames collect;
  collect.dispatch(kernel.body);
  return collect.names;
}

std::string half_access_refusal(const Program &program, const Stmt &s, const std::string &primitive) {
  std::vector<std::string> touched;
  for (const Load *l : collect<Load>(s)) touched.push_back(l->buffer);
  for (const Store *st : collect<Store>(s)) touched.push_back(st->buffer);
  for (const std::string &name : touched)
    if (const TensorDecl *t = program.find_buffer(name); t && is_half(t->type))
      return primitive + " of " + name + ", a " + dtype_name(t->type) +
             " tensor: fragments of 16-bit elements are read from a local copy (cache_read it local first)";
  return "";
}

NameSet kernel_names(const Program &program, const Kernel &kernel) {
  NameSet names;
  for (const TensorDecl &b : program.buffers) names.reserve(b.name);
  for (const std::string &n : names_in_kernel(kernel)) names.reserve(n);
  return names;
}

NameSet program_names(const Program &program) {
  NameSet names;
  for (const TensorDecl &b : program.buffers) names.reserve(b.name);
  for (const Kernel &k : program.kernels)
    for (const std::string &n : names_in_kernel(k)) names.reserve(n);
  return names;
}

namespace {

std::vector<const Allocate *> allocations(const Kernel &kernel) { return collect<Allocate>(kernel.body); }

bool is_panel(const Allocate *a) { return a->scope == MemoryScope::Local && a->shape.size() > 1; }

}  // namespace

std::vector<std::string> local_panels(const Kernel &kernel, size_t spread) {
  std::vector<std::string> out;
  for (const Allocate *a : allocations(kernel))
    if (is_panel(a) && innermost_dims(a->shape, spread).size() >= spread) out.push_back(a->buffer);
  return out;
}

const Allocate *local_panel(const Kernel &kernel, const std::string &buffer, const std::string &only,
                            std::string *reason) {
  for (const Allocate *a : allocations(kernel)) {
    if (a->buffer != buffer) continue;
    if (is_panel(a)) return a;
    *reason = buffer + " is " +
              (a->scope == MemoryScope::Local ? "one-dimensional"
                                              : "in " + std::string(memory_scope_name(a->scope)) + " memory") +
              "; " + only;
    return nullptr;
  }
  *reason = "kernel " + kernel.name + " allocates no buffer named " + buffer;
  return nullptr;
}

std::vector<size_t> innermost_dims(const std::vector<int64_t> &shape, size_t count) {
  std::vector<size_t> out;
  for (size_t d = shape.size(); d-- > 0 && out.size() < count;)
    if (shape[d] > 1) out.insert(out.begin(), d);
  return out;
}

bool name_is_free(const Program &program, const Kernel &kernel, const std::string &name, std::string *reason) {
  if (program.find_buffer(name)) {
    *reason = "name " + name + " is a buffer";
    return false;
  }
  if (names_in_kernel(kernel).count(name)) {
    *reason = "name " + name + " is already used in kernel " + kernel.name;
    return false;
  }
  return true;
}

Program replace_loop(const Program &program, size_t kernel, const std::string &loop,
                     const std::function<Stmt(const For *)> &rewrite) {
  struct Replace : IRMutator {
    const std::string &loop;
    const std::function<Stmt(const For *)> &rewrite;
    Replace(const std::string &loop, const std::function<Stmt(const For *)> &rewrite) : loop(loop), rewrite(rewrite) {}
    Stmt visit(const For *n, const Stmt &self) override {
      if (n->var == loop) return rewrite(n);
      return IRMutator::visit(n, self);
    }
  } replace(loop, rewrite);
  Program out = program;
  out.kernels[kernel].body = replace.mutate(program.kernels[kernel].body);
  return out;
}

Program replace_block(const Program &program, const std::string &stage,
                      const std::function<Stmt(const Block *)> &rewrite) {
  struct Replace : IRMutator {
    const std::string &stage;
    const std::function<Stmt(const Block *)> &rewrite;
    Replace(const std::string &stage, const std::function<Stmt(const Block *)> &rewrite)
        : stage(stage), rewrite(rewrite) {}
    Stmt visit(const Block *n, const Stmt &self) override {
      if (n->stage == stage) return rewrite(n);
      return IRMutator::visit(n, self);
    }
  } replace(stage, rewrite);
  Program out = program;
  for (Kernel &k : out.kernels) k.body = replace.mutate(k.body);
  return out;
}

Stmt rename(const Stmt &s, const std::map<std::string, std::string> &names) {
  struct Rename : IRMutator {
    const std::map<std::string, std::string> &names;
    explicit Rename(const std::map<std::string, std::string> &names) : names(names) {}
    const std::string &to(const std::string &name) const {
      auto it = names.find(name);
      return it == names.end() ? name : it->second;
    }
    using IRMutator::visit;
    Expr visit(const Var *n, const Expr &self) override {
      return names.count(n->name) ? Var::make(n->type, to(n->name)) : self;
    }
    Expr visit(const Load *n, const Expr &self) override {
      Expr e = IRMutator::visit(n, self);
      const Load *l = e.as<Load>();
      return names.count(l->buffer) ? Load::make(l->type, to(l->buffer), l->indices, l->pad) : e;
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      Stmt s = IRMutator::visit(n, self);
      const Store *st = s.as<Store>();
      return names.count(st->buffer) ? Store::make(to(st->buffer), st->indices, st->value) : s;
    }
    Stmt visit(const For *n, const Stmt &self) override {
      Stmt body = mutate(n->body);
      if (body.same_as(n->body) && !names.count(n->var)) return self;
      return For::make(to(n->var), n->extent, n->kind, body);
    }
    Stmt visit(const LetStmt *n, const Stmt &self) override {
      Expr value = mutate(n->value);
      Stmt body = mutate(n->body);
      if (value.same_as(n->value) && body.same_as(n->body) && !names.count(n->var)) return self;
      return LetStmt::make(to(n->var), value, body);
    }
    Stmt visit(const Allocate *n, const Stmt &self) override {
      Stmt body = mutate(n->body);
      if (body.same_as(n->body) && !names.count(n->buffer)) return self;
      return Allocate::make(to(n->buffer), n->type, n->shape, n->scope, body);
    }
  } r(names);
  return r.mutate(s);
}

Stmt wrap(const std::vector<Stmt> &layers, Stmt body) {
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    if (const For *f = it->as<For>())
      body = For::make(f->var, f->extent, f->kind, body);
    else if (const LetStmt *l = it->as<LetStmt>())
      body = LetStmt::make(l->var, l->value, body);
    else if (const IfThenElse *g = it->as<IfThenElse>())
      body = IfThenElse::make(g->condition, body);
    else if (const Block *b = it->as<Block>())
      body = Block::make(b->stage, b->reads, b->writes, body);
    else if (const Allocate *a = it->as<Allocate>())
      body = Allocate::make(a->buffer, a->type, a->shape, a->scope, body);
  }
  return body;
}

std::optional<CacheReadBody> cache_read_body(const Stmt &body) {
  CacheReadBody c;
  Stmt inner = body;
  while (const Allocate *a = inner.as<Allocate>()) c.allocations.push_back(a), inner = a->body;
  c.seq = inner.as<Seq>();
  if (!c.seq || c.seq->stmts.empty() || !c.seq->stmts.back().as<Barrier>()) return std::nullopt;
  while (!c.seq->stmts[c.barrier].as<Barrier>()) ++c.barrier;
  if (c.barrier == 0) return std::nullopt;
  return c;
}

Stmt inside(const Stmt &s) {
  if (const For *f = s.as<For>()) return f->body;
  if (const LetStmt *l = s.as<LetStmt>()) return l->body;
  if (const IfThenElse *g = s.as<IfThenElse>(); g && !g->else_case.defined()) return g->then_case;
  if (const Block *b = s.as<Block>()) return b->body;
  if (const Allocate *a = s.as<Allocate>()) return a->body;
  return Stmt();
}

std::vector<Stmt> path_to(const Stmt &body, const std::string &loop) {
  struct PathTo : IRVisitor {
    const std::string &loop;
    std::vector<Stmt> path, found;
    explicit PathTo(const std::string &loop) : loop(loop) {}
    using IRVisitor::visit;
    void visit(const For *n) override {
      path.push_back(Stmt(std::make_shared<For>(*n)));
      if (n->var == loop)
        found = path;
      else
        IRVisitor::visit(n);
      path.pop_back();
    }
    void visit(const LetStmt *n) override {
      path.push_back(Stmt(std::make_shared<LetStmt>(*n)));
      IRVisitor::visit(n);
      path.pop_back();
    }
  } walk(loop);
  walk.dispatch(body);
  return walk.found;
}

Stmt peel(Stmt s, std::vector<Stmt> *layers) {
  for (;;) {
    if (const For *f = s.as<For>()) {
      layers->push_back(s);
      s = f->body;
    } else if (const LetStmt *l = s.as<LetStmt>()) {
      layers->push_back(s);
      s = l->body;
    } else if (const IfThenElse *g = s.as<IfThenElse>(); g && !g->else_case.defined()) {
      layers->push_back(s);
      s = g->then_case;
    } else {
      return s;
    }
  }
}

bool has_bound_loop(const Stmt &s) {
  struct Bound : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const For *n) override {
      found |= is_group(n->kind) || is_local(n->kind);
      IRVisitor::visit(n);
    }
  } b;
  b.dispatch(s);
  return b.found;
}

bool has_barrier(const Stmt &s) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const Barrier *) override { found = true; }
  } f;
  f.dispatch(s);
  return f.found;
}

bool observes_running_value(const Stmt &body, const std::set<std::string> &loops, std::string *what) {
  // The names that change from one iteration of the loops to the next (the loops and
  // the lets made of them), the stores, the buffers read anywhere in body and those
  // allocated in it (fresh at each iteration, so carrying nothing across).
  struct Walk : IRVisitor {
    std::set<std::string> changing;
    struct Write {
      const Store *store;
      bool moves;  // its element changes with the iterations
    };
    std::vector<Write> writes;
    std::set<std::string> read, allocated;  // allocated inside: fresh in each iteration
    using IRVisitor::visit;
    void visit(const Allocate *n) override {
      allocated.insert(n->buffer);
      IRVisitor::visit(n);
    }
    void visit(const LetStmt *n) override {
      if (mentions(n->value, changing)) changing.insert(n->var);
      IRVisitor::visit(n);
    }
    void visit(const Store *n) override {
      bool moves = false;
      for (const Expr &i : n->indices) moves = moves || mentions(i, changing);
      writes.push_back({n, moves});
      IRVisitor::visit(n);
    }
    void visit(const Load *n) override {
      read.insert(n->buffer);
      IRVisitor::visit(n);
    }
  } walk;
  walk.changing = loops;
  walk.dispatch(body);
  std::set<std::string> in_place;  // updated at one element throughout, and read
  for (const auto &w : walk.writes)
    if (!w.moves && walk.read.count(w.store->buffer) && !walk.allocated.count(w.store->buffer))
      in_place.insert(w.store->buffer);
  for (const auto &w : walk.writes) {
    if (!w.moves) continue;
    for (const Load *l : collect<Load>(w.store->value))
      if (in_place.count(l->buffer)) {
        *what = w.store->buffer + " stores the running value of " + l->buffer;
        return true;
      }
  }
  return false;
}

bool verified(const Program &program, std::string *reason) {
  try {
    verify_program(program);
    return true;
  } catch (const InternalError &e) {
    // The first line names the broken rule; the rest is the IR.
    std::string detail = e.detail();
    const std::string prefix = "IR verification failed: ";
    if (detail.rfind(prefix, 0) == 0) detail = detail.substr(prefix.size());
    *reason = detail.substr(0, detail.find('\n'));
    return false;
  }
}

const Store *elementwise_store(const Program &program, const StageLoops &where, const std::string &stage,
                               std::vector<std::string> *vars, std::string *reason) {
  struct Blocks : IRVisitor {
    const std::string &stage;
    const Block *block = nullptr;
    int count = 0;
    explicit Blocks(const std::string &stage) : stage(stage) {}
    using IRVisitor::visit;
    void visit(const Block *n) override {
      ++count;
      if (n->stage == stage) block = n;
      IRVisitor::visit(n);
    }
  } blocks(stage);
  blocks.dispatch(program.kernels[where.kernel].body);
  const Store *store = blocks.block ? blocks.block->body.as<Store>() : nullptr;
  if (!store || store->buffer != stage) {
    *reason = stage + " is not elementwise (it reduces or computes more than one store)";
    return nullptr;
  }
  vars->clear();
  for (const Expr &index : store->indices) {
    const Var *v = index.as<Var>();
    if (!v || std::find(vars->begin(), vars->end(), v->name) != vars->end()) {
      *reason = stage + " stores at indices that are not distinct loop variables";
      return nullptr;
    }
    vars->push_back(v->name);
  }
  if (blocks.count != 1) {
    *reason = stage + " shares its kernel with other stages";
    return nullptr;
  }
  return store;
}

bool power_of_two_work_items(int64_t threads, std::string *reason) {
  if (threads >= 2 && threads <= kMaxCrossReduceThreads && (threads & (threads - 1)) == 0) return true;
  *reason = "the number of work-items must be a power of two from 2 to " + std::to_string(kMaxCrossReduceThreads) +
            ", not " + std::to_string(threads);
  return false;
}

bool outer_loops_on_groups(const StageLoops &where, const std::string &stage, const For *except, std::string *reason) {
  for (const For *outer : where.outer)
    if (outer != except && !is_group(outer->kind)) {
      *reason = "loop " + outer->var + " of " + stage + " is " + for_kind_name(outer->kind) + "; bind every " +
                (except ? "other " : "") + "spatial loop of the stage to a work-group first";
      return false;
    }
  return true;
}

BoundsScope ranges_on(const std::vector<Stmt> &path) {
  BoundsScope out;
  for (const Stmt &s : path) {
    if (const For *f = s.as<For>()) out.vars[f->var] = Interval::of(0, f->extent - 1);
    if (const LetStmt *let = s.as<LetStmt>()) out.vars[let->var] = bounds_of(let->value, out);
  }
  return out;
}

namespace {

// f / K and f % K of the flat index f = W g + v, v < W and K a multiple of W, in g
// and v: g / (K / W) and W (g % (K / W)) + v, the parts in g as lets (`lets`, in order) so
// that an index is affine in v; f itself W g + v. Any other use leaves an index that is
// not affine in v, which the vector form refuses.
struct Lanes : IRMutator {
  std::string f;
  int64_t width = 4;
  Expr g, v;
  NameSet *names = nullptr;
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::tuple<BinaryOp, int64_t, int64_t>, Expr> made;
  using IRMutator::visit;
  // f / K, f % K, or (f / K) % M where m > 0, as a let in g.
  Expr part(BinaryOp op, int64_t k, int64_t m, DType type) {
    auto [it, fresh] = made.try_emplace({op, k, m});
    if (fresh) {
      const std::string name = names->fresh(f + (op == BinaryOp::Div ? "_q" : "_r") + std::to_string(k) +
                                            (m > 0 ? "_r" + std::to_string(m) : ""));
      // (W g) / K = g / (K / W) and (W g) % K = W (g % (K / W)): bounds the verifier sees.
      const Expr part = make_int(k / width, type);
      Expr value = op == BinaryOp::Div ? Binary::make(BinaryOp::Div, g, part)
                                       : Binary::make(BinaryOp::Mod, g, part) * make_int(width, g.type());
      if (m > 0) value = Binary::make(BinaryOp::Mod, value, make_int(m, type));
      lets.push_back({name, value});
      it->second = Var::make(g.type(), name);
    }
    return it->second;
  }
  // K where e is f / K with K a multiple of W.
  std::optional<int64_t> quotient_of_f(const Expr &e) {
    const Binary *b = e.as<Binary>();
    const Var *var = b && b->op == BinaryOp::Div ? b->a.as<Var>() : nullptr;
    std::optional<int64_t> k = var && var->name == f ? as_const_int(b->b) : std::nullopt;
    return k && *k > 0 && *k % width == 0 ? k : std::nullopt;
  }
  Expr visit(const Binary *n, const Expr &self) override {
    const Var *var = n->a.as<Var>();
    std::optional<int64_t> k = as_const_int(n->b);
    if (var && var->name == f && k && *k > 0 && *k % width == 0) {
      if (n->op == BinaryOp::Div) return part(BinaryOp::Div, *k, 0, n->b.type());
      if (n->op == BinaryOp::Mod) return part(BinaryOp::Mod, *k, 0, n->b.type()) + v;
    }
    // (f / K) % M: a digit of the part above the lanes, the same in every lane.
    if (n->op == BinaryOp::Mod && k && *k > 0)
      if (std::optional<int64_t> q = quotient_of_f(n->a)) return part(BinaryOp::Div, *q, *k, n->b.type());
    return IRMutator::visit(n, self);
  }
  Expr visit(const Var *n, const Expr &self) override {
    if (n->name == f) return g * make_int(width, g.type()) + v;  // a box of one dimension indexes by f itself
    return self;
  }
};

}  // namespace

// loops.h says what; the lets keep each index affine in v.
std::optional<Stmt> copy_in_lanes(const Program &program, const For &copy, const BoundsScope &outside, NameSet &names) {
  const LetStmt *let = copy.body.as<LetStmt>();
  const Store *store = let ? let->body.as<Store>() : nullptr;
  const Load *load = store ? store->value.as<Load>() : nullptr;
  const TensorDecl *source = load ? program.find_buffer(load->buffer) : nullptr;
  if (!source || (dtype_bytes(source->type) != 4 && dtype_bytes(source->type) != 2)) return std::nullopt;
  const int64_t width = 16 / dtype_bytes(source->type);
  if (copy.extent % width != 0) return std::nullopt;
  // Inside its buffer at every step, so that the pad (which a vector read cannot
  // have) never applies.
  BoundsScope scope = outside;
  scope.vars[copy.var] = Interval::of(0, copy.extent - 1);
  scope.vars[let->var] = bounds_of(let->value, scope);
  for (size_t d = 0; d < load->indices.size(); ++d)
    if (!bounds_of(load->indices[d], scope).within(0, source->shape[d] - 1)) return std::nullopt;
  const std::string g = names.fresh(let->var + "_g"), lane = names.fresh(copy.var + "_v");
  Lanes lanes;
  lanes.names = &names;
  lanes.width = width;
  lanes.f = let->var;
  lanes.v = Var::make(let->value.type(), lane);
  lanes.g = Var::make(let->value.type(), g);
  Stmt body = lanes.mutate(Stmt(std::make_shared<Store>(*store)));
  const Store *lane_store = body.as<Store>();
  const Load *lane_load = lane_store->value.as<Load>();
  Stmt vector = For::make(lane, width, ForKind::Vectorized,
                          Store::make(lane_store->buffer, lane_store->indices,
                                      Load::make(lane_load->type, lane_load->buffer, lane_load->indices)));
  std::string why;
  if (!vector_form(*vector.as<For>(), &why)) return std::nullopt;  // the lanes are not contiguous
  for (auto l = lanes.lets.rbegin(); l != lanes.lets.rend(); ++l) vector = LetStmt::make(l->first, l->second, vector);
  // g = i * N + w is f's value with 1 / W of the steps.
  return For::make(copy.var, copy.extent / width, ForKind::Unrolled, LetStmt::make(g, let->value, vector));
}

}  // namespace ks
