// Host-side tensors for evaluation: random inputs, poisoned outputs, and the
// conversion to the interpreter's float64 values.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "runtime/device.h"

namespace ks {

/// A tensor's bytes as the device holds them (f32, i32 or i64, row-major).
struct HostBuffer {
  DType type = DType::F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
  int64_t numel() const { return shape_numel(shape); }
  double at(int64_t i) const;
};

/// Random values for an input: uniform over its declared range; else, for floats,
/// mixed signs over magnitudes from 1/16 to 16 (uniform in [-1, 1] times 2^k, k
/// uniform in -4..4). Deterministic in seed, whatever the number of threads.
HostBuffer random_input(const TensorDecl &tensor, uint64_t seed);

/// Tensor t as a device buffer holds it.
HostBuffer read_tensor(runtime::Device &device, runtime::BufferId id, const TensorDecl &t);

/// random_input's values drawn into a buffer of the device: by a kernel on an OpenCL
/// device with fp64 (a float tensor; at KernelBench's sizes the host's draw and upload
/// took 5 to 13 s, sum_dim's 8.6 GB), else drawn here and written.
void draw_input(runtime::Device &device, runtime::BufferId id, const TensorDecl &tensor, uint64_t seed);

/// What a candidate's state (its outputs and intermediates) holds before a trial.
enum class Poison {
  // NaN for floats, the most negative integer for integers: an element still
  // poisoned after a run was never written.
  Unwritten,
  // Large finite values of alternating sign (±3e38; the largest and the smallest
  // integer but one): a kernel that reads its state before writing it, or takes a
  // finite value there for an answer already computed, goes wrong with them.
  Large,
};

/// A buffer every element of which holds the poison of its kind.
HostBuffer poisoned(const TensorDecl &tensor, Poison kind = Poison::Unwritten);

/// The 32-bit pattern a device fill repeats to poison a buffer of this type as
/// Poison::Unwritten does (for i64, a large negative value rather than the most
/// negative one).
uint32_t poison_pattern(DType type);

/// Whether value (as HostBuffer::at reads it) is the poison of its type.
bool is_poison(DType type, double value);

TensorData to_tensor_data(const HostBuffer &buffer);

}  // namespace ks
