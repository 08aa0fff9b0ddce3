// A program's kernels and a kernel body's plan against the device's limits.
#include "evolve/evaluation/device_limits.h"

#include <array>
#include <map>
#include <set>
#include <string>

#include "codegen/c_printer.h"
#include "ir/diagnostic.h"
#include "ir/matrix_tile.h"
#include "ir/visitor.h"
#include "passes/loops.h"

namespace ks {

namespace {

// A work-group's shape against the device's limits: work-items in all and along each
// dimension. Kernels of programs and of kernel bodies' plans alike.
void check_group_shape(const std::string &kernel, const std::array<int64_t, 3> &local,
                       const runtime::DeviceInfo &device) {
  const int64_t items = local[0] * local[1] * local[2];
  if (items > static_cast<int64_t>(device.max_work_group_size))
    throw UserError("error: kernel '" + kernel + "' needs " + std::to_string(items) + " work-items per group; " +
                    device.name + " allows " + std::to_string(device.max_work_group_size));
  for (int d = 0; d < 3; ++d)
    if (local[d] > static_cast<int64_t>(device.max_work_item_sizes[d]))
      throw UserError("error: kernel '" + kernel + "' needs " + std::to_string(local[d]) + " work-items along local." +
                      "xyz"[d] + "; " + device.name + " allows " + std::to_string(device.max_work_item_sizes[d]));
}

// The largest private array of the kernel that a serial loop indexes (the index
// changes at run time), with its name.
std::pair<std::string, int64_t> largest_indexed_private(const Kernel &kernel) {
  struct Walk : IRVisitor {
    std::map<std::string, int64_t> private_elements;  // allocated in private memory
    std::set<std::string> changing;                   // serial loops' variables, lets made of them
    std::pair<std::string, int64_t> largest{"", 0};
    using IRVisitor::visit;
    void visit(const Allocate *n) override {
      if (n->scope == MemoryScope::Private) private_elements[n->buffer] = shape_numel(n->shape);
      IRVisitor::visit(n);
    }
    void visit(const For *n) override {
      // Unrolled and vectorised loops print unrolled (constant indices); bound ones are
      // a work-item's own; a loop of one iteration is a constant.
      if (n->kind == ForKind::Serial && n->extent > 1) changing.insert(n->var);
      IRVisitor::visit(n);
    }
    void visit(const LetStmt *n) override {
      if (mentions(n->value, changing)) changing.insert(n->var);
      IRVisitor::visit(n);
    }
    void access(const std::string &buffer, const std::vector<Expr> &indices) {
      auto it = private_elements.find(buffer);
      if (it == private_elements.end() || it->second <= largest.second) return;
      for (const Expr &i : indices)
        if (mentions(i, changing)) largest = {buffer, it->second};
    }
    void visit(const Load *n) override {
      access(n->buffer, n->indices);
      IRVisitor::visit(n);
    }
    void visit(const Store *n) override {
      access(n->buffer, n->indices);
      IRVisitor::visit(n);
    }
  } walk;
  walk.dispatch(kernel.body);
  return walk.largest;
}

}  // namespace

// A kernel the device cannot launch is the schedule's error, said before launching.
std::string async_copies_missing(const runtime::DeviceInfo &device) {
  return device.selector() + " (" + device.name + ", " + device.platform + ") does not offer";
}

void check_device_limits(const Program &program, const runtime::DeviceInfo &device) {
  for (const Kernel &kernel : program.kernels) {
    LaunchShape shape = launch_shape(kernel);
    check_group_shape(kernel.name, shape.local, device);
    for (int d = 0; d < 3; ++d) {
      if (static_cast<uint64_t>(shape.groups[d]) > device.max_group_counts[d])
        throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(shape.groups[d]) +
                        " work-groups along group." + "xyz"[d] + "; " + device.name + " dispatches at most " +
                        std::to_string(device.max_group_counts[d]) + " (bind a longer loop to another dimension)");
    }
    int64_t iterations = loop_iterations(kernel);
    if (device.max_loop_iterations && static_cast<uint64_t>(iterations) > device.max_loop_iterations)
      throw UserError("error: kernel '" + kernel.name + "' runs " + std::to_string(iterations) +
                      " loop iterations per work-item; " + device.name + " ends a kernel's loops after " +
                      std::to_string(device.max_loop_iterations) +
                      " in all, silently (bind more loops to work-items or groups, or use smaller sizes)");
    if (device.max_indexed_private_elements) {
      const auto [array, elements] = largest_indexed_private(kernel);
      if (static_cast<uint64_t>(elements) > device.max_indexed_private_elements)
        throw UserError("error: kernel '" + kernel.name + "' indexes its private array " + array + " (" +
                        std::to_string(elements) + " elements) in a loop; " + device.name + " computes one of more " +
                        "than " + std::to_string(device.max_indexed_private_elements) +
                        " elements wrong that way (Mesa 22.3's lavapipe): unroll the loop, or keep the tile smaller");
    }
    const int64_t items = shape.local[0] * shape.local[1] * shape.local[2];
    if (device.barriers_need_wide_groups && shape.local[0] == 1 && items > 2 && has_barrier(kernel.body))
      throw UserError("error: kernel '" + kernel.name + "' has a barrier in work-groups of 1 x " +
                      std::to_string(shape.local[1]) + " x " + std::to_string(shape.local[2]) + " work-items; " +
                      device.name + " (PoCL " + device.driver_version +
                      ") hangs on some such kernels: bind a loop to local.x");
    int64_t local = local_memory_bytes(kernel);
    // Cooperative matrices pass their sums through local memory (codegen/glsl.cpp).
    if (device.cooperative_matrices() && has_matrix_loop(kernel.body)) local += cooperative_scratch_floats(items) * 4;
    if (local > static_cast<int64_t>(device.local_memory_bytes))
      throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(local) +
                      " bytes of local memory per group; " + device.name + " has " +
                      std::to_string(device.local_memory_bytes));
  }
}

void check_plan_limits(const frontend::ResolvedPlan &plan, const runtime::DeviceInfo &device) {
  for (const frontend::ResolvedLaunch &l : plan.launches) check_group_shape(l.kernel, l.local, device);
  for (const TensorDecl &t : plan.scratch)
    if (device.max_allocation_bytes && static_cast<uint64_t>(t.bytes()) > device.max_allocation_bytes)
      throw UserError("error: scratch buffer '" + t.name + "' takes " + std::to_string(t.bytes()) + " bytes; " +
                      device.name + " allocates at most " + std::to_string(device.max_allocation_bytes));
}

}  // namespace ks
