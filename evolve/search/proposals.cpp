#include "evolve/search/proposals.h"

#include <algorithm>
#include <set>

#include "evolve/search/jobs.h"
#include "evolve/search/pool.h"
#include "evolve/search/search.h"

namespace ks {
namespace {

// Recent failures shown to proposers.
constexpr size_t kRecentFailures = 6;
// The parent's children a model's prompt shows (what was tried from it already).
constexpr size_t kChildrenShown = 6;

}  // namespace

void ProposalPipeline::mix_proposers() {
  // Each island's mix. With no model configured, an LLM proposer's share goes to
  // the mutator (said once).
  std::set<std::string> said;
  for (int island = 0; island < config_.islands; ++island) {
    island_weights_.emplace_back(proposers_.size(), 0.0);
    for (const auto &[name, weight] : config_.proposers_of(island)) {
      std::string taker = name;
      if (name.rfind("llm-", 0) == 0 && weight > 0 && !config_.llm.configured()) {
        if (said.insert(name).second)
          progress_.note("note: no model configured (--llm-url and --llm-model, or [llm] url and model): " + name +
                         "'s share goes to the mutator");
        taker = "mutator";
      }
      if (weight > 0) island_weights_.back()[proposer_index(taker)] += weight;
    }
  }
}

void ProposalPipeline::load_prior(const std::string &device_name, const std::string &target) {
  const std::string said = ranker_.load_prior(device_name, target);
  if (!said.empty()) progress_.note(said);
}

void ProposalPipeline::resume(const ModelCallTotals &calls) {
  model_calls_ = calls.calls;
  model_tokens_ = calls.prompt_tokens + calls.completion_tokens;
}

std::vector<std::string> ProposalPipeline::propose(size_t n) {
  chosen_.clear();
  propose_some(n);
  return std::move(chosen_);
}

// The index of the proposer of that name in proposers_, made at its first use; every
// island's weights grow with it.
size_t ProposalPipeline::proposer_index(const std::string &name) {
  for (size_t i = 0; i < proposers_.size(); ++i)
    if (proposers_[i]->name() == name) return i;
  proposers_.push_back(make_proposer(name, config_));
  for (std::vector<double> &weights : island_weights_) weights.push_back(0);
  return proposers_.size() - 1;
}

CandidateView ProposalPipeline::view(const std::string &id) const {
  const CandidateRow &c = ledger_.candidates.at(id);
  CandidateView v;
  v.id = id;
  v.schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{id + ".sched", c.schedule}));
  v.body = c.body;
  v.speedup = c.status == CandidateStatus::Correct ? speedup_of(c) : 0;
  v.verdict = c.status == CandidateStatus::Pending ? "being evaluated" : c.verdict;
  if (std::optional<EvaluationResult> r = EvaluationResult::from_json(nlohmann::json::parse(c.record, nullptr, false)))
    v.features = r->features;
  return v;
}

// The naive kernel, first of all: its time is the run's baseline.
std::string ProposalPipeline::propose_naive(const std::string &kernel) {
  Replayed r = replay(graph_, {}, &device_);
  if (!r.program) throw UserError("error: the naive kernel of " + kernel + " is refused: " + r.refusal);
  CandidateRow c;
  c.run = ledger_.run.id;
  c.id = candidate_identity(*r.program);
  c.seq = ledger_.counters.proposals++;
  c.proposer = "naive";
  c.status = CandidateStatus::Pending;
  c.created = unix_seconds();
  ledger_.candidates[c.id] = c;
  ledger_.commit({&ledger_.candidates[c.id]});
  return c.id;
}

