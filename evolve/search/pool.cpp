#include "evolve/search/pool.h"

#include <algorithm>
#include <numeric>

#include "evolve/search/cost_features.h"

namespace ks {
namespace {

// Members of a pool that propose children of their own at each step the model looks
// ahead: a few, so that one mis-ranked program does not decide the whole next
// generation.
constexpr size_t kLeaders = 4;

class Pool {
 public:
  Pool(Proposer &proposer, std::optional<std::optional<Proposal>> given, Rng &own, const PoolSettings &settings,
       const PoolWorld &world)
      : proposer_(proposer), given_(std::move(given)), own_(own), settings_(settings), world_(world) {}

  PoolChoice choose(const ProposalContext &context) {
    for (int k = 0; k < settings_.size && draw(context, k, ""); ++k) {
    }
    if (out_.refused) return std::move(out_);
    const size_t parents_children = members_.size();
    const bool schedules = settings_.ranked && !members_.empty() && members_[0].proposal.body.empty();
    if (schedules) {
      score_new();
      for (int step = 1; step < settings_.steps; ++step) look_ahead(context);
    }
    if (members_.empty()) return std::move(out_);
    size_t chosen = 0;
    if (schedules && members_.size() > 1) chosen = pick(parents_children);
    out_.chosen = std::move(members_[chosen]);
    return std::move(out_);
  }

 private:
  Proposer &proposer_;
  std::optional<std::optional<Proposal>> given_;
  Rng &own_;
  const PoolSettings &settings_;
  const PoolWorld &world_;
  std::vector<PoolMember> members_;
  std::vector<float> scores_;  // of members_, in order, once ranked
  std::vector<bool> led_;      // members that have proposed children of their own
  PoolChoice out_;

  // Adds a proposal drawn from `from` to the pool, or counts why not; false when the
  // proposal ends the pool (a kernel body, a pool of one refused, or the one proposal
  // of an unranked pool).
  bool draw(const ProposalContext &from, int k, const std::string &path) {
    std::optional<Proposal> proposal = k == 0 && given_ ? std::move(*given_) : proposer_.propose(from, own_);
    if (!proposal) return true;
    if (!path.empty()) proposal->note = path + ", then " + proposal->note;
    if (!proposal->body.empty()) {  // a kernel body: no replay; Clang and the evaluator judge it
      const std::string id = hash_text("kernel body\n" + proposal->body);
      if (world_.known(id)) {
        ++out_.duplicates;
        proposer_.judged(*proposal, world_.duplicate_of(id));
        return true;
      }
      members_.push_back({std::move(*proposal), id, {}});
      return false;
    }
    const Replayed r = world_.replay(proposal->schedule);
    if (!r.program) {
      ++out_.refused_count;
      proposer_.judged(*proposal, "refused: " + r.refusal);
      if (settings_.size > 1) return true;
      out_.refused = std::move(*proposal);
      out_.refusal = r.refusal;
      return false;
    }
    const std::string id = candidate_identity(*r.program);
    bool seen = world_.known(id);
    for (const PoolMember &m : members_) seen = seen || m.id == id;
    if (seen) {  // the same program as one already proposed
      ++out_.duplicates;
      if (world_.known(id)) proposer_.judged(*proposal, world_.duplicate_of(id));
      return true;
    }
    members_.push_back(
        {std::move(*proposal), id, settings_.size > 1 ? cost_features(*r.program) : std::vector<float>()});
    return settings_.ranked;  // unranked, the first new program goes
  }

  void score_new() {
    std::vector<std::vector<float>> rows;
    for (size_t i = scores_.size(); i < members_.size(); ++i) rows.push_back(members_[i].features);
    const std::vector<float> more = world_.score(rows);
    scores_.insert(scores_.end(), more.begin(), more.end());
    led_.resize(members_.size(), false);
  }

  // One generation ahead (cost_model.steps): the best-ranked members so far (kLeaders,
  // each once) propose children of their own, scored too, so that a tile, its unroll
  // and its vector width can change together in one evaluation. Off by default: on the
  // H100 the model overrated the programs two edits away (evolve/search/README.md).
  void look_ahead(const ProposalContext &context) {
    std::vector<size_t> order(members_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores_[a] > scores_[b]; });
    std::vector<size_t> leaders;
    for (size_t i : order)
      if (!led_[i] && leaders.size() < kLeaders) leaders.push_back(i), led_[i] = true;
    for (size_t l : leaders) {
      ProposalContext from = context;
      from.parent = CandidateView{members_[l].id, members_[l].proposal.schedule, "", 0, "", {}};
      const std::string path = members_[l].proposal.note;
      for (int k = 0; k < settings_.size / static_cast<int>(kLeaders); ++k) draw(from, 1, path);
    }
    score_new();
  }

  // The model's choice, but now and then (explore) one at random from the parent's own
  // children, for the model to learn from what it would not choose.
  size_t pick(size_t parents_children) {
    size_t chosen = 0;
    if (std::uniform_real_distribution<double>(0, 1)(own_) < settings_.explore) {
      chosen = std::uniform_int_distribution<size_t>(0, parents_children - 1)(own_);
      out_.how = ", drawn unranked from " + std::to_string(parents_children);
    } else {
      chosen = static_cast<size_t>(std::max_element(scores_.begin(), scores_.end()) - scores_.begin());
      out_.how = ", ranked first of " + std::to_string(members_.size());
      if (members_.size() > parents_children) out_.how += " over " + std::to_string(settings_.steps) + " steps";
    }
    out_.predicted = scores_[chosen];
    return chosen;
  }
};

}  // namespace

PoolChoice choose_from_pool(Proposer &proposer, const ProposalContext &context,
                            std::optional<std::optional<Proposal>> given, Rng &own, const PoolSettings &settings,
                            const PoolWorld &world) {
  return Pool(proposer, std::move(given), own, settings, world).choose(context);
}

}  // namespace ks
