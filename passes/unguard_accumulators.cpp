// unguard-accumulators: see the header for when a guard goes. One walk finds the
// guarded stores into private buffers and every read of those buffers; a guard is
// dropped where all of its buffer's reads agree with it.
#include "passes/unguard_accumulators.h"

#include <set>

#include "ir/bounds.h"
#include "ir/printer.h"
#include "ir/visitor.h"

namespace ks {

namespace {

// A read of a private buffer: the guard directly around its store (lets
// substituted), if any.
struct Read {
  std::string buffer;
  std::vector<Expr> indices;
  Expr guard;
  const IfThenElse *inside = nullptr;  // the guarded store it belongs to
  bool guard_fixed = false;            // its guard's other variables fixed for the buffer's life
};

// A guarded store into a private buffer whose guard might go.
struct Candidate {
  const IfThenElse *node;
  std::string buffer;
  std::vector<std::string> index_vars;
  Expr guard;
  bool ok;                         // everything decidable where it stands holds
  std::vector<const Load *> pads;  // float loads that might leave their buffers: padded when it goes
};

// Loads of the given buffers within an expression.
class LoadsOf : public IRVisitor {
 public:
  explicit LoadsOf(const std::set<std::string> &buffers) : buffers_(buffers) {}
  std::vector<const Load *> loads;
  using IRVisitor::visit;
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    if (buffers_.count(n->buffer)) loads.push_back(n);
  }

 private:
  const std::set<std::string> &buffers_;
};

// Whether an expression stays in bounds and divides no integer by a loaded value;
// with pad_reads, a float load that might leave its buffer is listed (to read 0 there)
// rather than unsafe.
class SafeWithoutGuard : public IRVisitor {
 public:
  SafeWithoutGuard(const std::map<std::string, std::vector<int64_t>> &shapes, const BoundsScope &scope, bool pad_reads)
      : shapes_(shapes), scope_(scope), pad_reads_(pad_reads) {}
  bool safe = true;
  std::vector<const Load *> pads;
  using IRVisitor::visit;
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    if (n->pad || in_bounds(n->buffer, n->indices)) return;
    if (pad_reads_ && is_float(n->type))
      pads.push_back(n);
    else
      safe = false;
  }
  void visit(const Binary *n) override {
    IRVisitor::visit(n);
    if ((n->op == BinaryOp::Div || n->op == BinaryOp::Mod) && is_int(n->type) && !n->b.as<IntImm>()) safe = false;
  }
  bool in_bounds(const std::string &buffer, const std::vector<Expr> &indices) const {
    auto it = shapes_.find(buffer);
    if (it == shapes_.end() || it->second.size() != indices.size()) return false;
    for (size_t d = 0; d < indices.size(); ++d)
      if (!bounds_of(indices[d], scope_).within(0, it->second[d] - 1)) return false;
    return true;
  }

 private:
  const std::map<std::string, std::vector<int64_t>> &shapes_;
  const BoundsScope &scope_;
  const bool pad_reads_;
};

// The store at the end of a chain of guards without else and lets, starting at n.
const Store *guarded_store(const IfThenElse *n) {
  Stmt s = n->then_case;
  if (n->else_case.defined()) return nullptr;
  while (true) {
    if (const Store *store = s.as<Store>()) return store;
    if (const LetStmt *let = s.as<LetStmt>())
      s = let->body;
    else if (const IfThenElse *branch = s.as<IfThenElse>(); branch && !branch->else_case.defined())
      s = branch->then_case;
    else
      return nullptr;
  }
}

// The chain below a dropped guard with its guards gone, its lets kept.
Stmt unguarded(const Stmt &s) {
  if (const LetStmt *let = s.as<LetStmt>()) return LetStmt::make(let->var, let->value, unguarded(let->body));
  if (const IfThenElse *branch = s.as<IfThenElse>()) return unguarded(branch->then_case);
  return s;
}

