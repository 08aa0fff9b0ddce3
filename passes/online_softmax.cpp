// online_softmax: a softmax's two row statistics, the maximum M and the sum T of
// exp(X - M), in one pass. Since T = exp(L - M) for L = logsumexp(X), every value a
// softmax, log-softmax or logsumexp makes of the pair depends on M + log T = L alone
// (exp(X - M) / T = exp(X - L); X - M - log T = X - L; M + log T = L), so its readers
// read L in M's place and 1 in T's, and one reduction with a running maximum and a
// rescaled running sum (ReduceOp::LogSumExp, combined by logaddexp) replaces two.
//
// The rule matches T = sum(k) exp(X(k) - M[..]) (exp read directly or through an
// elementwise temporary) with M = max(k) X(k) over the same points, both temporaries.
// Elementwise temporaries that read M or T are inlined into their readers first; then
// each stage that reads M or T must depend on them through L alone, which is checked
// by evaluating its body at random points with (M, T) and with (M + log T, 1): a
// stage that outputs M itself, or exp(X - M) without the division, is refused.
#include <cmath>
#include <random>
#include <set>

#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// e with every load of `temp` (an elementwise stage) replaced by its body there.
Expr inline_loads(const Expr &e, const Stage &temp) {
  return replace_loads(e, [&](const Load &load, const Expr &) {
    return load.buffer == temp.output ? instantiate(temp, load.indices) : Expr();
  });
}

// Whether `body` depends on the pair (M, T) through M + log T alone: at random values
// of everything else, the same with (m, t) and with (m + log t, 1), for each row the
// body reads (a load's printed indices) drawn apart.
bool depends_on_logsumexp_alone(const Expr &body, const std::string &m, const std::string &t) {
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> value(-1.5, 1.5), total(1.5, 6.0);
  for (int trial = 0; trial < 3; ++trial) {
    std::map<std::string, double> others, maxima, totals;
    auto draw = [&](std::map<std::string, double> &into, const std::string &key, bool positive) {
      auto it = into.find(key);
      return it != into.end() ? it->second : (into[key] = positive ? total(rng) : value(rng));
    };
    auto at = [&](bool shifted) {
      return value_at(
          body,
          [&](const Load &load, const std::string &key) {
            if (load.buffer == m) {
              const double x = draw(maxima, key, false);  // (before the total: the draws' order)
              return shifted ? x + std::log(draw(totals, key, true)) : x;
            }
            if (load.buffer == t) return shifted ? 1.0 : draw(totals, key, true);
            return draw(others, load.buffer + "[" + key, false);
          },
          [&](const Var &v) { return is_int(v.type) ? draw(others, v.name, true) * 3 : draw(others, v.name, false); });
    };
    std::optional<double> a = at(false), b = at(true);
    // (constants of f32 expressions round to f32 at each step)
    if (!a || !b || std::fabs(*a - *b) > 1e-4 * std::max(1.0, std::fabs(*a))) return false;
  }
  return true;
}

}  // namespace

std::optional<Graph> online_softmax(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &total = graph.stages[*at];
  const std::string not_softmax = name + " is not a softmax's sum: sum(k) exp(X - M) with M = max(k) X";
  if (total.reduce != ReduceOp::Sum) return *reason = not_softmax + " (" + name + " is not a sum)", std::nullopt;
  if (graph.find_tensor(name)->role != TensorRole::Temp)
    return *reason = name + " is an output: its value would change", std::nullopt;
  // exp(X - M[..]), read directly or through an elementwise temporary.
  Expr body = total.body;
  if (const Load *l = body.as<Load>())
    if (std::optional<size_t> e = stage_index(graph, l->buffer); e && graph.stages[*e].reduce == ReduceOp::None)
      body = instantiate(graph.stages[*e], l->indices);
  const Call *exp = body.as<Call>();
  const Binary *difference = exp && exp->fn == Builtin::Exp ? exp->args[0].as<Binary>() : nullptr;
  const Load *max_load = difference && difference->op == BinaryOp::Sub ? difference->b.as<Load>() : nullptr;
  std::optional<size_t> m_at = max_load ? stage_index(graph, max_load->buffer) : std::nullopt;
  if (!m_at || graph.stages[*m_at].reduce != ReduceOp::Max)
    return *reason = not_softmax + " (its body is not exp of a value minus a maximum)", std::nullopt;
  const Stage &maximum = graph.stages[*m_at];
  if (graph.find_tensor(maximum.output)->role != TensorRole::Temp)
    return *reason = maximum.output + " is an output: its value would change", std::nullopt;
  // M's body at M's indices, its reduction variables renamed to T's, must be X.
  bool same_points = maximum.reduce_vars.size() == total.reduce_vars.size();
  std::map<std::string, std::string> renames;
  for (size_t i = 0; same_points && i < total.reduce_vars.size(); ++i) {
    same_points = maximum.reduce_vars[i].extent == total.reduce_vars[i].extent;
    renames[maximum.reduce_vars[i].name] = total.reduce_vars[i].name;
  }
  if (!same_points ||
      print_expr(simplify(instantiate(maximum, max_load->indices, renames))) != print_expr(simplify(difference->a)))
    return *reason =
               not_softmax + " (" + maximum.output + " is not the maximum of the same values over the same points)",
           std::nullopt;

  // Elementwise temporaries that read M or T are inlined into their readers.
  // (They stay as T's operand, and go with T.)
  Graph g = graph;
  std::set<std::string> inlined;
  // (each as earlier inlining left it: a chain of them, p = exp(X - M), w = p / T)
  for (size_t i = 0; i < g.stages.size(); ++i) {
    const Stage s = g.stages[i];
    if (s.reduce == ReduceOp::None && s.output != name && graph.find_tensor(s.output)->role == TensorRole::Temp &&
        (reads_buffer(s.body, maximum.output) || reads_buffer(s.body, name))) {
      inlined.insert(s.output);
      for (Stage &r : g.stages)
        if (r.output != s.output && r.output != name) r.body = inline_loads(r.body, s);
    }
  }
  g = remove_dead_stages(g);
  for (const Stage &s : g.stages) {
    if (s.output == name || s.output == maximum.output || inlined.count(s.output)) continue;
    if ((reads_buffer(s.body, maximum.output) || reads_buffer(s.body, name)) &&
        !depends_on_logsumexp_alone(s.body, maximum.output, name))
      return *reason = s.output + " reads " + maximum.output + " or " + name +
                       " other than through their logsumexp (softmax, log-softmax, logsumexp)",
             std::nullopt;
  }

  NameSet names = graph_names(g);
  const std::string lse = names.fresh(maximum.output + "_lse");
  Stage l = maximum;
  l.output = lse;
  l.reduce = ReduceOp::LogSumExp;
  const DType type = graph.find_tensor(name)->type;
  for (Stage &s : g.stages) {
    if (s.output == name || s.output == maximum.output || inlined.count(s.output)) continue;
    s.body = simplify(replace_loads(s.body, [&](const Load &load, const Expr &) -> Expr {
      if (load.buffer == maximum.output) return Load::make(load.type, lse, load.indices);
      if (load.buffer == name) return FloatImm::make(type, 1.0);
      return Expr();
    }));
  }
  g.tensors.push_back(temp_tensor(lse, graph.find_tensor(maximum.output)->type, l.spatial));
  const std::optional<size_t> m_new = stage_index(g, maximum.output);
  g.stages.insert(g.stages.begin() + static_cast<std::ptrdiff_t>(*m_new), l);
  return finish_rewrite(std::move(g));
}

}  // namespace ks
