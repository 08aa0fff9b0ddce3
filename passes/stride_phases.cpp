// stride_phases: a transposed convolution gathers, for each output position, only
// the kernel offsets whose stride grid lands on it, instead of testing every offset.
//
// A strided transposed convolution written as a gather (what `ksmith import` emits
// and examples/conv_transpose2d.ks writes),
//
//   y[.., oh, ..] = sum(.., kh, ..) select((oh + P - kh) % S == 0 && .., x[.., (oh + P - kh) / S, ..] else 0, 0) *
//   w[.., kh, ..]
//
// tests all K offsets kh where about K / S of them contribute: at stride 2, 3 in 4
// of a 3x3 kernel's products are zeros. The offsets that contribute at oh are
// kh = (oh + P) % S + S t (those with oh + P - kh a multiple of S), so
//
//   rewrite stride_phases y   becomes
//   y[.., oh, ..] = sum(.., kh_t: ceil(K / S), ..) select(kh < K && .., x[.., (oh + P) / S - kh_t, ..] else 0, 0) *
//   w[.., kh, ..]
//
// with kh = (oh + P) % S + S kh_t: the test is kh < K and the division is exact by
// construction (P stands for P mod S here, plus floor(P / S) outside the division).
// The stage keeps its shape, names and spatial loops, so it tiles as a convolution
// does; the phase of an output is its position mod S, and neighbouring outputs run
// the same number of offsets. Every pair (spatial v, reduction k, stride S >= 2) of
// a conjunct `(v - k + c) % S == 0` (or `(k - v + c) % S == 0`) that masks the whole
// body (where it is false the body is 0: it is the condition of a select whose other
// value is 0, in a factor of a product) is taken. Offsets past K take the select's
// zero; their reads that may leave the buffer read 0 there (a pad value): values that
// the zero discards.
#include "ir/affine.h"
#include "ir/bounds.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// One pair: spatial v and reduction k with the test (v - k + c) % S == 0, written
// with either sign.
struct Phase {
  IterVar v, k;
  IterVar t;  // k's new variable: the offsets on the grid
  int64_t stride = 0, c = 0;
  int64_t c_low = 0;  // c mod S, in [0, S)
  Affine form;        // v - k + c
};

std::vector<Expr> conjuncts(const Expr &cond) {
  if (const Binary *b = cond.as<Binary>(); b && b->op == BinaryOp::And) {
    std::vector<Expr> out = conjuncts(b->a);
    for (const Expr &e : conjuncts(b->b)) out.push_back(e);
    return out;
  }
  return {cond};
}

bool is_zero(const Expr &e) {
  std::optional<double> v = as_const_number(e);
  return v && *v == 0;
}

// The (numerator, stride) of a conjunct `E % S == 0`, S a constant.
std::optional<std::pair<Expr, int64_t>> modulo_test(const Expr &conjunct) {
  const Binary *eq = conjunct.as<Binary>();
  if (!eq || eq->op != BinaryOp::Eq) return std::nullopt;
  Expr mod = eq->a, zero = eq->b;
  if (is_zero(mod)) std::swap(mod, zero);
  const Binary *m = mod.as<Binary>();
  if (!is_zero(zero) || !m || m->op != BinaryOp::Mod) return std::nullopt;
  std::optional<int64_t> s = as_const_int(m->b);
  if (!s) return std::nullopt;
  return std::make_pair(m->a, *s);
}

bool same_form(const Affine &a, const Affine &b) { return a.coeffs == b.coeffs && a.constant == b.constant; }

// The conjuncts of selects that make body zero wherever one of them is false: body
// is select(cond, a, 0), or a product, negation, cast or quotient of such a value.
std::vector<Expr> masking_conjuncts(const Expr &body) {
  if (const Select *s = body.as<Select>(); s && is_zero(s->false_value)) return conjuncts(s->condition);
  if (const Binary *b = body.as<Binary>()) {
    if (b->op == BinaryOp::Mul) {
      std::vector<Expr> out = masking_conjuncts(b->a);
      for (const Expr &e : masking_conjuncts(b->b)) out.push_back(e);
      return out;
    }
    if (b->op == BinaryOp::Div) return masking_conjuncts(b->a);
  }
  if (const Unary *u = body.as<Unary>(); u && u->op == UnaryOp::Neg) return masking_conjuncts(u->a);
  if (const Cast *c = body.as<Cast>()) return masking_conjuncts(c->value);
  return {};
}

