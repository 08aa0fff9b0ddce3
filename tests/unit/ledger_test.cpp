// A run's ledger (evolve/search/ledger.h) alone: what one session commits, the next
// reads back as it was, and the questions asked of the candidates as a whole.
#include "evolve/search/ledger.h"

#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace ks {
namespace {

CandidateRow candidate(int64_t run, const std::string &id, int64_t seq, CandidateStatus status, double speedup,
                       int64_t eval_seq) {
  CandidateRow c;
  c.run = run, c.id = id, c.seq = seq, c.status = status, c.speedup = speedup, c.eval_seq = eval_seq;
  c.proposer = id == "naive" ? "naive" : "mutator";
  c.schedule = id == "naive" ? "" : "split y.i 2 -> a b";
  return c;
}

TEST(RunLedger, WhatASessionCommitsTheNextReadsBack) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ks_ledger_" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(path);
  int64_t id = 0;
  uint64_t next_draw = 0;
  {
    RunDatabase db(path);
    RunLedger ledger(db);
    ledger.archive = Archive(2, {1, 2}, {1, 2});
    ledger.rng.seed(7);
    ledger.counters = Counters::from("", 2);
    RunRow row;
    row.spec_path = "k.ks", row.kernel = "k", row.device = "d", row.target = "opencl", row.config = "{}";
    row.status = "running";
    ledger.add(row);
    id = ledger.run.id;
    ledger.start_clock();
    const std::vector<CandidateRow> rows = {candidate(id, "naive", 0, CandidateStatus::Correct, 1, 1),
                                            candidate(id, "a", 1, CandidateStatus::Correct, 2, 2),
                                            candidate(id, "b", 2, CandidateStatus::Incorrect, 0, 3),
                                            candidate(id, "c", 3, CandidateStatus::Correct, 3, 4),
                                            candidate(id, "d", 4, CandidateStatus::Timeout, 0, 5),
                                            candidate(id, "e", 5, CandidateStatus::Pending, 0, 0),
                                            candidate(id, "f", 6, CandidateStatus::Refused, 0, 0)};
    std::vector<const CandidateRow *> changed;
    for (const CandidateRow &c : rows) changed.push_back(&(ledger.candidates[c.id] = c));
    ledger.archive.add(1, {"c", 3, false}, {0, 1});
    ledger.rng();
    ledger.counters.evaluated = 5, ledger.counters.best = "c", ledger.counters.island_proposals = {3, 4};
    ledger.commit(changed);
    Rng copy = ledger.rng;
    next_draw = copy();
  }
  RunDatabase db(path);
  RunLedger ledger(db);
  ledger.archive = Archive(2, {1, 2}, {1, 2});
  ledger.open(id);
  ledger.restore(2);
  EXPECT_EQ(ledger.candidates.size(), 7u);
  EXPECT_EQ(ledger.counters.evaluated, 5);
  EXPECT_EQ(ledger.counters.best, "c");
  EXPECT_EQ(ledger.counters.island_proposals, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(ledger.rng(), next_draw) << "the random state goes on where it stopped";
  EXPECT_EQ(ledger.archive.members(1).size(), 1u);
  EXPECT_EQ(ledger.naive_id(), "naive");
  EXPECT_EQ(ledger.top_candidates(5), (std::vector<std::string>{"c", "a"})) << "correct schedules, fastest first";
  EXPECT_EQ(ledger.pending(), std::vector<std::string>{"e"});
  EXPECT_EQ(ledger.recent_failures(1), std::vector<std::string>{"d"});
  EXPECT_EQ(ledger.recent_failures(6), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(ledger.last_evaluated().id, "d");
  ledger.candidates["a"].retimed_speedup = 4;
  EXPECT_EQ(ledger.top_candidates(1), std::vector<std::string>{"a"}) << "timed again, the new time counts";
  EXPECT_EQ(test::user_error([&] { ledger.open(id + 1); }),
            "error: the run database '" + path + "' has no run " + std::to_string(id + 1));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ks
