#include "ir/group_tree.h"

#include "ir/printer.h"

namespace ks {

std::vector<Stmt> group_tree_stmts(const GroupTree &tree) {
  const DType index = index_type_for(tree.threads);
  Expr t = Var::make(index, tree.thread);
  auto part_at = [&](Expr i) { return Load::make(tree.type, tree.part, {std::move(i)}); };
  std::vector<Stmt> out;
  out.push_back(Store::make(tree.part, {t}, tree.value));
  out.push_back(Barrier::make(MemoryScope::Local));
  for (int64_t s = tree.threads / 2; s >= 1; s /= 2) {
    Expr other = part_at(t + make_int(s, index));
    out.push_back(IfThenElse::make(t < make_int(s, index),
                                   Store::make(tree.part, {t}, Binary::make(tree.op, part_at(t), other))));
    if (s > 1) out.push_back(Barrier::make(MemoryScope::Local));
  }
  return out;
}

std::optional<GroupTree> match_group_tree(const std::vector<Stmt> &stmts, size_t i, size_t *count) {
  // Read the candidate off its first step, then require the statements to be
  // exactly the tree it would write.
  if (i + 2 >= stmts.size()) return std::nullopt;
  const Store *first = stmts[i].as<Store>();
  const IfThenElse *step = stmts[i + 2].as<IfThenElse>();
  if (!first || first->indices.size() != 1 || !stmts[i + 1].as<Barrier>() || !step || step->else_case.defined())
    return std::nullopt;
  const Var *t = first->indices[0].as<Var>();
  const Binary *guard = step->condition.as<Binary>();
  const IntImm *half = guard ? guard->b.as<IntImm>() : nullptr;
  const Store *update = step->then_case.as<Store>();
  const Binary *combine = update ? update->value.as<Binary>() : nullptr;
  if (!t || !half || half->value < 1 || (half->value & (half->value - 1)) != 0 || !combine) return std::nullopt;
  GroupTree tree{combine->op, first->value.type(), first->buffer, t->name, 2 * half->value, first->value};
  std::vector<Stmt> expected = group_tree_stmts(tree);
  if (i + expected.size() > stmts.size()) return std::nullopt;
  for (size_t k = 0; k < expected.size(); ++k)
    if (print_stmt(stmts[i + k]) != print_stmt(expected[k])) return std::nullopt;
  *count = expected.size();
  return tree;
}

}  // namespace ks
