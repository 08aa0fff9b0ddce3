// Comparison of device results with the reference. The tolerances live here and
// nowhere else.
//
// An element's error is |got - expected| / max(|expected|, rms(expected)): relative
// where values are large, scaled by the tensor's typical magnitude where they are
// near zero (so cancellation in a sum does not fail a correct kernel). Integers must
// match exactly. NaN (or a never-written, poisoned element) never passes.
#pragma once

#include <string>
#include <vector>

#include "evolve/inputs.h"
#include "ir/interpreter.h"

namespace ks {

/// The largest error an element of this type may have.
double tolerance_for(DType type);

struct Mismatch {
  bool passed = true;
  double worst_error = 0;
  std::vector<int64_t> index;  // of the worst element
  double expected = 0, got = 0;
  int64_t bad_elements = 0;  // over tolerance, NaN, or never written
};

Mismatch compare(const HostBuffer &got, const TensorData &expected);

/// Row-major multi-index of a flat position.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape);

}  // namespace ks
