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
  }
  return "?";
}

const std::vector<RewriteKind> &all_rewrite_kinds() {
  static const std::vector<RewriteKind> kinds = {
      RewriteKind::DropUnitReduction, RewriteKind::FoldConstants,   RewriteKind::PushSum,       RewriteKind::FoldAffine,
      RewriteKind::RangedReduction,   RewriteKind::MergeDuplicates, RewriteKind::OnlineSoftmax, RewriteKind::Rfactor};
  return kinds;
}

std::optional<RewriteKind> parse_rewrite_kind(const std::string &name) {
  for (RewriteKind kind : all_rewrite_kinds())
    if (name == rewrite_name(kind)) return kind;
  return std::nullopt;
}

bool rewrite_takes_arguments(RewriteKind kind) { return kind == RewriteKind::Rfactor; }

bool rewrite_listed(RewriteKind kind) { return kind != RewriteKind::Rfactor && kind != RewriteKind::OnlineSoftmax; }

std::string print_rewrite(const Rewrite &step) {
  std::string out = std::string("rewrite ") + rewrite_name(step.kind) + " " + step.stage;
  if (!rewrite_takes_arguments(step.kind)) return out;
  out += "." + step.loop + " " + std::to_string(step.factor) + " ->";
  for (const std::string &r : step.results) out += " " + r;
  return out;
}

std::optional<Graph> try_rewrite(const Graph &graph, const Rewrite &step, std::string *reason) {
  try {
    switch (step.kind) {
      case RewriteKind::DropUnitReduction: return drop_unit_reduction(graph, step.stage, reason);
      case RewriteKind::FoldConstants: return fold_constants(graph, step.stage, reason);
      case RewriteKind::PushSum: return push_sum(graph, step.stage, reason);
      case RewriteKind::FoldAffine: return fold_affine(graph, step.stage, reason);
      case RewriteKind::RangedReduction: return ranged_reduction(graph, step.stage, reason);
      case RewriteKind::MergeDuplicates: return merge_duplicates(graph, step.stage, reason);
      case RewriteKind::OnlineSoftmax: return online_softmax(graph, step.stage, reason);
      case RewriteKind::Rfactor: return rfactor(graph, step.stage, step.loop, step.factor, step.results, reason);
    }
  } catch (const InternalError &e) {
    // A rule that built a graph the verifier refuses is a bug in the rule; the search
    // must go on, so it refuses (and the property tests look for this text).
    *reason = "internal error in " + std::string(rewrite_name(step.kind)) + ": " + e.detail();
    return std::nullopt;
  }
  *reason = "unknown rewrite";
  return std::nullopt;
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

std::vector<Rewrite> simplifying_rewrites(const Graph &graph, size_t max_steps) {
  static const RewriteKind order[] = {RewriteKind::DropUnitReduction, RewriteKind::FoldConstants,
                                      RewriteKind::RangedReduction,   RewriteKind::MergeDuplicates,
                                      RewriteKind::PushSum,           RewriteKind::FoldAffine};
  std::vector<Rewrite> steps;
  Graph current = graph;
  while (steps.size() < max_steps) {
    bool applied = false;
    for (size_t s = 0; s < current.stages.size() && !applied; ++s)
      for (RewriteKind kind : order) {
        Rewrite step{kind, current.stages[s].output, {}, {}, 0, {}};
        std::string reason;
        std::optional<Graph> next = try_rewrite(current, step, &reason);
        if (next && kind == RewriteKind::PushSum && graph_work(*next) >= graph_work(current)) next.reset();
        if (next) {
          current = std::move(*next);
          steps.push_back(step);
          applied = true;
          break;
        }
      }
    if (!applied) break;
  }
  return steps;
}

Graph apply_rewrite(const Graph &graph, const Rewrite &step) {
  std::string reason;
  std::optional<Graph> out = try_rewrite(graph, step, &reason);
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
