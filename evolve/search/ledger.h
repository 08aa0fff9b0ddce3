// A run as the search keeps it: its row, its candidates, the counters it carries
// across a resume, the archive and the random state, each change written to the run
// database as one transaction, so that a killed run resumes where it stopped. The
// questions asked of the candidates as a whole (the naive kernel, the best few) are
// answered here too.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evolve/search/archive.h"
#include "evolve/search/run_db.h"
#include "evolve/search/space.h"

namespace ks {

/// Now, in unix seconds: when a candidate was created and finished.
double unix_seconds();

/// What the search keeps across a resume besides the archive and the candidates.
struct Counters {
  int64_t proposals = 0;  // proposals made: the next one's seq
  int64_t evaluated = 0;  // evaluations finished: the last one's eval_seq
  int64_t refused = 0, duplicates = 0, fruitless = 0, broken = 0;
  int64_t migrations = 0;
  std::vector<int64_t> island_proposals;
  std::string best;                          // the believed best's id
  std::vector<std::string> pending_retimes;  // a close new best and the best it challenges
  bool final_retimed = false;

  nlohmann::json to_json() const;
  /// The counters of a run's state (RunRow::state; "" for a new run), with a count
  /// of proposals for each of `islands`.
  static Counters from(const std::string &text, int islands);
};

class RunLedger {
 public:
  explicit RunLedger(RunDatabase &db) : archive(1, {}, {}), db_(db) {}

  RunRow run;
  std::map<std::string, CandidateRow> candidates;
  Counters counters;
  Archive archive;
  Rng rng;

  /// A new run of `row` (its state and random state as they are now) added.
  void add(RunRow row);
  /// Run `id`'s row read back, to resume it: a UserError where there is no such run
  /// or it has finished.
  void open(int64_t id);
  /// The opened run's candidates and islands (`islands` of them) read back, its
  /// counters and random state as it stored them.
  void restore(int islands);
  /// The session's clock starts: elapsed() counts from the run's earlier seconds.
  void start_clock();
  /// Seconds the run has spent, over every session.
  double elapsed() const;
  /// One transaction: the candidates changed, the archive's changes, the run's state.
  void commit(const std::vector<const CandidateRow *> &changed);

  /// The naive kernel's id ("" before it is proposed).
  std::string naive_id() const;
  /// The last candidate evaluated (there is one).
  const CandidateRow &last_evaluated() const;
  /// The ids of the n fastest correct schedules (neither the naive kernel nor a body).
  std::vector<std::string> top_candidates(int n) const;
  /// The candidates not yet evaluated, in the order they were proposed.
  std::vector<std::string> pending() const;
  /// The failed candidates' ids, the latest `keep`, in the order they were evaluated.
  std::vector<std::string> recent_failures(size_t keep) const;

 private:
  RunDatabase &db_;
  double session_start_ = 0, seconds_before_ = 0;
};

}  // namespace ks
