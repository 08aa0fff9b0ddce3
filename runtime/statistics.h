// Summary statistics of repeated timings: median, spread, trimmed outliers.
#pragma once

#include <vector>

namespace ks::runtime {

struct Summary {
  double median = 0, min = 0, max = 0;
  double cv = 0;  // standard deviation / mean of the kept samples
  int kept = 0;
};

/// Summarises samples. With 5 or more, samples further than 3 scaled median
/// absolute deviations from the median are trimmed before the spread is computed.
Summary summarize(std::vector<double> samples);

}  // namespace ks::runtime