class Finder : public IRVisitor {
 public:
  Finder(const Program &program, bool pad_reads) : pad_reads_(pad_reads) {
    for (const TensorDecl &b : program.buffers) shapes_[b.name] = b.shape;
  }
  std::vector<Candidate> candidates;
  std::vector<Read> reads;

  using IRVisitor::visit;

 protected:
  void visit(const For *n) override {
    bind(n->var, Interval::of(0, n->extent - 1), Expr());
    dispatch(n->body);
    unbind(n->var);
  }
  void visit(const LetStmt *n) override {
    record_reads(n->value, Expr(), nullptr);
    bind(n->var, bounds_of(n->value, scope_), substitute(n->value, lets_));
    dispatch(n->body);
    unbind(n->var);
  }
  void visit(const Allocate *n) override {
    shapes_[n->buffer] = n->shape;
    if (n->scope == MemoryScope::Private) {
      private_.insert(n->buffer);
      allocated_at_[n->buffer] = sequence_;
    }
    dispatch(n->body);
    private_.erase(n->buffer);
    shapes_.erase(n->buffer);
  }
  void visit(const Store *n) override { record_store(n, Expr(), nullptr); }
  void visit(const IfThenElse *n) override {
    record_reads(n->condition, Expr(), nullptr);
    if (const Store *store = guarded_store(n)) {
      // The chain's lets bound and its conditions joined, outermost first.
      std::vector<std::string> bound;
      Expr guard = substitute(n->condition, lets_);
      for (Stmt s = n->then_case; !s.as<Store>();) {
        if (const LetStmt *let = s.as<LetStmt>()) {
          record_reads(let->value, Expr(), nullptr);
          bind(let->var, bounds_of(let->value, scope_), substitute(let->value, lets_));
          bound.push_back(let->var);
          s = let->body;
        } else {
          const IfThenElse *branch = s.as<IfThenElse>();
          const Expr condition = substitute(branch->condition, lets_);
          guard = Binary::make(BinaryOp::And, guard, condition);
          s = branch->then_case;
        }
      }
      if (private_.count(store->buffer)) candidates.push_back(candidate(n, *store, guard));
      record_store(store, guard, n);
      for (const std::string &var : bound) unbind(var);
      return;
    }
    BoundsScope outside = scope_;
    refine_with_condition(n->condition, &scope_);
    dispatch(n->then_case);
    scope_ = outside;
    dispatch(n->else_case);
  }

 private:
  void bind(const std::string &var, Interval range, Expr value) {
    scope_.vars[var] = range;
    if (value.defined()) lets_[var] = value;  // a let's value; a loop's variable stays itself
    bound_at_[var] = ++sequence_;
  }
  void unbind(const std::string &var) {
    scope_.vars.erase(var);
    lets_.erase(var);
    bound_at_.erase(var);
  }

  // Whether var holds one value for the whole life of buffer (bound before it).
  bool fixed_for(const std::string &var, const std::string &buffer) const {
    auto it = bound_at_.find(var);
    return it != bound_at_.end() && it->second <= allocated_at_.at(buffer);
  }

  void record_reads(const Expr &e, const Expr &guard, const IfThenElse *inside) {
    LoadsOf finder(private_);
    finder.dispatch(e);
    for (const Load *load : finder.loads) {
      std::vector<Expr> indices;
      std::set<std::string> own;
      for (const Expr &i : load->indices) {
        indices.push_back(substitute(i, lets_));
        if (const Var *v = indices.back().as<Var>()) own.insert(v->name);
      }
      bool fixed = guard.defined();
      if (fixed)
        for (const std::string &var : vars_in(guard)) fixed = fixed && (own.count(var) || fixed_for(var, load->buffer));
      reads.push_back(Read{load->buffer, indices, guard, inside, fixed});
    }
  }
  void record_store(const Store *n, const Expr &guard, const IfThenElse *inside) {
    for (const Expr &i : n->indices) record_reads(i, guard, inside);
    record_reads(n->value, guard, inside);
  }

