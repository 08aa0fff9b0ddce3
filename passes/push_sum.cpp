// push_sum: a sum pushed down through the contractions it sums over, the rewrite
// behind most of KernelBench level 2's large wins. A sum over a linear layer's
// outputs is the layer of the summed weights:
//
//   sum_n (sum_k x[m, k] w[n, k] + b[n]) = sum_k x[m, k] (sum_n w[n, k]) + sum_n b[n]
//
// an M x N x K GEMM become a column sum of w and a GEMV; a global average pool of a
// convolution is the convolution of the input's window sums.
//
// Algorithm, for `push_sum s` (s a sum reduction):
//  1. s's body is expanded into a sum of products (passes/linear_form.h), reading
//     through the elementwise temporaries that lead to a sum reduction.
//  2. A product with exactly one factor that reads a sum reduction P (no pad) takes
//     P's body at the indices read, P's reduction variables renamed apart and joined
//     to s's: sum_n c P[m, n] = sum_n,k c body_P(m, n, k). Expanded again.
//  3. A reduction variable no factor of a product uses leaves it, the product times
//     its extent (sum_n b = N b for b free of n).
//  4. Each product's reduction variables R are factored: for each subset V of R, the
//     factors that use V (not all of them) summed over V form a new stage T over the
//     variables they use besides V, and the product keeps T's value in their place,
//     summed over R without V. The subset that makes the fewest points (T's and the
//     product's) is taken while it makes fewer than before; T is factored the same
//     way (points counted with every extent above 1 alike: the same choice at
//     every size). Where T is one zero-padded read whose every V variable v appears in one
//     index as v + e, and v's range covers the whole dimension for every e, T is the
//     sum of that whole dimension, whatever e is (a full convolution's window). Where
//     T is one read whose other indices combine several variables (l + 1 - kh), T
//     spans those indices' values rather than their variables, where that makes it
//     smaller (a depth-mean of a 3-D convolution: the depth sums of the input).
//  5. Products summed over the same variables share a stage over the spatial
//     variables they use; s adds these stages and the products summed over nothing.
//     A single such stage is s itself.
//  6. The stages no longer needed go. Whether the whole is cheaper depends on what
//     else reads the contractions (they stay for another reader): the search takes
//     push_sum where graph_work goes down (simplifying_rewrites), the rule does not ask.
#include <algorithm>

#include "ir/affine.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/linear_form.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// A product of the expansion with the variables it is summed over.
struct Term {
  Product product;
  std::vector<std::string> reduce;
};

std::set<std::string> vars_of(const std::vector<Expr> &exprs) {
  std::set<std::string> out;
  for (const Expr &e : exprs) {
    std::set<std::string> v = vars_in(e);
    out.insert(v.begin(), v.end());
  }
  return out;
}

class PushSum {
 public:
  PushSum(const Graph &graph, size_t at) : graph_(graph), y_(graph.stages[at]), names_(graph_names(graph)) {
    reserve_vars(y_, &names_);
    for (const IterVar &v : y_.spatial) extents_[v.name] = v.extent;
    for (const IterVar &v : y_.reduce_vars) extents_[v.name] = v.extent;
  }

  std::optional<Graph> run(size_t at, std::string *reason) {
    std::vector<std::string> reduce;
    for (const IterVar &v : y_.reduce_vars) reduce.push_back(v.name);
    std::vector<Term> terms;
    for (const Product &p : expand(y_.body, options())) merge(Term{p, reduce}, &terms);
    for (Term &t : terms) {
      drop_unused(t);
      factor(t, domain_of(y_.spatial));
    }
    if (!merged_ && !factored_ && !dropped_)
      return *reason = y_.output +
                       " reads no sum reduction as a term of its sum, and no product of its body factors "
                       "or leaves a reduction variable",
             std::nullopt;
    Graph out = graph_;
    std::vector<Stage> stages(graph_.stages.begin(), graph_.stages.begin() + static_cast<std::ptrdiff_t>(at));
    for (Stage &s : new_stages_) stages.push_back(std::move(s));
    Stage y = y_;
    regroup(terms, &y, &stages);
    stages.push_back(y);
    stages.insert(stages.end(), graph_.stages.begin() + static_cast<std::ptrdiff_t>(at) + 1, graph_.stages.end());
    out.stages = std::move(stages);
    out.tensors.insert(out.tensors.end(), new_tensors_.begin(), new_tensors_.end());
    return finish_rewrite(std::move(out));
  }

