// The tree in local memory with which the work-items of a group combine partial
// results (cross_reduce writes it; a code generator with subgroup operations may
// print it as subgroup reductions instead). One place holds its shape:
//   part[t] = value; barrier;
//   for s = T/2, T/4, .., 1: if (t < s) part[t] = op(part[t], part[t + s]);
//                            (a barrier between steps)
// after which part[0] holds the result, seen by work-item 0.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ks {

struct GroupTree {
  BinaryOp op = BinaryOp::Add;
  DType type = DType::F32;
  std::string part;     // local array of `threads` elements
  std::string thread;   // the work-item index t, over [0, threads)
  int64_t threads = 2;  // a power of two
  Expr value;           // work-item t's partial result
};

/// The tree's statements, in order.
std::vector<Stmt> group_tree_stmts(const GroupTree &tree);

/// The tree that starts at stmts[i], exactly as group_tree_stmts writes it, and
/// the number of statements it spans (*count); nullopt where there is none.
std::optional<GroupTree> match_group_tree(const std::vector<Stmt> &stmts, size_t i, size_t *count);

}  // namespace ks