  Candidate candidate(const IfThenElse *node, const Store &store, const Expr &guard) {
    Candidate c{node, store.buffer, {}, guard, true, {}};
    std::set<std::string> indices;
    for (const Expr &i : store.indices) {
      const Var *v = substitute(i, lets_).as<Var>();
      if (!v || !indices.insert(v->name).second || fixed_for(v->name, store.buffer)) c.ok = false;
      if (v) c.index_vars.push_back(v->name);
    }
    for (const std::string &var : vars_in(guard))
      if (!indices.count(var) && !fixed_for(var, store.buffer)) c.ok = false;
    SafeWithoutGuard safe(shapes_, scope_, pad_reads_);
    safe.dispatch(store.value);
    for (const Expr &i : store.indices) safe.dispatch(i);
    c.ok = c.ok && safe.safe && safe.in_bounds(store.buffer, store.indices);
    c.pads = safe.pads;
    return c;
  }

  std::map<std::string, std::vector<int64_t>> shapes_;
  std::map<std::string, Expr> lets_;
  std::map<std::string, int64_t> bound_at_, allocated_at_;
  std::set<std::string> private_;
  BoundsScope scope_;
  int64_t sequence_ = 0;
  const bool pad_reads_;
};

// A read agrees with a candidate where it is the candidate's own, or sits under the
// candidate's guard with its indices renamed to the candidate's.
bool agrees(const Read &r, const Candidate &c) {
  if (r.inside == c.node) return true;
  if (!r.guard_fixed || r.indices.size() != c.index_vars.size()) return false;
  std::map<std::string, Expr> rename;
  std::set<std::string> indices;
  for (size_t d = 0; d < r.indices.size(); ++d) {
    const Var *v = r.indices[d].as<Var>();
    if (!v || !indices.insert(v->name).second) return false;
    rename[v->name] = Var::make(v->type, c.index_vars[d]);
  }
  return print_expr(substitute(r.guard, rename)) == print_expr(c.guard);
}

// The given loads read 0 outside their buffers.
class PadLoads : public IRMutator {
 public:
  explicit PadLoads(const std::vector<const Load *> &loads) : loads_(loads.begin(), loads.end()) {}
  using IRMutator::visit;

 protected:
  Expr visit(const Load *n, const Expr &self) override {
    if (!loads_.count(n)) return IRMutator::visit(n, self);
    return Load::make(n->type, n->buffer, n->indices, 0.0);
  }

 private:
  const std::set<const Load *> loads_;
};

// Drops each guard named, its listed loads padded.
class Unguard : public IRMutator {
 public:
  explicit Unguard(const std::map<const IfThenElse *, std::vector<const Load *>> &drop) : drop_(drop) {}
  using IRMutator::visit;

 protected:
  Stmt visit(const IfThenElse *n, const Stmt &self) override {
    auto it = drop_.find(n);
    if (it == drop_.end()) return IRMutator::visit(n, self);
    const Stmt body = unguarded(n->then_case);
    return it->second.empty() ? body : PadLoads(it->second).mutate(body);
  }

 private:
  const std::map<const IfThenElse *, std::vector<const Load *>> &drop_;
};

}  // namespace

Program unguard_accumulators(const Program &input, bool pad_reads) {
  Program program = input;
  for (Kernel &kernel : program.kernels) {
    Finder finder(program, pad_reads);
    finder.dispatch(kernel.body);
    std::map<const IfThenElse *, std::vector<const Load *>> drop;
    for (const Candidate &c : finder.candidates) {
      bool ok = c.ok;
      for (const Read &r : finder.reads) ok = ok && (r.buffer != c.buffer || agrees(r, c));
      if (ok) drop[c.node] = c.pads;
    }
    if (!drop.empty()) kernel.body = Unguard(drop).mutate(kernel.body);
  }
  return program;
}

}  // namespace ks
