#include "evolve/search/cost_ranker.h"

#include <algorithm>

#include "evolve/search/cost_features.h"
#include "evolve/search/cost_prior.h"

namespace ks {

std::string CostRanker::load_prior(const std::string &device_name, const std::string &target) {
  if (config_.cost_model != "xgboost" || config_.cost_prior.empty()) return "";
  const std::string device = cost_device(device_name, target);
  int64_t runs = 0, skipped = 0, stale = 0;
  for (const std::string &path : config_.cost_prior) {
    CostPrior prior = read_cost_prior(path, device);
    stale += prior.stale;
    for (const CostRun &run : prior.runs) {
      for (size_t i = 0; i < run.features.size(); ++i) {
        prior_inputs_.push_back(model_inputs(run.features[i], run.naive));
        prior_labels_.push_back(run.labels[i]);
      }
      prior_groups_.push_back(static_cast<unsigned>(run.features.size()));
      runs += 1;
    }
    skipped += prior.skipped;
  }
  std::string line = "cost model: a prior of " + std::to_string(prior_inputs_.size()) + " measurements from " +
                     std::to_string(runs) + " runs on " + device;
  if (skipped) line += "; " + std::to_string(skipped) + " runs of other devices or targets left out";
  if (stale) line += "; " + std::to_string(stale) + " schedules that no longer replay left out";
  return line;
}

bool CostRanker::ready(int64_t evaluated, const std::map<std::string, CandidateRow> &candidates) {
  if (config_.cost_model != "xgboost") return false;
  const int64_t at = evaluated - evaluated % config_.cost_retrain_every;
  if (at < config_.cost_warmup && prior_inputs_.empty()) return false;
  if (at == trained_at_) return true;
  std::vector<const CandidateRow *> rows;
  for (const auto &[id, c] : candidates)
    if (c.eval_seq > 0 && c.eval_seq <= at && !features_of(c).empty()) rows.push_back(&c);
  std::sort(rows.begin(), rows.end(),
            [](const CandidateRow *a, const CandidateRow *b) { return a->eval_seq < b->eval_seq; });
  double best = 0;
  for (const CandidateRow *c : rows)
    if (c->status == CandidateStatus::Correct) best = std::max(best, c->speedup);
  std::vector<std::vector<float>> inputs = prior_inputs_;
  std::vector<float> labels = prior_labels_;
  std::vector<unsigned> groups = prior_groups_;
  for (const CandidateRow *c : rows) {
    inputs.push_back(model_inputs(features_of(*c), naive_features()));
    labels.push_back(cost_label(timed_status(c->status), c->speedup, best));
  }
  // The run's own rows weigh as much as the whole prior together (in a ranking a
  // group counts as its pairs, so sixteen rows against a prior of thousands would
  // hardly count): the prior ranks the first proposals, the run's own measurements
  // what comes after (how much that helped offline: evolve/search/README.md).
  std::vector<float> weights(groups.size(), 1.0f);
  if (!rows.empty()) {
    groups.push_back(static_cast<unsigned>(rows.size()));
    weights.push_back(std::max(1.0f, static_cast<float>(prior_inputs_.size()) / static_cast<float>(rows.size())));
  }
  if (inputs.empty()) return false;
  model_.train(inputs, labels, groups, weights);
  trained_at_ = at;
  return true;
}

std::vector<float> CostRanker::score(const std::vector<std::vector<float>> &features) {
  std::vector<std::vector<float>> rows;
  for (const std::vector<float> &f : features) rows.push_back(model_inputs(f, naive_features()));
  return model_.predict(rows);
}

// The features of a candidate's program, replayed once from its schedule.
const std::vector<float> &CostRanker::features_of(const CandidateRow &c) {
  auto it = features_.find(c.id);
  if (it != features_.end()) return it->second;
  if (!c.body.empty()) return features_[c.id];  // a kernel body has no Loop IR: the model learns nothing of it
  return features_[c.id] = schedule_features(graph_, c.schedule).value_or(std::vector<float>());
}

const std::vector<float> &CostRanker::naive_features() {
  if (naive_features_.empty()) naive_features_ = schedule_features(graph_, "").value_or(std::vector<float>());
  return naive_features_;
}

}  // namespace ks
