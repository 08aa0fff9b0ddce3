// The cost model: its features on programs worked out by hand, its learning on a
// known ranking, and its place in the search (a ranked search against the same
// search without it, on a landscape it can learn).
#include "evolve/search/cost_model.h"

#include <cmath>
#include <fstream>
#include <random>

#include "evolve/search/artifacts.h"
#include "evolve/search/cost_features.h"
#include "evolve/search/cost_prior.h"
#include "evolve/search/genome.h"
#include "evolve/search/run_db.h"
#include "evolve/search/search.h"
#include "simulated_queue.h"
#include "test_util.h"

namespace ks {
namespace {

double log2p(double x) { return std::log2(1 + x); }

std::map<std::string, double> features_of(const std::string &spec, const std::string &schedule = "") {
  Graph graph = test::graph_of(spec);
  Replayed r = replay(graph, parse_schedule(test::source(schedule, "s.sched")));
  EXPECT_TRUE(r.program) << r.refusal;
  std::vector<float> f = cost_features(*r.program);
  const std::vector<std::string> &names = cost_feature_names();
  EXPECT_EQ(f.size(), names.size());
  std::map<std::string, double> out;
  for (size_t i = 0; i < f.size(); ++i) out[names[i]] = f[i];
  return out;
}

// A transpose, naive: 512 work-items in two groups of 256, one multiply, one read and
// one write each. Neighbouring work-items write neighbouring elements of y (stride 1)
// and read x a row apart (stride 32): half the accesses coalesce.
TEST(CostFeatures, ATransposeByHand) {
  auto f = features_of("kernel t(x: f32[N, D]) -> y: f32[D, N] where N = 16, D = 32 { y[d, n] = x[n, d] * 2.0 }");
  EXPECT_EQ(f["kernels"], 1);
  EXPECT_FLOAT_EQ(f["log_work_items"], log2p(512));
  EXPECT_FLOAT_EQ(f["log_groups"], log2p(2));
  EXPECT_FLOAT_EQ(f["log_group_size_max"], log2p(256));
  EXPECT_FLOAT_EQ(f["log_group_size_min"], log2p(256));
  EXPECT_EQ(f["small_group_share"], 0);
  EXPECT_FLOAT_EQ(f["log_flops"], log2p(512));
  EXPECT_FLOAT_EQ(f["log_global_loads"], log2p(512));
  EXPECT_FLOAT_EQ(f["log_global_stores"], log2p(512));
  EXPECT_EQ(f["log_local_accesses"], 0);
  EXPECT_FLOAT_EQ(f["log_unique_global_bytes"], log2p(2 * 512 * 4));
  EXPECT_FLOAT_EQ(f["log_global_reuse"], log2p(1));
  EXPECT_FLOAT_EQ(f["log_intensity"], log2p(0.5));
  EXPECT_FLOAT_EQ(f["coalesced_share"], 0.5);
  EXPECT_FLOAT_EQ(f["strided_share"], 0.5);
  EXPECT_EQ(f["max_loop_depth"], 0);
  EXPECT_EQ(f["log_item_iterations"], 0);
}

// The same transpose of bf16 tensors: half the bytes, the same reuse (accesses per
// element, whatever an element's size).
TEST(CostFeatures, SixteenBitElementsAreElementsToo) {
  auto f = features_of("kernel t(x: bf16[N, D]) -> y: bf16[D, N] where N = 16, D = 32 { y[d, n] = x[n, d] * 2.0 }");
  EXPECT_FLOAT_EQ(f["log_unique_global_bytes"], log2p(2 * 512 * 2));
  EXPECT_FLOAT_EQ(f["log_global_reuse"], log2p(1));
}

// A matrix-vector product, naive: 64 work-items, each 128 iterations of a multiply
// and an add, reading a row of a (stride 128 between work-items) and all of v (the
// same element: stride 0), accumulating in a private register.
TEST(CostFeatures, AMatrixVectorProductByHand) {
  const char *mv =
      "kernel mv(a: f32[M, K], v: f32[K]) -> y: f32[M] where M = 64, K = 128 { y[m] = sum(k) a[m, k] * v[k] }";
  auto f = features_of(mv);
  EXPECT_FLOAT_EQ(f["log_flops"], log2p(2 * 64 * 128));
  EXPECT_FLOAT_EQ(f["log_flops_per_item"], log2p(2 * 128));
  EXPECT_FLOAT_EQ(f["log_global_loads"], log2p(2 * 64 * 128));
  EXPECT_FLOAT_EQ(f["log_global_stores"], log2p(64));
  EXPECT_FLOAT_EQ(f["log_private_accesses"], log2p(64 + 2 * 64 * 128 + 64));
  EXPECT_FLOAT_EQ(f["log_unique_global_bytes"], log2p((64 * 128 + 128 + 64) * 4));
  const double accesses = 2 * 64 * 128 + 64;
  EXPECT_FLOAT_EQ(f["coalesced_share"], (64 * 128 + 64) / accesses);
  EXPECT_FLOAT_EQ(f["strided_share"], 64 * 128 / accesses);
  EXPECT_EQ(f["max_loop_depth"], 1);
  EXPECT_FLOAT_EQ(f["log_item_iterations"], log2p(128));
  EXPECT_FLOAT_EQ(f["log_group_size_max"], log2p(64));
  EXPECT_EQ(f["small_group_share"], 0);

  // Scheduled: k split by 4 and the inner loop unrolled; a group of 8 work-items.
  auto s = features_of(mv, "split y.k 4 -> ko ki\nunroll y.ki\n");
  EXPECT_FLOAT_EQ(s["log_unrolled_copies"], log2p(4));
  EXPECT_EQ(s["max_loop_depth"], 2);
  EXPECT_FLOAT_EQ(s["log_flops"], f["log_flops"]) << "the same work";
}

// A tiled matmul whose a panel is prefetched: per work-item (16 in a group, a 2x2
// tile), a's panel of 8 x 4 per step of k is 2 loads, into registers: 2 before the
// loop and 2 in each of its 4 steps; b is read where it is used, 4 loads for each of
// the 16 values of k. Without the prefetch a's copies go to local memory.
TEST(CostFeatures, APrefetchedPanelByHand) {
  const char *mm =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 16, N = 16, K = 16 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  const std::string tiled =
      "tile c i j 8 8 -> io jo ii ji\nsplit c.ii 4 -> ri ty\nsplit c.ji 4 -> rj tx\nreorder c ty tx ri rj\n"
      "bind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\nbind c.tx local.x\ncache_write c.tx private\n"
      "split c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n";
  EXPECT_EQ(features_of(mm, tiled)["register_load_share"], 0);
  auto p = features_of(mm, tiled + "prefetch c.a_s\n");
  EXPECT_FLOAT_EQ(p["register_load_share"], 10.0 / (10 + 64));
}

// A tensorized matmul: every multiply-add is in the matrix loop (on the matrix units);
// the naive kernel has none there.
TEST(CostFeatures, TheMatrixUnitsShareOfTheFlops) {
  const char *mm =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 64, N = 64, K = 32 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  std::ifstream in(std::string(KS_SOURCE_DIR) + "/tests/lit/inputs/tensorize.sched");
  const std::string tensorized(std::istreambuf_iterator<char>(in), {});
  ASSERT_NE(tensorized.find("tensorize c.ki"), std::string::npos);
  EXPECT_EQ(features_of(mm)["matrix_flop_share"], 0);
  auto t = features_of(mm, tensorized);
  EXPECT_FLOAT_EQ(t["matrix_flop_share"], 1);
  EXPECT_FLOAT_EQ(t["log_flops"], features_of(mm)["log_flops"]) << "the same work";
}

// Trained on rows whose label is a known function of two of eight features, the
// model ranks rows it has not seen nearly as the function does.
TEST(CostModel, LearnsARankingItHasNotSeen) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(0, 1);
  auto row = [&] {
    std::vector<float> r(8);
    for (float &x : r) x = u(rng);
    return r;
  };
  auto truth = [](const std::vector<float> &r) { return 2 * r[1] - r[5] * r[5]; };
  std::vector<std::vector<float>> train, test;
  std::vector<float> labels;
  for (int i = 0; i < 200; ++i) train.push_back(row()), labels.push_back(truth(train.back()));
  for (int i = 0; i < 60; ++i) test.push_back(row());
  CostModel model;
  EXPECT_FALSE(model.trained());
  model.train(train, labels);
  ASSERT_TRUE(model.trained());
  std::vector<float> predicted = model.predict(test);
  ASSERT_EQ(predicted.size(), test.size());
  std::vector<double> p(predicted.begin(), predicted.end()), t;
  for (const auto &r : test) t.push_back(truth(r));
  EXPECT_GT(rank_correlation(p, t), 0.85);
  // The same rows, the same model: training is deterministic.
  CostModel again;
  again.train(train, labels);
  EXPECT_EQ(again.predict(test), predicted);
}

TEST(CostModel, RefusesWhatItCannotUse) {
  CostModel model;
  EXPECT_THROW(model.predict({{1, 2}}), std::runtime_error);
  EXPECT_THROW(model.train({}, {}), std::runtime_error);
  EXPECT_THROW(model.train({{1, 2}, {3}}, {0, 1}), std::runtime_error);
  EXPECT_THROW(model.train({{1, 2}}, {0, 1}), std::runtime_error);
  EXPECT_THROW(model.train({{1, 2}, {3, 4}}, {0, 1}, {1}), std::runtime_error) << "groups of 1 row for 2";
  EXPECT_THROW(model.train({{1, 2}, {3, 4}}, {0, 1}, {1, 1}, {1}), std::runtime_error) << "one weight, two groups";
}

// Weighted groups: a large group ranks by one feature, a small one the other way.
// Unweighted, the large group's many pairs decide; with the small group weighing more
// than the large one's pairs, its order wins (as a run's own few rows against a prior).
TEST(CostModel, WeighsGroups) {
  std::vector<std::vector<float>> rows;
  std::vector<float> labels;
  for (int i = 0; i < 120; ++i)
    rows.push_back({static_cast<float>(i % 40)}), labels.push_back(static_cast<float>(i % 40));
  for (int i = 0; i < 12; ++i) rows.push_back({static_cast<float>(i * 3)}), labels.push_back(static_cast<float>(-i));
  std::vector<std::vector<float>> test;
  std::vector<double> ascending;
  for (int i = 0; i < 40; ++i) test.push_back({static_cast<float>(i) + 0.5f}), ascending.push_back(i);
  auto rho = [&](const std::vector<float> &weights) {
    CostModel model;
    model.train(rows, labels, {120, 12}, weights);
    std::vector<float> p = model.predict(test);
    return rank_correlation(std::vector<double>(p.begin(), p.end()), ascending);
  };
  EXPECT_GT(rho({}), 0.5) << "unweighted: the large group's order";
  EXPECT_LT(rho({1, 50}), -0.5) << "the small group weighted: its order";
}

// Ranking within groups: two groups whose labels lie on different scales (one problem's
// speedups 10 times another's) but follow the same feature; the model orders rows
// of a third group by it.
TEST(CostModel, RanksWithinGroups) {
  std::vector<std::vector<float>> rows;
  std::vector<float> labels;
  for (int g = 0; g < 2; ++g)
    for (int i = 0; i < 30; ++i) {
      rows.push_back({static_cast<float>(i), static_cast<float>(g * 100 + (i * 7) % 13)});
      labels.push_back((g ? 10.0f : 1.0f) * static_cast<float>(i) / 30);
    }
  CostModel model;
  model.train(rows, labels, {30, 30});
  std::vector<std::vector<float>> test;
  std::vector<double> truth;
  for (int i = 0; i < 30; ++i) test.push_back({static_cast<float>(29 - i) + 0.5f, 50.0f}), truth.push_back(29 - i);
  std::vector<float> p = model.predict(test);
  EXPECT_GT(rank_correlation(std::vector<double>(p.begin(), p.end()), truth), 0.9);
}

TEST(RankCorrelation, CountsOrderWithTies) {
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}), 1);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3}, {5, 5, 5}), 0) << "a constant series";
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2}, {1, 2}), 0) << "too few";
  // Ties share their mean rank: ranks (0.5, 0.5, 2) against (0, 1, 2).
  EXPECT_NEAR(rank_correlation({1, 1, 2}, {1, 2, 3}), 0.8660254, 1e-6);
}

