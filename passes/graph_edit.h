// What the graph rewrites share: finding a stage and the stages that read a tensor,
// a stage's body instantiated at given indices, replacing loads, fresh names, and
// the end of every rule (dead stages removed, the graph verified).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/names.h"

namespace ks {

/// The index of the stage that defines tensor `name`, if any.
std::optional<size_t> stage_index(const Graph &graph, const std::string &name);

/// Whether e reads buffer.
bool reads_buffer(const Expr &e, const std::string &buffer);

/// The stages other than `except` that read tensor `name`.
int readers_of(const Graph &graph, const std::string &name, const std::string &except = "");

/// e with each load replaced by what `replace` returns for it (an undefined Expr keeps
/// the load; its indices are rewritten first).
Expr replace_loads(const Expr &e, const std::function<Expr(const Load &load, const Expr &self)> &replace);

/// A variable of stage iteration `v`, typed as lowering types it.
Expr iter_var(const IterVar &v);

/// The body of `stage` at the point `indices` (one per spatial variable), its reduction
/// variables renamed as `renames` says (those not named keep their names).
Expr instantiate(const Stage &stage, const std::vector<Expr> &indices,
                 const std::map<std::string, std::string> &renames = {});

/// e's value where each load takes load_value(load, key) (key: its printed indices,
/// "i, j,", so that equal loads can agree) and then each variable left var_value(var)
/// (an integer's truncated); integer loads take |value| * 3, truncated. None where the
/// result does not fold to a number (an infinity stays an expression). The rewrites'
/// checks of an algebraic law at random points.
std::optional<double> value_at(const Expr &e,
                               const std::function<double(const Load &load, const std::string &key)> &load_value,
                               const std::function<double(const Var &var)> &var_value);

/// The names of graph's tensors, sizes and constants.
NameSet graph_names(const Graph &graph);
/// Reserves the names of stage's variables.
void reserve_vars(const Stage &stage, NameSet *names);

/// The end of every rule: the dead stages removed, then the graph verified (a failure
/// is an internal error that prints the graph).
Graph finish_rewrite(Graph graph);

/// The value a reduction starts from, as a constant of type (none for an integer max
/// or min, and for logsumexp of an integer).
std::optional<Expr> identity_of(ReduceOp op, DType type);

/// The temporary `name`'s declaration, with the given shape, for a new stage.
TensorDecl temp_tensor(const std::string &name, DType type, const std::vector<IterVar> &spatial);

}  // namespace ks
