// Comparison of device results with the reference, element by element: an element
// passes where |got - expected| <= allowance * bound, its bound the rounding-error
// bound of error_bound.h computed beside the reference (no bound: exact, as for
// integers), the allowance 1 against the float64 interpreter and 2 against a
// reference that rounds its own elementwise operations (the naive program with f64
// sums, on the device); where the user asked for TF32, also where it is within
// KernelBench's tolerance (Tolerance). NaN (or a never-written, poisoned element) never passes; an
// infinity passes where the reference has the same one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "evolve/evaluation/inputs.h"
#include "ir/interpreter.h"
#include "ir/matrix_tile.h"
#include "runtime/device.h"

namespace ks {

/// Against the float64 interpreter (exact): the bound itself.
constexpr double kExactAllowance = 1;
/// Against a reference that rounds as an honest program does (its elementwise
/// operations; without fp64 its sums too): its own error is within the bound as well.
constexpr double kReferenceAllowance = 2;

/// Where the user asked for TF32 (precision = "tf32"): KernelBench's tolerance,
/// torch.allclose's atol = rtol = 1e-2, which passes an element as its bound does.
constexpr double kTf32Closeness = 1e-2;

/// What an element of a float tensor may be off by: allowance times its rounding
/// bound, or, where closeness is not 0, closeness * (1 + |expected|) (torch.allclose
/// with atol = rtol = closeness) if that is more. An exact tensor's: nothing.
struct Tolerance {
  Tolerance(double allowance, double closeness = 0) : allowance(allowance), closeness(closeness) {}
  double allowance;
  double closeness;
  double allowed(double expected, double bound) const;
};

/// The closeness a precision allows: kTf32Closeness for TF32, 0 for fp32.
double closeness_for(Precision precision);

struct Mismatch {
  bool passed = true;
  // The largest |got - expected| / allowed, allowed = allowance * bound (a fraction:
  // at most 1 passes; infinite where NaN, never written, or off where exact).
  double worst_fraction = 0;
  std::vector<int64_t> index;  // of the worst element
  double expected = 0, got = 0;
  double allowed = 0;        // there
  int64_t bad_elements = 0;  // over what is allowed, NaN, or never written
};

/// Compares got with expected, each element within the tolerance of its bound
/// (bound: nullptr where the tensor is exact).
Mismatch compare(const HostBuffer &got, const TensorData &expected, const TensorData *bound, Tolerance tolerance);
/// The same against a reference read back from the device.
Mismatch compare(const HostBuffer &got, const HostBuffer &expected, const HostBuffer *bound, Tolerance tolerance);

/// A buffer's fingerprint: the sum of its 32-bit words, each times (2i + 1), modulo
/// 2^64 (any one word changed changes it). The host's and the device's agree.
uint64_t fingerprint(const HostBuffer &buffer);

/// Comparisons where the buffers live. On an OpenCL device a float32 tensor is
/// compared by a kernel that computes compare()'s fractions (in double where the
/// device has fp64) and gives back each work-group's worst element and count, so that an
/// evaluation at the timed sizes reads back kilobytes instead of the outputs
/// (gelu's 6.4 GB at KernelBench's sizes); a buffer's fingerprint likewise. Elsewhere
/// (Vulkan, integer tensors) the buffers are read back and compared on the host, by
/// the functions above: the same answers.
class DeviceComparer {
 public:
  explicit DeviceComparer(runtime::Device &device) : device_(device) {}
  DeviceComparer(const DeviceComparer &) = delete;
  DeviceComparer &operator=(const DeviceComparer &) = delete;

  /// compare() of got with expected, both buffers holding tensor t, and bound (f32,
  /// t's shape; none: exact).
  Mismatch compare(const TensorDecl &t, runtime::BufferId got, runtime::BufferId expected,
                   std::optional<runtime::BufferId> bound, Tolerance tolerance);
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
  // element: the compared tensors' type (f32, or f16/bf16 read as f32 on the device).
  size_t launch(const char *kernel, std::vector<runtime::LaunchArg> args, uint64_t n, DType element,
                Tolerance tolerance, bool bounded);
};

/// Row-major multi-index of a flat position.
std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape);

}  // namespace ks