 private:
  const Graph &graph_;
  const Stage &y_;
  NameSet names_;
  std::map<std::string, int64_t> extents_;  // every variable a term may use
  std::vector<Stage> new_stages_;           // in the order they are defined
  std::vector<TensorDecl> new_tensors_;
  bool merged_ = false, factored_ = false, dropped_ = false;

  const Stage *sum_stage(const std::string &buffer) const {
    std::optional<size_t> at = stage_index(graph_, buffer);
    if (!at || graph_.stages[*at].output == y_.output) return nullptr;
    const Stage &s = graph_.stages[*at];
    return s.reduce == ReduceOp::Sum && is_float(s.body.type()) ? &s : nullptr;
  }

  // Whether an elementwise temporary leads, through elementwise temporaries, to a
  // read of a sum reduction: what step 1 reads through.
  bool leads_to_sum(const std::string &buffer, int depth) const {
    std::optional<size_t> at = stage_index(graph_, buffer);
    if (!at || depth > 4) return false;
    const Stage &s = graph_.stages[*at];
    if (s.reduce != ReduceOp::None || !is_float(s.body.type())) return false;
    for (const Load *load : collect<Load>(s.body))
      if (!load->pad && (sum_stage(load->buffer) || leads_to_sum(load->buffer, depth + 1))) return true;
    return false;
  }

  ExpandOptions options() const {
    ExpandOptions o;
    o.through = [this](const Load &load) {
      if (load.pad || !leads_to_sum(load.buffer, 0)) return Expr();
      return instantiate(graph_.stages[*stage_index(graph_, load.buffer)], load.indices);
    };
    return o;
  }

  // Step 2: t, with its read of a sum reduction replaced by that reduction's body.
  void merge(Term t, std::vector<Term> *out) {
    int found = -1, reads = 0;
    for (size_t f = 0; f < t.product.factors.size(); ++f)
      if (const Load *load = t.product.factors[f].as<Load>(); load && !load->pad && sum_stage(load->buffer)) {
        ++reads;
        if (found < 0) found = static_cast<int>(f);
      }
    for (const Expr &d : t.product.divisors)
      for (const Load *load : collect<Load>(d))
        if (sum_stage(load->buffer)) reads += 2;  // a sum in a divisor is no term of the sum
    if (found < 0 || reads != 1) return out->push_back(std::move(t));
    const Load &load = *t.product.factors[found].as<Load>();
    const Stage &p = *sum_stage(load.buffer);
    std::map<std::string, std::string> renames;
    for (const IterVar &v : p.reduce_vars) {
      renames[v.name] = names_.fresh(v.name);
      extents_[renames[v.name]] = v.extent;
      t.reduce.push_back(renames[v.name]);
    }
    Expr value = instantiate(p, load.indices, renames);
    t.product.factors.erase(t.product.factors.begin() + found);
    for (const Product &q : expand(value, options())) {
      Product combined{t.product.coefficient * q.coefficient, t.product.factors, t.product.divisors};
      combined.factors.insert(combined.factors.end(), q.factors.begin(), q.factors.end());
      combined.divisors.insert(combined.divisors.end(), q.divisors.begin(), q.divisors.end());
      out->push_back(Term{combined, t.reduce});
    }
    merged_ = true;
  }

  // Step 3.
  void drop_unused(Term &t) {
    std::set<std::string> used = vars_of(t.product.factors), in_divisors = vars_of(t.product.divisors);
    used.insert(in_divisors.begin(), in_divisors.end());
    std::vector<std::string> kept;
    for (const std::string &v : t.reduce) {
      if (used.count(v)) {
        kept.push_back(v);
      } else {
        t.product.coefficient *= static_cast<double>(extents_.at(v));
        dropped_ = true;
      }
    }
    t.reduce = kept;
  }