// A simulated search on softmax, its database left at DIR.db.
struct SimulatedRun {
  int64_t run = 0;
  std::vector<CandidateRow> candidates;
};
SimulatedRun simulated_search(const std::string &dir, const std::string &kind, uint64_t seed, int budget,
                              const std::vector<std::string> &prior = {}, int steps = EvolveConfig().cost_steps) {
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".db");
  SearchSetup setup;
  setup.spec_path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  setup.config.budget = budget;
  setup.config.seed = seed;
  setup.config.islands = 2;
  setup.config.final_top = 0;
  setup.config.sizes = "N=64,D=512";
  setup.config.cost_model = kind;
  setup.config.cost_prior = prior;
  setup.config.cost_steps = steps;
  setup.ksmith = "simulated";
  setup.work_dir = dir;
  setup.device = test::simulated_device();
  setup.target = "opencl";
  RunDatabase db(dir + ".db");
  test::SimulatedQueue queue(0, true);
  test::NullProgress progress;
  std::atomic<bool> stop{false};
  SearchOutcome out = run_search(db, std::nullopt, setup, queue, progress, stop);
  EXPECT_EQ(out.status, "finished") << out.message;
  return {out.run, db.candidates(out.run)};
}

// The mean speedup measured after the first 24 evaluations (0 where not correct):
// what a search sends once its model has trained.
double mean_after_warmup(const SimulatedRun &run) {
  double sum = 0;
  int after = 0;
  for (const CandidateRow &c : run.candidates)
    if (c.eval_seq > 24) sum += c.status == CandidateStatus::Correct ? c.speedup : 0, ++after;
  return after ? sum / after : 0;
}

