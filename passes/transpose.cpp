// transpose: a local buffer's two innermost dimensions swap places. What a
// work-item reads along the old outer dimension becomes contiguous, so a register
// tile's operand (a matmul's a panel, read down its rows) comes in vector loads
// and the group's reads of one row broadcast. Indices swap with the shape, so
// nothing computed changes. The two are the innermost of more than one element
// (innermost_dims): a convolution's box keeps dimensions of one element.
#include <utility>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {
namespace {

// A shape or an access's indices with the dimensions at a and b swapped.
template <typename T>
std::vector<T> swapped(std::vector<T> items, size_t a, size_t b) {
  std::swap(items[a], items[b]);
  return items;
}

}  // namespace

std::optional<Program> transpose(const Program &program, const std::string &stage, const std::string &buffer,
                                 std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  const Allocate *panel = local_panel(program.kernels[where->kernel], buffer,
                                      "only a local buffer of two or more dimensions is transposed", reason);
  if (!panel) return std::nullopt;
  const std::vector<size_t> dims = innermost_dims(panel->shape, 2);
  if (dims.size() < 2) {
    *reason = buffer + " has fewer than two dimensions of more than one element; there is nothing to transpose";
    return std::nullopt;
  }
  struct Transpose : IRMutator {
    const std::string &buffer;
    size_t a, b;
    Transpose(const std::string &buffer, size_t a, size_t b) : buffer(buffer), a(a), b(b) {}
    std::vector<Expr> swapped_indices(const std::vector<Expr> &indices) {
      std::vector<Expr> out;
      for (const Expr &e : indices) out.push_back(mutate(e));
      return swapped(out, a, b);
    }
    using IRMutator::visit;
    Stmt visit(const Allocate *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Allocate::make(n->buffer, n->type, swapped(n->shape, a, b), n->scope, mutate(n->body));
    }
    Expr visit(const Load *n, const Expr &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Load::make(n->type, n->buffer, swapped_indices(n->indices), n->pad);
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Store::make(n->buffer, swapped_indices(n->indices), mutate(n->value));
    }
  } t(buffer, dims[0], dims[1]);
  Program out = program;
  Kernel &kernel = out.kernels[where->kernel];
  kernel.body = t.mutate(kernel.body);
  // A vectorised access whose lanes ran along the old innermost dimension no
  // longer has the vector form: the verifier says so.
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

void draw_transpose(StepDraw &d) {
  if (!d.draw_panel(2)) return;
  d.next = transpose(d.program, d.p.stage, d.p.buffer, &d.reason);
}

}  // namespace

const PrimitiveInfo transpose_primitive = {{{ArgKind::StageBuffer}},
                                           "transpose c.a_s",
                                           "local buffer a_s's two innermost dimensions swapped",
                                           [](const Program &program, const Primitive &p, std::string *reason) {
                                             return transpose(program, p.stage, p.buffer, reason);
                                           },
                                           draw_transpose};

}  // namespace ks
