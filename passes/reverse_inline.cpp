// reverse_inline: an elementwise stage is computed where its producer stores, so
// that an epilogue (bias, activation, scaling) runs in the contraction's kernel, on
// its accumulators as they are written back (TVM's reverse_compute_inline).
//
// Algorithm, for `reverse_inline y` where y's block is `y[v0, ..] = body`:
//  1. y is elementwise (one store, distinct variables as indices, alone in its
//     kernel) and body reads exactly one temporary, P, and only at [v0, ..]; P has
//     y's shape.
//  2. Legality: P is stored only in its producer's kernel K, read only by y's kernel,
//     and K does not read it; no kernel from K up to y's writes what body reads
//     besides P, and none between them touches y. Then computing y in K reads the
//     same values, and y is written before anything reads it.
//  3. In K every store `P[i0, ..] = value` becomes `y[i0, ..] = body` with vk := ik
//     and P[v0, ..] := value: the same element of y, from the same value of P.
//  4. y's kernel and P's buffer are removed; K's blocks read what they read and what
//     body reads besides P, and write y where they wrote P.
#include <map>
#include <set>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/regions.h"

namespace ks {

namespace {

// Loads of the producer replaced by the value it stores.
struct ProducerValue : IRMutator {
  const std::string &producer;
  const Expr &value;
  ProducerValue(const std::string &producer, const Expr &value) : producer(producer), value(value) {}
  using IRMutator::visit;
  Expr visit(const Load *n, const Expr &self) override {
    return n->buffer == producer ? cast_to(n->type, value) : IRMutator::visit(n, self);
  }
};

// Every store to the producer becomes the consumer's store there: y's body at the
// store's indices, with the stored value in place of the producer's loads.
struct StoreConsumer : IRMutator {
  const std::string &producer, &consumer;
  const std::vector<std::string> &vars;  // v0, ..
  const Store &store;                    // y's own: y[v0, ..] = body
  StoreConsumer(const std::string &producer, const std::string &consumer, const std::vector<std::string> &vars,
                const Store &store)
      : producer(producer), consumer(consumer), vars(vars), store(store) {}
  using IRMutator::visit;
  Stmt visit(const Store *n, const Stmt &self) override {
    if (n->buffer != producer) return IRMutator::visit(n, self);
    std::map<std::string, Expr> values;
    for (size_t d = 0; d < vars.size(); ++d) values[vars[d]] = cast_to(store.indices[d].type(), n->indices[d]);
    return Store::make(consumer, n->indices, ProducerValue(producer, n->value).mutate(substitute(store.value, values)));
  }
};

// Whether P's loads in body are each at exactly [v0, ..].
bool pointwise(const Expr &body, const std::string &producer, const std::vector<std::string> &vars) {
  struct Loads : IRVisitor {
    const std::string &producer;
    const std::vector<std::string> &vars;
    bool ok = true;
    Loads(const std::string &producer, const std::vector<std::string> &vars) : producer(producer), vars(vars) {}
    using IRVisitor::visit;
    void visit(const Load *n) override {
      if (n->buffer == producer) {
        bool same = !n->pad && n->indices.size() == vars.size();
        for (size_t d = 0; same && d < vars.size(); ++d) {
          const Var *v = n->indices[d].as<Var>();
          same = v && v->name == vars[d];
        }
        ok = ok && same;
      }
      IRVisitor::visit(n);
    }
  } loads(producer, vars);
  loads.dispatch(body);
  return loads.ok;
}

}  // namespace

std::optional<Program> reverse_inline(const Program &program, const std::string &stage, std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  const size_t consumer_kernel = where->kernel;
  std::vector<std::string> vars;
  const Store *store = elementwise_store(program, *where, stage, &vars, reason);
  if (!store) return std::nullopt;
  // The one temporary it reads (its kernel holds its store alone): its producer.
  const std::set<std::string> reads = buffers_used(program.kernels[consumer_kernel].body).read;
  std::vector<std::string> temps;
  for (const std::string &b : reads)
    if (const TensorDecl *t = program.find_buffer(b); t && t->role == TensorRole::Temp) temps.push_back(b);
  if (temps.size() != 1) {
    std::string names;
    for (const std::string &t : temps) names += (names.empty() ? "" : ", ") + t;
    *reason = stage + (temps.empty() ? " reads no temporary" : " reads more than one temporary (" + names + ")") +
              "; reverse_inline computes it where the one temporary it reads is stored";
    return std::nullopt;
  }
  const std::string producer = temps[0];
  const TensorDecl *p = program.find_buffer(producer);
  const TensorDecl *y = program.find_buffer(stage);
  if (!y || p->shape != y->shape) {
    *reason = producer + " and " + stage + " differ in shape";
    return std::nullopt;
  }
  if (!pointwise(store->value, producer, vars)) {
    *reason = stage + " reads " + producer + " at other elements than its own";
    return std::nullopt;
  }
  // Where the producer is stored, and who else touches it.
  std::vector<BufferUse> uses;
  for (const Kernel &k : program.kernels) uses.push_back(buffers_used(k.body));
  std::optional<size_t> producer_kernel;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const BufferUse &t = uses[k];
    if (t.written.count(producer)) {
      if (producer_kernel) {
        *reason = producer + " is stored by more than one kernel";
        return std::nullopt;
      }
      producer_kernel = k;
    }
    if (k != consumer_kernel && t.read.count(producer)) {
      *reason = producer + " is read by kernel " + program.kernels[k].name + " too, not by " + stage + " alone";
      return std::nullopt;
    }
  }
  if (!producer_kernel || *producer_kernel > consumer_kernel) {
    *reason = producer + " is not stored by a kernel before " + stage + "'s";
    return std::nullopt;
  }
  for (size_t k = *producer_kernel; k < consumer_kernel; ++k) {
    const BufferUse &t = uses[k];
    for (const std::string &b : reads)
      if (b != producer && t.written.count(b)) {
        *reason = "kernel " + program.kernels[k].name + " writes " + b + ", which " + stage + " reads after it";
        return std::nullopt;
      }
    if (t.read.count(stage) || t.written.count(stage)) {
      *reason = "kernel " + program.kernels[k].name + " uses " + stage + " before " + stage + "'s kernel writes it";
      return std::nullopt;
    }
  }
  Program out;
  out.name = program.name;
  for (const TensorDecl &b : program.buffers)
    if (b.name != producer) out.buffers.push_back(b);
  // In the producer's kernel its blocks read what y reads too, and write y where
  // they wrote P (the same indices).
  struct Regions : IRMutator {
    const Program &program;
    const std::string &producer, &consumer;
    Regions(const Program &program, const std::string &producer, const std::string &consumer)
        : program(program), producer(producer), consumer(consumer) {}
    using IRMutator::visit;
    Stmt visit(const Block *n, const Stmt &self) override {
      Stmt body = mutate(n->body);
      std::vector<Region> writes = n->writes;
      for (Region &r : writes)
        if (r.buffer == producer) r.buffer = consumer;
      return Block::make(n->stage, read_regions(program, body), writes, body);
    }
  } regions(out, producer, stage);
  StoreConsumer rewrite(producer, stage, vars, *store);
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    if (k == consumer_kernel) continue;
    Kernel kernel = program.kernels[k];
    if (k == *producer_kernel) kernel.body = regions.mutate(rewrite.mutate(kernel.body));
    out.kernels.push_back(kernel);
  }
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// An elementwise stage computed where the temporary it reads is stored.
void draw_reverse_inline(StepDraw &d) { d.next = reverse_inline(d.program, d.p.stage, &d.reason); }

}  // namespace

// Drawn only where asked for (draw_cases 0): the property tests' random schedules
// stay the lists known to compile on PoCL 3.1 (a draw with it among the any-kind
// cases gave matvec a schedule PoCL did not finish in 10 minutes); the sketches'
// device tests and the schedule fuzzer check it.
const PrimitiveInfo reverse_inline_primitive = {{{ArgKind::Stage}},
                                                "reverse_inline y",
                                                "y computed where the temporary it reads is stored",
                                                [](const Program &program, const Primitive &p, std::string *reason) {
                                                  return reverse_inline(program, p.stage, reason);
                                                },
                                                draw_reverse_inline,
                                                0};

}  // namespace ks
