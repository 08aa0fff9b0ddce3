// pad: a local buffer's rows grow by a few unused elements, so that work-items
// reading down a column fall in different memory banks. Indices do not change;
// only the row stride the code generator derives from the shape does.
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> pad(const Program &program, const std::string &stage, const std::string &buffer, int64_t extra,
                           std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  if (extra < 1 || extra > kMaxPad) {
    *reason = "padding must be 1 to " + std::to_string(kMaxPad) + " elements, not " + std::to_string(extra);
    return std::nullopt;
  }
  if (!is_local_panel(program.kernels[where->kernel], buffer,
                      "only the rows of a local buffer of two or more dimensions are padded", reason))
    return std::nullopt;
  struct Pad : IRMutator {
    const std::string &buffer;
    int64_t extra;
    Pad(const std::string &buffer, int64_t extra) : buffer(buffer), extra(extra) {}
    using IRMutator::visit;
    Stmt visit(const Allocate *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      std::vector<int64_t> shape = n->shape;
      shape.back() += extra;
      return Allocate::make(n->buffer, n->type, shape, n->scope, n->body);
    }
  } p(buffer, extra);
  Program out = program;
  Kernel &kernel = out.kernels[where->kernel];
  kernel.body = p.mutate(kernel.body);
  if (local_memory_bytes(kernel) > kMaxLocalBytes) {
    *reason = "the padded local memory of kernel " + kernel.name + " would exceed " + std::to_string(kMaxLocalBytes) +
              " bytes";
    return std::nullopt;
  }
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

}  // namespace ks
