// online_attention: a weighted sum by a softmax, y = sum(j) exp(X(j) - L) * W(j) with
// L = logsumexp(j) X(j), as one softmax_sum reduction (ir/graph.h): a running maximum,
// a rescaled running sum and a rescaled accumulator in one pass over j, so the
// weights are never stored and L is not a stage of its own. Where X is a plain read of
// a sum (attention's scores, q . k), that sum is computed inside each step of j, so
// the scores are not stored either: attention in one kernel.
//
// The rule takes y = sum(j) B(j, L[..]), where L = logsumexp over the same points (a
// softmax's pair max and sum of exponentials is made one by online_softmax first),
// read at one row that does not depend on j, and B linear in exp(-L): B(j, L) =
// exp(X(j) - L) * B(j, X(j)), checked by evaluating both sides at random points. Then
// W(j) = B(j, X(j)) and y = softmax_sum(j) softmax_pair(X(j), W(j)).
#include <cmath>
#include <random>

#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// The value of e where every load of `stat` reads `stat_value` (an expression, which
// may load too) and every other load and variable has a random value: equal loads
// (buffer and printed indices) the same value within one point.
std::optional<double> at_point(const Expr &e, const std::string &stat, const Expr &stat_value,
                               std::map<std::string, double> &drawn, std::mt19937 &rng) {
  std::uniform_real_distribution<double> value(-1.5, 1.5);
  auto draw = [&](const std::string &key) {
    auto it = drawn.find(key);
    return it != drawn.end() ? it->second : (drawn[key] = value(rng));
  };
  Expr with_stat =
      replace_loads(e, [&](const Load &load, const Expr &) { return load.buffer == stat ? stat_value : Expr(); });
  return value_at(
      with_stat, [&](const Load &load, const std::string &key) { return draw(load.buffer + "[" + key); },
      [&](const Var &v) { return is_int(v.type) ? std::fabs(draw("$" + v.name)) * 3 : draw("$" + v.name); });
}

// Whether body(L) = exp(X - L) * w at random points and values of L (w = body(X), its
// exp(X - X) cancelled: where X is -inf, a masked score, both sides are 0).
bool linear_in_exp_minus(const Expr &body, const std::string &stat, const Expr &x, const Expr &w) {
  std::mt19937 rng(20261127);
  std::uniform_real_distribution<double> level(-2.0, 2.0);
  int agreed = 0;
  for (int trial = 0; trial < 32 && agreed < 4; ++trial) {
    std::map<std::string, double> drawn;
    const double l = level(rng);
    std::optional<double> direct = at_point(body, stat, make_f32(l), drawn, rng);
    std::optional<double> shifted = at_point(Call::make(Builtin::Exp, {x - make_f32(l)}) * w, stat, x, drawn, rng);
    if (!direct || !shifted) continue;  // a value constant folding keeps (an infinity): another point
    // (a NaN on either side is a mismatch)
    if (!(*direct == *shifted || std::fabs(*direct - *shifted) <= 1e-4 * std::max(1.0, std::fabs(*direct))))
      return false;
    ++agreed;
  }
  return agreed == 4;
}

// The logsumexp stage y reads, if one.
std::optional<size_t> read_logsumexp(const Graph &graph, const Stage &y) {
  for (const Load *load : collect<Load>(y.body))
    if (std::optional<size_t> at = stage_index(graph, load->buffer);
        at && graph.stages[*at].reduce == ReduceOp::LogSumExp)
      return at;
  return std::nullopt;
}

}  // namespace