// A schedule replayed at the timed sizes (the program) and at the check sizes: the
// check runs there, where a split's tail can put a barrier under a guard, so a
// refusal there is one before any device time too.
Replayed ProposalPipeline::replay_both(const Schedule &schedule) const {
  if (!config_.rewrites && !schedule.rewrites.empty())
    return Replayed{std::nullopt,
                    "rewrites are off in this run (search.rewrites = false): " + print_rewrite(schedule.rewrites[0])};
  Replayed r = replay(graph_, schedule, &device_);
  if (r.program) {
    Replayed small = replay(check_graph_, schedule, &device_);
    if (!small.program) r = Replayed{std::nullopt, "at the check sizes: " + small.refusal};
  }
  return r;
}

// The start schedules as candidates waiting for the naive kernel's baseline; their
// ids (a program seen before is not evaluated twice).
std::vector<std::string> ProposalPipeline::propose_starts(const std::vector<StartSchedule> &starts) {
  std::vector<std::string> ids;
  for (const StartSchedule &s : starts) {
    if (ledger_.candidates.count(s.id)) continue;
    CandidateRow c;
    c.run = ledger_.run.id;
    c.id = s.id;
    c.seq = ledger_.counters.proposals++;
    c.proposer = "start";
    c.parent = ledger_.naive_id();
    c.schedule = s.schedule;
    c.note = s.note;
    c.status = CandidateStatus::Pending;
    c.created = unix_seconds();
    ledger_.candidates[c.id] = c;
    ledger_.commit({&ledger_.candidates[c.id]});
    ids.push_back(c.id);
  }
  return ids;
}

ProposalPipeline::Plan ProposalPipeline::plan_proposal() {
  const int island = static_cast<int>(ledger_.counters.proposals % config_.islands);
  std::vector<double> &weights = island_weights_[static_cast<size_t>(island)];
  size_t which = std::discrete_distribution<size_t>(weights.begin(), weights.end())(ledger_.rng);
  std::string why = proposers_[which]->exhausted();
  if (why.empty() && proposers_[which]->costly()) why = model_budget_spent();
  if (!why.empty()) {
    // Its share, on every island, goes to the mutator from now on; said once.
    progress_.note("note: " + proposers_[which]->name() + " proposes no more in this run (" + why +
                   "): its share goes to the mutator");
    const size_t exhausted = which, mutator = proposer_index("mutator");
    for (std::vector<double> &w : island_weights_) w[mutator] += std::exchange(w[exhausted], 0.0);
    which = mutator;
  }
  planned_calls_ += proposers_[which]->costly();
  ParentPick pick = ParentPick::Uniform;
  std::optional<std::string> parent =
      ledger_.archive.choose_parent(island, ledger_.rng, config_.exploit, config_.explore, config_.uniform, &pick);
  if (!parent) parent = ledger_.naive_id();
  std::vector<std::string> inspirations =
      ledger_.archive.inspirations(island, *parent, config_.inspirations, ledger_.rng);
  const uint64_t seed = ledger_.rng();
  ProposalContext context{graph_, device_, view(*parent), {}, {}, library, config_.rewrites, {}};
  for (const std::string &id : inspirations) context.inspirations.push_back(view(id));
  for (const std::string &id : ledger_.recent_failures(kRecentFailures)) context.failures.push_back(view(id));
  if (proposers_[which]->costly()) context.tried = children_of(*parent);
  ++ledger_.counters.proposals;
  ++ledger_.counters.island_proposals[static_cast<size_t>(island)];
  CandidateRow c;
  c.run = ledger_.run.id;
  c.seq = ledger_.counters.proposals - 1;
  c.proposer = proposers_[which]->name();
  c.parent = *parent;
  c.inspirations = nlohmann::json(inspirations).dump();
  c.island = island;
  c.iteration = ledger_.counters.island_proposals[static_cast<size_t>(island)];
  c.seed = seed;
  return Plan{island, which, pick, std::move(context), Rng(seed), std::move(c)};
}

// One proposal sent to the device, the best-ranked of a pool when the model ranks:
// evaluated (submitted), refused or a duplicate (recorded or counted without device
// time). Returns whether a job was submitted.
bool ProposalPipeline::propose_one() {
  Plan plan = plan_proposal();
  return finish_proposal(plan, std::nullopt);
}

