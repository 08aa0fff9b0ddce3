#include "passes/regions.h"

#include <map>
#include <optional>
#include <set>

#include "ir/printer.h"
#include "ir/visitor.h"

namespace ks {

namespace {

struct Mentions : IRVisitor {
  const std::set<std::string> &names;
  bool found = false;
  explicit Mentions(const std::set<std::string> &names) : names(names) {}
  using IRVisitor::visit;
  void visit(const Var *n) override { found |= names.count(n->name) > 0; }
};

struct Collect : IRVisitor {
  const Program &program;
  std::set<std::string> inner_vars, allocated;
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::optional<Expr>>> points;  // nullopt: the whole dimension
  explicit Collect(const Program &program) : program(program) {}
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
    if (allocated.count(n->buffer) || !program.find_buffer(n->buffer)) return;
    auto [it, inserted] = points.try_emplace(n->buffer);
    if (inserted) {
      order.push_back(n->buffer);
      it->second.resize(n->indices.size());
    }
    for (size_t d = 0; d < n->indices.size(); ++d) {
      Mentions m(inner_vars);
      m.dispatch(n->indices[d]);
      bool point = !n->pad && !m.found;
      std::optional<Expr> &dim = it->second[d];
      if (inserted)
        dim = point ? std::optional<Expr>(n->indices[d]) : std::nullopt;
      else if (dim && (!point || print_expr(*dim) != print_expr(n->indices[d])))
        dim = std::nullopt;
    }
  }
};

}  // namespace

std::vector<Region> read_regions(const Program &program, const Stmt &body) {
  // A loop, let or allocation is met before any read in its scope, and names are
  // unique in a kernel: the definitions gathered on the way down are complete.
  Collect collect(program);
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

}  // namespace ks
