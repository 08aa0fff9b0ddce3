// recompute: a temporary that several stages read is computed once for each of them,
// so that each reader's kernel can compute its own copy where it reads it (compute_at
// inside the reader's reduction loop) and the temporary is never stored: attention's
// scores q k^T, read by the rows' logsumexp and by the weighted sum, computed in both
// kernels instead of written and read back (flash attention's second pass recomputes
// them the same way). It costs the producer's arithmetic once more for every reader
// after the first; what it saves is the temporary's bytes, which is a schedule's
// trade, not an algebraic law, so the search's mutator does not list it.
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

std::optional<Graph> recompute(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  const TensorDecl *tensor = graph.find_tensor(name);
  if (tensor->role != TensorRole::Temp)
    return *reason = name + " is an output: it is stored whatever its readers do", std::nullopt;
  std::vector<size_t> readers;
  for (size_t s = *at + 1; s < graph.stages.size(); ++s)
    if (reads_buffer(graph.stages[s].body, name)) readers.push_back(s);
  if (readers.size() < 2)
    return *reason = "only one stage reads " + name + ": there is nothing to compute twice", std::nullopt;

  Graph out = graph;
  NameSet names = graph_names(graph);
  std::vector<Stage> copies;
  for (size_t r : readers) {
    Stage &reader = out.stages[r];
    Stage copy = graph.stages[*at];
    copy.output = names.fresh(name + "_" + reader.output);
    reader.body = replace_loads(reader.body, [&](const Load &load, const Expr &) {
      return load.buffer == name ? Load::make(load.type, copy.output, load.indices, load.pad) : Expr();
    });
    TensorDecl decl = *tensor;
    decl.name = copy.output;
    out.tensors.push_back(decl);
    copies.push_back(copy);
  }
  // The copies where the stage stood, in their readers' order; the stage itself is
  // then dead (finish_rewrite removes it).
  out.stages.insert(out.stages.begin() + static_cast<std::ptrdiff_t>(*at) + 1, copies.begin(), copies.end());
  return finish_rewrite(std::move(out));
}

}  // namespace ks
