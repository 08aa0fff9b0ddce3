// The learned cost model: gradient-boosted trees (XGBoost, through its C API) from a
// scheduled program's features (evolve/search/cost_features.h) to its throughput relative to
// the best candidate measured so far, trained on the run's own measurements. The
// search asks it to rank many mutants and sends the most promising to the device.
// Deterministic: one thread, a fixed seed, the rows in evaluation order.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace ks {

class CostModel {
 public:
  /// objective: XGBoost's, "rank:pairwise" (the order within each group is learnt,
  /// which is all the search asks of it) or "reg:squarederror".
  explicit CostModel(std::string objective = "rank:pairwise");
  ~CostModel();
  CostModel(const CostModel &) = delete;
  CostModel &operator=(const CostModel &) = delete;

  /// Trains from scratch on rows of features and their labels (higher is faster), in
  /// groups of consecutive rows whose sizes are `groups` (each run's rows: labels are
  /// compared within a group only); one group of every row when groups is empty.
  /// group_weights, one a group where given: how much each group's order counts (in
  /// XGBoost's ranking a group weighs as its pairs, so a large group outweighs a small
  /// one unless weighted). Throws std::runtime_error with XGBoost's message when it fails.
  void train(const std::vector<std::vector<float>> &features, const std::vector<float> &labels,
             const std::vector<unsigned> &groups = {}, const std::vector<float> &group_weights = {});
  bool trained() const { return booster_ != nullptr; }
  /// The predicted label of each row (higher: predicted faster). Needs trained().
  std::vector<float> predict(const std::vector<std::vector<float>> &features) const;

 private:
  std::string objective_;
  void *booster_ = nullptr;  // BoosterHandle
};

/// Spearman's rank correlation of two equally long series (ties share their mean
/// rank); 0 when either is constant or has fewer than three values.
double rank_correlation(const std::vector<double> &a, const std::vector<double> &b);

}  // namespace ks
