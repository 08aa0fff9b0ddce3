// transpose: a local buffer's two innermost dimensions swap places. What a
// work-item reads along the old outer dimension becomes contiguous, so a register
// tile's operand (a matmul's a panel, read down its rows) comes in vector loads
// and the group's reads of one row broadcast. Indices swap with the shape, so
// nothing computed changes.
#include <utility>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> transpose(const Program &program, const std::string &stage, const std::string &buffer,
                                 std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  struct Transpose : IRMutator {
    const std::string &buffer;
    std::optional<MemoryScope> found;  // once the allocation is met
    size_t rank = 0;
    explicit Transpose(const std::string &buffer) : buffer(buffer) {}
    std::vector<Expr> swapped(const std::vector<Expr> &indices) {
      std::vector<Expr> out;
      for (const Expr &e : indices) out.push_back(mutate(e));
      std::swap(out[out.size() - 1], out[out.size() - 2]);
      return out;
    }
    using IRMutator::visit;
    Stmt visit(const Allocate *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      found = n->scope;
      rank = n->shape.size();
      if (n->scope != MemoryScope::Local || rank < 2) return self;
      std::vector<int64_t> shape = n->shape;
      std::swap(shape[rank - 1], shape[rank - 2]);
      return Allocate::make(n->buffer, n->type, shape, n->scope, mutate(n->body));
    }
    Expr visit(const Load *n, const Expr &self) override {
      if (n->buffer != buffer || !found || rank < 2) return IRMutator::visit(n, self);
      return Load::make(n->type, n->buffer, swapped(n->indices), n->pad);
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      if (n->buffer != buffer || !found || rank < 2) return IRMutator::visit(n, self);
      return Store::make(n->buffer, swapped(n->indices), mutate(n->value));
    }
  } t(buffer);
  Program out = program;
  Kernel &kernel = out.kernels[where->kernel];
  kernel.body = t.mutate(kernel.body);
  if (!t.found) {
    *reason = "kernel " + kernel.name + " allocates no buffer named " + buffer;
    return std::nullopt;
  }
  if (*t.found != MemoryScope::Local || t.rank < 2) {
    *reason = buffer + " is " +
              (*t.found == MemoryScope::Local ? "one-dimensional"
                                              : "in " + std::string(memory_scope_name(*t.found)) + " memory") +
              "; only a local buffer of two or more dimensions is transposed";
    return std::nullopt;
  }
  // A vectorised access whose lanes ran along the old innermost dimension no
  // longer has the vector form: the verifier says so.
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

}  // namespace ks
