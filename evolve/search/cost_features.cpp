#include "evolve/search/cost_features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/affine.h"
#include "ir/visitor.h"

namespace ks {

const std::vector<std::string> &cost_feature_names() {
  static const std::vector<std::string> names = {
      "kernels",                  // launches
      "log_work_items",           // over all launches
      "log_groups",               // over all launches
      "log_group_size_max",       // the largest work-group
      "log_group_size_min",       // the smallest: one small group starves a launch
      "small_group_share",        // of the work-items, those in groups of fewer than 32 (a warp)
      "log_flops",                // float arithmetic and builtin calls executed
      "log_flops_per_item",       // the same per work-item
      "log_global_loads",         // element reads of device memory executed
      "log_global_stores",        // element writes of device memory executed
      "log_local_accesses",       // reads and writes of local memory executed
      "log_private_accesses",     // reads and writes of private arrays (registers) executed
      "log_unique_global_bytes",  // bytes of the device buffers the kernels touch, each once per kernel
      "log_global_reuse",         // global accesses per unique element: what caches must absorb
      "log_intensity",            // flops per global access
      "coalesced_share",          // of the global accesses, those with stride 0 or 1 along the lane (local.x)
      "strided_share",            // those with a larger or unknown stride along it
      "log_local_memory_bytes",   // per group, the largest
      "log_barriers_per_item",    // barriers a work-item passes
      "max_loop_depth",           // serial, unrolled and vectorised loops nested in a work-item
      "log_unrolled_copies",      // the largest product of unrolled extents
      "max_vector_width",         // lanes of the widest vectorised loop
      "log_item_iterations",      // loop iterations of one work-item, the largest over kernels
      "register_load_share",      // of the global loads, those stored straight into private arrays
                                  // (prefetched panels, private caches): issued ahead of their use
      "matrix_flop_share",        // of the flops, those in matrix loops (tensorize: mma.sync)
  };
  return names;
}

namespace {

double log2p(double x) { return std::log2(1 + std::max(0.0, x)); }

bool is_arithmetic(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod:
    case BinaryOp::Min:
    case BinaryOp::Max: return true;
    default: return false;
  }
}

// Counts of one kernel, each weighted by the trip counts of the loops around it.
struct KernelWalk : IRVisitor {
  const Program &program;
  std::string lane;  // the variable that differs between neighbouring work-items
  double trips = 1;
  double flops = 0, global_loads = 0, global_stores = 0, local = 0, registers = 0, register_loads = 0;
  double matrix_flops = 0;
  int in_matrix = 0;  // matrix loops around
  double coalesced = 0, strided = 0, barriers = 0;
  int depth = 0, max_depth = 0, max_vector = 1;
  int64_t unrolled = 1, max_unrolled = 1;
  std::set<std::string> touched;
  std::map<std::string, Expr> lets;
  std::map<std::string, MemoryScope> allocated;

  KernelWalk(const Program &program, std::string lane) : program(program), lane(std::move(lane)) {}

  using IRVisitor::visit;
  void visit(const For *n) override {
    const bool in_item = !is_group(n->kind) && !is_local(n->kind);
    const double saved_trips = trips;
    const int64_t saved_unrolled = unrolled;
    trips *= static_cast<double>(n->extent);
    depth += in_item;
    max_depth = std::max(max_depth, depth);
    if (n->kind == ForKind::Unrolled) unrolled *= n->extent, max_unrolled = std::max(max_unrolled, unrolled);
    if (n->kind == ForKind::Vectorized) max_vector = std::max(max_vector, static_cast<int>(n->extent));
    in_matrix += n->kind == ForKind::Matrix;
    IRVisitor::visit(n);
    in_matrix -= n->kind == ForKind::Matrix;
    depth -= in_item;
    trips = saved_trips;
    unrolled = saved_unrolled;
  }
  void visit(const LetStmt *n) override {
    dispatch(n->value);
    std::optional<Expr> saved;
    if (auto it = lets.find(n->var); it != lets.end()) saved = it->second;
    lets[n->var] = n->value;
    dispatch(n->body);
    if (saved)
      lets[n->var] = *saved;
    else
      lets.erase(n->var);
  }
  void visit(const Allocate *n) override {
    allocated[n->buffer] = n->scope;
    IRVisitor::visit(n);
    allocated.erase(n->buffer);
  }
  void visit(const Barrier *n) override {
    barriers += trips;
    IRVisitor::visit(n);
  }
  void visit(const Binary *n) override {
    if (is_float(n->type) && is_arithmetic(n->op)) {
      flops += trips;
      if (in_matrix) matrix_flops += trips;
    }
    IRVisitor::visit(n);
  }
  void visit(const Call *n) override {
    if (is_float(n->type)) flops += trips;
    IRVisitor::visit(n);
  }
  void visit(const Load *n) override {
    access(n->buffer, n->indices, false);
    IRVisitor::visit(n);
  }
  void visit(const Store *n) override {
    access(n->buffer, n->indices, true);
    if (auto it = allocated.find(n->buffer); it != allocated.end() && it->second == MemoryScope::Private)
      if (const Load *l = n->value.as<Load>(); l && program.find_buffer(l->buffer)) register_loads += trips;
    IRVisitor::visit(n);
  }

