// What the cost model sees of a scheduled program: one fixed-length vector of numbers
// read off the Loop IR at the timed sizes, before any compile. Counts are weighted by
// the trip counts of the loops around them (bound loops included, so a count is over
// the whole launch) and taken as log2(1 + x); the rest are fractions, depths and
// widths. The model (evolve/search/cost_model.h) learns how these map to speed on a device.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace ks {

/// The names of the features, in the vector's order.
const std::vector<std::string> &cost_feature_names();

/// The features of a scheduled program (cost_feature_names().size() values).
std::vector<float> cost_features(const Program &program);

/// What the model reads: the features, then each count's difference from the naive
/// program's of the same spec and sizes ("rel_log_global_loads": log2 of how many
/// times fewer loads). Counts grow with a problem's size; their ratio to the naive
/// kernel's does not, so what the model learns on one problem carries to another.
std::vector<float> model_inputs(const std::vector<float> &features, const std::vector<float> &naive);

}  // namespace ks
