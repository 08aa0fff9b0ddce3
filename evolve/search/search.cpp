// The search loop: proposals, evaluations through the queue, the archive, the run
// database, re-timing, migration, stopping.
#include "evolve/search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include "evolve/evaluation/record.h"
#include "evolve/search/archive.h"
#include "evolve/search/best.h"
#include "evolve/search/cost_features.h"
#include "evolve/search/cost_ranker.h"
#include "evolve/search/genome.h"
#include "evolve/search/jobs.h"
#include "evolve/search/ledger.h"
#include "evolve/search/mutator.h"
#include "evolve/search/pool.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

namespace ks {

namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Proposals in a row that found nothing new before the search gives up.
constexpr int kMaxFruitless = 500;
// Evaluations in a row without a record (the device or the children failing) before
// the run stops as failed.
constexpr int kMaxBroken = 5;
// No candidate is given up on at fewer milliseconds a run than this: below
// it a full timing costs little.
constexpr double kGiveUpFloorMs = 10;
// Recent failures shown to proposers.
constexpr size_t kRecentFailures = 6;
// The parent's children a model's prompt shows (what was tried from it already).
constexpr size_t kChildrenShown = 6;
// The share of the time budget that evaluations still running at its end may take
// more before they are stopped: most finish within it, a hung compile does not.
constexpr double kOvertimeShare = 0.1;

// What a job is, by its ticket.
struct Ticket {
  enum Kind { Evaluation, Retime, FinalRetime } kind = Evaluation;
  std::vector<std::string> ids;  // the candidate evaluated, or those timed side by side
  // The naive kernel timed first beside ids: at the final retime, and at every one
  // on several devices (a speedup is against the naive kernel on the same device).
  bool with_naive = false;
  size_t naive_timed() const { return with_naive ? 1 : 0; }
};

class Search {
 public:
  Search(RunDatabase &db, const SearchSetup &setup, EvaluationQueue &queue, ProgressSink &progress,
         const std::atomic<bool> &stop)
      : db_(db),
        setup_(setup),
        devices_(setup.devices.empty() ? std::vector<runtime::DeviceInfo>{setup.device} : setup.devices),
        queue_(queue),
        progress_(progress),
        stop_(stop),
        ledger_(db) {}

  SearchOutcome run(std::optional<int64_t> resume) {
    resume ? reopen(*resume) : begin();
    ledger_.start_clock();
    SearchOutcome out = loop();
    out.run = ledger_.run.id;
    return out;
  }

 private:
  RunDatabase &db_;
  const SearchSetup &setup_;
  const std::vector<runtime::DeviceInfo> devices_;  // the run's: setup_.devices, or setup_.device alone
  EvaluationQueue &queue_;
  ProgressSink &progress_;
  const std::atomic<bool> &stop_;
  EvolveConfig config_;
  frontend::Spec spec_;
  Graph graph_;
  Graph check_graph_;  // at the check sizes, where a schedule must replay too
  std::string spec_file_;
  RunLedger ledger_;
  BestTracker best_{ledger_, progress_, config_.retime_within};
  // The run's model calls and their tokens (a resumed run's earlier ones included),
  // and the calls planned but not yet made: llm.max_calls and llm.max_run_tokens.
  int64_t model_calls_ = 0, model_tokens_ = 0, planned_calls_ = 0;
  std::vector<std::string> recent_failures_;
  std::map<uint64_t, Ticket> tickets_;
  uint64_t next_ticket_ = 1;
  std::vector<std::unique_ptr<Proposer>> proposers_;  // one of each name any island draws
  std::vector<std::vector<double>> island_weights_;   // per island, proposers_'s weights
  CostRanker ranker_{config_, graph_};
  std::shared_ptr<const std::vector<LibraryStage>> library_;  // mutator.library's stages that fit, or none

  // ---- set-up ---------------------------------------------------------------------

  std::string spec_text_;
  struct Start {
    std::string note, schedule, id;  // note: the file, and its first comment
  };
  std::vector<Start> starts_;  // a new run's start schedules, checked

