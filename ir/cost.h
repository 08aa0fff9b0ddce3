// What a graph must do at the least: floating-point operations, and the bytes that
// must move through device memory (each input read once, each output written once).
// Achieved GFLOP/s and GB/s are reported against these.
#pragma once

#include "ir/graph.h"

namespace ks {

struct Cost {
  double flops = 0;  // float arithmetic and builtin calls, reductions included
  double bytes = 0;  // inputs read once plus outputs written once
};

Cost graph_cost(const Graph &graph);

}  // namespace ks
