#include "ir/vector_form.h"

#include <map>
#include <vector>

#include "ir/affine.h"
#include "ir/printer.h"
#include "ir/visitor.h"

namespace ks {

bool is_vector_width(int64_t lanes) { return lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16; }

namespace {

struct Access {
  std::string buffer;
  std::vector<Expr> indices;
  bool varies = false;
  std::optional<Affine> last;  // the last index, lets expanded (when affine)
  bool store = false;
};

bool same_affine(const std::optional<Affine> &a, const std::optional<Affine> &b) {
  return a && b && a->coeffs == b->coeffs && a->constant == b->constant;
}

// Walks the body once: classifies names, records every access, stops at the first
// rule broken (problem).
struct Walk {
  const For &loop;
  VectorForm form;
  std::map<std::string, Affine> lets;  // affine integer lets, for index forms
  std::map<std::string, Expr> values;  // every let of the body, in the names outside it
  std::vector<Access> accesses;
  std::string problem;

  explicit Walk(const For &loop) : loop(loop) { form.varying.insert(loop.var); }

  bool fail(const std::string &message) {
    if (problem.empty()) problem = message;
    return false;
  }
  bool varies(const Expr &e) const { return mentions(e, form.varying); }

  // Records an access; returns whether it differs between lanes.
  bool access(const std::string &buffer, const std::vector<Expr> &indices, DType type, bool padded, bool store) {
    Access a{buffer, indices, false, std::nullopt, store};
    for (const Expr &index : indices) {
      loads_in(index);
      a.varies = a.varies || varies(index);
    }
    if (!indices.empty()) a.last = affine_of(indices.back(), lets);
    accesses.push_back(a);
    if (!a.varies) return false;
    const std::string where = (store ? "the store to " : "the read of ") + buffer;
    if (type != DType::F32 && type != DType::I32)
      return fail(where + " is " + dtype_name(type) + "; vectors hold f32 or i32");
    if (padded) return fail(where + " is padded (it may leave the buffer); vector reads may not");
    for (size_t d = 0; d + 1 < indices.size(); ++d)
      if (varies(indices[d]))
        return fail("index " + std::to_string(d) + " of " + where + " (" + print_expr(indices[d]) + ") depends on " +
                    loop.var + "; only the last index may");
    if (!a.last) return fail("the last index of " + where + " (" + print_expr(indices.back()) + ") is not affine");
    auto coefficient = a.last->coeffs.find(loop.var);
    int64_t stride = coefficient == a.last->coeffs.end() ? 0 : coefficient->second;
    if (stride != 1)
      return fail(where + " steps by " + std::to_string(stride) + " elements per iteration of " + loop.var +
                  "; a vector access needs stride 1 in the last dimension");
    for (const auto &[name, c] : a.last->coeffs)
      if (name != loop.var && form.varying.count(name))
        return fail("the last index of " + where + " uses " + name + ", a value that differs by lane");
    return true;
  }

  // Records the loads inside an index expression.
  void loads_in(const Expr &index) {
    struct Loads : IRVisitor {
      Walk &walk;
      explicit Loads(Walk &walk) : walk(walk) {}
      using IRVisitor::visit;
      void visit(const Load *n) override { walk.load(n); }  // which records the loads in its own indices
    } loads(*this);
    loads.dispatch(index);
  }

  bool load(const Load *n) { return access(n->buffer, n->indices, n->type, n->pad.has_value(), false); }

  // Checks a value expression; returns whether it differs between lanes.
  bool value(const Expr &e) {
    switch (e.kind()) {
      case NodeKind::IntImm:
      case NodeKind::FloatImm: return false;
      case NodeKind::Var: {
        const std::string &name = e.as<Var>()->name;
        if (form.vector_lets.count(name)) return true;
        if (form.varying.count(name))
          return fail(name + " differs by lane and is used as a value; " + loop.var +
                      " and the lets computed from it may appear only in indices");
        return false;
      }
      case NodeKind::Unary: {
        const Unary *u = e.as<Unary>();
        bool v = value(u->a);
        if (v && u->op == UnaryOp::Not) return fail("a negated condition differs by lane");
        return v;
      }
      case NodeKind::Binary: {
        const Binary *b = e.as<Binary>();
        bool va = value(b->a), vb = value(b->b);
        if (!va && !vb) return false;
        if (is_comparison(b->op) || b->op == BinaryOp::And || b->op == BinaryOp::Or)
          return fail("the condition " + print_expr(e) + " differs by lane");
        if (b->op == BinaryOp::LogAddExp)
          return fail(print_expr(e) + " combines values that differ by lane (logaddexp has no vector form)");
        if (b->op == BinaryOp::Mod || (b->op == BinaryOp::Div && is_int(b->a.type())))
          return fail(print_expr(e) + " divides integers that differ by lane (floor division has no vector form)");
        if (b->a.type() != DType::F32 && b->a.type() != DType::I32)
          return fail(print_expr(e) + " is " + dtype_name(b->a.type()) + "; vectors hold f32 or i32");
        return true;
      }
      case NodeKind::Call: {
        bool v = false;
        for (const Expr &arg : e.as<Call>()->args) v = value(arg) || v;
        return v;
      }
      case NodeKind::Cast:
        if (value(e.as<Cast>()->value)) return fail("the conversion " + print_expr(e) + " differs by lane");
        return false;
      case NodeKind::Select: {
        const Select *s = e.as<Select>();
        bool v = value(s->condition);
        v = value(s->true_value) || v;
        v = value(s->false_value) || v;
        if (v) return fail("the select " + print_expr(e) + " differs by lane");
        return false;
      }
      case NodeKind::Load: return load(e.as<Load>());
      default: return fail("unexpected expression " + print_expr(e));
    }
  }

