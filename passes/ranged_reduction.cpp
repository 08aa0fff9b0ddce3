// ranged_reduction: a reduction masked by a comparison of its variable with a spatial
// one, over the whole range, written as the ranged reduction it is. A spec that says
// `sum(k: D) select(k <= i, x[n, k], 0.0)` asks for a running total in the form of a
// square of work; written `sum(k: 0..i + 1) x[n, k]`, scan computes it in a line.
//
// Algorithm, for `ranged_reduction s` with one reduction variable k of extent K:
//  1. The body is select(C, v, e) with e the reduction's identity (or select(C, e, v),
//     C negated), or for a sum a product (its canonical form) with a factor that is a
//     mask, select(C, 1.0, 0.0) or f32(C), or such a select of a value.
//  2. C compares k with a spatial variable i of extent I, as an affine comparison
//     (k - i <= 0 is k <= i; either side, `!` allowed):
//       k <= i, k < i + 1   forward inclusive   k over I
//       k < i               forward exclusive   k over I - 1
//       i <= k              reversed inclusive  k over I
//       i < k, i + 1 <= k   reversed exclusive  k over I
//     A forward total whose K exceeds what C lets through loses the points C always
//     masks; a reversed one needs K = I (else it is not a running total of i).
//  3. The body becomes select(C', v, e) with C' as elaboration writes the range
//     (passes/primitives.h, running_total_form), k's extent as in the table.
#include "ir/affine.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/primitives.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

struct Mask {
  Expr condition;
  Expr value;
};

// A mask as a factor: select(C, 1.0, 0.0) or f32(C).
std::optional<Expr> mask_factor(const Expr &m) {
  if (const Cast *c = m.as<Cast>(); c && c->value.type() == DType::Bool) return c->value;
  if (const Select *s = m.as<Select>();
      s && as_const_number(s->true_value) == 1.0 && as_const_number(s->false_value) == 0.0)
    return s->condition;
  return std::nullopt;
}

// The masked value and its mask, if the body is one: select(C, v, identity) (or
// select(C, identity, v)); for a sum, a product one of whose factors is a mask or
// such a select, however the product is spelled (its canonical form, passes/canonical.h:
// `2.0 * x * select(k <= i, 1.0, 0.0)`, `select(k <= i, x, 0.0) / 4.0`).
std::optional<Mask> mask_of(const Expr &body, ReduceOp op) {
  const double identity = reduce_identity(op);
  if (const Select *s = body.as<Select>()) {
    if (as_const_number(s->false_value) == identity) return Mask{s->condition, s->true_value};
    if (as_const_number(s->true_value) == identity)
      return Mask{Unary::make(UnaryOp::Not, s->condition), s->false_value};
  }
  if (op != ReduceOp::Sum || body.type() != DType::F32) return std::nullopt;
  LinearForm form = canonical_form(body);
  if (form.size() != 1) return std::nullopt;
  Product &p = form[0];
  for (size_t f = 0; f < p.factors.size(); ++f) {
    if (std::optional<Expr> condition = mask_factor(p.factors[f])) {
      p.factors.erase(p.factors.begin() + static_cast<std::ptrdiff_t>(f));
      return Mask{*condition, rebuild(p)};
    }
    const Select *s = p.factors[f].as<Select>();
    if (!s) continue;
    if (as_const_number(s->false_value) == 0.0) {
      const Expr condition = s->condition;
      p.factors[f] = s->true_value;
      return Mask{condition, rebuild(p)};
    }
    if (as_const_number(s->true_value) == 0.0) {
      const Expr condition = Unary::make(UnaryOp::Not, s->condition);
      p.factors[f] = s->false_value;
      return Mask{condition, rebuild(p)};
    }
  }
  return std::nullopt;
}

// The comparison as `k OP i + c` with k on the left: Lt, Le, Gt or Ge.
struct Comparison {
  BinaryOp op;
  std::string i;
  int64_t offset;
};

