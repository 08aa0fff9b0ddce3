// transpose: a local buffer's two innermost dimensions swap places. What a
// work-item reads along the old outer dimension becomes contiguous, so a register
// tile's operand (a matmul's a panel, read down its rows) comes in vector loads
// and the group's reads of one row broadcast. Indices swap with the shape, so
// nothing computed changes.
#include <utility>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {
namespace {

// The two innermost of a shape or of an access's indices, swapped.
template <typename T>
std::vector<T> swapped(std::vector<T> items) {
  std::swap(items[items.size() - 1], items[items.size() - 2]);
  return items;
}

}  // namespace

std::optional<Program> transpose(const Program &program, const std::string &stage, const std::string &buffer,
                                 std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  if (!is_local_panel(program.kernels[where->kernel], buffer,
                      "only a local buffer of two or more dimensions is transposed", reason))
    return std::nullopt;
  struct Transpose : IRMutator {
    const std::string &buffer;
    explicit Transpose(const std::string &buffer) : buffer(buffer) {}
    std::vector<Expr> swapped_indices(const std::vector<Expr> &indices) {
      std::vector<Expr> out;
      for (const Expr &e : indices) out.push_back(mutate(e));
      return swapped(out);
    }
    using IRMutator::visit;
    Stmt visit(const Allocate *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Allocate::make(n->buffer, n->type, swapped(n->shape), n->scope, mutate(n->body));
    }
    Expr visit(const Load *n, const Expr &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Load::make(n->type, n->buffer, swapped_indices(n->indices), n->pad);
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Store::make(n->buffer, swapped_indices(n->indices), mutate(n->value));
    }
  } t(buffer);
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
  if (!d.draw_panel()) return;
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
