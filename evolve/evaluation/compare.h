// Comparison of device results with the reference. The tolerances live here and
// nowhere else.
//
// An element's error is |got - expected| / max(|expected|, rms(expected)): relative
// where values are large, scaled by the tensor's typical magnitude where they are
// near zero (so cancellation in a sum does not fail a correct kernel). Integers must
// match exactly. NaN (or a never-written, poisoned element) never passes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "evolve/evaluation/inputs.h"
#include "ir/interpreter.h"
#include "runtime/device.h"

namespace ks {

/// The largest error an element of this type may have.
double tolerance_for(DType type);

/// The f32 tolerance at the timed sizes against the f64 reference: no worse than four
/// times the naive float32 kernel's own error there (naive_error, on the same inputs),
/// at least tolerance_for(F32) and at most 5e-2. A float32 chain can be ill-conditioned
/// at the timed sizes: a softmax of a matmul whose values run to thousands turns the
/// float32 rounding of each sum into errors of 1e-2 in its outputs, for every float32
/// kernel (the naive one included), so a fixed 1e-4 would reject the honest ones;
/// where the naive kernel is accurate (a sum of a million values of mixed signs: 1e-5)
/// the tolerance stays 1e-4 and a value dropped from the sum still fails.
double naive_relative_tolerance(double naive_error);

/// The f32 tolerance at the timed sizes where the reference is the naive float32
/// kernel itself (a device without fp64, so no f64 sums): float32 summation of n
/// terms in order may be off by about n * 2^-24 relative to the sum of the terms'
/// magnitudes (Higham's bound), so the tolerance grows with the longest reduction of
/// the graph: max(1e-4, n * 2^-24).
double float_reference_tolerance(const Graph &graph);

struct Mismatch {
  bool passed = true;
  double worst_error = 0;
  std::vector<int64_t> index;  // of the worst element
  double expected = 0, got = 0;
  int64_t bad_elements = 0;  // over tolerance, NaN, or never written
};

/// Compares with tolerance, or tolerance_for the buffer's type when none is given.
Mismatch compare(const HostBuffer &got, const TensorData &expected, std::optional<double> tolerance = std::nullopt);
/// The same against a reference read back from the device (no copy widened to f64:
/// at the timed sizes that copy was gigabytes).
Mismatch compare(const HostBuffer &got, const HostBuffer &expected, std::optional<double> tolerance = std::nullopt);

/// The root mean square of a reference, the scale compare() gives elements near zero.
double rms_of(const HostBuffer &expected);

/// A buffer's fingerprint: the sum of its 32-bit words, each times (2i + 1), modulo
/// 2^64 (any one word changed changes it). The host's and the device's agree.
uint64_t fingerprint(const HostBuffer &buffer);

/// Comparisons where the buffers live. On an OpenCL device a float32 tensor is
/// compared by a kernel that computes compare()'s errors (in double where the device
/// has fp64) and gives back each work-group's worst element and count, so that an
/// evaluation at the timed sizes reads back kilobytes instead of the outputs
/// (gelu's 6.4 GB at KernelBench's sizes); a buffer's fingerprint likewise. Elsewhere
/// (Vulkan, integer tensors) the buffers are read back and compared on the host, by
/// the functions above: the same answers.
class DeviceComparer {
 public:
  explicit DeviceComparer(runtime::Device &device) : device_(device) {}
  DeviceComparer(const DeviceComparer &) = delete;
  DeviceComparer &operator=(const DeviceComparer &) = delete;

  /// rms_of the tensor t in buffer expected.
  double rms(const TensorDecl &t, runtime::BufferId expected);
  /// compare() of got with expected, both buffers holding tensor t, with the
  /// reference's rms given (rms() of expected).
  Mismatch compare(const TensorDecl &t, runtime::BufferId got, runtime::BufferId expected, double rms,
                   double tolerance);
  /// fingerprint() of the buffer holding tensor t.
  uint64_t fingerprint(const TensorDecl &t, runtime::BufferId buffer);

 private:
  runtime::Device &device_;
  // The kernels' parameters and their groups' results, allocated at the first launch.
  std::optional<runtime::ScopedBuffer> limits_, counts_, reals_;
  bool opencl() const { return device_.info().api == "opencl"; }
  // The first count values of reals_, as doubles (floats without fp64).
  std::vector<double> read_reals(size_t count);
  // Launches kernel over n elements in its groups; returns how many groups ran.
  size_t launch(const char *kernel, std::vector<runtime::LaunchArg> args, uint64_t n, double rms, double tolerance);
};

/// Row-major multi-index of a flat position.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape);

}  // namespace ks