  void access(const std::string &buffer, const std::vector<Expr> &indices, bool store) {
    if (auto it = allocated.find(buffer); it != allocated.end()) {
      (it->second == MemoryScope::Local ? local : registers) += trips;
      return;
    }
    const TensorDecl *decl = program.find_buffer(buffer);
    if (!decl) return;
    (store ? global_stores : global_loads) += trips;
    touched.insert(buffer);
    if (lane.empty()) return;
    // The stride between the first two work-items of the lane, every other loop at 0,
    // of the flattened (row-major) index: by value, so that the divisions and
    // remainders of a fused and split index count as what they compute.
    int64_t stride = 0, row = 1;
    for (size_t d = indices.size(); d-- > 0;) {
      std::optional<int64_t> first = evaluate_index(indices[d], {{lane, 0}}, lets),
                             second = evaluate_index(indices[d], {{lane, 1}}, lets);
      if (!first || !second) {
        strided += trips;
        return;
      }
      stride += (*second - *first) * row;
      row *= d < decl->shape.size() ? decl->shape[d] : 1;
    }
    (std::abs(stride) <= 1 ? coalesced : strided) += trips;
  }
};

// The variable of the loop bound to local.x, else group.x, else "".
std::string lane_of(const Stmt &body) {
  struct Find : IRVisitor {
    std::string local, group;
    using IRVisitor::visit;
    void visit(const For *n) override {
      if (n->kind == ForKind::LocalX) local = n->var;
      if (n->kind == ForKind::GroupX) group = n->var;
      IRVisitor::visit(n);
    }
  } find;
  find.dispatch(body);
  return find.local.empty() ? find.group : find.local;
}

}  // namespace

std::vector<float> cost_features(const Program &program) {
  double work_items = 0, groups = 0, small_group_items = 0, flops = 0, loads = 0, stores = 0, local = 0;
  double registers = 0, unique_bytes = 0, unique_elements = 0, coalesced = 0, strided = 0, barriers = 0;
  double item_iterations = 0;
  double register_loads = 0, matrix_flops = 0;
  double group_max = 0, group_min = 0, local_bytes = 0;
  int max_depth = 0, max_vector = 1;
  int64_t max_unrolled = 1;
  for (const Kernel &kernel : program.kernels) {
    const LaunchShape shape = launch_shape(kernel);
    const double items = static_cast<double>(shape.work_items());
    const double group = static_cast<double>(shape.group_size());
    work_items += items;
    groups += items / group;
    if (group < 32) small_group_items += items;
    group_max = std::max(group_max, group);
    group_min = group_min == 0 ? group : std::min(group_min, group);
    local_bytes = std::max(local_bytes, static_cast<double>(local_memory_bytes(kernel)));
    item_iterations = std::max(item_iterations, static_cast<double>(loop_iterations(kernel)));
    KernelWalk walk(program, lane_of(kernel.body));
    walk.dispatch(kernel.body);
    flops += walk.flops, loads += walk.global_loads, stores += walk.global_stores;
    local += walk.local, registers += walk.registers, register_loads += walk.register_loads;
    matrix_flops += walk.matrix_flops;
    coalesced += walk.coalesced, strided += walk.strided;
    barriers += walk.barriers / items;
    max_depth = std::max(max_depth, walk.max_depth);
    max_vector = std::max(max_vector, walk.max_vector);
    max_unrolled = std::max(max_unrolled, walk.max_unrolled);
    for (const std::string &b : walk.touched) {
      const TensorDecl *t = program.find_buffer(b);
      unique_bytes += static_cast<double>(t->bytes());
      unique_elements += static_cast<double>(t->numel());  // 2-byte and 8-byte ones too
    }
  }
  const double accesses = loads + stores;
  std::vector<double> v = {
      static_cast<double>(program.kernels.size()),
      log2p(work_items),
      log2p(groups),
      log2p(group_max),
      log2p(group_min),
      work_items > 0 ? small_group_items / work_items : 0,
      log2p(flops),
      log2p(work_items > 0 ? flops / work_items : 0),
      log2p(loads),
      log2p(stores),
      log2p(local),
      log2p(registers),
      log2p(unique_bytes),
      log2p(unique_elements > 0 ? accesses / unique_elements : 0),
      log2p(accesses > 0 ? flops / accesses : 0),
      accesses > 0 ? coalesced / accesses : 0,
      accesses > 0 ? strided / accesses : 0,
      log2p(local_bytes),
      log2p(barriers),
      static_cast<double>(max_depth),
      log2p(static_cast<double>(max_unrolled)),
      static_cast<double>(max_vector),
      log2p(item_iterations),
      loads > 0 ? register_loads / loads : 0,
      flops > 0 ? matrix_flops / flops : 0,
  };
  return std::vector<float>(v.begin(), v.end());
}

namespace {
bool is_count(const std::string &name) { return name.rfind("log_", 0) == 0; }
}  // namespace

std::vector<float> model_inputs(const std::vector<float> &features, const std::vector<float> &naive) {
  const std::vector<std::string> &names = cost_feature_names();
  std::vector<float> out = features;
  for (size_t i = 0; i < names.size(); ++i)
    if (is_count(names[i])) out.push_back(features[i] - naive[i]);
  return out;
}

}  // namespace ks
