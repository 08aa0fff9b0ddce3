// The reference interpreter: runs Graph IR in float64 on the CPU. It is the living
// definition of what a spec means and the oracle of every correctness check.
// Each stage body is compiled once to a small stack bytecode (reads whose indices
// are affine in the loop variables become one multiply-add per variable), so a
// 256x256x256 matmul runs in a fraction of a second.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ks {

/// Values of one tensor, in row-major order, held as doubles whatever the dtype.
struct TensorData {
  DType type = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

using TensorMap = std::map<std::string, TensorData>;

/// Runs every stage of graph on the given inputs (one entry per input tensor, with
/// its exact shape) and returns every tensor: inputs, temporaries and outputs.
/// Throws UserError when an input is missing or has the wrong shape.
TensorMap interpret(const Graph &graph, const TensorMap &inputs);

}  // namespace ks
