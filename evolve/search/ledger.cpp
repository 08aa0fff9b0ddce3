#include "evolve/search/ledger.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "evolve/workers.h"
#include "ir/diagnostic.h"

namespace ks {
namespace {

std::string rng_text(const Rng &rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

}  // namespace

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json Counters::to_json() const {
  return {{"proposals", proposals},
          {"evaluated", evaluated},
          {"refused", refused},
          {"duplicates", duplicates},
          {"fruitless", fruitless},
          {"broken", broken},
          {"migrations", migrations},
          {"island_proposals", island_proposals},
          {"best", best},
          {"pending_retimes", pending_retimes},
          {"final_retimed", final_retimed}};
}

Counters Counters::from(const std::string &text, int islands) {
  Counters c;
  nlohmann::json j = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr, false);
  if (j.is_object()) {
    c.proposals = j.value("proposals", int64_t{0});
    c.evaluated = j.value("evaluated", int64_t{0});
    c.refused = j.value("refused", int64_t{0});
    c.duplicates = j.value("duplicates", int64_t{0});
    c.fruitless = j.value("fruitless", int64_t{0});
    c.broken = j.value("broken", int64_t{0});
    c.migrations = j.value("migrations", int64_t{0});
    c.island_proposals = j.value("island_proposals", std::vector<int64_t>{});
    c.best = j.value("best", std::string());
    c.pending_retimes = j.value("pending_retimes", std::vector<std::string>{});
    c.final_retimed = j.value("final_retimed", false);
  }
  c.island_proposals.resize(static_cast<size_t>(islands), 0);
  return c;
}

void RunLedger::add(RunRow row) {
  run = std::move(row);
  run.rng = rng_text(rng);
  run.state = counters.to_json().dump();
  db_.transaction([&] { run.id = db_.add_run(run); });
}

void RunLedger::open(int64_t id) {
  std::optional<RunRow> row = db_.run(id);
  if (!row) throw UserError("error: the run database '" + db_.path() + "' has no run " + std::to_string(id));
  run = *row;
  if (run.status == "finished")
    throw UserError("error: run " + std::to_string(id) + " of '" + db_.path() +
                    "' has finished; start a new run (without --resume)");
}

void RunLedger::restore(int islands) {
  for (CandidateRow &c : db_.candidates(run.id)) candidates[c.id] = c;
  for (int i = 0; i < islands; ++i) {
    std::vector<std::pair<Elite, Cell>> members;
    std::map<Cell, Elite> grid;
    db_.load_island(run.id, i, &members, &grid);
    archive.restore(i, members, grid);
  }
  std::istringstream(run.rng) >> rng;
  counters = Counters::from(run.state, islands);
}

void RunLedger::start_clock() {
  session_start_ = monotonic_seconds();
  seconds_before_ = run.seconds;
}

double RunLedger::elapsed() const { return seconds_before_ + monotonic_seconds() - session_start_; }

void RunLedger::commit(const std::vector<const CandidateRow *> &changed) {
  run.rng = rng_text(rng);
  run.state = counters.to_json().dump();
  run.seconds = elapsed();
  std::vector<ArchiveChange> changes = archive.take_changes();
  db_.transaction([&] {
    for (const CandidateRow *c : changed) db_.put_candidate(*c);
    db_.apply(run.id, changes);
    db_.update_run(run);
  });
}

std::string RunLedger::naive_id() const {
  for (const auto &[id, c] : candidates)
    if (c.proposer == "naive") return id;
  return "";
}

const CandidateRow &RunLedger::last_evaluated() const {
  const CandidateRow *last = nullptr;
  for (const auto &[id, c] : candidates)
    if (!last || c.eval_seq > last->eval_seq) last = &c;
  return *last;
}

std::vector<std::string> RunLedger::top_candidates(int n) const {
  std::vector<const CandidateRow *> correct;
  for (const auto &[id, c] : candidates)
    if (c.status == CandidateStatus::Correct && c.proposer != "naive" && c.body.empty()) correct.push_back(&c);
  std::sort(correct.begin(), correct.end(),
            [&](const CandidateRow *a, const CandidateRow *b) { return speedup_of(*a) > speedup_of(*b); });
  std::vector<std::string> out;
  for (size_t i = 0; i < correct.size() && static_cast<int>(i) < n; ++i) out.push_back(correct[i]->id);
  return out;
}

std::vector<std::string> RunLedger::pending() const {
  std::vector<const CandidateRow *> rows;
  for (const auto &[id, c] : candidates)
    if (c.status == CandidateStatus::Pending) rows.push_back(&c);
  std::sort(rows.begin(), rows.end(), [](const CandidateRow *a, const CandidateRow *b) { return a->seq < b->seq; });
  std::vector<std::string> out;
  for (const CandidateRow *c : rows) out.push_back(c->id);
  return out;
}

std::vector<std::string> RunLedger::recent_failures(size_t keep) const {
  std::vector<const CandidateRow *> failed;
  for (const auto &[id, c] : candidates)
    if (failed_status(c.status)) failed.push_back(&c);
  std::sort(failed.begin(), failed.end(),
            [](const CandidateRow *a, const CandidateRow *b) { return a->eval_seq < b->eval_seq; });
  std::vector<std::string> out;
  for (size_t i = failed.size() > keep ? failed.size() - keep : 0; i < failed.size(); ++i) out.push_back(failed[i]->id);
  return out;
}

}  // namespace ks