// Up to n proposals at once where a proposer asks a model: each one's draws first
// (in the order propose_one makes them), then each model's requests together (the
// client keeps them in flight up to its caps), then each proposal finished in
// order. Without such a proposer, one proposal (propose_one).
void ProposalPipeline::propose_some(size_t n) {
  bool costly = false;
  for (const std::unique_ptr<Proposer> &p : proposers_) costly = costly || p->costly();
  if (!costly || n <= 1) {
    propose_one();
    return;
  }
  std::vector<Plan> plans;
  for (size_t i = 0; i < n; ++i) plans.push_back(plan_proposal());
  std::vector<std::optional<std::optional<Proposal>>> given(plans.size());
  std::vector<std::vector<int64_t>> seqs(proposers_.size());  // the calls come one a request, in order
  for (size_t w = 0; w < proposers_.size(); ++w) {
    if (!proposers_[w]->costly()) continue;
    std::vector<size_t> mine;
    std::vector<const ProposalContext *> contexts;
    std::vector<Rng *> rngs;
    for (size_t i = 0; i < plans.size(); ++i)
      if (plans[i].which == w) mine.push_back(i), contexts.push_back(&plans[i].context), rngs.push_back(&plans[i].own);
    if (mine.empty()) continue;
    std::vector<std::optional<Proposal>> got = proposers_[w]->propose_all(contexts, rngs);
    for (size_t i : mine) seqs[w].push_back(plans[i].c.seq);
    for (size_t j = 0; j < mine.size() && j < got.size(); ++j) given[mine[j]] = std::move(got[j]);
  }
  for (size_t i = 0; i < plans.size(); ++i) finish_proposal(plans[i], std::move(given[i]));
  // Recorded once judged: each call's result says what became of its proposal.
  for (size_t w = 0; w < proposers_.size(); ++w)
    if (!seqs[w].empty()) record_calls(*proposers_[w], seqs[w]);
}

// The rest of a proposal: the proposer asked (unless given: its answer, asked
// already, its calls recorded by the caller), the pool ranked, the candidate
// recorded and submitted, and the proposer told what became of its proposal.
bool ProposalPipeline::finish_proposal(Plan &plan, std::optional<std::optional<Proposal>> given) {
  const bool asked_here = !given;
  const bool submitted = finish_pool(plan, std::move(given));
  if (asked_here) record_calls(*proposers_[plan.which], {plan.c.seq});
  return submitted;
}

bool ProposalPipeline::finish_pool(Plan &plan, std::optional<std::optional<Proposal>> given) {
  Proposer &proposer = *proposers_[plan.which];
  CandidateRow &c = plan.c;
  PoolSettings settings;
  settings.ranked = ranker_.ready(ledger_.counters.evaluated, ledger_.candidates) && !proposer.costly();
  settings.size = config_.cost_model == "xgboost" && !proposer.costly() ? config_.cost_pool : 1;
  settings.steps = config_.cost_steps;
  settings.explore = config_.cost_explore;
  PoolWorld world;
  world.replay = [&](const Schedule &schedule) { return replay_both(schedule); };
  world.known = [&](const std::string &id) { return ledger_.candidates.count(id) > 0; };
  world.duplicate_of = [&](const std::string &id) { return duplicate_of(id); };
  world.score = [&](const std::vector<std::vector<float>> &features) { return ranker_.score(features); };
  PoolChoice pool = choose_from_pool(proposer, plan.context, std::move(given), plan.own, settings, world);
  ledger_.counters.refused += pool.refused_count;
  ledger_.counters.duplicates += pool.duplicates;
  const std::string picked = std::string(" (") + parent_pick_name(plan.pick) + " parent";
  if (pool.refused) {  // refused by the IR or the device's limits: recorded, no device time
    c.schedule = print_schedule(pool.refused->schedule);
    c.note = pool.refused->note + picked + ")";
    c.created = unix_seconds();
    c.id = "refused-" + std::to_string(c.seq);
    c.status = CandidateStatus::Refused;
    c.verdict = "refused: " + pool.refusal;
    c.finished = unix_seconds();
    ++ledger_.counters.fruitless;
    ledger_.candidates[c.id] = c;
    ledger_.commit({&ledger_.candidates[c.id]});
    return false;
  }
  if (!pool.chosen) {
    ++ledger_.counters.fruitless;
    return false;
  }
  PoolMember &m = *pool.chosen;
  if (pool.predicted) c.predicted = *pool.predicted;
  proposer.judged(m.proposal, "evaluated");
  if (!m.features.empty()) ranker_.remember(m.id, m.features);
  c.schedule = m.proposal.body.empty() ? print_schedule(m.proposal.schedule) : "";
  c.body = m.proposal.body;
  c.note = m.proposal.note + picked + pool.how + ")";
  c.created = unix_seconds();
  c.id = m.id;
  ledger_.counters.fruitless = 0;
  c.status = CandidateStatus::Pending;
  ledger_.candidates[c.id] = c;
  ledger_.commit({&ledger_.candidates[c.id]});
  chosen_.push_back(c.id);
  return true;
}