std::optional<Comparison> compare_with(const Expr &condition, const std::string &k) {
  bool negated = false;
  Expr c = condition;
  while (const Unary *u = c.as<Unary>()) {
    if (u->op != UnaryOp::Not) return std::nullopt;
    negated = !negated;
    c = u->a;
  }
  const Binary *b = c.as<Binary>();
  if (!b || !(b->op == BinaryOp::Lt || b->op == BinaryOp::Le || b->op == BinaryOp::Gt || b->op == BinaryOp::Ge))
    return std::nullopt;
  // a OP b as an affine form of a - b: s (k - i) + c OP 0, for s = 1 or -1 (any
  // spelling: k <= i, i >= k, k - i <= 0, k + 1 <= i + 1, ...).
  std::optional<Affine> lhs = affine_of(b->a, {}), rhs = affine_of(b->b, {});
  if (!lhs || !rhs) return std::nullopt;
  std::map<std::string, int64_t> diff = lhs->coeffs;
  for (const auto &[v, coefficient] : rhs->coeffs)
    if ((diff[v] -= coefficient) == 0) diff.erase(v);
  const int64_t constant = lhs->constant - rhs->constant;
  auto kc = diff.find(k);
  if (diff.size() != 2 || kc == diff.end() || (kc->second != 1 && kc->second != -1)) return std::nullopt;
  const int64_t sign = kc->second;
  diff.erase(kc);
  const auto &[i, ic] = *diff.begin();
  if (ic != -sign) return std::nullopt;
  auto flip = [](BinaryOp o) {
    switch (o) {
      case BinaryOp::Lt: return BinaryOp::Gt;
      case BinaryOp::Le: return BinaryOp::Ge;
      case BinaryOp::Gt: return BinaryOp::Lt;
      default: return BinaryOp::Le;
    }
  };
  BinaryOp op = b->op;
  if (negated) {
    switch (op) {
      case BinaryOp::Lt: op = BinaryOp::Ge; break;
      case BinaryOp::Le: op = BinaryOp::Gt; break;
      case BinaryOp::Gt: op = BinaryOp::Le; break;
      default: op = BinaryOp::Lt; break;
    }
  }
  // k - i + c OP 0 is k OP i - c; i - k + c OP 0 is k flip(OP) i + c.
  return sign == 1 ? Comparison{op, i, -constant} : Comparison{flip(op), i, constant};
}

}  // namespace

std::optional<Graph> ranged_reduction(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (stage.reduce != ReduceOp::Sum && stage.reduce != ReduceOp::Prod && stage.reduce != ReduceOp::Max &&
      stage.reduce != ReduceOp::Min)
    return *reason = name + " is not a sum, product, max or min reduction", std::nullopt;
  if (stage.reduce_vars.size() != 1)
    return *reason = name + " reduces over " + std::to_string(stage.reduce_vars.size()) +
                     " variables; a running total has one",
           std::nullopt;
  const IterVar &k = stage.reduce_vars[0];
  std::optional<Mask> mask = mask_of(stage.body, stage.reduce);
  const std::string not_masked = name + "'s body is not masked by a comparison of " + k.name +
                                 " with a spatial variable (select(" + k.name +
                                 " <= i, v, identity), or v times such a mask)";
  if (!mask) return *reason = not_masked, std::nullopt;
  std::optional<Expr> identity = identity_of(stage.reduce, mask->value.type());
  if (!identity) return *reason = name + " is an integer max or min, which scan does not take", std::nullopt;
  std::optional<Comparison> cmp = compare_with(mask->condition, k.name);
  const IterVar *i = nullptr;
  for (const IterVar &v : stage.spatial)
    if (cmp && v.name == cmp->i) i = &v;
  if (!cmp || !i) return *reason = not_masked, std::nullopt;
  // Normalise to k < i + c or i + c <= k.
  bool reversed = cmp->op == BinaryOp::Gt || cmp->op == BinaryOp::Ge;
  int64_t offset = cmp->offset;
  if (cmp->op == BinaryOp::Le) offset += 1;  // k <= i + c: k < i + c + 1
  if (cmp->op == BinaryOp::Gt) offset += 1;  // k > i + c: i + c + 1 <= k
  // Forward: k < i + 1 (inclusive) or k < i (exclusive). Reversed: i <= k or i + 1 <= k.
  bool exclusive;
  if (!reversed && (offset == 1 || offset == 0))
    exclusive = offset == 0;
  else if (reversed && (offset == 0 || offset == 1))
    exclusive = offset == 1;
  else
    return *reason = name + "'s mask compares " + k.name + " with " + i->name + " at an offset of " +
                     std::to_string(offset) + "; a running total includes its own position or stops just before it",
           std::nullopt;
  const int64_t extent = !reversed && exclusive ? i->extent - 1 : i->extent;
  if (extent < 1) return *reason = name + ": an exclusive running total over one position is empty", std::nullopt;
  if (reversed ? k.extent != extent : k.extent < extent)
    return *reason = name + " reduces " + k.name + " over " + std::to_string(k.extent) + " points, not over " +
                     i->name + "'s positions (" + std::to_string(extent) + ")",
           std::nullopt;
  const Expr kv = Var::make(index_type_for(extent), k.name), iv = iter_var(*i);
  const Expr one = make_int(1, iv.type());
  Expr guard = reversed ? Binary::make(BinaryOp::Le, exclusive ? iv + one : iv, cast_to(iv.type(), kv))
                        : Binary::make(BinaryOp::Lt, cast_to(iv.type(), kv), exclusive ? iv : iv + one);
  Graph out = graph;
  Stage &s = out.stages[*at];
  s.reduce_vars[0].extent = extent;
  s.body = Select::make(guard, substitute(mask->value, {{k.name, kv}}), *identity);
  if (equal(s.body, stage.body) && extent == k.extent)
    return *reason = name + " is already a ranged reduction", std::nullopt;
  return finish_rewrite(std::move(out));
}

}  // namespace ks
