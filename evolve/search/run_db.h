// The run database of `ksmith evolve` (SQLite, write-ahead log, one writer): runs,
// candidates with their lineage and evaluations (the whole record), the islands'
// members and grids, the resolved configuration, the random state and counters.
// Each finished evaluation is one transaction, so a run killed at any moment
// resumes from the last one whole: nothing recorded is lost or run again. The
// schema's version is PRAGMA user_version.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/archive.h"
#include "evolve/search/model_call.h"

struct sqlite3;
struct sqlite3_stmt;

namespace ks {

/// The schema this build writes; a database of a newer one is refused.
constexpr int kRunDatabaseVersion = 2;  // 2: candidates' kernel bodies

struct RunRow {
  int64_t id = 0;
  std::string spec_path, kernel, spec_text;
  std::string device, target, sizes;  // the device's selector and name; "N=512, D=64"
  std::string config;                 // the resolved TOML
  std::string status;                 // "running", "finished", "stopped", "failed"
  std::string message;                // why it stopped or failed
  double started = 0, updated = 0;    // unix seconds
  double seconds = 0;                 // time spent running, over every resume
  double baseline_ms = 0, baseline_cv = 0;
  std::string rng;    // the search's random state, as text
  std::string state;  // JSON: counters the search keeps across a resume
};

/// What became of a candidate: proposed and not yet evaluated, refused before any
/// device time (the IR or the device's limits), or its evaluation's outcome.
enum class CandidateStatus { Pending, Refused, Correct, Slow, Incorrect, Flagged, Failed, Timeout };

/// Its name in the database, records and reports: "pending", "refused", "correct",
/// "slow" (given up on after one run: too slow to time in full), "incorrect",
/// "flagged", "failed", "timeout".
const char *status_name(CandidateStatus status);
/// The status of that name; none for any other.
std::optional<CandidateStatus> parse_status(const std::string &name);

/// Whether an evaluation ended with the candidate checked but not correct, failed or
/// run out of time: neither pending, refused nor correct.
inline bool failed_status(CandidateStatus s) {
  return s != CandidateStatus::Pending && s != CandidateStatus::Refused && s != CandidateStatus::Correct;
}

/// One candidate: its schedule, lineage and, once evaluated, its record.
struct CandidateRow {
  int64_t run = 0;
  std::string id;        // identity: the hash of its scheduled program, or of its kernel body
  int64_t seq = 0;       // proposal order within the run
  int64_t eval_seq = 0;  // evaluation order (0 until evaluated; refusals have none)
  std::string schedule;  // as printed; "" for a kernel body
  std::string body;      // a kernel body (OpenCL C with its launch plan), or "" for a schedule
  std::string proposer;  // "naive", "start", or a proposer's name ("mutator", "llm-kernel", ...)
  std::string note;      // what the proposer changed
  std::string parent;
  std::string inspirations;  // JSON array of ids
  int island = 0;
  int64_t iteration = 0;  // the island's proposal count when it was proposed
  uint64_t seed = 0;      // the random seed the proposer drew for it
  CandidateStatus status = CandidateStatus::Pending;
  std::string verdict;
  double speedup = 0, median_ms = 0, cv = 0;   // when correct
  double retimed_speedup = 0, retimed_cv = 0;  // when timed again beside others
  std::string record;                          // the evaluation record, JSON
  double seconds = 0;                          // the evaluation's wall time
  double created = 0, finished = 0;
  // The cost model's prediction when it chose the candidate (NaN: it did not): kept
  // to measure the model against what the device then said.
  double predicted = std::nan("");
};

/// A candidate's speedup as last measured: timed again beside others, else as evaluated.
inline double speedup_of(const CandidateRow &c) { return c.retimed_speedup > 0 ? c.retimed_speedup : c.speedup; }

/// Whether the device timed a candidate of that status: in full (correct), or one
/// run before it was given up on (slow: a rough measurement, but one).
inline bool timed_status(CandidateStatus status) {
  return status == CandidateStatus::Correct || status == CandidateStatus::Slow;
}

/// A database error that is not the user's: the message says what failed. A full
/// disk is one (the transaction in hand is rolled back; the database stays whole).
class DatabaseError : public std::runtime_error {
 public:
  explicit DatabaseError(const std::string &message) : std::runtime_error(message) {}
};

/// A model call in the database: the run, and the proposal it was made for.
struct ModelCallRow {
  int64_t run = 0;
  int64_t proposal = 0;  // the search's proposal count when it was made
  ModelCall call;
};

struct ModelCallTotals {
  int64_t calls = 0, proposed = 0, prompt_tokens = 0, completion_tokens = 0;
  double latency_s = 0;
  // What the proposals came to: evaluated (of which correct, and failed to compile:
  // Clang's or the driver's refusal), duplicates of programs already proposed,
  // refused by the IR.
  int64_t evaluated = 0, correct = 0, failed_to_compile = 0, duplicates = 0, refused = 0;
};

class RunDatabase {
 public:
  /// Opens path, creating the schema in a new file. Throws UserError for a file that
  /// is not a kernelsmith run database or is of a newer version.
  explicit RunDatabase(const std::string &path);
  ~RunDatabase();
  RunDatabase(const RunDatabase &) = delete;
  RunDatabase &operator=(const RunDatabase &) = delete;

  const std::string &path() const { return path_; }

  /// Runs f in one transaction: committed when it returns, rolled back when it throws.
  template <typename F>
  void transaction(F &&f) {
    exec("BEGIN IMMEDIATE");
    try {
      f();
      exec("COMMIT");
    } catch (...) {
      exec_noexcept("ROLLBACK");
      throw;
    }
  }

  int64_t add_run(const RunRow &run);
  void update_run(const RunRow &run);
  std::optional<RunRow> run(int64_t id);
  std::vector<RunRow> runs();

  void put_candidate(const CandidateRow &candidate);  // inserts or replaces
  void add_model_call(const ModelCallRow &call);
  ModelCallTotals model_call_totals(int64_t run);
  std::vector<CandidateRow> candidates(int64_t run);
  std::optional<CandidateRow> candidate(int64_t run, const std::string &id);

  /// The archive's changes, as Archive::take_changes gives them.
  void apply(int64_t run, const std::vector<ArchiveChange> &changes);
  /// An island's members in the order they came, with their cells, and its grid.
  void load_island(int64_t run, int island, std::vector<std::pair<Elite, Cell>> *members, std::map<Cell, Elite> *grid);

  /// PRAGMA integrity_check: "ok", or what it found.
  std::string integrity_check();

  /// Caps the file at `pages` pages (PRAGMA max_page_count): a write past it fails
  /// as on a full disk (SQLITE_FULL). The tests fill a disk with it.
  void limit_pages(int64_t pages);

 private:
  sqlite3 *db_ = nullptr;
  std::string path_;
  void exec(const std::string &sql);
  void exec_noexcept(const std::string &sql);
  friend class Statement;
};

}  // namespace ks