  // The points a loop nest over vars runs, as factoring compares them: every
  // variable of extent above 1 counts as kExtent, whatever its extent, so that the
  // factoring (and so the stages a schedule names) is the same at the check sizes as
  // at the timed sizes; the number of variables is what decides, as it does for the
  // order of variable elimination.
  static constexpr double kExtent = 64;
  double points(const std::vector<std::string> &vars, const std::map<std::string, int64_t> *more = nullptr) const {
    double n = 1;
    for (const std::string &v : vars) {
      const int64_t extent = more && more->count(v) ? more->at(v) : extents_.at(v);
      n *= extent > 1 ? kExtent : 1;
    }
    return n;
  }

  std::vector<std::string> domain_of(const std::vector<IterVar> &spatial) const {
    std::vector<std::string> out;
    for (const IterVar &v : spatial) out.push_back(v.name);
    return out;
  }

  // A candidate inner sum: its body, the variables it spans and sums over.
  struct Inner {
    std::vector<size_t> factors, divisors;  // of the product, moved into it
    Expr body;
    std::vector<std::string> spatial, reduce;
    // Where T is read: one index per spatial variable (none: the variables themselves).
    std::vector<Expr> outer_indices;
    // Of variables a covered window or a reindexed dimension introduces; the latter
    // are placeholders ("#2") named at new_stage after what they index (`names`).
    std::map<std::string, int64_t> new_extents;
    std::map<std::string, std::string> names;
    double cost = 0;
  };

  // An affine index as a person writes it: the added terms, then the constant, then
  // what is subtracted (l + 2 - kh, not kh * -1 + l + 2).
  Expr readable(const Affine &a, DType type) const {
    Expr out;
    auto add = [&](Expr term, bool minus) {
      term = cast_to(type, term);
      if (!out.defined())
        out = minus ? Unary::make(UnaryOp::Neg, term) : term;
      else
        out = Binary::make(minus ? BinaryOp::Sub : BinaryOp::Add, out, term);
    };
    auto term = [&](const std::string &v, int64_t coeff) {
      Expr var = cast_to(type, Var::make(index_type_for(extents_.at(v)), v));
      return std::abs(coeff) == 1 ? var : Binary::make(BinaryOp::Mul, make_int(std::abs(coeff), type), var);
    };
    for (const auto &[v, coeff] : a.coeffs)
      if (coeff > 0) add(term(v, coeff), false);
    if (a.constant > 0) add(make_int(a.constant, type), false);
    for (const auto &[v, coeff] : a.coeffs)
      if (coeff < 0) add(term(v, coeff), true);
    if (a.constant < 0) add(make_int(-a.constant, type), true);
    return out.defined() ? out : make_int(0, type);
  }

  // Step 4's reindexing: T = sum over V of one read whose other indices each combine
  // several variables (a convolution's l + 1 - kh) spans those indices' values, one
  // dimension each, rather than their variables: T[.., a] with a = l + 1 - kh, read
  // at the index the product had. Kept where T has fewer points so.
  void reindex(Inner &inner) const {
    const Load *load = inner.body.as<Load>();
    if (!load) return;
    const std::set<std::string> summed(inner.reduce.begin(), inner.reduce.end());
    Inner out = inner;
    out.spatial.clear();
    std::vector<Expr> indices = load->indices;
    auto keep = [&](const std::string &v) {
      if (summed.count(v) || std::find(out.spatial.begin(), out.spatial.end(), v) != out.spatial.end()) return;
      out.spatial.push_back(v);
      out.outer_indices.push_back(Var::make(index_type_for(extents_.at(v)), v));
    };
    bool changed = false;
    for (size_t d = 0; d < indices.size(); ++d) {
      const std::set<std::string> vars = vars_in(indices[d]);
      bool in_sum = false;
      for (const std::string &v : vars) in_sum = in_sum || summed.count(v);
      std::optional<Affine> a = in_sum || vars.size() < 2 ? std::nullopt : affine_of(indices[d], {});
      if (!a) {
        for (const std::string &v : vars) keep(v);
        continue;
      }
      int64_t lo = a->constant, hi = a->constant;
      std::string named;
      for (const auto &[v, coeff] : a->coeffs) {
        const int64_t extreme = coeff * (extents_.at(v) - 1);
        (extreme < 0 ? lo : hi) += extreme;
        named += (named.empty() ? "" : "_") + v;
      }
      const std::string placeholder = "#" + std::to_string(d);
      out.new_extents[placeholder] = hi - lo + 1;
      out.names[placeholder] = named;
      out.spatial.push_back(placeholder);
      const DType type = indices[d].type();
      Affine shifted = *a;
      shifted.constant -= lo;
      out.outer_indices.push_back(readable(shifted, type));
      indices[d] = simplify(cast_to(type, Var::make(index_type_for(hi - lo + 1), placeholder)) + make_int(lo, type));
      changed = true;
    }
    if (!changed) return;
    out.body = Load::make(load->type, load->buffer, indices, load->pad);
    out.cost = points(out.spatial, &out.new_extents) * points(out.reduce, &out.new_extents);
    if (out.cost < inner.cost) inner = std::move(out);
  }

