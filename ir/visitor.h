// Walkers over the IR, generated from ir/nodes.def:
//  - IRVisitorStrict: every node is pure virtual. For the printers, the verifier,
//    equality and the code generators: a new node does not compile until each
//    handles it.
//  - IRVisitor: visits every child by default; passes override what they need.
//  - IRMutator: rebuilds a tree bottom-up, returning the same handle when no child
//    changed (so same_as() tells whether a pass did anything).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ks {

class IRVisitorStrict {
 public:
  virtual ~IRVisitorStrict() = default;
  void dispatch(const Expr &e);
  void dispatch(const Stmt &s);

 protected:
#define KS_EXPR_NODE(N) virtual void visit(const N *) = 0;
#define KS_STMT_NODE(N) virtual void visit(const N *) = 0;
#include "ir/nodes.def"
};

class IRVisitor : public IRVisitorStrict {
 protected:
#define KS_EXPR_NODE(N) void visit(const N *) override;
#define KS_STMT_NODE(N) void visit(const N *) override;
#include "ir/nodes.def"
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr &e);
  virtual Stmt mutate(const Stmt &s);

 protected:
#define KS_EXPR_NODE(N) virtual Expr visit(const N *node, const Expr &self);
#define KS_STMT_NODE(N) virtual Stmt visit(const N *node, const Stmt &self);
#include "ir/nodes.def"
  std::vector<Region> mutate_regions(const std::vector<Region> &regions, bool *changed);
};

/// Every node of kind Node in a tree (an Expr or a Stmt), in the order a walk meets
/// them (outer before inner).
template <typename Node, typename Tree>
std::vector<const Node *> collect(const Tree &tree) {
  struct Collect : IRVisitor {
    std::vector<const Node *> out;
    using IRVisitor::visit;
    void visit(const Node *n) override {
      out.push_back(n);
      IRVisitor::visit(n);
    }
  } walk;
  walk.dispatch(tree);
  return walk.out;
}

/// The variables an expression uses.
std::set<std::string> vars_in(const Expr &e);
/// Whether e uses any of the given variables.
bool mentions(const Expr &e, const std::set<std::string> &vars);
/// e with each variable named in `values` replaced by its value.
Expr substitute(const Expr &e, const std::map<std::string, Expr> &values);
/// s with each use of a variable named in `values` replaced by its value.
Stmt substitute(const Stmt &s, const std::map<std::string, Expr> &values);

}  // namespace ks