// The same search with and without the model, on a landscape the model can learn:
// with it, the proposals it ranks are measured faster, its predictions agree in order
// with the measurements, and the best found is at least as fast.
TEST(CostModel, RanksTheSearchsProposals) {
  struct Result {
    double best = 0, mean_after_warmup = 0, rho = 0;
    int predicted = 0;
  };
  auto search = [](const std::string &kind, uint64_t seed) {
    const std::string dir = testing::TempDir() + "ks_cost_" + kind + std::to_string(seed);
    SimulatedRun run = simulated_search(dir, kind, seed, 48);
    Result r;
    for (const CandidateRow &c : run.candidates) {
      if (c.status == CandidateStatus::Correct) r.best = std::max(r.best, c.speedup);
      r.predicted += !std::isnan(c.predicted);
    }
    r.mean_after_warmup = mean_after_warmup(run);
    {
      RunDatabase db(dir + ".db");
      nlohmann::json summary = run_summary(db, *db.run(run.run));
      EXPECT_EQ(summary["cost_model"]["kind"], kind);
      if (summary["cost_model"]["rank_correlation"].is_number()) r.rho = summary["cost_model"]["rank_correlation"];
    }
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir + ".db");
    return r;
  };
  // Its predictions are ranked against measurements that include a random one in
  // seven incorrect (0), among proposals it chose as its best: a correlation well
  // below one even for a good model.
  double ranked_mean = 0, plain_mean = 0, ranked_best = 0, plain_best = 0, rho = 0;
  for (uint64_t seed : {1, 2, 3}) {
    Result ranked = search("xgboost", seed), plain = search("none", seed);
    EXPECT_EQ(plain.predicted, 0) << "no model, no predictions";
    EXPECT_GT(ranked.predicted, 20) << "every proposal after the warm-up is ranked";
    EXPECT_GT(ranked.rho, 0) << "seed " << seed;
    rho += ranked.rho / 3;
    ranked_mean += ranked.mean_after_warmup, plain_mean += plain.mean_after_warmup;
    ranked_best += ranked.best, plain_best += plain.best;
    std::printf("seed %d: ranked best %.2f, mean %.2f, rho %.2f; plain best %.2f, mean %.2f\n", static_cast<int>(seed),
                ranked.best, ranked.mean_after_warmup, ranked.rho, plain.best, plain.mean_after_warmup);
  }
  EXPECT_GT(rho, 0.2);
  EXPECT_GT(ranked_mean, 1.2 * plain_mean) << "what the model sends is faster";
  // The best of forty is one extreme draw, and since the naive kernel's children are
  // sketches the unranked search's are strong too: about as good a best, within 5%.
  EXPECT_GE(ranked_best, 0.95 * plain_best) << "the model costs the search its best";
}

