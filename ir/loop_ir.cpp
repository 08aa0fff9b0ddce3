#include "ir/loop_ir.h"

#include <algorithm>
#include <set>

#include "ir/visitor.h"

namespace ks {

const TensorDecl *Program::find_buffer(const std::string &name) const {
  for (const TensorDecl &b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

int64_t LaunchShape::work_items() const {
  int64_t n = 1;
  for (int d = 0; d < 3; ++d) n *= groups[d] * local[d];
  return n;
}

namespace {
struct CollectBound : IRVisitor {
  LaunchShape shape;
  using IRVisitor::visit;
  void visit(const For *n) override {
    int dim = hardware_dim(n->kind);
    if (is_group(n->kind)) shape.groups[dim] = n->extent;
    if (is_local(n->kind)) shape.local[dim] = n->extent;
    IRVisitor::visit(n);
  }
};

struct CollectBuffers : IRVisitor {
  std::set<std::string> used, read, written, allocated;
  using IRVisitor::visit;
  void visit(const Load *n) override {
    used.insert(n->buffer);
    read.insert(n->buffer);
    IRVisitor::visit(n);
  }
  void visit(const Store *n) override {
    used.insert(n->buffer);
    written.insert(n->buffer);
    IRVisitor::visit(n);
  }
  void visit(const Allocate *n) override {
    allocated.insert(n->buffer);
    IRVisitor::visit(n);
  }
};
}  // namespace

LaunchShape launch_shape(const Kernel &kernel) {
  CollectBound collect;
  collect.dispatch(kernel.body);
  return collect.shape;
}

std::vector<std::string> kernel_buffers(const Program &program, const Kernel &kernel) {
  CollectBuffers collect;
  collect.dispatch(kernel.body);
  std::vector<std::string> out;
  for (const TensorDecl &b : program.buffers)
    if (collect.used.count(b.name) && !collect.allocated.count(b.name)) out.push_back(b.name);
  return out;
}

int64_t local_memory_bytes(const Kernel &kernel) {
  struct Sum : IRVisitor {
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const Allocate *n) override {
      if (n->scope == MemoryScope::Local) bytes += shape_numel(n->shape) * dtype_bytes(n->type);
      IRVisitor::visit(n);
    }
  } sum;
  sum.dispatch(kernel.body);
  return sum.bytes;
}

int64_t loop_iterations(const Kernel &kernel) {
  struct Count : IRVisitor {
    int64_t total = 0, enclosing = 1;  // iterations of the loops around this point
    using IRVisitor::visit;
    void visit(const For *n) override {
      if (n->kind != ForKind::Serial && n->kind != ForKind::Unrolled) return IRVisitor::visit(n);
      int64_t outer = enclosing;
      enclosing = outer * n->extent;
      total += enclosing;
      IRVisitor::visit(n);
      enclosing = outer;
    }
  } count;
  count.dispatch(kernel.body);
  return count.total;
}

int64_t nested_iterations(const Stmt &s, bool unrolled_only) {
  struct Walk : IRVisitor {
    bool unrolled_only;
    int64_t current = 1, best = 1;
    explicit Walk(bool unrolled_only) : unrolled_only(unrolled_only) {}
    using IRVisitor::visit;
    void visit(const For *n) override {
      int64_t saved = current;
      if (!unrolled_only || n->kind == ForKind::Unrolled) current *= n->extent;
      best = std::max(best, current);
      IRVisitor::visit(n);
      current = saved;
    }
  } walk(unrolled_only);
  walk.dispatch(s);
  return walk.best;
}

int64_t unrolled_copies(const Program &program) {
  int64_t most = 1;
  for (const Kernel &k : program.kernels) most = std::max(most, nested_iterations(k.body, true));
  return most;
}

BufferUse buffers_used(const Stmt &s) {
  CollectBuffers collect;
  collect.dispatch(s);
  return {collect.read, collect.written};
}

namespace {
std::vector<std::string> not_allocated(const std::set<std::string> &names, const std::set<std::string> &allocated) {
  std::vector<std::string> out;
  for (const std::string &name : names)
    if (!allocated.count(name)) out.push_back(name);
  return out;
}
}  // namespace

std::vector<std::string> kernel_read_buffers(const Kernel &kernel) {
  CollectBuffers collect;
  collect.dispatch(kernel.body);
  return not_allocated(collect.read, collect.allocated);
}

std::vector<std::string> kernel_written_buffers(const Kernel &kernel) {
  CollectBuffers collect;
  collect.dispatch(kernel.body);
  return not_allocated(collect.written, collect.allocated);
}

}  // namespace ks
