// reorder: loops that enclose one another trade places.
#include <algorithm>
#include <set>

#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> reorder(const Program &program, const std::string &stage, const std::vector<std::string> &loops,
                               std::string *reason) {
  if (loops.size() < 2) {
    *reason = "reorder needs at least two loops";
    return std::nullopt;
  }
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  std::set<std::string> listed;
  for (const std::string &name : loops) {
    if (!where->find(name)) {
      *reason = "no loop named " + name + " in stage " + stage + "; loops are " + where->names();
      return std::nullopt;
    }
    if (!listed.insert(name).second) {
      *reason = "loop " + name + " is listed twice";
      return std::nullopt;
    }
    if (where->is_inner(name) != where->is_inner(loops[0])) {
      *reason = "loops " + loops[0] + " and " + name + " lie on different sides of " + stage +
                "'s block (a spatial and a reduction loop)";
      return std::nullopt;
    }
  }
  // The outermost listed loop, in nesting order.
  const std::vector<const For *> &nest = where->is_inner(loops[0]) ? where->inner : where->outer;
  const For *top = nullptr;
  for (const For *f : nest)
    if (listed.count(f->var)) {
      top = f;
      break;
    }
  // Walk down from it: loops, lets and guards only, until every listed loop is met.
  std::vector<const For *> fors;
  std::vector<Stmt> wrappers;  // lets and guards met on the way, outermost first
  size_t found = 0;
  Stmt innermost_body;
  const For *current = top;
  for (;;) {
    fors.push_back(current);
    if (listed.count(current->var)) ++found;
    if (current->kind != ForKind::Serial) {
      *reason = "loop " + current->var + " is " + for_kind_name(current->kind) + "; reorder loops before binding them";
      return std::nullopt;
    }
    if (found == listed.size()) {
      innermost_body = current->body;
      break;
    }
    Stmt s = current->body;
    for (;;) {
      if (s.as<For>()) break;
      if (const LetStmt *let = s.as<LetStmt>()) {
        wrappers.push_back(s);
        s = let->body;
      } else if (const IfThenElse *guard = s.as<IfThenElse>(); guard && !guard->else_case.defined()) {
        wrappers.push_back(s);
        s = guard->then_case;
      } else {
        *reason = "the loops are not perfectly nested: a statement other than a let or guard lies inside loop " +
                  current->var;
        return std::nullopt;
      }
    }
    current = s.as<For>();
  }
  // A running value stored at each step (a scan's) follows the loops' order.
  std::string running;
  std::set<std::string> moved;  // the loops from the top listed one to the innermost
  for (const For *f : fors) moved.insert(f->var);
  if (observes_running_value(top->body, moved, &running)) {
    *reason = "the iterations of " + top->var + " depend on their order (" + running +
              " at each step); reordering them would change what is stored";
    return std::nullopt;
  }
  // Listed loops take the listed positions in the given order; others stay.
  std::vector<const For *> order;
  size_t next = 0;
  for (const For *f : fors) {
    if (listed.count(f->var)) {
      order.push_back(where->find(loops[next++]));
    } else {
      order.push_back(f);
    }
  }
  Program out = replace_loop(program, where->kernel, top->var, [&](const For *) {
    Stmt body = wrap(wrappers, innermost_body);
    for (size_t i = order.size(); i-- > 0;) body = For::make(order[i]->var, order[i]->extent, order[i]->kind, body);
    return body;
  });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// Two or three loops of one side reordered.
void draw_reorder(StepDraw &d) {
  const std::vector<const For *> &side =
      std::uniform_int_distribution<int>(0, 3)(d.rng) == 0 ? d.loops.inner : d.loops.outer;
  if (side.size() < 2) return;
  std::vector<std::string> names;
  for (const For *f : side) names.push_back(f->var);
  std::shuffle(names.begin(), names.end(), d.rng);
  names.resize(std::min<size_t>(names.size(), std::uniform_int_distribution<size_t>(2, 3)(d.rng)));
  d.p.loops = names;
  d.next = reorder(d.program, d.p.stage, d.p.loops, &d.reason);
}

}  // namespace

const PrimitiveInfo reorder_primitive = {{{ArgKind::Stage}, {ArgKind::Loops, "at least two loops", 2}},
                                         "reorder y mo no mi ni",
                                         "these loops, in this order",
                                         [](const Program &program, const Primitive &p, std::string *reason) {
                                           return reorder(program, p.stage, p.loops, reason);
                                         },
                                         draw_reorder,
                                         2};

}  // namespace ks
