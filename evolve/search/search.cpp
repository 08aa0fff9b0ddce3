// The search loop: the set-up of a new run or a resumed one, the queue kept full
// (the naive kernel first, then the backlog, a due retiming, new proposals), each
// evaluation's outcome into the archive, migration, stopping. The parts it
// orchestrates: ledger.h (the run and its database), proposals.h (with pool.h and
// cost_ranker.h), jobs.h (the children's command lines and records), best.h.
#include "evolve/search/search.h"

#include <algorithm>
#include <filesystem>

#include "evolve/evaluation/record.h"
#include "evolve/search/best.h"
#include "evolve/search/genome.h"
#include "evolve/search/jobs.h"
#include "evolve/search/ledger.h"
#include "evolve/search/proposals.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

namespace ks {

namespace {

// Proposals in a row that found nothing new before the search gives up.
constexpr int kMaxFruitless = 500;
// Evaluations in a row without a record (the device or the children failing) before
// the run stops as failed.
constexpr int kMaxBroken = 5;
// No candidate is given up on at fewer milliseconds a run than this: below
// it a full timing costs little.
constexpr double kGiveUpFloorMs = 10;
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
  std::map<uint64_t, Ticket> tickets_;
  uint64_t next_ticket_ = 1;
  ProposalPipeline proposals_{config_, graph_, check_graph_, setup_.device, ledger_, db_, progress_};

  // ---- set-up ---------------------------------------------------------------------

  std::string spec_text_;
  std::vector<StartSchedule> starts_;  // a new run's start schedules, checked

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
    proposals_.mix_proposers();
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
    proposals_.library = std::make_shared<const std::vector<LibraryStage>>(fitting_stages(graph_, schedules));
    progress_.note("mutator: " + std::to_string(proposals_.library->size()) + " stages of " +
                   std::to_string(schedules.size()) + " schedules of other problems in the library " + config_.library +
                   " fit this problem");
  }

  // The cost model's prior (cost_model.prior), said once.
  void load_prior() { proposals_.load_prior(setup_.device.name, setup_.target); }

  void begin() {
    config_ = setup_.config;
    validate(config_);
    std::shared_ptr<const SourceFile> file = read_source_file(setup_.spec_path, "spec");
    load_spec(setup_.dtype ? frontend::with_dtype(file, *setup_.dtype) : file->text);
    check_same_spec();
    load_prior();
    load_library();
    for (const auto &[path, text] : setup_.starts) {
      Schedule schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{path, text}));
      Replayed r = proposals_.replay_both(schedule);
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
    progress_.note("run " + std::to_string(ledger_.run.id) + " of " + spec_.name + " at " + ledger_.run.sizes + " on " +
                   ledger_.run.device + " (" + ledger_.run.target + ", " + config_.precision + ")");
    note_precision();
  }

  // TF32 asked for where no device of the run has matrix units: the search goes on
  // with the CUDA cores, every sum in fp32, said once.
  void note_precision() {
    if (config_.precision != "tf32") return;
    for (const runtime::DeviceInfo &d : devices_)
      if (d.matrix_units) return;
    progress_.note("note: precision tf32 asked for, but " + devices_text() +
                   " has no matrix units: the search goes on with fp32 arithmetic throughout");
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
    proposals_.resume(db_.model_call_totals(id));
    ledger_.run.status = "running";
    ledger_.run.message.clear();
    progress_.note("resuming run " + std::to_string(id) + " of " + spec_.name + ": " +
                   std::to_string(ledger_.counters.evaluated) + " evaluations done");
    note_precision();
  }

  // ---- jobs -----------------------------------------------------------------------

  // The devices of the run, as its row names them: "opencl:0 NVIDIA H100 80GB HBM3",
  // several joined by ", ".
  std::string devices_text() const {
    std::string text;
    for (const runtime::DeviceInfo &d : devices_) text += (text.empty() ? "" : ", ") + d.where() + " " + d.name;
    return text;
  }

  JobSettings job_settings() const { return {setup_.target, config_.sizes, config_.precision}; }

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
    request.settings = job_settings();
    request.trials = config_.trials;
    request.batches = config_.batches;
    request.min_batch_ms = config_.min_batch_ms;
    request.check_sizes = config_.check_sizes;
    if (config_.give_up > 0 && ledger_.run.baseline_ms > 0 && !ledger_.counters.best.empty()) {
      const double best_ms = ledger_.run.baseline_ms / speedup_of(ledger_.candidates.at(ledger_.counters.best));
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
    request.settings = job_settings();
    request.batches = config_.batches;
    request.min_batch_ms = config_.min_batch_ms;
    uint64_t ticket = next_ticket_++;
    tickets_[ticket] = t;
    queue_.submit({ticket, request.args(), config_.time_limit_s * static_cast<double>(ids.size() + t.naive_timed())});
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
    p.model_calls = proposals_.model_calls();
    p.model_tokens = proposals_.model_tokens();
    for (const auto &[id, c] : ledger_.candidates)
      if (failed_status(c.status)) ++p.by_status[status_name(c.status)];
    p.elapsed_s = ledger_.elapsed();
    p.per_minute = p.elapsed_s > 0 ? 60.0 * static_cast<double>(p.evaluated) / p.elapsed_s : 0;
    double by_budget = p.per_minute > 0 ? 60.0 * static_cast<double>(config_.budget - p.evaluated) / p.per_minute : -1;
    double by_minutes = config_.minutes > 0 ? config_.minutes * 60 - p.elapsed_s : -1;
    p.left_s = by_budget < 0 ? by_minutes : by_minutes < 0 ? by_budget : std::min(by_budget, by_minutes);
    if (!ledger_.counters.best.empty()) {
      const CandidateRow &b = ledger_.candidates.at(ledger_.counters.best);
      p.best_speedup = speedup_of(b);
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
        speedup_of(ledger_.candidates.at(ledger_.counters.best)) >= config_.target_speedup)
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
    if (config_.minutes <= 0 || ledger_.elapsed() < config_.minutes * 60 * (1 + kOvertimeShare) || tickets_.empty())
      return;
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
      submit_evaluation(ledger_.candidates.at(proposals_.propose_naive(spec_.name)));
      for (const std::string &id : proposals_.propose_starts(starts_)) backlog.push_back(id);
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
        for (const std::string &id :
             proposals_.propose(std::min(slots - queue_.running(), static_cast<size_t>(std::max<int64_t>(1, room)))))
          submit_evaluation(ledger_.candidates.at(id));
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
