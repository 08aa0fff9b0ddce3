// A proposal's pool (evolve/search/pool.h) alone: no device, no database, no search.
// A scripted proposer hands out schedules of a small spec; the model's scores are
// scripted too, so each test says which member must be chosen and why.
#include "evolve/search/pool.h"

#include <deque>
#include <map>
#include <set>

#include "test_util.h"

namespace ks {
namespace {

const char *kSpec = "kernel k(x: f32[N]) -> y: f32[N] where N = 64 { y[i] = x[i] * 2.0 }";

// Hands out its proposals in order, each parent's own (none once they run out), and
// keeps what it was told.
class Scripted : public Proposer {
 public:
  explicit Scripted(std::vector<std::string> schedules) { add("parent", schedules); }
  void add(const std::string &parent, const std::vector<std::string> &schedules) {
    for (const std::string &s : schedules) script_[parent].push_back(s);
  }
  std::string name() const override { return "scripted"; }
  std::optional<Proposal> propose(const ProposalContext &context, Rng &) override {
    parents.push_back(context.parent.id);
    std::deque<std::string> &mine = script_[context.parent.id];
    if (mine.empty()) return std::nullopt;
    Proposal p;
    p.schedule = parse_schedule(test::source(mine.front(), "p.sched"));
    p.note = mine.front();
    mine.pop_front();
    return p;
  }
  void judged(const Proposal &proposal, const std::string &verdict) override {
    verdicts.push_back(proposal.note + ": " + verdict.substr(0, verdict.find(':')));
  }
  std::vector<std::string> parents;   // the parent of each call
  std::vector<std::string> verdicts;  // "NOTE: refused", "NOTE: duplicate"

 private:
  std::map<std::string, std::deque<std::string>> script_;
};

struct PoolFixture {
  Graph graph = test::graph_of(kSpec);
  runtime::DeviceInfo device;
  std::set<std::string> known;
  std::deque<float> scores;  // handed out in order, one a member
  int score_calls = 0;
  PoolWorld world() {
    PoolWorld w;
    w.replay = [this](const Schedule &s) { return replay(graph, s); };
    w.known = [this](const std::string &id) { return known.count(id) > 0; };
    w.duplicate_of = [](const std::string &id) { return "duplicate: of " + id; };
    w.score = [this](const std::vector<std::vector<float>> &rows) {
      ++score_calls;
      std::vector<float> out;
      for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_FALSE(rows[i].empty()) << "a ranked member has its features";
        out.push_back(scores.empty() ? 0.0f : scores.front());
        if (!scores.empty()) scores.pop_front();
      }
      return out;
    };
    return w;
  }
  ProposalContext context() {
    CandidateView parent;
    parent.id = "parent";
    return ProposalContext{graph, device, parent, {}, {}, nullptr, true, {}};
  }
  std::string id_of(const std::string &schedule) {
    return candidate_identity(*replay(graph, parse_schedule(test::source(schedule, "s.sched"))).program);
  }
};

PoolSettings ranked(int size, int steps = 1, double explore = 0) { return PoolSettings{size, true, steps, explore}; }

// Unranked, the proposer is asked once: a duplicate of a known candidate (which it
// is told of) leaves nothing, a new program goes.
TEST(Pool, UnrankedOneProposalDecides) {
  PoolFixture f;
  f.known.insert(f.id_of("split y.i 2 -> a b"));
  Scripted proposer({"split y.i 2 -> a b", "split y.i 4 -> a b", "split y.i 8 -> a b"});
  Rng rng(1);
  PoolChoice c = choose_from_pool(proposer, f.context(), std::nullopt, rng, PoolSettings{}, f.world());
  EXPECT_FALSE(c.chosen);
  EXPECT_FALSE(c.refused);
  EXPECT_EQ(c.duplicates, 1);
  EXPECT_EQ(proposer.verdicts, std::vector<std::string>{"split y.i 2 -> a b: duplicate"});
  PoolChoice d = choose_from_pool(proposer, f.context(), std::nullopt, rng, PoolSettings{}, f.world());
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->proposal.note, "split y.i 4 -> a b");
  EXPECT_EQ(d.chosen->id, f.id_of("split y.i 4 -> a b"));
  EXPECT_TRUE(d.chosen->features.empty()) << "a pool of one needs no features";
  EXPECT_FALSE(d.predicted);
  EXPECT_EQ(proposer.parents.size(), 2u);
  EXPECT_EQ(f.score_calls, 0);
}

