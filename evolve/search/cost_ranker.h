// The cost model as a run uses it: trained on a prior of earlier runs on the device
// (cost_model.prior) and on the run's own measurements, again every
// cost_model.retrain_every evaluations, scoring proposals relative to the naive
// program; each candidate's program features computed once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "evolve/search/config.h"
#include "evolve/search/cost_model.h"
#include "evolve/search/run_db.h"
#include "ir/graph.h"

namespace ks {

class CostRanker {
 public:
  /// config and graph (the spec at the timed sizes) are the run's, read when used.
  CostRanker(const EvolveConfig &config, const Graph &graph) : config_(config), graph_(graph) {}

  /// Reads the prior's rows of earlier runs on this device and target; what was read,
  /// in a line ("" where the model or its prior is off).
  std::string load_prior(const std::string &device_name, const std::string &target);

  /// Whether the model ranks now: trained on the prior and on the evaluations up to
  /// the last multiple of retrain_every (so that a resumed run trains on the rows the
  /// uninterrupted one did), once there are warmup of them, or at once with a prior.
  /// The label is the speedup relative to the best among those rows; a candidate that
  /// is not correct is 0.
  bool ready(int64_t evaluated, const std::map<std::string, CandidateRow> &candidates);

  /// The model's scores of programs' features (higher: predicted faster).
  std::vector<float> score(const std::vector<std::vector<float>> &features);

  /// A candidate's program features, computed already (a pool's member).
  void remember(const std::string &id, std::vector<float> features) { features_[id] = std::move(features); }

 private:
  const EvolveConfig &config_;
  const Graph &graph_;
  CostModel model_;
  int64_t trained_at_ = -1;  // the evaluations trained on; -1: not trained
  std::map<std::string, std::vector<float>> features_;
  std::vector<float> naive_features_;  // the origin of the model's relative inputs
  // The prior's rows, each earlier run a group.
  std::vector<std::vector<float>> prior_inputs_;
  std::vector<float> prior_labels_;
  std::vector<unsigned> prior_groups_;

  const std::vector<float> &features_of(const CandidateRow &c);
  const std::vector<float> &naive_features();
};

}  // namespace ks
