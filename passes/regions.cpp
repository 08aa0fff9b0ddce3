#include "passes/regions.h"

#include <map>
#include <optional>
#include <set>

#include "ir/printer.h"
#include "ir/visitor.h"
#include "passes/loops.h"

namespace ks {

namespace {

struct Collect : IRVisitor {
  const Program &program;
  std::set<std::string> inner_vars, allocated;
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::optional<Expr>>> points;  // nullopt: the whole dimension
  const bool stores;                                               // collect the stores, not the loads
  Collect(const Program &program, bool stores) : program(program), stores(stores) {}
  using IRVisitor::visit;
  void visit(const For *n) override {
    inner_vars.insert(n->var);
    IRVisitor::visit(n);
  }
  void visit(const LetStmt *n) override {
    inner_vars.insert(n->var);
    IRVisitor::visit(n);
  }
  void visit(const Allocate *n) override {
    allocated.insert(n->buffer);
    IRVisitor::visit(n);
  }
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    if (!stores) add(n->buffer, n->indices, n->pad.has_value());
  }
  void visit(const Store *n) override {
    IRVisitor::visit(n);
    if (stores) add(n->buffer, n->indices, false);
  }
  void add(const std::string &buffer, const std::vector<Expr> &indices, bool padded) {
    if (allocated.count(buffer) || !program.find_buffer(buffer)) return;
    auto [it, inserted] = points.try_emplace(buffer);
    if (inserted) {
      order.push_back(buffer);
      it->second.resize(indices.size());
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      bool point = !padded && !mentions(indices[d], inner_vars);
      std::optional<Expr> &dim = it->second[d];
      if (inserted)
        dim = point ? std::optional<Expr>(indices[d]) : std::nullopt;
      else if (dim && (!point || print_expr(*dim) != print_expr(indices[d])))
        dim = std::nullopt;
    }
  }
};

}  // namespace

namespace {

std::vector<Region> regions(const Program &program, const Stmt &body, bool stores) {
  // A loop, let or allocation is met before any access in its scope, and names
  // are unique in a kernel: the definitions gathered on the way down are complete.
  Collect collect(program, stores);
  collect.dispatch(body);
  std::vector<Region> out;
  for (const std::string &name : collect.order) {
    const TensorDecl *t = program.find_buffer(name);
    Region region{name, {}};
    const auto &dims = collect.points.at(name);
    for (size_t d = 0; d < dims.size(); ++d)
      region.ranges.push_back(dims[d] ? Range{*dims[d], 1} : Range{make_int(0), t->shape[d]});
    out.push_back(region);
  }
  return out;
}

}  // namespace

std::vector<Region> read_regions(const Program &program, const Stmt &body) { return regions(program, body, false); }
std::vector<Region> write_regions(const Program &program, const Stmt &body) { return regions(program, body, true); }

}  // namespace ks