std::string list_vars(const std::vector<IterVar> &vars) {
  std::string out;
  for (const IterVar &v : vars) out += (out.empty() ? "" : ", ") + v.name;
  return out;
}

// The body at the new variables: each phase's condition becomes `k < K`, its exact
// divisions their value in v and t, its remainders 0, k elsewhere its value; reads whose indices change and that may
// leave their buffer read 0 there (the points where that happens are the ones the condition zeroes).
struct PhaseBody : IRMutator {
  const Graph &graph;
  const std::vector<Phase> &phases;
  std::map<std::string, Expr> values;  // each k in v and its t
  BoundsScope scope;                   // the new stage's variables
  explicit PhaseBody(const Graph &graph, const std::vector<Phase> &phases) : graph(graph), phases(phases) {}

  // The pair whose v - k + c the numerator is, with the sign it is written with.
  std::pair<const Phase *, int64_t> phase_of(const Expr &numerator, int64_t stride) const {
    std::optional<Affine> form = affine_of(numerator, {});
    if (!form) return {nullptr, 0};
    Affine negated = *form;
    negated.constant = -negated.constant;
    for (auto &[var, coeff] : negated.coeffs) coeff = -coeff;
    for (const Phase &p : phases) {
      if (p.stride != stride) continue;
      if (same_form(*form, p.form)) return {&p, 1};
      if (same_form(negated, p.form)) return {&p, -1};
    }
    return {nullptr, 0};
  }

  using IRMutator::visit;
  Expr visit(const Var *n, const Expr &self) override {
    auto it = values.find(n->name);
    return it == values.end() ? self : cast_to(n->type, it->second);
  }
  Expr visit(const Binary *n, const Expr &self) override {
    if (n->op == BinaryOp::Eq)
      if (auto test = modulo_test(self))
        if (const Phase *p = phase_of(test->first, test->second).first) {
          // Where S divides K every offset on the grid is inside the kernel: no test.
          const Expr &k = values.at(p->k.name);
          const Interval range = bounds_of(k, scope);
          if (range.bounded && range.hi < p->k.extent) return make_int(0) < make_int(1);  // true, folded
          return k < make_int(p->k.extent, k.type());
        }
    if (n->op == BinaryOp::Div || n->op == BinaryOp::Mod)
      if (std::optional<int64_t> s = as_const_int(n->b))
        if (auto [p, sign] = phase_of(n->a, *s); p) {
          if (n->op == BinaryOp::Mod) return make_int(0, n->type);
          // v - k + c = S ((v + c mod S) / S - t + floor(c / S)); the numerator is sign times it.
          Expr v = iter_var(p->v), stride = make_int(p->stride, v.type());
          Expr quotient = (v + make_int(p->c_low, v.type())) / stride - cast_to(v.type(), iter_var(p->t)) +
                          make_int((p->c - p->c_low) / p->stride, v.type());
          if (sign < 0) quotient = make_int(0, quotient.type()) - quotient;
          return cast_to(n->type, quotient);
        }
    return IRMutator::visit(n, self);
  }
  Expr visit(const Load *n, const Expr &self) override {
    Expr inner = IRMutator::visit(n, self);
    const Load *load = inner.as<Load>();
    if (load->pad || inner.same_as(self)) return inner;
    // A read at a changed index that may leave its buffer (an offset past K) reads 0
    // there, a value the mask discards: a pad rather than a clamp keeps the index
    // affine in the offsets, which cache_read needs.
    for (size_t d = 0; d < load->indices.size(); ++d) {
      if (load->indices[d].same_as(n->indices[d])) continue;
      const Interval range = bounds_of(load->indices[d], scope);
      if (!range.bounded || range.lo < 0 || range.hi > graph.find_tensor(load->buffer)->shape[d] - 1)
        return Load::make(load->type, load->buffer, load->indices, 0.0);
    }
    return inner;
  }
};

}  // namespace

