// The LLM proposers of ksmith evolve. A model is shown the spec, the parent, other
// candidates and recent failures, and answers with
// - llm-schedule: a whole schedule, which the IR replays (correct by construction);
// - llm-kernel: a kernel body with its launch plan (frontend/kernel_body.h), which
//   Clang and then the evaluator check.
// An answer that gives neither is a failed proposal whose reason goes into the next
// prompt.
#pragma once

#include <deque>
#include <memory>

#include "evolve/search/proposer.h"
#include "llm/answer.h"
#include "llm/client.h"
#include "llm/prompt.h"

namespace ks::llm {

/// What both proposers share: the client, the prompt's common inputs, one request
/// and its answer parsed, each call kept for the run database.
class ModelProposer : public Proposer {
 public:
  explicit ModelProposer(const EvolveConfig &config);
  bool costly() const override { return true; }
  std::optional<Proposal> propose(const ProposalContext &context, Rng &rng) override;
  /// One request a context, all sent together (in flight up to the client's caps).
  std::vector<std::optional<Proposal>> propose_all(const std::vector<const ProposalContext *> &contexts,
                                                   const std::vector<Rng *> &rngs) override;
  void judged(const Proposal &proposal, const std::string &verdict) override;
  std::vector<ModelCall> take_calls() override;
  std::string exhausted() const override;

 protected:
  /// The prompt's inputs but for the parent's Loop IR or code.
  PromptInputs inputs(const ProposalContext &context) const;
  /// The prompt for a context.
  virtual Prompt prompt_for(const ProposalContext &context) const = 0;
  /// The proposal an answer makes, or failed(why).
  virtual std::optional<Proposal> take(const ParsedAnswer &answer) = 0;
  /// Ends a proposal the answer could not make: the reason is kept for the next prompt.
  std::nullopt_t failed(const std::string &why);

  EvolveConfig::Llm settings_;

 private:
  std::unique_ptr<Client> client_;
  std::deque<std::string> problems_;  // why recent answers gave nothing, oldest first
  std::vector<ModelCall> calls_;
  size_t current_ = 0;          // the call whose answer take() reads
  double spent_s_ = 0;          // wall time in model calls (a batch: its longest), for llm.run_deadline_s
  int duplicates_in_row_ = 0;   // proposals in a row that made a program already proposed
  std::string last_duplicate_;  // what the last of them duplicated, for the next prompt
};

class ScheduleProposer : public ModelProposer {
 public:
  using ModelProposer::ModelProposer;
  std::string name() const override { return "llm-schedule"; }

 protected:
  Prompt prompt_for(const ProposalContext &context) const override;
  std::optional<Proposal> take(const ParsedAnswer &answer) override;
};

class KernelProposer : public ModelProposer {
 public:
  using ModelProposer::ModelProposer;
  std::string name() const override { return "llm-kernel"; }

 protected:
  Prompt prompt_for(const ProposalContext &context) const override;
  std::optional<Proposal> take(const ParsedAnswer &answer) override;
};

/// Makes llm-schedule and llm-kernel available to make_proposer (ksmith calls it
/// before a run).
void register_llm_proposers();

}  // namespace ks::llm