// Looking ahead (cost_model.steps): the model ranks the parent's children and then
// children of the best-ranked of them, so that what reaches the device may be two or
// three edits from its parent. With one step only the parent's own children go.
TEST(CostModel, LooksAheadOverGenerations) {
  struct Result {
    int ahead = 0, grandchildren = 0, ranked = 0;
    double mean_after_warmup = 0;
  };
  auto search = [](int steps, uint64_t seed) {
    const std::string dir = testing::TempDir() + "ks_steps_" + std::to_string(steps) + "_" + std::to_string(seed);
    SimulatedRun run = simulated_search(dir, "xgboost", seed, 48, {}, steps);
    Result r;
    for (const CandidateRow &c : run.candidates) {
      r.ranked += !std::isnan(c.predicted);
      r.ahead += c.note.find(" over " + std::to_string(steps) + " steps") != std::string::npos;
      // A grandchild's note starts with its leader's edit: "LEADER'S EDIT, then ITS EDIT (...)".
      r.grandchildren += c.note.find(", then ") != std::string::npos;
    }
    r.mean_after_warmup = mean_after_warmup(run);
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir + ".db");
    return r;
  };
  double mean1 = 0, mean3 = 0;
  int grandchildren = 0;
  // Six seeds: one seed's mean is mostly its luck (per seed, three steps against one
  // ranged from 0.94x to 1.55x); over seeds 1 to 3 alone the ratio moved from above
  // 1.2 to 0.98 when the mutator's toggle drew among one more kind, over 1 to 8 it
  // was 1.26, over 1 to 6 1.20.
  const uint64_t seeds[] = {1, 2, 3, 4, 5, 6};
  for (uint64_t seed : seeds) {
    Result one = search(1, seed), three = search(3, seed);
    EXPECT_GT(one.ranked, 20);
    EXPECT_GT(three.ranked, 20);
    EXPECT_EQ(one.grandchildren, 0) << "one step: the parent's children only";
    EXPECT_GT(three.ahead, 20) << "every ranked choice after the warm-up looks ahead";
    grandchildren += three.grandchildren;
    mean1 += one.mean_after_warmup / std::size(seeds), mean3 += three.mean_after_warmup / std::size(seeds);
    std::printf("seed %d: one step: mean %.2f; three steps: mean %.2f, %d of %d chosen beyond the children\n",
                static_cast<int>(seed), one.mean_after_warmup, three.mean_after_warmup, three.grandchildren,
                three.ranked);
  }
  EXPECT_GT(grandchildren, 10) << "the model chose beyond the parent's children";
  EXPECT_GT(mean3, 1.1 * mean1) << "looking ahead, the model sends faster programs";
}

