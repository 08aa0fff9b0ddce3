// Graph rewrites in the search: the sketches start from the rewrites that cut a
// graph's work, the mutator adds and removes rewrite steps, a run with rewrites off
// proposes none, and a short search on PoCL finds the GEMV form of a sum over a linear
// layer (KernelBench level 2, 14) from the naive kernel.
#include "evolve/search/genome.h"
#include "evolve/search/mutator.h"
#include "evolve/search/sketch.h"
#include "passes/schedule.h"
#include "simulated_queue.h"
#include "test_util.h"

namespace ks {
namespace {

Graph example(const std::string &name, frontend::SizeSet sizes = frontend::SizeSet::Default) {
  return frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks"), sizes, {});
}

bool pushes_the_sum(const Schedule &s) {
  for (const Rewrite &r : s.rewrites)
    if (r.kind == RewriteKind::PushSum) return true;
  return false;
}

TEST(SketchRewrites, MostDrawsStartFromTheRewritesThatCutTheWork) {
  const runtime::DeviceInfo device = test::simulated_device();
  const Graph graph = example("gemm_divide_sum");
  Rng rng(7);
  int with = 0, draws = 0;
  for (int i = 0; i < 40; ++i) {
    std::optional<Sketch> s = sample_sketch(graph, device, rng);
    ASSERT_TRUE(s);
    ++draws;
    with += pushes_the_sum(s->schedule);
    EXPECT_TRUE(replay(graph, s->schedule, &device).program) << print_schedule(s->schedule);
    if (pushes_the_sum(s->schedule)) {
      EXPECT_EQ(s->note.rfind("rewrite push_sum total; ", 0), 0u) << s->note;
      EXPECT_NE(print_schedule(s->schedule).find("weight_sum"), std::string::npos)
          << "the primitives schedule the rewritten graph's stages:\n"
          << print_schedule(s->schedule);
    }
  }
  // kRewriteShare (85%) of the draws: 34 of 40 expected.
  EXPECT_GE(with, 25);
  EXPECT_LT(with, draws) << "some draws schedule the graph as written";
  // Given no rewrites, a draw has none; given some, it has those.
  const std::vector<Rewrite> none;
  EXPECT_FALSE(pushes_the_sum(sample_sketch(graph, device, rng, 8, &none)->schedule));
  // A graph no rewrite applies to draws as it did (no draw is spent on rewrites).
  Rng a(3), b(3);
  const Graph layer_norm = example("layer_norm");
  EXPECT_FALSE(rewrites_apply(layer_norm));
  EXPECT_EQ(print_schedule(sample_sketch(layer_norm, device, a)->schedule),
            print_schedule(sample_sketch(layer_norm, device, b, 8, &none)->schedule));
  // softmax, which no rewrite makes cheaper, draws its row's two statistics as one
  // logsumexp in some draws on a GPU (kOnlineSoftmaxShare), never where given no
  // rewrites nor on a CPU.
  const Graph softmax = example("softmax");
  EXPECT_TRUE(cheaper_rewrites(softmax).empty());
  runtime::DeviceInfo gpu = device;
  gpu.gpu = true;
  int lse = 0;
  for (int i = 0; i < 20; ++i) {
    const Schedule s = sample_sketch(softmax, gpu, a)->schedule;
    lse += s.rewrites.size() == 1 && s.rewrites[0].kind == RewriteKind::OnlineSoftmax;
    EXPECT_TRUE(sample_sketch(softmax, gpu, b, 8, &none)->schedule.rewrites.empty());
    EXPECT_TRUE(sample_sketch(softmax, device, b)->schedule.rewrites.empty());
  }
  EXPECT_GE(lse, 4);
  EXPECT_LE(lse, 16);
}

TEST(MutatorRewrites, AddsAndRemovesRewriteSteps) {
  const runtime::DeviceInfo device = test::simulated_device();
  const Graph graph = example("gemm_mean_logsumexp_gelu", frontend::SizeSet::Check);
  std::map<std::string, double> weights;
  for (const auto &[name, weight] : default_mutation_weights()) weights[name] = name == "rewrite" ? 1.0 : 0.0;
  Mutator mutator(weights);
  Rng rng(11);
  int added = 0, removed = 0;
  for (int parent = 0; parent < 2; ++parent) {
    CandidateView view;
    const std::vector<Rewrite> none, all = simplifying_rewrites(graph);
    view.schedule = sample_sketch(graph, device, rng, 8, parent ? &all : &none)->schedule;
    view.speedup = 1;
    ProposalContext context{graph, device, view, {}, {}, nullptr};
    for (int i = 0; i < 20; ++i) {
      std::optional<Proposal> p = mutator.propose(context, rng);
      if (!p) continue;
      added += p->note.rfind("rewrite: added ", 0) == 0;
      removed += p->note.rfind("rewrite: removed ", 0) == 0;
      EXPECT_EQ(p->note.rfind("rewrite: ", 0), 0u) << p->note;
      EXPECT_TRUE(replay(graph, p->schedule).program) << p->note << "\n" << print_schedule(p->schedule);
      EXPECT_NE(print_schedule(p->schedule), print_schedule(view.schedule));
    }
  }
  EXPECT_GT(added, 0);
  EXPECT_GT(removed, 0);
}

TEST(MutatorRewrites, ARunWithRewritesOffProposesNone) {
  const runtime::DeviceInfo device = test::simulated_device();
  const Graph graph = example("gemm_divide_sum", frontend::SizeSet::Check);
  Mutator mutator({});
  RandomProposer random;
  Rng rng(5);
  CandidateView naive;
  naive.speedup = 1;
  ProposalContext context{graph, device, naive, {}, {}, nullptr, /*rewrites=*/false};
  int proposals = 0;
  for (int i = 0; i < 30; ++i) {
    for (Proposer *p : std::initializer_list<Proposer *>{&mutator, &random}) {
      std::optional<Proposal> proposal = p->propose(context, rng);
      if (!proposal) continue;
      ++proposals;
      EXPECT_TRUE(proposal->schedule.rewrites.empty()) << p->name() << ": " << proposal->note;
      // Its children too.
      CandidateView child;
      child.schedule = proposal->schedule;
      child.speedup = 2;
      ProposalContext next{graph, device, child, {}, {}, nullptr, false};
      if (std::optional<Proposal> grandchild = mutator.propose(next, rng))
        EXPECT_TRUE(grandchild->schedule.rewrites.empty()) << grandchild->note;
    }
  }
  EXPECT_GT(proposals, 40);
}

// A short search on PoCL from the naive kernel of KernelBench level 2, 14 at small
// sizes: within 30 evaluations a candidate with the sum pushed through the GEMM (a
// column sum of the weight and a GEMV) is correct and the run's best, far faster
// than the naive kernel (a GEMM of 64 x 256 x 256 against two passes over 256 x 256).
TEST(RewriteSearchOnDevice, FindsTheGemvOfASumOverALinearLayer) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  const test::RunFolder folder("rewrite_search");
  test::DeviceSearch run =
      test::device_search("gemm_divide_sum", "batch_size=64,input_size=256,hidden_size=256", 30, 5, folder.dir);
  ASSERT_EQ(run.outcome.status, "finished") << run.outcome.message;
  int pushed = 0;
  for (const CandidateRow &c : run.correct) pushed += c.schedule.find("rewrite push_sum total") != std::string::npos;
  EXPECT_GT(pushed, 0) << "no correct candidate pushed the sum through the GEMM";
  EXPECT_NE(run.schedule.find("rewrite push_sum total"), std::string::npos) << "the best:\n" << run.schedule;
  EXPECT_GT(run.best, 8) << "the best:\n" << run.schedule;
  std::printf("gemm_divide_sum: best %.1fx over the naive kernel in 30 evaluations\n%s", run.best,
              run.schedule.c_str());
}

// A short search on PoCL from the naive kernel of a GEMM with 64 outputs and K =
// 32,768 (KernelBench level 1, 6 in small): PoCL's two cores are more than the
// outputs' one tile fills, so the sketches split K (`rewrite rfactor c.k F`) in most
// draws, and those candidates are checked correct like any other.
TEST(RewriteSearchOnDevice, DrawsSplitKForALongReduction) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  const test::RunFolder folder("split_search");
  test::DeviceSearch run = test::device_search("matmul_long_k", "M=8,N=8,K=32768", 16, 5, folder.dir);
  ASSERT_EQ(run.outcome.status, "finished") << run.outcome.message;
  int split = 0;
  for (const CandidateRow &c : run.correct) split += c.schedule.find("rewrite rfactor c.k ") != std::string::npos;
  EXPECT_GE(split, 3) << "correct candidates that split K, of " << run.correct.size();
  std::printf("matmul_long_k: best %.1fx over the naive kernel in 16 evaluations, %d correct split K\n%s", run.best,
              split, run.schedule.c_str());
}

}  // namespace
}  // namespace ks