  void load_spec(const std::string &text) {
    spec_text_ = text;
    std::filesystem::create_directories(setup_.work_dir);
    spec_ = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{setup_.spec_path, text}));
    spec_file_ = (std::filesystem::path(setup_.work_dir) / (spec_.name + ".ks")).string();
    write_text_file(spec_file_, text);
    frontend::SizeOverrides sizes;
    if (!config_.sizes.empty()) frontend::parse_size_assignments(config_.sizes, &sizes);
    graph_ = frontend::elaborate(spec_, frontend::SizeSet::Default, sizes);
    frontend::SizeOverrides check_sizes;
    if (!config_.check_sizes.empty()) frontend::parse_size_assignments(config_.check_sizes, &check_sizes);
    check_graph_ = frontend::elaborate(spec_, frontend::SizeSet::Check, check_sizes);
    ledger_.archive = Archive(config_.islands, config_.edges(config_.features[0]), config_.edges(config_.features[1]));
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

  // The index of the proposer of that name in proposers_, made at its first use; every
  // island's weights grow with it.
  size_t proposer_index(const std::string &name) {
    for (size_t i = 0; i < proposers_.size(); ++i)
      if (proposers_[i]->name() == name) return i;
    proposers_.push_back(make_proposer(name, config_));
    for (std::vector<double> &weights : island_weights_) weights.push_back(0);
    return proposers_.size() - 1;
  }

  // The database holds the runs of one spec.
  void check_same_spec() {
    for (const RunRow &r : db_.runs())
      if (r.kernel != spec_.name)
        throw UserError("error: the run database '" + db_.path() + "' holds runs of kernel '" + r.kernel + "' (" +
                        r.spec_path + "), not '" + spec_.name + "'; give another --db");
  }

  // The stages of mutator.library's schedules that fit this graph (evolve/search/library.h),
  // for the transfer mutation; said once.
  void load_library() {
    if (config_.library.empty()) return;
    const std::vector<LibrarySchedule> schedules = read_library(config_.library, spec_.name);
    library_ = std::make_shared<const std::vector<LibraryStage>>(fitting_stages(graph_, schedules));
    progress_.note("mutator: " + std::to_string(library_->size()) + " stages of " + std::to_string(schedules.size()) +
                   " schedules of other problems in the library " + config_.library + " fit this problem");
  }

  // The cost model's prior (cost_model.prior), said once.
  void load_prior() {
    const std::string said = ranker_.load_prior(setup_.device.name, setup_.target);
    if (!said.empty()) progress_.note(said);
  }

