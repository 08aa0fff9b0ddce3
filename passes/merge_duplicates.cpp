// merge_duplicates: a stage that computes what an earlier one computes is computed
// once (common subexpressions at the granularity of stages). Two stages are the same
// computation when their outputs have one type and shape, their reductions one
// operator and extents, and their bodies are equal once the earlier stage's variables
// take the later one's names, position by position: the same tree, or for floats the
// same canonical form (canonical.h: `x * x * 2.0` and `2.0 * (x * x)` are one).
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

bool same_computation(const Graph &graph, const Stage &earlier, const Stage &later) {
  const TensorDecl *a = graph.find_tensor(earlier.output), *b = graph.find_tensor(later.output);
  if (a->type != b->type || a->shape != b->shape || earlier.reduce != later.reduce ||
      earlier.score_vars != later.score_vars || earlier.reduce_vars.size() != later.reduce_vars.size())
    return false;
  std::map<std::string, Expr> renames;
  for (size_t d = 0; d < earlier.spatial.size(); ++d) renames[earlier.spatial[d].name] = iter_var(later.spatial[d]);
  for (size_t r = 0; r < earlier.reduce_vars.size(); ++r) {
    if (earlier.reduce_vars[r].extent != later.reduce_vars[r].extent) return false;
    renames[earlier.reduce_vars[r].name] = iter_var(later.reduce_vars[r]);
  }
  const Expr body = substitute(earlier.body, renames);
  return equal(body, later.body) || (is_float(body.type()) && same_canonical(body, later.body));
}

// Every load of `from` in graph's stages reads `to` instead (the same indices).
void redirect(Graph &graph, const std::string &from, const std::string &to) {
  for (Stage &s : graph.stages)
    s.body = replace_loads(s.body, [&](const Load &load, const Expr &) {
      return load.buffer == from ? Load::make(load.type, to, load.indices, load.pad) : Expr();
    });
}

}  // namespace

std::optional<Graph> merge_duplicates(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const Stage &later = graph.stages[*at];
  for (size_t e = 0; e < *at; ++e) {
    const Stage &earlier = graph.stages[e];
    if (!same_computation(graph, earlier, later)) continue;
    Graph out = graph;
    const bool later_output = graph.find_tensor(name)->role == TensorRole::Output;
    const bool earlier_output = graph.find_tensor(earlier.output)->role == TensorRole::Output;
    if (!later_output) {
      redirect(out, name, earlier.output);  // the later stage is then dead
    } else if (!earlier_output) {
      // The earlier stage defines the output, where it stood; the later one goes.
      out.stages.erase(out.stages.begin() + static_cast<std::ptrdiff_t>(*at));
      out.stages[e].output = name;
      redirect(out, earlier.output, name);
    } else {
      std::vector<Expr> indices;
      for (const IterVar &v : later.spatial) indices.push_back(iter_var(v));
      Stage &copy = out.stages[*at];
      copy.reduce = ReduceOp::None;
      copy.reduce_vars.clear();
      copy.score_vars = 0;
      copy.body = Load::make(graph.find_tensor(earlier.output)->type, earlier.output, indices);
    }
    return finish_rewrite(std::move(out));
  }
  return *reason = "no stage before " + name + " computes what it computes", std::nullopt;
}

}  // namespace ks