// A pool of one that the IR refuses ends there, with the reason, for the search to
// record; in a larger pool a refusal only counts.
TEST(Pool, ARefusalEndsAPoolOfOneAndCountsInALargerOne) {
  PoolFixture f;
  Scripted one({"split y.nowhere 2 -> a b", "split y.i 4 -> a b"});
  Rng rng(1);
  PoolChoice c = choose_from_pool(one, f.context(), std::nullopt, rng, PoolSettings{}, f.world());
  EXPECT_FALSE(c.chosen);
  ASSERT_TRUE(c.refused);
  EXPECT_EQ(c.refused->note, "split y.nowhere 2 -> a b");
  EXPECT_NE(c.refusal.find("nowhere"), std::string::npos) << c.refusal;
  EXPECT_EQ(one.verdicts, std::vector<std::string>{"split y.nowhere 2 -> a b: refused"});

  Scripted pool({"split y.nowhere 2 -> a b", "split y.i 4 -> a b"});
  f.scores = {0.5f};
  PoolChoice d = choose_from_pool(pool, f.context(), std::nullopt, rng, ranked(2), f.world());
  EXPECT_FALSE(d.refused);
  EXPECT_EQ(d.refused_count, 1);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->proposal.note, "split y.i 4 -> a b");
}

// Ranked, the highest score wins among the new programs; a program twice in the pool
// counts once (a duplicate, told nothing: no candidate has it).
TEST(Pool, RankedTheHighestScoreAmongNewProgramsWins) {
  PoolFixture f;
  Scripted proposer({"split y.i 2 -> a b", "split y.i 4 -> a b", "split y.i 4 -> a b", "split y.i 8 -> a b"});
  f.scores = {0.1f, 0.9f, 0.3f};  // the three new programs, in order
  Rng rng(1);
  PoolChoice c = choose_from_pool(proposer, f.context(), std::nullopt, rng, ranked(4), f.world());
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.chosen->proposal.note, "split y.i 4 -> a b");
  EXPECT_EQ(c.duplicates, 1);
  EXPECT_TRUE(proposer.verdicts.empty());
  ASSERT_TRUE(c.predicted);
  EXPECT_FLOAT_EQ(*c.predicted, 0.9f);
  EXPECT_EQ(c.how, ", ranked first of 3");
}

// The proposal the caller asked for already comes first; the proposer is asked for
// the rest.
TEST(Pool, TheGivenProposalComesFirst) {
  PoolFixture f;
  Scripted proposer({"split y.i 4 -> a b"});
  Proposal given;
  given.schedule = parse_schedule(test::source("split y.i 8 -> a b", "g.sched"));
  given.note = "given";
  f.scores = {0.7f, 0.2f};
  Rng rng(1);
  PoolChoice c = choose_from_pool(proposer, f.context(), std::optional<Proposal>(given), rng, ranked(2), f.world());
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.chosen->proposal.note, "given");
  EXPECT_EQ(proposer.parents.size(), 1u);
}

// Looking ahead a step, the best-ranked member proposes children of its own (its id
// as their parent, its note before theirs), and one of them may win.
TEST(Pool, LookingAheadTheLeadersProposeChildren) {
  PoolFixture f;
  Scripted proposer({"split y.i 2 -> a b", "split y.i 4 -> a b"});
  proposer.add(f.id_of("split y.i 4 -> a b"), {"split y.i 8 -> a b"});
  proposer.add(f.id_of("split y.i 2 -> a b"), {"split y.i 16 -> a b"});
  f.scores = {0.2f, 0.6f, 0.9f, 0.1f};  // the parent's two children, then the leaders'
  Rng rng(1);
  PoolChoice c = choose_from_pool(proposer, f.context(), std::nullopt, rng, ranked(8, 2), f.world());
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.chosen->proposal.note, "split y.i 4 -> a b, then split y.i 8 -> a b");
  EXPECT_EQ(c.how, ", ranked first of 4 over 2 steps");
  // Eight draws from the parent, then two from each leader, the better-ranked first.
  ASSERT_EQ(proposer.parents.size(), 12u);
  EXPECT_EQ(proposer.parents[8], f.id_of("split y.i 4 -> a b"));
  EXPECT_EQ(proposer.parents[10], f.id_of("split y.i 2 -> a b"));
}

// explore = 1: the choice is drawn from the parent's own children, never a leader's.
TEST(Pool, ExploringDrawsFromTheParentsOwnChildren) {
  PoolFixture f;
  Scripted proposer({"split y.i 2 -> a b", "split y.i 4 -> a b"});
  proposer.add(f.id_of("split y.i 4 -> a b"), {"split y.i 8 -> a b"});
  proposer.add(f.id_of("split y.i 2 -> a b"), {"split y.i 16 -> a b"});
  f.scores = {0.2f, 0.6f, 0.9f, 0.1f};
  Rng rng(1);
  PoolChoice c = choose_from_pool(proposer, f.context(), std::nullopt, rng, ranked(8, 2, 1.0), f.world());
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(c.chosen->proposal.note.find(", then"), std::string::npos) << c.chosen->proposal.note;
  EXPECT_EQ(c.how, ", drawn unranked from 2");
}

}  // namespace
}  // namespace ks
