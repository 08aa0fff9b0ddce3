// pad: a local buffer's rows grow by a few unused elements, so that work-items
// reading down a column fall in different memory banks. Indices do not change;
// only the row stride the code generator derives from the shape does. The row is the
// innermost dimension of more than one element (innermost_dims).
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
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
  const Allocate *panel = local_panel(program.kernels[where->kernel], buffer,
                                      "only the rows of a local buffer of two or more dimensions are padded", reason);
  if (!panel) return std::nullopt;
  std::vector<int64_t> shape = panel->shape;
  const std::vector<size_t> row = innermost_dims(shape, 1);
  shape[row.empty() ? shape.size() - 1 : row[0]] += extra;
  struct Pad : IRMutator {
    const std::string &buffer;
    const std::vector<int64_t> &shape;
    Pad(const std::string &buffer, const std::vector<int64_t> &shape) : buffer(buffer), shape(shape) {}
    using IRMutator::visit;
    Stmt visit(const Allocate *n, const Stmt &self) override {
      if (n->buffer != buffer) return IRMutator::visit(n, self);
      return Allocate::make(n->buffer, n->type, shape, n->scope, n->body);
    }
  } p(buffer, shape);
  Program out = program;
  Kernel &kernel = out.kernels[where->kernel];
  kernel.body = p.mutate(kernel.body);
  // The padded buffer is this primitive's allocation, held to kMaxLocalBytes as every
  // primitive's is; the kernel's whole local memory is the device's to allow, checked
  // before launch (NVIDIA's OpenCL gives 48 KiB: attention's blocks of 128 rows, 38).
  if (int64_t bytes = shape_numel(shape) * dtype_bytes(panel->type); bytes > kMaxLocalBytes) {
    *reason = "padded, " + buffer + " would take " + std::to_string(bytes) + " bytes of local memory; at most " +
              std::to_string(kMaxLocalBytes);
    return std::nullopt;
  }
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

void draw_pad(StepDraw &d) {
  if (!d.draw_panel()) return;
  d.p.factors = {std::uniform_int_distribution<int64_t>(1, 3)(d.rng)};
  d.next = pad(d.program, d.p.stage, d.p.buffer, d.p.factors[0], &d.reason);
}

}  // namespace

const PrimitiveInfo pad_primitive = {{{ArgKind::StageBuffer}, {ArgKind::Factor}},
                                     "pad c.a_s 1",
                                     "local buffer a_s's rows one element longer",
                                     [](const Program &program, const Primitive &p, std::string *reason) {
                                       return pad(program, p.stage, p.buffer, p.factors[0], reason);
                                     },
                                     draw_pad};

}  // namespace ks