std::optional<Graph> online_attention(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const std::string not_attention =
      name + " is not a softmax-weighted sum: sum(j) exp(X - L) * W with L = logsumexp(j) X";
  if (graph.stages[*at].reduce != ReduceOp::Sum || !is_float(graph.stages[*at].body.type()))
    return *reason = not_attention + " (" + name + " is not a sum of floats)", std::nullopt;

  // A softmax's pair (maximum, sum of exponentials) read by y becomes its logsumexp.
  Graph g = graph;
  if (!read_logsumexp(g, g.stages[*at])) {
    for (const Stage &s : graph.stages) {
      std::string ignored;
      if (s.reduce != ReduceOp::Sum || s.output == name) continue;
      if (std::optional<Graph> online = online_softmax(graph, s.output, &ignored)) {
        std::optional<size_t> y = stage_index(*online, name);
        if (y && read_logsumexp(*online, online->stages[*y])) {
          g = std::move(*online);
          break;
        }
      }
    }
  }
  const size_t y_at = *stage_index(g, name);
  Stage y = g.stages[y_at];
  std::optional<size_t> l_at = read_logsumexp(g, y);
  if (!l_at) return *reason = not_attention + " (it reads no logsumexp, nor a softmax's maximum and sum)", std::nullopt;
  const Stage &l = g.stages[*l_at];
  if (g.find_tensor(l.output)->role != TensorRole::Temp)
    return *reason = l.output + " is an output: it would no longer be computed", std::nullopt;

  // L read at one row, outside j.
  std::set<std::string> reduced;
  for (const IterVar &v : y.reduce_vars) reduced.insert(v.name);
  std::vector<const Load *> reads;
  for (const Load *load : collect<Load>(y.body))
    if (load->buffer == l.output) reads.push_back(load);
  for (const Load *load : reads) {
    bool same = load->indices.size() == reads[0]->indices.size();
    for (size_t d = 0; same && d < load->indices.size(); ++d)
      same = equal(load->indices[d], reads[0]->indices[d]) && !mentions(load->indices[d], reduced);
    if (!same)
      return *reason =
                 name + " reads " + l.output + " at more than one row, or at a row that depends on " + "its reduction",
             std::nullopt;
  }
  // The same points: X is L's body at that row, its variables y's.
  if (l.reduce_vars.size() != y.reduce_vars.size())
    return *reason = not_attention + " (" + l.output + " reduces over other points)", std::nullopt;
  std::map<std::string, std::string> renames;
  for (size_t r = 0; r < y.reduce_vars.size(); ++r) {
    if (l.reduce_vars[r].extent != y.reduce_vars[r].extent)
      return *reason = not_attention + " (" + l.output + " reduces over other points)", std::nullopt;
    renames[l.reduce_vars[r].name] = y.reduce_vars[r].name;
  }
  // X and y's body through the elementwise temporaries they read (a copy or a mask of
  // the scores), so that exp(X - L) at L = X cancels to 1 (never exp(-inf + inf)).
  auto through_temporaries = [&](Expr e) {
    for (int depth = 0; depth < 8; ++depth) {
      Expr next = replace_loads(e, [&](const Load &load, const Expr &) {
        std::optional<size_t> t = stage_index(g, load.buffer);
        return t && g.stages[*t].reduce == ReduceOp::None && g.find_tensor(load.buffer)->role == TensorRole::Temp &&
                       !load.pad
                   ? instantiate(g.stages[*t], load.indices)
                   : Expr();
      });
      if (next.same_as(e)) break;
      e = simplify(next);
    }
    return e;
  };
  const std::vector<Expr> row = reads[0]->indices;
  y.body = through_temporaries(y.body);
  const Expr x = through_temporaries(simplify(instantiate(l, row, renames)));
  Expr w = simplify(
      replace_loads(y.body, [&](const Load &load, const Expr &) { return load.buffer == l.output ? x : Expr(); }));
  // exp(X - L) at L = X is 1, which simplify sees only where X is spelled alike in both:
  // with a scale after the maximum (exp(s / 2 - s * 0.5 / 0.5 / 2)) the canonical form
  // cancels it, and w reads the scores no more.
  if (const Expr c = canonical(w); collect<Load>(c).size() < collect<Load>(w).size()) w = c;
  if (!linear_in_exp_minus(y.body, l.output, x, w))
    return *reason = name + " reads " + l.output + " other than as a factor exp(X - " + l.output + ")", std::nullopt;

  // A score that is a read of a sum (times a constant, in the canonical form: `s / c`)
  // is summed in each step, the constant inside the sum.
  Expr score = x;
  std::vector<IterVar> score_vars;
  const LinearForm x_form = canonical_form(x);
  const bool one_read = x_form.size() == 1 && x_form[0].factors.size() == 1 && x_form[0].divisors.empty();
  if (const Load *s = one_read ? x_form[0].factors[0].as<Load>() : nullptr; s && !s->pad)
    if (std::optional<size_t> s_at = stage_index(g, s->buffer);
        s_at && g.stages[*s_at].reduce == ReduceOp::Sum && g.find_tensor(s->buffer)->role == TensorRole::Temp) {
      const Stage &sum = g.stages[*s_at];
      NameSet names = graph_names(g);
      reserve_vars(y, &names);
      std::map<std::string, std::string> fresh;
      for (const IterVar &v : sum.reduce_vars) {
        fresh[v.name] = names.fresh(v.name);
        score_vars.push_back({fresh[v.name], v.extent});
      }
      score = instantiate(sum, s->indices, fresh);
      if (x_form[0].coefficient != 1) score = score * FloatImm::make(score.type(), x_form[0].coefficient);
    }
  y.reduce = ReduceOp::SoftmaxSum;
  y.reduce_vars.insert(y.reduce_vars.end(), score_vars.begin(), score_vars.end());
  y.score_vars = score_vars.size();
  y.body = Call::make(Builtin::SoftmaxPair, {score, w});
  g.stages[y_at] = y;
  return finish_rewrite(std::move(g));
}

}  // namespace ks