// A run's measurements exported as a prior and read back: a row per evaluated
// schedule, its features those of its program, its label its speedup over the run's
// best; read again from the schedules where the file's features are not this build's.
TEST(CostPrior, ExportsAndReadsARunsMeasurements) {
  const std::string dir = testing::TempDir() + "ks_prior_export";
  SimulatedRun run = simulated_search(dir, "none", 5, 24);
  RunDatabase db(dir + ".db");
  const std::string text = export_cost_rows(db);
  write_text_file(dir + ".jsonl", text);
  CostPrior prior = read_cost_prior(dir + ".jsonl", cost_device("simulated", "opencl"));
  ASSERT_EQ(prior.runs.size(), 1u);
  const CostRun &r = prior.runs[0];
  EXPECT_EQ(r.kernel, "softmax");
  EXPECT_EQ(r.device, "simulated (opencl)");
  int64_t evaluated = 0;
  double best = 0;
  for (const CandidateRow &c : run.candidates) {
    evaluated += c.eval_seq > 0;
    if (c.status == CandidateStatus::Correct) best = std::max(best, c.speedup);
  }
  EXPECT_EQ(prior.rows, evaluated);
  ASSERT_EQ(r.labels.size(), r.features.size());
  EXPECT_FLOAT_EQ(*std::max_element(r.labels.begin(), r.labels.end()), 1.0f);
  frontend::SizeOverrides sizes;
  frontend::parse_size_assignments("N=64,D=512", &sizes);
  Graph graph = frontend::elaborate(frontend::parse_spec(test::source(db.run(run.run)->spec_text)),
                                    frontend::SizeSet::Default, sizes);
  EXPECT_EQ(r.naive, cost_features(*replay(graph, Schedule{}).program));
  // In evaluation order: the naive kernel first, labelled by its speedup of 1.
  EXPECT_FLOAT_EQ(r.labels[0], static_cast<float>(1.0 / best));
  for (const CandidateRow &c : run.candidates)
    if (c.eval_seq == 2) {
      EXPECT_EQ(r.features[1], cost_features(*replay(graph, parse_schedule(test::source(c.schedule, "s"))).program));
    }

  // Other devices' runs are left out.
  CostPrior other = read_cost_prior(dir + ".jsonl", cost_device("another", "opencl"));
  EXPECT_TRUE(other.runs.empty());
  EXPECT_EQ(other.skipped, 1);

  // Written by a build with other features: read again from the schedules.
  std::string renamed = text;
  renamed.replace(renamed.find("\"kernels\""), 9, "\"launches\"");
  write_text_file(dir + "-old.jsonl", renamed);
  CostPrior again = read_cost_prior(dir + "-old.jsonl", "");
  EXPECT_TRUE(again.refeatured);
  ASSERT_EQ(again.runs.size(), 1u);
  EXPECT_EQ(again.runs[0].features, r.features);
  EXPECT_EQ(again.runs[0].labels, r.labels);
  for (const std::string &f : {dir + ".jsonl", dir + "-old.jsonl", dir + ".db"}) std::filesystem::remove(f);
  std::filesystem::remove_all(dir);
}

