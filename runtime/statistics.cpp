#include "runtime/statistics.h"

#include <algorithm>
#include <cmath>

namespace ks::runtime {

namespace {
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  s.median = median_of(samples);
  std::vector<double> kept = samples;
  if (samples.size() >= 5) {
    std::vector<double> deviations;
    for (double x : samples) deviations.push_back(std::fabs(x - s.median));
    // 1.4826 makes the MAD estimate the standard deviation of normal noise.
    double mad = 1.4826 * median_of(deviations);
    if (mad > 0) {
      kept.clear();
      for (double x : samples)
        if (std::fabs(x - s.median) <= 3 * mad) kept.push_back(x);
    }
  }
  s.kept = static_cast<int>(kept.size());
  s.min = *std::min_element(kept.begin(), kept.end());
  s.max = *std::max_element(kept.begin(), kept.end());
  double mean = 0;
  for (double x : kept) mean += x;
  mean /= static_cast<double>(kept.size());
  double var = 0;
  for (double x : kept) var += (x - mean) * (x - mean);
  var /= static_cast<double>(kept.size() > 1 ? kept.size() - 1 : 1);
  s.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  return s;
}

}  // namespace ks::runtime

namespace ks::runtime {

Timing time_in_batches(const TimingOptions &options, const std::function<double(int)> &batch) {
  // A batch of runs timed one by one holds at most kMaxColdRunsPerBatch runs (Vulkan's
  // query pool is sized for it).
  const int most = options.per_run() ? kMaxColdRunsPerBatch : options.max_runs_per_batch;
  int warmup = std::min(options.warmup_runs, most);
  if (warmup > 0) batch(warmup);
  double once = batch(1);
  int runs = static_cast<int>(std::ceil(options.min_batch_ms / std::max(once, 1e-6)));
  runs = std::clamp(runs, 1, most);
  int batches = options.batches;
  double estimate_seconds = once * runs * batches / 1e3;
  if (estimate_seconds > options.max_total_seconds)
    batches = std::max(3, static_cast<int>(options.max_total_seconds * 1e3 / (once * runs)));
  std::vector<double> per_run;
  for (int b = 0; b < batches; ++b) per_run.push_back(batch(runs) / runs);
  Summary s = summarize(per_run);
  Timing t;
  t.median_ms = s.median;
  t.min_ms = s.min;
  t.max_ms = s.max;
  t.cv = s.cv;
  t.batches = batches;
  t.runs_per_batch = runs;
  t.cold_cache = options.cold_cache;
  return t;
}

}  // namespace ks::runtime