  void begin() {
    config_ = setup_.config;
    validate(config_);
    load_spec(read_source_file(setup_.spec_path, "spec")->text);
    check_same_spec();
    load_prior();
    load_library();
    for (const auto &[path, text] : setup_.starts) {
      Schedule schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{path, text}));
      Replayed r = replay_both(schedule);
      if (!r.program)
        throw UserError("error: the start schedule '" + path + "' does not fit " + spec_.name + " at " +
                        describe_sizes(graph_) + " on " + setup_.device.name + ": " + r.refusal);
      // Its first comment (a tuned schedule's: the speedup and the evaluations that
      // found it) goes with it, so that the best's header tells the whole search.
      std::string note = path;
      if (text.rfind("# ", 0) == 0) note += " (" + text.substr(2, text.find('\n') - 2) + ")";
      starts_.push_back({note, print_schedule(schedule), candidate_identity(*r.program)});
    }
    ledger_.rng.seed(config_.seed);
    ledger_.counters = Counters::from("", config_.islands);
    RunRow row;
    row.spec_path = setup_.spec_path;
    row.kernel = spec_.name;
    row.spec_text = spec_text_;
    row.device = devices_text();
    row.target = setup_.target;
    row.sizes = describe_sizes(graph_);
    row.config = config_.to_toml();
    row.status = "running";
    ledger_.add(row);
    progress_.note("run " + std::to_string(ledger_.run.id) + " of " + spec_.name + " at " + ledger_.run.sizes + " on " + ledger_.run.device +
                   " (" + ledger_.run.target + ")");
  }

  void reopen(int64_t id) {
    ledger_.open(id);
    // The stored configuration, with the limits a resume may raise.
    config_ = parse_config(ledger_.run.config, db_.path() + " (run " + std::to_string(id) + "'s configuration)");
    config_.budget = std::max(config_.budget, setup_.config.budget);
    config_.minutes = setup_.config.minutes;
    config_.workers = setup_.config.workers;
    load_spec(ledger_.run.spec_text);
    load_prior();
    load_library();
    if (ledger_.run.device != devices_text())
      progress_.note("note: run " + std::to_string(id) + " began on " + ledger_.run.device + "; it continues on " +
                     devices_text());
    ledger_.restore(config_.islands);
    recent_failures_ = ledger_.recent_failures(kRecentFailures);  // as before the stop
    const ModelCallTotals calls = db_.model_call_totals(id);
    model_calls_ = calls.calls;
    model_tokens_ = calls.prompt_tokens + calls.completion_tokens;
    ledger_.run.status = "running";
    ledger_.run.message.clear();
    progress_.note("resuming run " + std::to_string(id) + " of " + spec_.name + ": " +
                   std::to_string(ledger_.counters.evaluated) + " evaluations done");
  }

  // ---- jobs -----------------------------------------------------------------------

  // The devices of the run, as its row names them: "opencl:0 NVIDIA H100 80GB HBM3",
  // several joined by ", ".
  std::string devices_text() const {
    std::string text;
    for (const runtime::DeviceInfo &d : devices_) text += (text.empty() ? "" : ", ") + d.where() + " " + d.name;
    return text;
  }

  JobSizes job_sizes() const { return {setup_.target, config_.sizes}; }

  // The candidate's schedule as a file for its child, written from the database's
  // copy every time and through a rename: a kill in the middle of a write must not
  // leave a truncated file that a resumed run would evaluate under the candidate's id.
  std::string schedule_file(const CandidateRow &c) const {
    std::filesystem::path path = std::filesystem::path(setup_.work_dir) / "schedules" / (c.id + ".sched");
    std::filesystem::create_directories(path.parent_path());
    write_text_file(path.string(), c.schedule);
    return path.string();
  }

  // A kernel body's file for its child, written the same way.
  std::string body_file(const CandidateRow &c) const {
    std::filesystem::path path = std::filesystem::path(setup_.work_dir) / "bodies" / (c.id + ".cl");
    std::filesystem::create_directories(path.parent_path());
    write_text_file(path.string(), c.body);
    return path.string();
  }

  void submit_evaluation(const CandidateRow &c) {
    EvaluationRequest request;
    request.spec_file = spec_file_;
    if (c.body.empty())
      request.schedule_file = schedule_file(c);
    else
      request.body_file = body_file(c);
    request.sizes = job_sizes();
    request.trials = config_.trials;
    request.batches = config_.batches;
    request.min_batch_ms = config_.min_batch_ms;
    request.check_sizes = config_.check_sizes;
    if (config_.give_up > 0 && ledger_.run.baseline_ms > 0 && !ledger_.counters.best.empty()) {
      const double best_ms = ledger_.run.baseline_ms / RunLedger::speedup_of(ledger_.candidates.at(ledger_.counters.best));
      request.give_up_ms = std::max(config_.give_up * best_ms, kGiveUpFloorMs);
    }
    uint64_t ticket = next_ticket_++;
    tickets_[ticket] = {Ticket::Evaluation, {c.id}};
    queue_.submit({ticket, request.args(), config_.time_limit_s});
  }

  void submit_retime(Ticket::Kind kind, const std::vector<std::string> &ids) {
    const Ticket t{kind, ids, kind == Ticket::FinalRetime || devices_.size() > 1};
    RetimeRequest request;
    request.spec_file = spec_file_;
    // At the end the naive kernel is timed beside the best few, and their figures are
    // against it: on a CPU device one process runs the same kernel up to twice as fast
    // as another (PoCL), and against a baseline from another process a softmax schedule
    // about as fast as the naive kernel was reported at 1.09x and 1.36x.
    request.with_naive = t.with_naive;
    for (const std::string &id : ids) request.schedule_files.push_back(schedule_file(ledger_.candidates.at(id)));
    request.sizes = job_sizes();
    request.batches = config_.batches;
    request.min_batch_ms = config_.min_batch_ms;
    uint64_t ticket = next_ticket_++;
    tickets_[ticket] = t;
    queue_.submit({ticket, request.args(), config_.time_limit_s * static_cast<double>(ids.size() + t.naive_timed())});
  }

  // ---- the record of it all -----------------------------------------------------

  // ---- proposing ------------------------------------------------------------------

  CandidateView view(const std::string &id) const {
    const CandidateRow &c = ledger_.candidates.at(id);
    CandidateView v;
    v.id = id;
    v.schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{id + ".sched", c.schedule}));
    v.body = c.body;
    v.speedup = c.status == CandidateStatus::Correct ? (c.retimed_speedup > 0 ? c.retimed_speedup : c.speedup) : 0;
    v.verdict = c.status == CandidateStatus::Pending ? "being evaluated" : c.verdict;
    if (std::optional<EvaluationResult> r = EvaluationResult::from_json(nlohmann::json::parse(c.record, nullptr, false)))
      v.features = r->features;
    return v;
  }

  // The naive kernel, first of all: its time is the run's baseline.
  void propose_naive() {
    Replayed r = replay(graph_, {}, &setup_.device);
    if (!r.program) throw UserError("error: the naive kernel of " + spec_.name + " is refused: " + r.refusal);
    CandidateRow c;
    c.run = ledger_.run.id;
    c.id = candidate_identity(*r.program);
    c.seq = ledger_.counters.proposals++;
    c.proposer = "naive";
    c.status = CandidateStatus::Pending;
    c.created = unix_seconds();
    ledger_.candidates[c.id] = c;
    ledger_.commit({&ledger_.candidates[c.id]});
    submit_evaluation(ledger_.candidates[c.id]);
  }

  // A schedule replayed at the timed sizes (the program) and at the check sizes: the
  // check runs there, where a split's tail can put a barrier under a guard, so a
  // refusal there is one before any device time too.
  Replayed replay_both(const Schedule &schedule) const {
    if (!config_.rewrites && !schedule.rewrites.empty())
      return Replayed{std::nullopt,
                      "rewrites are off in this run (search.rewrites = false): " + print_rewrite(schedule.rewrites[0])};
    Replayed r = replay(graph_, schedule, &setup_.device);
    if (r.program) {
      Replayed small = replay(check_graph_, schedule, &setup_.device);
      if (!small.program) r = Replayed{std::nullopt, "at the check sizes: " + small.refusal};
    }
    return r;
  }

  // The start schedules as candidates waiting for the naive kernel's baseline; their
  // ids (a program seen before is not evaluated twice).
  std::vector<std::string> propose_starts() {
    std::vector<std::string> ids;
    for (const Start &s : starts_) {
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

  Plan plan_proposal() {
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
    std::vector<std::string> inspirations = ledger_.archive.inspirations(island, *parent, config_.inspirations, ledger_.rng);
    const uint64_t seed = ledger_.rng();
    ProposalContext context{graph_, setup_.device, view(*parent), {}, {}, library_, config_.rewrites};
    for (const std::string &id : inspirations) context.inspirations.push_back(view(id));
    for (const std::string &id : recent_failures_) context.failures.push_back(view(id));
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
  bool propose_one() {
    Plan plan = plan_proposal();
    return finish_proposal(plan, std::nullopt);
  }

  // Up to n proposals at once where a proposer asks a model: each one's draws first
  // (in the order propose_one makes them), then each model's requests together (the
  // client keeps them in flight up to its caps), then each proposal finished in
  // order. Without such a proposer, one proposal (propose_one).
  void propose_some(size_t n) {
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
        if (plans[i].which == w)
          mine.push_back(i), contexts.push_back(&plans[i].context), rngs.push_back(&plans[i].own);
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
  bool finish_proposal(Plan &plan, std::optional<std::optional<Proposal>> given) {
    const bool asked_here = !given;
    const bool submitted = finish_pool(plan, std::move(given));
    if (asked_here) record_calls(*proposers_[plan.which], {plan.c.seq});
    return submitted;
  }

  bool finish_pool(Plan &plan, std::optional<std::optional<Proposal>> given) {
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
    submit_evaluation(ledger_.candidates[c.id]);
    return true;
  }

  // The model calls a proposer made, each a row of the run database.
  // Call j belongs to proposals[j], or to the last proposal where there are more calls.
  void record_calls(Proposer &proposer, const std::vector<int64_t> &proposals) {
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
  std::string model_budget_spent() const {
    if (model_calls_ + planned_calls_ >= config_.llm_max_calls())
      return "llm.max_calls = " + std::to_string(config_.llm_max_calls()) + (model_calls_ ? " calls spent" : "");
    if (model_tokens_ >= config_.llm_max_run_tokens())
      return "its calls took " + std::to_string(model_tokens_) + " tokens, llm.max_run_tokens is " +
             std::to_string(config_.llm_max_run_tokens());
    return "";
  }

  // What a duplicate proposal is told: the candidate whose program it makes.
  std::string duplicate_of(const std::string &id) const {
    const CandidateView c = view(id);
    char speedup[64] = "";
    if (c.speedup > 0) std::snprintf(speedup, sizeof speedup, ", %.2fx over the naive kernel", c.speedup);
    return "duplicate: the program of candidate " + id.substr(0, 12) + ", already evaluated (" + c.verdict + speedup +
           ")";
  }

  // The candidates proposed from a parent so far, the latest kChildrenShown: what a
  // model has tried from it (evaluated, being evaluated or refused).
  std::vector<CandidateView> children_of(const std::string &parent) const {
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

  // ---- results --------------------------------------------------------------------

  void evaluated(const std::string &id, const ChildRun &child) {
    CandidateRow &c = ledger_.candidates.at(id);
    IsolatedRun outcome = isolated_outcome(child, config_.time_limit_s);
    std::optional<EvaluationResult> result;
    if (outcome.record) result = EvaluationResult::from_json(*outcome.record);
    if (outcome.record && !result) outcome.failure = "its record is not one ksmith run --json writes";
    c.status = status_of(child, result);
    c.verdict = result && !result->verdict.empty() ? result->verdict : outcome.failure;
    c.record = outcome.record ? outcome.record->dump() : "";
    c.seconds = child.seconds;
    c.finished = unix_seconds();
    c.eval_seq = ++ledger_.counters.evaluated;
    ledger_.counters.broken = result ? 0 : ledger_.counters.broken + 1;
    std::vector<const CandidateRow *> changed = {&c};
    if (timed_status(c.status)) {
      c.median_ms = result->median_ms;
      c.cv = result->cv;
      c.speedup = result->speedup;
    }
    if (c.status == CandidateStatus::Correct) {
      Cell cell = ledger_.archive.cell_of(result->feature(config_.features[0]), result->feature(config_.features[1]));
      const bool naive = c.proposer == "naive";
      if (naive) {
        ledger_.run.baseline_ms = c.median_ms;
        ledger_.run.baseline_cv = c.cv;
        c.speedup = 1;
        ledger_.counters.best = c.id;
      }
      // The naive kernel and a start schedule are every island's parents.
      if (naive || c.proposer == "start") {
        for (int i = 0; i < ledger_.archive.islands(); ++i) ledger_.archive.add(i, {c.id, c.speedup, false}, cell);
      } else {
        ledger_.archive.add(c.island, {c.id, c.speedup, false}, cell);
      }
      if (!naive) best_.consider(c);
    } else {
      recent_failures_.push_back(c.id);
      if (recent_failures_.size() > kRecentFailures) recent_failures_.erase(recent_failures_.begin());
    }
    migrate_when_due();
    ledger_.commit(changed);
  }

  void retimed(const Ticket &ticket, const ChildRun &child) {
    const std::optional<std::vector<Time>> times = read_times(child, ticket.naive_timed() + ticket.ids.size());
    std::vector<const CandidateRow *> changed = best_.retimed(ticket.ids, ticket.with_naive, times, child.err);
    if (ticket.kind == Ticket::FinalRetime) ledger_.counters.final_retimed = true;
    ledger_.commit(changed);
  }

  void migrate_when_due() {
    const int64_t every = static_cast<int64_t>(config_.generation) * config_.interval * config_.islands;
    if (config_.islands < 2 || config_.migrants == 0 || ledger_.counters.evaluated % every != 0) return;
    int arrived = ledger_.archive.migrate(config_.migrants);
    ++ledger_.counters.migrations;
    if (arrived)
      progress_.note("migration " + std::to_string(ledger_.counters.migrations) + ": " + std::to_string(arrived) +
                     " elites settled on the next island");
  }

  // ---- the loop -------------------------------------------------------------------

  Progress progress() const {
    Progress p;
    p.evaluated = ledger_.counters.evaluated;
    p.budget = config_.budget;
    p.in_flight = static_cast<int64_t>(queue_.running());
    p.refused = ledger_.counters.refused;
    p.duplicates = ledger_.counters.duplicates;
    p.model_calls = model_calls_;
    p.model_tokens = model_tokens_;
    for (const auto &[id, c] : ledger_.candidates)
      if (failed_status(c.status)) ++p.by_status[status_name(c.status)];
    p.elapsed_s = ledger_.elapsed();
    p.per_minute = p.elapsed_s > 0 ? 60.0 * static_cast<double>(p.evaluated) / p.elapsed_s : 0;
    double by_budget = p.per_minute > 0 ? 60.0 * static_cast<double>(config_.budget - p.evaluated) / p.per_minute : -1;
    double by_minutes = config_.minutes > 0 ? config_.minutes * 60 - p.elapsed_s : -1;
    p.left_s = by_budget < 0 ? by_minutes : by_minutes < 0 ? by_budget : std::min(by_budget, by_minutes);
    if (!ledger_.counters.best.empty()) {
      const CandidateRow &b = ledger_.candidates.at(ledger_.counters.best);
      p.best_speedup = RunLedger::speedup_of(b);
      p.best_retimed = b.retimed_speedup > 0;
      p.best_steps = static_cast<int>(std::count(b.schedule.begin(), b.schedule.end(), '\n'));
    }
    return p;
  }

  // Why no more proposals are to be made, or "".
  std::string exhausted() const {
    if (ledger_.counters.evaluated + static_cast<int64_t>(queue_.running()) >= config_.budget)
      return "the budget of " + std::to_string(config_.budget) + " evaluations is spent";
    if (config_.minutes > 0 && ledger_.elapsed() >= config_.minutes * 60)
      return "the time budget of " + format_number(config_.minutes) + " minutes is spent";
    if (config_.target_speedup > 0 && !ledger_.counters.best.empty() &&
        RunLedger::speedup_of(ledger_.candidates.at(ledger_.counters.best)) >= config_.target_speedup)
      return "the target speedup is reached";
    if (ledger_.counters.fruitless >= kMaxFruitless)
      return "the proposers found nothing new in " + std::to_string(kMaxFruitless) + " tries";
    return "";
  }

  // Past the time budget and a tenth of it more, the evaluations still running are
  // stopped and left pending (proposed, not evaluated): a compile that never ends
  // must not hold the run until the evaluation's own time limit, nor be recorded as
  // a timeout it did not reach. The final timing again is the run's answer and runs
  // to its own limit.
  void stop_overtime() {
    if (config_.minutes <= 0 || ledger_.elapsed() < config_.minutes * 60 * (1 + kOvertimeShare) || tickets_.empty()) return;
    int64_t evaluations = 0;
    for (const auto &[number, ticket] : tickets_) {
      if (ticket.kind == Ticket::FinalRetime) return;
      evaluations += ticket.kind == Ticket::Evaluation;
    }
    queue_.stop();
    tickets_.clear();
    progress_.note("note: the time budget is spent and a tenth of it more: " + std::to_string(evaluations) +
                   (evaluations == 1 ? " evaluation" : " evaluations") + " still running stopped, left not evaluated");
  }

  SearchOutcome finish(const std::string &status, const std::string &message) {
    ledger_.run.status = status;
    ledger_.run.message = message;
    ledger_.commit({});
    return {ledger_.run.id, status, message};
  }

  SearchOutcome loop() {
    const size_t slots = std::max<size_t>(1, queue_.slots());
    // Unfinished work of an earlier session goes first: evaluations in flight at
    // the kill, then a re-timing that was due.
    bool naive_done = false;
    for (const auto &[id, c] : ledger_.candidates)
      if (c.proposer == "naive") naive_done = c.status != CandidateStatus::Pending;
    std::vector<std::string> backlog = ledger_.pending();
    if (ledger_.candidates.empty()) {
      propose_naive();
      for (const std::string &id : propose_starts()) backlog.push_back(id);
    }
    std::string why_done;
    double last_progress = 0;
    while (true) {
      if (stop_) {
        queue_.stop();
        progress_.update(progress());
        return finish("stopped", "stopped by a signal");
      }
      // Keep the queue full: the naive kernel's record (the baseline) before any
      // other, then the backlog, a due re-timing, then new proposals.
      while (queue_.running() < slots) {
        if (!naive_done) {
          auto naive = std::find(backlog.begin(), backlog.end(), ledger_.naive_id());
          if (naive != backlog.end()) {
            submit_evaluation(ledger_.candidates.at(*naive));
            backlog.erase(naive);
          }
          break;
        }
        if (!backlog.empty()) {
          submit_evaluation(ledger_.candidates.at(backlog.front()));
          backlog.erase(backlog.begin());
          continue;
        }
        if (!ledger_.counters.pending_retimes.empty()) {
          submit_retime(Ticket::Retime, ledger_.counters.pending_retimes);
          ledger_.counters.pending_retimes.clear();
          continue;
        }
        why_done = exhausted();
        if (!why_done.empty()) break;
        // As many proposals as free workers and budget allow (a model's together).
        const int64_t room = config_.budget - ledger_.counters.evaluated - static_cast<int64_t>(queue_.running());
        propose_some(std::min(slots - queue_.running(), static_cast<size_t>(std::max<int64_t>(1, room))));
      }
      if (naive_done) stop_overtime();  // the naive kernel, the baseline, is waited for
      if (queue_.running() == 0) {
        if (!naive_done) return finish("failed", "the naive kernel was not evaluated");
        if (!ledger_.counters.pending_retimes.empty()) continue;
        if (!ledger_.counters.final_retimed && config_.final_top > 1) {
          std::vector<std::string> top = ledger_.top_candidates(config_.final_top);
          if (top.size() > 1) {
            submit_retime(Ticket::FinalRetime, top);
            continue;
          }
        }
        progress_.update(progress());
        return finish("finished", why_done.empty() ? "done" : why_done);
      }
      for (const JobResult &r : queue_.wait(0.5)) {
        if (!r.note.empty()) progress_.note(r.note);  // a device left out
        Ticket ticket = tickets_.at(r.ticket);
        tickets_.erase(r.ticket);
        if (ticket.kind == Ticket::Evaluation) {
          evaluated(ticket.ids[0], r.child);
          if (ledger_.candidates.at(ticket.ids[0]).proposer == "naive") {
            naive_done = true;
            const CandidateRow &naive = ledger_.candidates.at(ticket.ids[0]);
            if (naive.status != CandidateStatus::Correct) {
              queue_.stop();
              return finish("failed",
                            "the naive kernel, the baseline of every speedup, is not correct: " + naive.verdict);
            }
          }
        } else {
          retimed(ticket, r.child);
        }
        if (ledger_.counters.broken >= kMaxBroken) {
          queue_.stop();
          return finish("failed", std::to_string(kMaxBroken) +
                                      " evaluations in a row gave no record (the device or the children failing); "
                                      "the last said: " +
                                      ledger_.last_evaluated().verdict);
        }
      }
      if (monotonic_seconds() - last_progress > 0.5) {
        progress_.update(progress());
        last_progress = monotonic_seconds();
      }
    }
  }

};

}  // namespace

SearchOutcome run_search(RunDatabase &db, std::optional<int64_t> resume, const SearchSetup &setup,
                         EvaluationQueue &queue, ProgressSink &progress, const std::atomic<bool> &stop) {
  Search search(db, setup, queue, progress, stop);
  return search.run(resume);
}

}  // namespace ks
