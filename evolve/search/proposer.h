// Proposers: given the spec, a parent with its evaluation, inspirations from its
// island and recent failures, each returns a schedule (or a kernel body) to try. The built-in mutator
// (evolve/search/mutator.h) is the default, random search (sketches drawn at random) the
// baseline every claim is measured against; an LLM proposer plugs in behind the
// same interface.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/config.h"
#include "evolve/search/library.h"
#include "evolve/search/model_call.h"
#include "evolve/search/space.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace ks {

/// A candidate as a proposer sees it: its schedule or kernel body and what its
/// evaluation said.
struct CandidateView {
  std::string id;
  Schedule schedule;
  std::string body;     // a kernel body (frontend/kernel_body.h); then schedule is empty
  double speedup = 0;   // over the naive kernel; 0 when it is not correct
  std::string verdict;  // "correct", or the reason it is not
  nlohmann::json features;
};

struct ProposalContext {
  const Graph &graph;  // the spec at the timed sizes
  const runtime::DeviceInfo &device;
  CandidateView parent;
  std::vector<CandidateView> inspirations;  // other candidates of the parent's island
  std::vector<CandidateView> failures;      // recent ones that were not correct, with their verdicts
  // The stages of other problems' tuned schedules on this device (mutator.library)
  // that fit this graph (fitting_stages); none when null.
  std::shared_ptr<const std::vector<LibraryStage>> library;
  // Whether proposals may rewrite the graph (search.rewrites).
  bool rewrites = true;
  // The parent's latest children (evaluated, being evaluated or refused): what was
  // tried from it. Filled for the proposers that ask a model.
  std::vector<CandidateView> tried;
};

struct Proposal {
  Schedule schedule;
  std::string note;  // what changed, in a few words ("factor: split y.d 512 -> 256")
  // A kernel body with its launch plan in place of a schedule (llm-kernel's): the
  // evaluator checks it with Clang and runs it; "" for a schedule.
  std::string body;
  // The proposer's own mark (a model proposer's call it came of), -1: none.
  int64_t call = -1;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  /// A schedule to try; none when the proposer has nothing to offer this time.
  virtual std::optional<Proposal> propose(const ProposalContext &context, Rng &rng) = 0;
  /// Proposals for several contexts at once, each with its own random stream, in
  /// order: a model's requests then go out together (several in flight). One by one
  /// by default.
  virtual std::vector<std::optional<Proposal>> propose_all(const std::vector<const ProposalContext *> &contexts,
                                                           const std::vector<Rng *> &rngs) {
    std::vector<std::optional<Proposal>> out;
    for (size_t i = 0; i < contexts.size(); ++i) out.push_back(propose(*contexts[i], *rngs[i]));
    return out;
  }
  /// Whether a proposal costs a model's call: then the cost model ranks none of
  /// them (a pool of 24 would be 24 calls for one evaluation).
  virtual bool costly() const { return false; }
  /// What became of a proposal it made: "evaluated", "refused: WHY" (the IR's), or
  /// "duplicate: ..." (a program already proposed). Told before take_calls; a
  /// model's proposer shows it in its next prompt.
  virtual void judged(const Proposal &proposal, const std::string &verdict) { (void)proposal, (void)verdict; }
  /// The model calls made since the last take, for the run database.
  virtual std::vector<ModelCall> take_calls() { return {}; }
  /// Why it proposes nothing more in this run ("" while it does): an LLM proposer
  /// whose run deadline has passed. Its share then goes to the mutator.
  virtual std::string exhausted() const { return ""; }
};

/// A proposer that lives outside this library (the LLM proposers in llm/, which
/// the search does not link): ksmith registers it before a run.
using ProposerFactory = std::function<std::unique_ptr<Proposer>(const EvolveConfig &)>;
void register_proposer(const std::string &name, ProposerFactory factory);

/// A proposer by name; UserError for an unknown one, or one this build lacks.
std::unique_ptr<Proposer> make_proposer(const std::string &name, const EvolveConfig &config);

/// Random search: a schedule drawn from the program's sketches (evolve/search/sketch.h),
/// every decision at random, whatever the parent (it ignores the context but for
/// the graph and the device's limits).
class RandomProposer : public Proposer {
 public:
  std::string name() const override { return "random"; }
  std::optional<Proposal> propose(const ProposalContext &context, Rng &rng) override;
};

}  // namespace ks