  // Step 4's window: T = sum over V of one zero-padded read; each v of V alone in one
  // index as v + e, its range covering the dimension whatever e is.
  bool cover(Inner &inner, const std::set<std::string> &v_set) const {
    const Load *load = inner.body.as<Load>();
    if (!load || !load->pad || *load->pad != 0) return false;
    const TensorDecl *t = graph_.find_tensor(load->buffer);
    std::vector<Expr> indices = load->indices;
    std::set<std::string> consumed;
    std::vector<std::string> reduce;
    std::map<std::string, int64_t> new_extents;
    bool outside = false;  // whether an index of a dimension left alone may leave it
    for (size_t d = 0; d < indices.size(); ++d) {
      std::set<std::string> in_dim = vars_in(indices[d]);
      std::vector<std::string> mine;
      for (const std::string &v : in_dim)
        if (v_set.count(v)) mine.push_back(v);
      if (mine.empty()) {
        outside = outside || may_leave(indices[d], t->shape[d]);
        continue;
      }
      std::optional<Affine> a = affine_of(indices[d], {});
      if (mine.size() != 1 || !a || a->coeffs[mine[0]] != 1) return false;
      int64_t lo = a->constant, hi = a->constant;
      for (const auto &[name, coeff] : a->coeffs) {
        if (name == mine[0]) continue;
        const int64_t extreme = coeff * (extents_.at(name) - 1);
        (extreme < 0 ? lo : hi) += extreme;
      }
      // v + e over v in [0, E) covers [0, D) for every e in [lo, hi].
      if (hi > 0 || lo + extents_.at(mine[0]) < t->shape[d]) return false;
      consumed.insert(mine[0]);
      indices[d] = Var::make(index_type_for(t->shape[d]), mine[0]);
      reduce.push_back(mine[0]);
      new_extents[mine[0]] = t->shape[d];
    }
    if (consumed.size() != v_set.size()) return false;
    // The pad goes with the covered dimensions, unless another index may leave its
    // own (a convolution's window over a dimension that no variable of V sums: the
    // fuzzer met it, a transposed convolution's mean split by rfactor).
    inner.body = Load::make(load->type, load->buffer, indices, outside ? load->pad : std::nullopt);
    std::set<std::string> left = vars_in(inner.body);
    std::vector<std::string> spatial;
    for (const std::string &v : inner.spatial)
      if (left.count(v) && !consumed.count(v)) spatial.push_back(v);
    inner.spatial = spatial;
    inner.reduce = reduce;
    inner.new_extents = new_extents;
    return true;
  }

  // Whether an index may leave [0, size), over its variables' extents.
  bool may_leave(const Expr &index, int64_t size) const {
    std::optional<Affine> a = affine_of(index, {});
    if (!a) return true;
    int64_t lo = a->constant, hi = a->constant;
    for (const auto &[name, coeff] : a->coeffs) {
      const int64_t extreme = coeff * (extents_.at(name) - 1);
      (extreme < 0 ? lo : hi) += extreme;
    }
    return lo < 0 || hi >= size;
  }