// The model calls a proposer made, each a row of the run database.
// Call j belongs to proposals[j], or to the last proposal where there are more calls.
void ProposalPipeline::record_calls(Proposer &proposer, const std::vector<int64_t> &proposals) {
  if (proposer.costly()) planned_calls_ -= std::min<int64_t>(planned_calls_, static_cast<int64_t>(proposals.size()));
  std::vector<ModelCall> calls = proposer.take_calls();
  if (calls.empty()) return;
  for (const ModelCall &call : calls) {
    ++model_calls_;
    model_tokens_ += call.prompt_tokens + call.completion_tokens;
  }
  db_.transaction([&] {
    for (size_t j = 0; j < calls.size(); ++j)
      db_.add_model_call(ModelCallRow{ledger_.run.id, proposals[std::min(j, proposals.size() - 1)], calls[j]});
  });
}

// Why the run's model budget allows no more calls (llm.max_calls, llm.max_run_tokens,
// counting the calls planned and not yet made), or "".
std::string ProposalPipeline::model_budget_spent() const {
  if (model_calls_ + planned_calls_ >= config_.llm_max_calls())
    return "llm.max_calls = " + std::to_string(config_.llm_max_calls()) + (model_calls_ ? " calls spent" : "");
  if (model_tokens_ >= config_.llm_max_run_tokens())
    return "its calls took " + std::to_string(model_tokens_) + " tokens, llm.max_run_tokens is " +
           std::to_string(config_.llm_max_run_tokens());
  return "";
}

// What a duplicate proposal is told: the candidate whose program it makes.
std::string ProposalPipeline::duplicate_of(const std::string &id) const {
  const CandidateView c = view(id);
  char speedup[64] = "";
  if (c.speedup > 0) std::snprintf(speedup, sizeof speedup, ", %.2fx over the naive kernel", c.speedup);
  return "duplicate: the program of candidate " + id.substr(0, 12) + ", already evaluated (" + c.verdict + speedup +
         ")";
}

// The candidates proposed from a parent so far, the latest kChildrenShown: what a
// model has tried from it (evaluated, being evaluated or refused).
std::vector<CandidateView> ProposalPipeline::children_of(const std::string &parent) const {
  std::vector<const CandidateRow *> children;
  for (const auto &[id, c] : ledger_.candidates)
    if (c.parent == parent) children.push_back(&c);
  std::sort(children.begin(), children.end(),
            [](const CandidateRow *a, const CandidateRow *b) { return a->seq < b->seq; });
  if (children.size() > kChildrenShown) children.erase(children.begin(), children.end() - kChildrenShown);
  std::vector<CandidateView> out;
  for (const CandidateRow *c : children) out.push_back(view(c->id));
  return out;
}

}  // namespace ks
