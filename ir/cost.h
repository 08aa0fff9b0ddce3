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

/// The operations of e that cost: float arithmetic, calls, selects of floats and
/// loads, each counted once (index arithmetic and conditions are free, as in
/// graph_cost).
int operation_count(const Expr &e);

/// A stage's points: its output elements times its reduction points.
double stage_points(const Stage &stage);

/// The work the naive kernels of graph do, as graph rewrites compare it: for each
/// stage, its points (output elements times reduction points) times one more than
/// its body's operations. A rough estimate, but one that a GEMM turned into a GEMV
/// or a pool pushed through a convolution moves by the factors that matter.
double graph_work(const Graph &graph);

}  // namespace ks