  void stmt(const Stmt &s) {
    if (!problem.empty()) return;
    switch (s.kind()) {
      case NodeKind::Seq:
        for (const Stmt &t : s.as<Seq>()->stmts) stmt(t);
        return;
      case NodeKind::Block: stmt(s.as<Block>()->body); return;
      case NodeKind::LetStmt: {
        const LetStmt *let = s.as<LetStmt>();
        auto index = affine_of(let->value, lets);
        bool index_let = index.has_value();
        for (const auto &[name, c] : index ? index->coeffs : std::map<std::string, int64_t>{})
          if (form.vector_lets.count(name)) index_let = false;
        values[let->var] = substitute(let->value, values);
        if (index_let) {
          lets[let->var] = *index;
          if (varies(let->value)) form.varying.insert(let->var);
        } else if (value(let->value)) {
          form.varying.insert(let->var);
          form.vector_lets.insert(let->var);
        }
        stmt(let->body);
        return;
      }
      case NodeKind::IfThenElse: {
        const IfThenElse *n = s.as<IfThenElse>();
        if (varies(n->condition)) {
          tail_guard(*n);
        } else {
          value(n->condition);
        }
        stmt(n->then_case);
        if (n->else_case.defined()) stmt(n->else_case);
        return;
      }
      case NodeKind::Store: {
        const Store *n = s.as<Store>();
        bool v = value(n->value);
        if (!access(n->buffer, n->indices, n->value.type(), false, true) && problem.empty())
          fail("the store to " + n->buffer + " writes the same element in every lane" +
               std::string(v ? "" : ", as often as the loop runs"));
        return;
      }
      case NodeKind::For: fail("loop " + loop.var + " is not innermost: it holds loop " + s.as<For>()->var); return;
      case NodeKind::Allocate: fail("loop " + loop.var + " allocates " + s.as<Allocate>()->buffer); return;
      case NodeKind::Barrier: fail("loop " + loop.var + " holds a barrier"); return;
      default: fail("unexpected statement in loop " + loop.var); return;
    }
  }

  // A guard a < b with a walking the loop by 1 and b the same in every lane: lanes
  // 0 .. k pass it, so all pass when the last does.
  void tail_guard(const IfThenElse &n) {
    const Binary *lt = n.condition.as<Binary>();
    std::optional<Affine> a = lt ? affine_of(lt->a, lets) : std::nullopt;
    int64_t stride = 0;
    bool others_uniform = true;
    for (const auto &[name, c] : a ? a->coeffs : std::map<std::string, int64_t>{}) {
      if (name == loop.var)
        stride = c;
      else if (form.varying.count(name))
        others_uniform = false;
    }
    if (!lt || lt->op != BinaryOp::Lt || stride != 1 || !others_uniform || varies(lt->b) || n.else_case.defined()) {
      fail("the guard " + print_expr(n.condition) +
           " differs by lane and is not a tail guard (a < b, a stepping by 1)");
      return;
    }
    value(lt->b);
    std::map<std::string, Expr> last_lane = values;
    last_lane[loop.var] = make_int(loop.extent - 1, loop.loop_var().type());
    Expr passes =
        Binary::make(BinaryOp::Lt, substitute(substitute(lt->a, values), last_lane), substitute(lt->b, values));
    form.all_lanes_pass =
        form.all_lanes_pass.defined() ? Binary::make(BinaryOp::And, form.all_lanes_pass, passes) : passes;
  }

  // Each lane touches its own elements of a buffer the body stores to.
  void check_stored_buffers() {
    for (const Access &store : accesses) {
      if (!store.store || !problem.empty()) continue;
      for (const Access &other : accesses) {
        if (other.buffer != store.buffer) continue;
        bool same = other.varies && same_affine(other.last, store.last);
        for (size_t d = 0; same && d + 1 < store.indices.size(); ++d)
          same = print_expr(other.indices[d]) == print_expr(store.indices[d]);
        if (!same) {
          fail(store.buffer + " is stored and also accessed at other indices in loop " + loop.var +
               "; one lane would see another's element");
          return;
        }
      }
    }
  }
};

}  // namespace

std::optional<VectorForm> vector_form(const For &loop, std::string *reason) {
  if (!is_vector_width(loop.extent)) {
    *reason = "loop " + loop.var + " has " + std::to_string(loop.extent) +
              " iterations; vectors have 2, 4, 8 or 16 lanes (split it first)";
    return std::nullopt;
  }
  Walk walk(loop);
  walk.stmt(loop.body);
  walk.check_stored_buffers();
  if (!walk.problem.empty()) {
    *reason = walk.problem;
    return std::nullopt;
  }
  return walk.form;
}

}  // namespace ks
