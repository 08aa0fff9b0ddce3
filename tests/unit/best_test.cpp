// When the run believes a new best (evolve/search/best.h): at once when clearly
// faster, after a timing side by side when close, and the naive kernel when none of
// the best few beats it timed beside them.
#include "evolve/search/best.h"

#include <unistd.h>

#include <filesystem>

#include "evolve/search/search.h"
#include "test_util.h"

namespace ks {
namespace {

struct Notes : ProgressSink {
  std::vector<std::string> lines;
  void update(const Progress &) override {}
  void note(const std::string &line) override { lines.push_back(line); }
};

struct BestFixture {
  std::string path =
      (std::filesystem::temp_directory_path() / ("ks_best_" + std::to_string(::getpid()) + ".db")).string();
  RunDatabase db{(std::filesystem::remove(path), path)};
  RunLedger ledger{db};
  Notes notes;
  double within = 0.05;
  BestTracker best{ledger, notes, within};
  BestFixture() {
    ledger.run.baseline_ms = 10;
    add("naive", 1, "naive");
    ledger.counters.best = "naive";
  }
  ~BestFixture() { std::filesystem::remove(path); }
  CandidateRow &add(const std::string &id, double speedup, const std::string &proposer = "mutator") {
    CandidateRow &c = ledger.candidates[id];
    c.id = id, c.speedup = speedup, c.proposer = proposer, c.status = CandidateStatus::Correct;
    return c;
  }
};

TEST(BestTracker, AClearlyFasterCandidateIsBelievedAtOnceACloseOneIsTimedAgain) {
  BestFixture f;
  f.best.consider(f.add("a", 2.0));
  EXPECT_EQ(f.ledger.counters.best, "a") << "faster than the naive kernel: no retime against it";
  ASSERT_EQ(f.notes.lines.size(), 1u);
  EXPECT_EQ(f.notes.lines[0].rfind("best 2x after", 0), 0u) << f.notes.lines[0];
  f.best.consider(f.add("b", 2.05));
  EXPECT_EQ(f.ledger.counters.best, "a") << "within 5%: not yet";
  EXPECT_EQ(f.ledger.counters.pending_retimes, (std::vector<std::string>{"a", "b"}));
  f.best.consider(f.add("c", 1.5));
  EXPECT_EQ(f.ledger.counters.best, "a") << "slower";
  f.best.consider(f.add("d", 3.0));
  EXPECT_EQ(f.ledger.counters.best, "d");
}

TEST(BestTracker, TimedSideBySideTheFastestOfThemIsTheBest) {
  BestFixture f;
  f.add("a", 2.0), f.add("b", 2.05);
  f.ledger.counters.best = "a";
  // a at 4 ms, b at 5 ms against the baseline of 10 ms: a stays.
  std::vector<const CandidateRow *> changed = f.best.retimed({"a", "b"}, false, std::vector<Time>{{4, 0}, {5, 0}}, "");
  EXPECT_EQ(changed.size(), 2u);
  EXPECT_DOUBLE_EQ(f.ledger.candidates["b"].retimed_speedup, 2.0);
  EXPECT_EQ(f.ledger.counters.best, "a");
  // The final timing, the naive kernel first: 3 ms, faster than both.
  f.best.retimed({"a", "b"}, true, std::vector<Time>{{3, 0}, {4, 0}, {5, 0}}, "");
  EXPECT_EQ(f.ledger.counters.best, "naive");
  EXPECT_EQ(f.notes.lines.back(), "best: the naive kernel (none of the best 2 beat it when timed again beside it)");
  // A failed timing leaves the times as they were.
  const double before = f.ledger.candidates["a"].retimed_speedup;
  EXPECT_TRUE(f.best.retimed({"a", "b"}, false, std::nullopt, "no device\nmore").empty());
  EXPECT_EQ(f.ledger.candidates["a"].retimed_speedup, before);
  EXPECT_EQ(f.notes.lines.back(), "note: timing again failed (no device); the first times stand");
}

}  // namespace
}  // namespace ks
