// The rewrites' names and the dispatch of a rewrite step to its rule.
#include "passes/rewrite.h"

#include "ir/cost.h"
#include "ir/printer.h"
#include "passes/graph_edit.h"

namespace ks {

const char *rewrite_name(RewriteKind kind) {
  switch (kind) {
    case RewriteKind::DropUnitReduction: return "drop_unit_reduction";
    case RewriteKind::FoldConstants: return "fold_constants";
    case RewriteKind::PushSum: return "push_sum";
    case RewriteKind::FoldAffine: return "fold_affine";
    case RewriteKind::RangedReduction: return "ranged_reduction";
    case RewriteKind::MergeDuplicates: return "merge_duplicates";
    case RewriteKind::OnlineSoftmax: return "online_softmax";
    case RewriteKind::Rfactor: return "rfactor";
    case RewriteKind::StridePhases: return "stride_phases";
    case RewriteKind::OnlineAttention: return "online_attention";
    case RewriteKind::Recompute: return "recompute";
  }
  return "?";
}

const std::vector<RewriteKind> &all_rewrite_kinds() {
  static const std::vector<RewriteKind> kinds = {
      RewriteKind::DropUnitReduction, RewriteKind::FoldConstants,   RewriteKind::PushSum,       RewriteKind::FoldAffine,
      RewriteKind::RangedReduction,   RewriteKind::MergeDuplicates, RewriteKind::OnlineSoftmax, RewriteKind::Rfactor,
      RewriteKind::StridePhases,      RewriteKind::OnlineAttention, RewriteKind::Recompute};
  return kinds;
}

std::optional<RewriteKind> parse_rewrite_kind(const std::string &name) {
  for (RewriteKind kind : all_rewrite_kinds())
    if (name == rewrite_name(kind)) return kind;
  return std::nullopt;
}

bool rewrite_takes_arguments(RewriteKind kind) { return kind == RewriteKind::Rfactor; }

bool rewrite_listed(RewriteKind kind) {
  return kind != RewriteKind::Rfactor && kind != RewriteKind::OnlineSoftmax && kind != RewriteKind::Recompute;
}

std::string print_rewrite(const Rewrite &step) {
  std::string out = std::string("rewrite ") + rewrite_name(step.kind) + " " + step.stage;
  if (!rewrite_takes_arguments(step.kind)) return out;
  out += "." + step.loop + " " + std::to_string(step.factor) + " ->";
  for (const std::string &r : step.results) out += " " + r;
  return out;
}

namespace {

// The rule itself; a rule that builds a graph the verifier refuses throws InternalError.
std::optional<Graph> run_rule(const Graph &graph, const Rewrite &step, std::string *reason) {
  switch (step.kind) {
    case RewriteKind::DropUnitReduction: return drop_unit_reduction(graph, step.stage, reason);
    case RewriteKind::FoldConstants: return fold_constants(graph, step.stage, reason);
    case RewriteKind::PushSum: return push_sum(graph, step.stage, reason);
    case RewriteKind::FoldAffine: return fold_affine(graph, step.stage, reason);
    case RewriteKind::RangedReduction: return ranged_reduction(graph, step.stage, reason);
    case RewriteKind::MergeDuplicates: return merge_duplicates(graph, step.stage, reason);
    case RewriteKind::OnlineSoftmax: return online_softmax(graph, step.stage, reason);
    case RewriteKind::Rfactor: return rfactor(graph, step.stage, step.loop, step.factor, step.results, reason);
    case RewriteKind::StridePhases: return stride_phases(graph, step.stage, reason);
    case RewriteKind::OnlineAttention: return online_attention(graph, step.stage, reason);
    case RewriteKind::Recompute: return recompute(graph, step.stage, reason);
  }
  *reason = "unknown rewrite";
  return std::nullopt;
}

}  // namespace

std::optional<Graph> try_rewrite(const Graph &graph, const Rewrite &step, std::string *reason) {
  try {
    return run_rule(graph, step, reason);
  } catch (const InternalError &e) {
    // A rule that built a graph the verifier refuses is a bug in the rule; the search
    // must go on, so it refuses (and the property tests look for this text).
    *reason = "internal error in " + std::string(rewrite_name(step.kind)) + ": " + e.detail();
    return std::nullopt;
  }
}

std::vector<Rewrite> applicable_rewrites(const Graph &graph) {
  std::vector<Rewrite> out;
  for (const Stage &s : graph.stages)
    for (RewriteKind kind : all_rewrite_kinds()) {
      if (!rewrite_listed(kind)) continue;
      Rewrite step{kind, s.output, {}, {}, 0, {}};
      std::string reason;
      if (try_rewrite(graph, step, &reason)) out.push_back(step);
    }
  return out;
}

namespace {

// Greedy: each stage in order, each rule of `order` in order; the first that applies
// is taken (push_sum only where the work goes down) and the search starts again on
// its result; where none applies, the rules of `then` the same way.
std::vector<Rewrite> greedy_rewrites(const Graph &graph, const std::vector<RewriteKind> &order,
                                     const std::vector<RewriteKind> &then, size_t max_steps, Graph *result) {
  std::vector<Rewrite> steps;
  Graph current = graph;
  auto apply_first = [&](const std::vector<RewriteKind> &rules) {
    for (size_t s = 0; s < current.stages.size(); ++s)
      for (RewriteKind kind : rules) {
        Rewrite step{kind, current.stages[s].output, {}, {}, 0, {}};
        std::string reason;
        std::optional<Graph> next = try_rewrite(current, step, &reason);
        if (next && kind == RewriteKind::PushSum && graph_work(*next) >= graph_work(current)) next.reset();
        if (next) {
          current = std::move(*next);
          steps.push_back(step);
          return true;
        }
      }
    return false;
  };
  while (steps.size() < max_steps && (apply_first(order) || apply_first(then))) {
  }
  *result = std::move(current);
  return steps;
}

}  // namespace

std::vector<Rewrite> simplifying_rewrites(const Graph &graph, size_t max_steps) {
  const std::vector<RewriteKind> order = {RewriteKind::DropUnitReduction, RewriteKind::FoldConstants,
                                          RewriteKind::RangedReduction,   RewriteKind::MergeDuplicates,
                                          RewriteKind::PushSum,           RewriteKind::FoldAffine};
  // stride_phases and push_sum compete for a transposed convolution followed by a
  // pool: pushing the pool's sum through the convolution merges their offsets (and
  // the stride test no longer has stride_phases' form), splitting the phases first
  // keeps the pool's stage. Both orders are tried; the plan with less work is kept.
  std::vector<RewriteKind> phases_first = order;
  phases_first.insert(phases_first.begin(), RewriteKind::StridePhases);
  Graph late, early;
  std::vector<Rewrite> a = greedy_rewrites(graph, order, {RewriteKind::StridePhases}, max_steps, &late);
  std::vector<Rewrite> b = greedy_rewrites(graph, phases_first, {}, max_steps, &early);
  return graph_work(early) < graph_work(late) ? b : a;
}

double temporary_bytes(const Graph &graph) {
  double bytes = 0;
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Temp) bytes += static_cast<double>(t.bytes()) * (1 + readers_of(graph, t.name));
  return bytes;
}

