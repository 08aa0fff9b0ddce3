// The llm-schedule proposer: a model is shown the spec, the parent (its schedule,
// record and Loop IR), other candidates and recent failures, and answers with a
// whole schedule, which the IR replays (correct by construction). An answer that
// gives none is a failed proposal whose reason goes into the next prompt.
#pragma once

#include <deque>
#include <memory>

#include "evolve/proposer.h"
#include "llm/client.h"

namespace ks::llm {

class ScheduleProposer : public Proposer {
 public:
  explicit ScheduleProposer(const EvolveConfig &config);
  std::string name() const override { return "llm-schedule"; }
  std::optional<Proposal> propose(const ProposalContext &context, Rng &rng) override;
  bool costly() const override { return true; }
  std::vector<ModelCall> take_calls() override;

 private:
  EvolveConfig::Llm settings_;
  std::unique_ptr<Client> client_;
  std::deque<std::string> problems_;  // why recent answers gave no schedule, oldest first
  std::vector<ModelCall> calls_;
};

/// Makes llm-schedule available to make_proposer (ksmith calls it before a run).
void register_llm_proposers();

}  // namespace ks::llm
