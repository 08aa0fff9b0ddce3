// The cost model judged offline on measured runs: each run is held out in turn, the
// model trained on the others (the prior a new run would carry) and, optionally, on
// the held-out run's own first measurements, then asked about the rest of that run.
// Printed per run: Spearman's rank correlation between predicted and measured, and
// what the model's choice from a pool of the run's candidates measured (a random
// pool of POOL, 2000 times), beside a random choice and the pool's best: the
// question the search asks it before every evaluation.
//   ks_cost_study [--objective rank:pairwise|reg:squarederror] [--own N] [--own-weight W] [--pool P]
//                 [--absolute] [--no-prior] [--by-problem] PRIOR.jsonl...
// (--no-prior: the held-out run's own first rows alone, as a run without a prior;
// --by-problem: the prior leaves out every run of the held-out run's kernel, not only
// that run, as bench/search/run_arm.sh's KS_PRIOR_DIR does online.)
// Each file holds runs (ksmith export DB --cost-rows); bench/results.md has the tables.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "evolve/search/cost_features.h"
#include "evolve/search/cost_model.h"
#include "evolve/search/cost_prior.h"
#include "ir/diagnostic.h"

using namespace ks;

int main(int argc, char **argv) {
  std::string objective = "rank:pairwise";
  size_t own = 0, pool = 24;
  float own_weight = 1;
  bool absolute = false, use_prior = true, by_problem = false;
  std::vector<CostRun> runs;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--objective" && i + 1 < argc) {
        objective = argv[++i];
      } else if (a == "--own" && i + 1 < argc) {
        own = std::stoul(argv[++i]);
      } else if (a == "--own-weight" && i + 1 < argc) {
        own_weight = std::stof(argv[++i]);
      } else if (a == "--pool" && i + 1 < argc) {
        pool = std::stoul(argv[++i]);
      } else if (a == "--absolute") {
        absolute = true;
      } else if (a == "--no-prior") {
        use_prior = false;
      } else if (a == "--by-problem") {
        by_problem = true;
      } else {
        CostPrior p = read_cost_prior(a, "");
        for (CostRun &r : p.runs) runs.push_back(std::move(r));
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  // The model's inputs: the features, and (unless --absolute) their difference from
  // the naive program's, which carries across problems of other sizes.
  auto inputs = [&](const CostRun &run, size_t i) {
    return absolute ? run.features[i] : model_inputs(run.features[i], run.naive);
  };
  std::printf("objective %s, own rows %zu weighing %g, pool %zu, %s features, %s; %zu runs\n\n", objective.c_str(), own,
              own_weight, pool, absolute ? "absolute" : "absolute and relative",
              !use_prior   ? "no prior"
              : by_problem ? "the other problems' runs as prior"
                           : "the other runs as prior",
              runs.size());
  std::printf("| run | rows | Spearman | model's pick | random pick | pool's best |\n|---|---|---|---|---|---|\n");
  double sum_rho = 0, sum_pick = 0, sum_random = 0, sum_best = 0;
  int counted = 0;
  for (size_t held = 0; held < runs.size(); ++held) {
    const CostRun &h = runs[held];
    if (h.features.size() <= own + 2) continue;
    std::vector<std::vector<float>> x;
    std::vector<float> y;
    std::vector<unsigned> groups;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (r == held || !use_prior || (by_problem && runs[r].kernel == h.kernel)) continue;
      for (size_t i = 0; i < runs[r].features.size(); ++i)
        x.push_back(inputs(runs[r], i)), y.push_back(runs[r].labels[i]);
      groups.push_back(static_cast<unsigned>(runs[r].features.size()));
    }
    // The run's own first rows, labelled against the best among them (as online).
    if (own > 0) {
      float best = 0;
      for (size_t i = 0; i < own; ++i) best = std::max(best, h.labels[i]);
      for (size_t i = 0; i < own; ++i) x.push_back(inputs(h, i)), y.push_back(best > 0 ? h.labels[i] / best : 0);
      groups.push_back(static_cast<unsigned>(own));
    }
    std::vector<float> weights(groups.size(), 1.0f);
    if (own > 0) weights.back() = own_weight;
    std::vector<std::vector<float>> test;
    std::vector<double> measured;
    for (size_t i = own; i < h.features.size(); ++i) test.push_back(inputs(h, i)), measured.push_back(h.labels[i]);
    std::vector<float> predicted;
    if (!x.empty()) {
      CostModel model(objective);
      model.train(x, y, groups, weights);
      predicted = model.predict(test);
    } else {
      predicted.assign(test.size(), 0);
    }
    std::vector<double> p(predicted.begin(), predicted.end());
    const double rho = rank_correlation(p, measured);
    std::mt19937_64 rng(held);
    double pick = 0, random = 0, best = 0;
    const int trials = 2000;
    std::vector<size_t> order(test.size());
    std::iota(order.begin(), order.end(), 0);
    for (int t = 0; t < trials; ++t) {
      std::shuffle(order.begin(), order.end(), rng);
      const size_t n = std::min(pool, order.size());
      size_t chosen = order[0];
      double top = 0;
      for (size_t k = 0; k < n; ++k) {
        if (p[order[k]] > p[chosen]) chosen = order[k];
        top = std::max(top, measured[order[k]]);
      }
      pick += measured[chosen];
      random += measured[order[0]];
      best += top;
    }
    pick /= trials, random /= trials, best /= trials;
    std::printf("| %s %s | %zu | %.2f | %.3f | %.3f | %.3f |\n", h.kernel.c_str(), h.sizes.c_str(), test.size(), rho,
                pick, random, best);
    sum_rho += rho, sum_pick += pick, sum_random += random, sum_best += best;
    ++counted;
  }
  if (counted)
    std::printf("| mean | | %.2f | %.3f | %.3f | %.3f |\n", sum_rho / counted, sum_pick / counted, sum_random / counted,
                sum_best / counted);
  return 0;
}
