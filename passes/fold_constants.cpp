// fold_constants: constants and copies propagated into a stage, its body simplified,
// and a stage that only copies a temporary given that temporary's definition.
//
// Algorithm, for `fold_constants s`:
//  1. Each load in s of an elementwise temporary whose body is a constant becomes the
//     constant; one of a temporary that copies another tensor (`t[i] = u[i, 0]`)
//     becomes that read at the load's indices. Repeated while it changes something
//     (copies of copies).
//  2. s's body is simplified (ir/simplify.h): `exp(m - m)` is 1, `log(1.0) + v` is v.
//  3. Where s is elementwise and its body is now a plain read of a temporary P that
//     no other stage reads, s takes P's reduction and body at the indices it read
//     (P's reduction variables renamed apart from s's).
//  4. The stages no output needs any more go (an output that is constant needs none).
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"

namespace ks {

namespace {

// The value of temporary `load` reads if that is a constant or a copy, else undefined.
Expr forwarded(const Graph &graph, const Load &load) {
  std::optional<size_t> at = stage_index(graph, load.buffer);
  if (!at || load.pad) return Expr();
  const Stage &producer = graph.stages[*at];
  if (producer.reduce != ReduceOp::None) return Expr();
  const TensorDecl *t = graph.find_tensor(load.buffer);
  if (t->role != TensorRole::Temp) return Expr();
  if (as_const_number(producer.body)) return producer.body;
  if (producer.body.as<Load>()) return instantiate(producer, load.indices);
  return Expr();
}

}  // namespace

std::optional<Graph> fold_constants(const Graph &graph, const std::string &name, std::string *reason) {
  std::optional<size_t> at = stage_index(graph, name);
  if (!at) return *reason = "no stage defines '" + name + "'", std::nullopt;
  Graph out = graph;
  Stage &s = out.stages[*at];
  Expr body = s.body;
  for (int round = 0; round < 16; ++round) {  // copies of copies; a chain is short
    Expr next = replace_loads(body, [&](const Load &load, const Expr &) { return forwarded(graph, load); });
    if (next.same_as(body)) break;
    body = next;
  }
  body = simplify(body);
  bool changed = !equal(body, s.body);
  s.body = body;
  if (const Load *load = s.body.as<Load>(); load && s.reduce == ReduceOp::None && !load->pad) {
    std::optional<size_t> producer_at = stage_index(out, load->buffer);
    const TensorDecl *t = out.find_tensor(load->buffer);
    if (producer_at && t->role == TensorRole::Temp && readers_of(out, load->buffer, name) == 0 &&
        t->type == out.find_tensor(name)->type) {
      const Stage &producer = out.stages[*producer_at];
      NameSet names = graph_names(out);
      reserve_vars(s, &names);
      std::map<std::string, std::string> renames;
      std::vector<IterVar> reduce_vars;
      for (const IterVar &v : producer.reduce_vars) {
        renames[v.name] = names.fresh(v.name);
        reduce_vars.push_back({renames[v.name], v.extent});
      }
      s.body = instantiate(producer, load->indices, renames);
      s.reduce = producer.reduce;
      s.reduce_vars = reduce_vars;
      s.score_vars = producer.score_vars;
      changed = true;
    }
  }
  if (!changed)
    return *reason = name + " has nothing to fold: no constant, copy or identity of arithmetic in its body",
           std::nullopt;
  return finish_rewrite(std::move(out));
}

}  // namespace ks