TEST(CostPrior, RefusesWhatIsNotOne) {
  const std::string path = testing::TempDir() + "ks_prior_bad.jsonl";
  auto refusal = [&](const std::string &text) {
    write_text_file(path, text);
    try {
      read_cost_prior(path, "");
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(refusal("\n[1, 2]\n"),
            path + ":2: error: not a JSON object (a prior is what `ksmith export DB --cost-rows` writes)");
  EXPECT_EQ(refusal("{\"schedule\": \"\", \"status\": \"correct\", \"speedup\": 1, \"features\": []}\n"),
            path + ":1: error: a candidate before any run (a prior is what `ksmith export DB --cost-rows` writes)");
  EXPECT_NE(refusal("{\"run\": {\"kernel\": \"k\"}}\n").find(path + ":1: error: a run or candidate line lacks a field"),
            std::string::npos);
  EXPECT_EQ(refusal("{\"run\": {\"kernel\": \"k\", \"sizes\": \"\", \"device\": \"d\", \"feature_names\": [\"x\"], "
                    "\"spec_path\": \"k.ks\", \"spec\": \"kernel k(\", \"size_overrides\": \"\"}}\n")
                .rfind(path + ":1: error: its run's spec does not elaborate: k.ks:1:10: error:", 0),
            0u);
  std::filesystem::remove(path);
  EXPECT_THROW(read_cost_prior(path, ""), UserError) << "a missing file";
}

// With a prior from an earlier run of the same problem, the model ranks from the
// first proposal, and what it sends before the warm-up is faster than what the same
// search sends without it (the first sixteen, which without a prior go unranked).
TEST(CostPrior, RanksFromTheFirstProposal) {
  const std::string base = testing::TempDir() + "ks_prior_source";
  simulated_search(base, "none", 11, 48);
  {
    RunDatabase db(base + ".db");
    write_text_file(base + ".jsonl", export_cost_rows(db));
  }
  double with = 0, without = 0;
  for (uint64_t seed : {1, 2, 3}) {
    auto early_mean = [](const SimulatedRun &r, int *predicted) {
      double sum = 0;
      int n = 0;
      for (const CandidateRow &c : r.candidates)
        if (c.eval_seq > 1 && c.eval_seq <= 16) {
          sum += c.status == CandidateStatus::Correct ? c.speedup : 0, ++n;
          *predicted += !std::isnan(c.predicted);
        }
      return n ? sum / n : 0;
    };
    int predicted_with = 0, predicted_without = 0;
    const std::string dir = testing::TempDir() + "ks_prior_run";
    with += early_mean(simulated_search(dir, "xgboost", seed, 16, {base + ".jsonl"}), &predicted_with);
    without += early_mean(simulated_search(dir, "xgboost", seed, 16), &predicted_without);
    EXPECT_GT(predicted_with, 10) << "ranked from the start, but for one in twenty drawn unranked";
    EXPECT_EQ(predicted_without, 0) << "below the warm-up, nothing is ranked";
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir + ".db");
  }
  std::printf("early mean speedup: with the prior %.2f, without %.2f\n", with / 3, without / 3);
  EXPECT_GT(with, 1.2 * without) << "with the prior " << with / 3 << ", without " << without / 3;
  std::filesystem::remove_all(base);
  for (const std::string &f : {base + ".db", base + ".jsonl"}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace ks
