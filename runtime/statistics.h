// Summary statistics of repeated timings (median, spread, trimmed outliers) and
// the batch protocol every backend times with.
#pragma once

#include <functional>
#include <vector>

#include "runtime/device.h"

namespace ks::runtime {

struct Summary {
  double median = 0, min = 0, max = 0;
  double cv = 0;  // standard deviation / mean of the kept samples
  int kept = 0;
};

/// Summarises samples. With 5 or more, samples further than 3 scaled median
/// absolute deviations from the median are trimmed before the spread is computed.
Summary summarize(std::vector<double> samples);

/// The timing protocol: warm-up runs, one timed run that sizes the batches (N runs
/// lasting at least options.min_batch_ms), then R batches. batch(n) runs the plan n
/// times back to back and returns the milliseconds the device took.
Timing time_in_batches(const TimingOptions &options, const std::function<double(int)> &batch);

}  // namespace ks::runtime
