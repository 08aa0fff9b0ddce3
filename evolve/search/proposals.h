// The search's proposals: each island's mix of proposers, a proposal's plan (island,
// proposer, parent and inspirations, seed), the proposer asked (a model's requests
// together), the pool ranked by the cost model and one chosen, and the candidate
// recorded: pending for the device, refused, or counted as a duplicate. The search
// sends what it returns to the evaluation queue.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/cost_ranker.h"
#include "evolve/search/genome.h"
#include "evolve/search/ledger.h"
#include "evolve/search/proposer.h"

namespace ks {

class ProgressSink;

/// A start schedule of a new run (an earlier run's best), checked: the candidate it
/// becomes once the naive kernel's baseline is known.
struct StartSchedule {
  std::string note, schedule, id;  // note: the file, and its first comment
};

class ProposalPipeline {
 public:
  /// Everything given is the run's, read when used (the graphs are set once the spec
  /// is read).
  ProposalPipeline(const EvolveConfig &config, const Graph &graph, const Graph &check_graph,
                   const runtime::DeviceInfo &device, RunLedger &ledger, RunDatabase &db, ProgressSink &progress)
      : config_(config),
        graph_(graph),
        check_graph_(check_graph),
        device_(device),
        ledger_(ledger),
        db_(db),
        progress_(progress),
        ranker_(config, graph) {}

  /// Each island's mix of proposers (search.proposers, search.island_proposers); with
  /// no model configured, an LLM proposer's share goes to the mutator (said once).
  void mix_proposers();
  /// The cost model's prior (cost_model.prior), said once.
  void load_prior(const std::string &device_name, const std::string &target);
  /// mutator.library's stages that fit this graph, for the transfer mutation.
  std::shared_ptr<const std::vector<LibraryStage>> library;
  /// A resumed run's model calls, as before the stop.
  void resume(const ModelCallTotals &calls);

  /// A schedule replayed at the timed sizes (the program) and at the check sizes: the
  /// check runs there, where a split's tail can put a barrier under a guard, so a
  /// refusal there is one before any device time too.
  Replayed replay_both(const Schedule &schedule) const;

  /// The naive kernel, first of all (its time is the run's baseline): its id.
  std::string propose_naive(const std::string &kernel);
  /// The start schedules as candidates waiting for the naive kernel's baseline; their
  /// ids (a program seen before is not evaluated twice).
  std::vector<std::string> propose_starts(const std::vector<StartSchedule> &starts);
  /// Up to n proposals (a model's requests together; one without a proposer that asks
  /// a model): the ids of the candidates to evaluate, in order.
  std::vector<std::string> propose(size_t n);

  /// The run's model calls and their tokens (a resumed run's earlier ones included).
  int64_t model_calls() const { return model_calls_; }
  int64_t model_tokens() const { return model_tokens_; }

 private:
  const EvolveConfig &config_;
  const Graph &graph_;
  const Graph &check_graph_;
  const runtime::DeviceInfo &device_;
  RunLedger &ledger_;
  RunDatabase &db_;
  ProgressSink &progress_;
  CostRanker ranker_;
  std::vector<std::unique_ptr<Proposer>> proposers_;  // one of each name any island draws
  std::vector<std::vector<double>> island_weights_;   // per island, proposers_'s weights
  // The model calls planned but not yet made count against llm.max_calls and
  // llm.max_run_tokens with those made.
  int64_t model_calls_ = 0, model_tokens_ = 0, planned_calls_ = 0;
  std::vector<std::string> chosen_;  // the candidates to evaluate of the proposals in hand

  // What a proposal draws before its proposer is asked: the island, the proposer,
  // the parent and inspirations, the seed; and the candidate's row so far.
  struct Plan {
    int island;
    size_t which;
    ParentPick pick;
    ProposalContext context;
    Rng own;
    CandidateRow c;
  };

  size_t proposer_index(const std::string &name);
  CandidateView view(const std::string &id) const;
  Plan plan_proposal();
  bool propose_one();
  void propose_some(size_t n);
  bool finish_proposal(Plan &plan, std::optional<std::optional<Proposal>> given);
  bool finish_pool(Plan &plan, std::optional<std::optional<Proposal>> given);
  void record_calls(Proposer &proposer, const std::vector<int64_t> &proposals);
  std::string model_budget_spent() const;
  std::string duplicate_of(const std::string &id) const;
  std::vector<CandidateView> children_of(const std::string &parent) const;
};

}  // namespace ks
