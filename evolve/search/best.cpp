#include "evolve/search/best.h"

#include "evolve/search/search.h"

namespace ks {

std::string format_speedup(double speedup) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3gx", speedup);
  return text;
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

namespace {
std::string format_ms(double ms) { return format_number(ms) + " ms"; }
std::string first_line(const std::string &text) { return text.substr(0, text.find('\n')); }
}  // namespace

void BestTracker::consider(const CandidateRow &c) {
  Counters &counters = ledger_.counters;
  if (counters.best.empty()) {
    counters.best = c.id;
    return;
  }
  const CandidateRow &best = ledger_.candidates.at(counters.best);
  const double old = speedup_of(best);
  if (c.speedup <= old) return;
  // Kernel bodies are not timed side by side (ksmith time takes schedules): their
  // evaluation's time stands.
  if (c.speedup < old * (1 + retime_within_) && best.proposer != "naive" && c.body.empty() && best.body.empty()) {
    counters.pending_retimes = {best.id, c.id};
    return;
  }
  counters.best = c.id;
  progress_.note("best " + format_speedup(c.speedup) + " after " + std::to_string(counters.evaluated) +
                 " evaluations (" + c.proposer + ": " + c.note + ")");
}

std::vector<const CandidateRow *> BestTracker::retimed(const std::vector<std::string> &ids, bool with_naive,
                                                       const std::optional<std::vector<Time>> &times,
                                                       const std::string &failure) {
  std::vector<const CandidateRow *> changed;
  const size_t first = with_naive ? 1 : 0;  // the naive kernel's time comes first
  const std::string naive_id = first ? ledger_.naive_id() : "";
  const RunRow &run = ledger_.run;
  if (times) {
    double baseline_ms = run.baseline_ms;
    if (first) {
      baseline_ms = (*times)[0].median_ms;
      progress_.note("timed again beside the best " + std::to_string(ids.size()) + ": the naive kernel " +
                     format_ms(baseline_ms) + " (" + format_ms(run.baseline_ms) + " when evaluated)");
      // The naive kernel, timed beside them, is one of those compared: when none
      // beats it there, it is the best (a CPU device's noise can make a search's
      // small gains vanish when timed again).
      CandidateRow &naive = ledger_.candidates.at(naive_id);
      naive.retimed_speedup = 1;
      naive.retimed_cv = (*times)[0].cv;
      changed.push_back(&naive);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      CandidateRow &c = ledger_.candidates.at(ids[i]);
      const Time &t = (*times)[first + i];
      if (t.median_ms <= 0 || baseline_ms <= 0) continue;
      c.retimed_speedup = baseline_ms / t.median_ms;
      c.retimed_cv = t.cv;
      ledger_.archive.set_speedup(c.id, c.retimed_speedup);
      changed.push_back(&c);
    }
  } else {
    progress_.note("note: timing again failed (" + first_line(failure) + "); the first times stand");
  }
  // The best is the fastest of those timed together, by their new times.
  std::string best = ledger_.counters.best;
  std::vector<std::string> compared = ids;
  if (first) compared.push_back(naive_id);
  auto speedup = [&](const std::string &id) { return speedup_of(ledger_.candidates.at(id)); };
  for (const std::string &id : compared)
    if (ledger_.candidates.at(id).status == CandidateStatus::Correct && speedup(id) > speedup(best)) best = id;
  if (best != ledger_.counters.best && first && best == naive_id)
    progress_.note("best: the naive kernel (none of the best " + std::to_string(ids.size()) +
                   " beat it when timed again beside it)");
  else if (best != ledger_.counters.best)
    progress_.note("best " + format_speedup(speedup(best)) + " (timed again beside the last best)");
  ledger_.counters.best = best;
  return changed;
}

}  // namespace ks