  std::optional<Inner> candidate(const Term &t, const std::vector<std::string> &v_list) const {
    const std::set<std::string> v_set(v_list.begin(), v_list.end());
    Inner inner;
    const Product &p = t.product;
    for (size_t f = 0; f < p.factors.size(); ++f)
      for (const std::string &v : vars_in(p.factors[f]))
        if (v_set.count(v)) {
          inner.factors.push_back(f);
          break;
        }
    for (size_t d = 0; d < p.divisors.size(); ++d)
      for (const std::string &v : vars_in(p.divisors[d]))
        if (v_set.count(v)) {
          inner.divisors.push_back(d);
          break;
        }
    if (inner.factors.size() + inner.divisors.size() == p.factors.size() + p.divisors.size()) return std::nullopt;
    Product body;
    for (size_t f : inner.factors) body.factors.push_back(p.factors[f]);
    for (size_t d : inner.divisors) body.divisors.push_back(p.divisors[d]);
    inner.body = rebuild(body);
    std::set<std::string> used = vars_in(inner.body);
    // T's spatial variables in a stable order: the product's domain order, then the
    // reduction's.
    for (const std::string &v : order_)
      if (used.count(v) && !v_set.count(v)) inner.spatial.push_back(v);
    inner.reduce = v_list;
    if (!cover(inner, v_set)) inner.new_extents.clear();
    inner.cost = points(inner.spatial) * points(inner.reduce, &inner.new_extents);
    reindex(inner);
    return inner;
  }

  // Step 4 for term t over the points `domain`.
  void factor(Term &t, const std::vector<std::string> &domain) {
    for (;;) {
      order_ = domain;
      order_.insert(order_.end(), t.reduce.begin(), t.reduce.end());
      const size_t n = t.reduce.size();
      if (n == 0 || n > 12) return;
      const double current = points(domain) * points(t.reduce);
      std::optional<Inner> best;
      double best_cost = current;
      for (uint32_t mask = 1; mask < (1u << n); ++mask) {
        std::vector<std::string> v_list, rest;
        for (size_t i = 0; i < n; ++i) ((mask >> i) & 1 ? v_list : rest).push_back(t.reduce[i]);
        std::optional<Inner> inner = candidate(t, v_list);
        if (!inner) continue;
        const double cost = inner->cost + points(domain) * points(rest);
        if (cost < best_cost) best_cost = cost, best = std::move(inner);
      }
      if (!best) return;
      factored_ = true;
      const std::string name = new_stage(*best);
      std::vector<Expr> indices = best->outer_indices;
      if (indices.empty())
        for (const std::string &v : best->spatial) indices.push_back(Var::make(index_type_for(extents_.at(v)), v));
      Product outer{t.product.coefficient, {}, {}};
      for (size_t f = 0; f < t.product.factors.size(); ++f)
        if (std::find(best->factors.begin(), best->factors.end(), f) == best->factors.end())
          outer.factors.push_back(t.product.factors[f]);
      for (size_t d = 0; d < t.product.divisors.size(); ++d)
        if (std::find(best->divisors.begin(), best->divisors.end(), d) == best->divisors.end())
          outer.divisors.push_back(t.product.divisors[d]);
      outer.factors.push_back(Load::make(DType::F32, name, indices));
      std::vector<std::string> rest;
      for (const std::string &v : t.reduce)
        if (std::find(best->reduce.begin(), best->reduce.end(), v) == best->reduce.end()) rest.push_back(v);
      t = Term{outer, rest};
      drop_unused(t);
    }
  }