std::vector<Fusion> fusing_rewrites(const Graph &graph) {
  std::vector<Fusion> out;
  const double before = temporary_bytes(graph);
  for (const Stage &s : graph.stages)
    for (RewriteKind kind : {RewriteKind::OnlineSoftmax, RewriteKind::OnlineAttention}) {
      Rewrite step{kind, s.output, {}, {}, 0, {}};
      std::string reason;
      if (std::optional<Graph> next = try_rewrite(graph, step, &reason))
        out.push_back({step, before, temporary_bytes(*next)});
    }
  return out;
}

Graph apply_rewrite(const Graph &graph, const Rewrite &step) {
  std::string reason;
  // A rule's broken invariant is a refusal to a search (try_rewrite) but a bug here,
  // where the user's schedule asked for it: its InternalError goes on up.
  std::optional<Graph> out = run_rule(graph, step, &reason);
  if (out) return *out;
  const std::string keyword = "rewrite ";
  std::string message = format_diagnostic(step.loc, print_rewrite(step).substr(keyword.size()) + ": " + reason);
  std::optional<size_t> at = stage_index(graph, step.stage);
  if (at && graph.stages[*at].loc.file)
    message += "\n" + format_diagnostic(graph.stages[*at].loc, "'" + step.stage + "' is defined here", "note");
  else if (!at) {
    std::string stages;
    for (const Stage &s : graph.stages) stages += (stages.empty() ? "" : ", ") + s.output;
    message += "\nnote: the stages are " + stages;
  }
  throw UserError(message);
}

}  // namespace ks
