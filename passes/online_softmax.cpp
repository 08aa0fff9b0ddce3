// online_softmax: a softmax's two row statistics, the maximum M and the sum T of
// exp(X - M), in one pass. Since T = exp(L - M) for L = logsumexp(X), every value a
// softmax, log-softmax or logsumexp makes of the pair depends on M + log T = L alone
// (exp(X - M) / T = exp(X - L); X - M - log T = X - L; M + log T = L), so its readers
// read L in M's place and 1 in T's, and one reduction with a running maximum and a
// rescaled running sum (ReduceOp::LogSumExp, combined by logaddexp) replaces two.
//
// The rule matches T = sum(k) exp(X(k) - M[..]) (exp read directly or through an
// elementwise temporary) with M = max(k) X(k) over the same points, both temporaries,
// in the canonical form (canonical.h) of exp's argument, and so with a positive scale
// a of the maximum's values however it is written (`exp(s / c - m / c)`, `exp((s - m)
// * 2)`): a > 0 commutes with the maximum, a max(k) Y = max(k) a Y, and then L is the
// logsumexp of a Y, read as L / a in M's place (a M + log T = L).
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
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// e with every load of `temp` (an elementwise stage) replaced by its body there,
// rounded to temp's format where it is a 16-bit one (`bf16(exp(s - m))`): the value
// keeps its declared type, and a matrix unit may take it as a 16-bit operand.
Expr inline_loads(const Expr &e, const Stage &temp, DType type) {
  return replace_loads(e, [&](const Load &load, const Expr &) {
    if (load.buffer != temp.output) return Expr();
    const Expr value = instantiate(temp, load.indices);
    return is_half(type) ? Call::make(rounding_to(type), {value}) : value;
  });
}

// e without its roundings to 16-bit formats (the identities below hold of exact values).
Expr unrounded(const Expr &e) {
  struct Strip : IRMutator {
    using IRMutator::visit;
    Expr visit(const Call *n, const Expr &self) override {
      Expr x = IRMutator::visit(n, self);
      const Call *c = x.as<Call>();
      return rounded_format(c->fn) ? c->args[0] : x;
    }
  };
  return Strip().mutate(e);
}

// Whether `body` depends on the pair (M, T) through a M + log T alone: at random values
// of everything else, the same with (m, t) and with (m + log t / a, 1), for each row
// the body reads (a load's printed indices) drawn apart.
bool depends_on_logsumexp_alone(const Expr &body, const std::string &m, const std::string &t, double a) {
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
              return shifted ? x + std::log(draw(totals, key, true)) / a : x;
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
  // exp(X - M[..]), read directly or through an elementwise temporary (the body's
  // canonical form a read of it: `log(exp(e[..]))`, `e[..] * 2.0 / 2.0`).
  // exp(E) with E = X - a M[..] in canonical form: a term -a M[..], a > 0, M a maximum
  // (and exp(x) / exp(m) is exp(x - m)).
  Expr body = canonical(total.body);
  if (const Load *l = body.as<Load>())
    if (std::optional<size_t> e = stage_index(graph, l->buffer); e && graph.stages[*e].reduce == ReduceOp::None)
      body = canonical(instantiate(graph.stages[*e], l->indices));
  const Call *exp = body.as<Call>();
  const std::string not_exp = not_softmax + " (its body is not exp of a value minus a maximum)";
  if (!exp || exp->fn != Builtin::Exp) return *reason = not_exp, std::nullopt;
  const LinearForm argument = canonical_form(exp->args[0]);
  const Load *max_load = nullptr;
  std::optional<size_t> m_at;
  double scale = 1;
  std::string mismatch;
  for (size_t i = 0; i < argument.size() && !max_load; ++i) {
    const Product &term = argument[i];
    const Load *load = term.factors.size() == 1 && term.divisors.empty() ? term.factors[0].as<Load>() : nullptr;
    std::optional<size_t> at_max = load ? stage_index(graph, load->buffer) : std::nullopt;
    if (term.coefficient >= 0 || !at_max || graph.stages[*at_max].reduce != ReduceOp::Max) continue;
    const Stage &candidate = graph.stages[*at_max];
    if (graph.find_tensor(candidate.output)->role != TensorRole::Temp)
      return *reason = candidate.output + " is an output: its value would change", std::nullopt;
    // M's body at M's indices, its reduction variables renamed to T's, times a, must be X.
    bool same_points = candidate.reduce_vars.size() == total.reduce_vars.size();
    std::map<std::string, std::string> renames;
    for (size_t v = 0; same_points && v < total.reduce_vars.size(); ++v) {
      same_points = candidate.reduce_vars[v].extent == total.reduce_vars[v].extent;
      renames[candidate.reduce_vars[v].name] = total.reduce_vars[v].name;
    }
    LinearForm rest = argument;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const double a = -term.coefficient;
    const Expr y = instantiate(candidate, load->indices, renames);
    if (!same_points || !same_canonical(y * FloatImm::make(y.type(), a), rebuild(rest))) {
      mismatch = not_softmax + " (" + candidate.output + " is not the maximum of the same values over the same points)";
      continue;
    }
    max_load = load;
    m_at = at_max;
    scale = a;
  }
  if (!max_load) return *reason = mismatch.empty() ? not_exp : mismatch, std::nullopt;
  const Stage &maximum = graph.stages[*m_at];

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
        if (r.output != s.output && r.output != name)
          r.body = inline_loads(r.body, s, graph.find_tensor(s.output)->type);
    }
  }
  g = remove_dead_stages(g);
  for (const Stage &s : g.stages) {
    if (s.output == name || s.output == maximum.output || inlined.count(s.output)) continue;
    if ((reads_buffer(s.body, maximum.output) || reads_buffer(s.body, name)) &&
        !depends_on_logsumexp_alone(unrounded(s.body), maximum.output, name, scale))
      return *reason = s.output + " reads " + maximum.output + " or " + name +
                       " other than through their logsumexp (softmax, log-softmax, logsumexp)",
             std::nullopt;
  }

  NameSet names = graph_names(g);
  const std::string lse = names.fresh(maximum.output + "_lse");
  Stage l = maximum;
  l.output = lse;
  l.reduce = ReduceOp::LogSumExp;
  if (scale != 1) l.body = l.body * FloatImm::make(l.body.type(), scale);
  const DType type = value_type(graph.find_tensor(name)->type);  // a 16-bit total's value is f32
  for (Stage &s : g.stages) {
    if (s.output == name || s.output == maximum.output || inlined.count(s.output)) continue;
    s.body = simplify(replace_loads(s.body, [&](const Load &load, const Expr &) -> Expr {
      if (load.buffer == maximum.output) {
        const Expr l_load = Load::make(load.type, lse, load.indices);
        return scale == 1 ? l_load : l_load / FloatImm::make(load.type, scale);
      }
      if (load.buffer == name) return FloatImm::make(type, 1.0);
      return Expr();
    }));
  }
  g.tensors.push_back(temp_tensor(lse, value_type(graph.find_tensor(maximum.output)->type), l.spatial));
  const std::optional<size_t> m_new = stage_index(g, maximum.output);
  g.stages.insert(g.stages.begin() + static_cast<std::ptrdiff_t>(*m_new), l);
  return finish_rewrite(std::move(g));
}

}  // namespace ks