  // A stage for an inner sum, itself factored; returns its name.
  std::string new_stage(const Inner &inner) {
    std::string base = "partial";
    if (std::vector<const Load *> loads = collect<Load>(inner.body); !loads.empty()) base = loads[0]->buffer + "_sum";
    const std::string name = names_.fresh(base);
    // A covered window's variables span the whole dimension: fresh names, so that
    // no other term's variable of the same name changes extent; so do a reindexed
    // dimension's (named after the variables of the index it spans).
    Expr body = inner.body;
    std::vector<std::string> reduce, spatial;
    std::map<std::string, Expr> renames;
    for (const std::string &v : inner.spatial) {
      if (!inner.names.count(v)) {
        spatial.push_back(v);
        continue;
      }
      spatial.push_back(names_.fresh(inner.names.at(v)));
      extents_[spatial.back()] = inner.new_extents.at(v);
      renames[v] = Var::make(index_type_for(extents_[spatial.back()]), spatial.back());
    }
    for (const std::string &v : inner.reduce) {
      if (!inner.new_extents.count(v)) {
        reduce.push_back(v);
        continue;
      }
      reduce.push_back(names_.fresh(v));
      extents_[reduce.back()] = inner.new_extents.at(v);
      renames[v] = Var::make(index_type_for(extents_[reduce.back()]), reduce.back());
    }
    body = substitute(body, renames);
    LinearForm form = expand(body);
    Term t{form.size() == 1 ? form[0] : Product{1, {body}, {}}, reduce};
    if (form.size() == 1) {
      std::vector<std::string> saved = order_;
      factor(t, spatial);
      order_ = saved;
    }
    Stage s;
    s.output = name;
    s.loc = y_.loc;
    for (const std::string &v : spatial) s.spatial.push_back({v, extents_.at(v)});
    s.reduce = t.reduce.empty() ? ReduceOp::None : ReduceOp::Sum;
    for (const std::string &v : t.reduce) s.reduce_vars.push_back({v, extents_.at(v)});
    s.body = simplify(rebuild(t.product));
    new_tensors_.push_back(temp_tensor(name, DType::F32, s.spatial));
    new_stages_.push_back(std::move(s));
    return name;
  }

  // Step 5.
  void regroup(const std::vector<Term> &terms, Stage *y, std::vector<Stage> *stages) {
    std::vector<std::vector<std::string>> keys;
    std::vector<LinearForm> groups;
    LinearForm elementwise;
    for (const Term &t : terms) {
      if (t.reduce.empty()) {
        elementwise.push_back(t.product);
        continue;
      }
      std::vector<std::string> key = t.reduce;
      std::sort(key.begin(), key.end());
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        keys.push_back(key);
        groups.push_back({t.product});
      } else {
        groups[it - keys.begin()].push_back(t.product);
      }
    }
    auto reduce_vars = [&](const std::vector<std::string> &vars) {
      std::vector<IterVar> out;
      for (const std::string &v : vars) out.push_back({v, extents_.at(v)});
      return out;
    };
    if (groups.size() == 1 && elementwise.empty()) {
      y->reduce_vars = reduce_vars(keys[0]);
      y->body = simplify(rebuild(combine_like_terms(groups[0])));
      return;
    }
    LinearForm sum = combine_like_terms(elementwise);
    for (size_t g = 0; g < groups.size(); ++g) {
      Stage s;
      s.output = names_.fresh(y_.output + "_part");
      s.loc = y_.loc;
      Expr body = simplify(rebuild(combine_like_terms(groups[g])));
      std::set<std::string> used = vars_in(body);
      std::vector<Expr> indices;
      for (const IterVar &v : y_.spatial)
        if (used.count(v.name)) {
          s.spatial.push_back(v);
          indices.push_back(iter_var(v));
        }
      s.reduce = ReduceOp::Sum;
      s.reduce_vars = reduce_vars(keys[g]);
      s.body = body;
      new_tensors_.push_back(temp_tensor(s.output, DType::F32, s.spatial));
      sum.push_back(Product{1, {Load::make(DType::F32, s.output, indices)}, {}});
      stages->push_back(std::move(s));
    }
    y->reduce = ReduceOp::None;
    y->reduce_vars.clear();
    y->body = simplify(rebuild(sum));
  }

  std::vector<std::string> order_;  // the variables of the product being factored
};

}  // namespace

std::optional<Graph> push_sum(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &stage = graph.stages[*at];
  if (stage.reduce != ReduceOp::Sum || !is_float(stage.body.type()))
    return *reason = name + " is not a float sum (it is " +
                     std::string(stage.reduce == ReduceOp::None ? "elementwise" : reduce_op_name(stage.reduce)) + ")",
           std::nullopt;
  return PushSum(graph, *at).run(*at, reason);
}

}  // namespace ks