std::optional<Graph> stride_phases(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (stage.reduce == ReduceOp::None) return *reason = name + " is elementwise: it has no reduction", std::nullopt;
  if (stage.reduce != ReduceOp::Sum)
    return *reason = name + " is a " + reduce_op_name(stage.reduce) +
                     " reduction: only a sum may skip the points its condition masks",
           std::nullopt;

  std::map<std::string, int64_t> spatial, reduced;
  for (const IterVar &v : stage.spatial) spatial[v.name] = v.extent;
  for (const IterVar &v : stage.reduce_vars) reduced[v.name] = v.extent;

  NameSet names = graph_names(graph);
  reserve_vars(stage, &names);
  std::vector<Phase> phases;
  std::set<std::string> taken;
  for (const Expr &conjunct : masking_conjuncts(stage.body)) {
    std::optional<std::pair<Expr, int64_t>> test = modulo_test(conjunct);
    if (!test || test->second < 2) continue;
    std::optional<Affine> form = affine_of(test->first, {});
    if (!form || form->coeffs.size() != 2) continue;
    Phase p;
    p.stride = test->second;
    int64_t sign = 0;
    for (const auto &[var, coeff] : form->coeffs) {
      if (spatial.count(var) && (coeff == 1 || coeff == -1)) p.v = {var, spatial.at(var)}, sign = coeff;
      if (reduced.count(var)) p.k = {var, reduced.at(var)};
    }
    if (p.v.name.empty() || p.k.name.empty() || form->coeffs.at(p.k.name) != -sign) continue;
    if (taken.count(p.v.name) || taken.count(p.k.name)) continue;  // one pair a variable
    p.c = sign * form->constant;                                   // sign (v - k) + constant = sign (v - k + c)
    p.c_low = ((p.c % p.stride) + p.stride) % p.stride;
    p.form.coeffs = {{p.v.name, 1}, {p.k.name, -1}};
    p.form.constant = p.c;
    const int64_t K = p.k.extent;
    if ((K + p.stride - 1) / p.stride >= K) continue;  // no offset to skip
    p.t = {names.fresh(p.k.name + "_t"), (K + p.stride - 1) / p.stride};
    taken.insert(p.v.name);
    taken.insert(p.k.name);
    phases.push_back(p);
  }
  if (phases.empty())
    return *reason = name + "'s body is not masked by a stride test (v - k + c) % S == 0 of a spatial variable (" +
                     list_vars(stage.spatial) + ") and a reduction variable (" + list_vars(stage.reduce_vars) +
                     ") with S >= 2, k over 2 or more offsets",
           std::nullopt;

  PhaseBody rewrite(graph, phases);
  for (const IterVar &v : stage.spatial) rewrite.scope.vars[v.name] = Interval::of(0, v.extent - 1);
  Stage out = stage;
  out.reduce_vars.clear();
  for (const IterVar &k : stage.reduce_vars) {
    auto p = std::find_if(phases.begin(), phases.end(), [&](const Phase &q) { return q.k.name == k.name; });
    const IterVar &now = p == phases.end() ? k : p->t;
    out.reduce_vars.push_back(now);
    rewrite.scope.vars[now.name] = Interval::of(0, now.extent - 1);
    if (p == phases.end()) continue;
    Expr v = iter_var(p->v);
    const DType kt = index_type_for(k.extent);
    rewrite.values[k.name] = cast_to(kt, (v + make_int(p->c_low, v.type())) % make_int(p->stride, v.type())) +
                             cast_to(kt, iter_var(p->t)) * make_int(p->stride, kt);
  }
  out.body = simplify(rewrite.mutate(stage.body));
  Graph result = graph;
  result.stages[*at] = out;
  return finish_rewrite(std::move(result));
}

}  // namespace ks
