// The 16-bit conversions of generated code checked against a table on a device: the
// unit tests run it on PoCL and lavapipe (HalfOnDevice), and ks_half_conversions on the
// GPU machine's devices, where NVIDIA's OpenCL converts through PTX cvt (bench/gpu.sh
// runs it in every call; its build has no GoogleTest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "evolve/evaluation/compile.h"
#include "runtime/device.h"

namespace ks {

// An f32 value and its f16 and bf16 bits, rounded to nearest even.
struct HalfRow {
  float value;
  uint16_t f16, bf16;
};
/// Ties to even, subnormals, the largest finite values and past them, infinities,
/// signed zero (NaN is checked apart: its bits are any NaN's).
const std::vector<HalfRow> &half_rows();

/// The code `ksmith run` generates for the device (its code features: PTX cvt on
/// NVIDIA's OpenCL, the portable conversions elsewhere) run on every row, in both
/// formats, one element a statement and vectors of 8: f32 values stored into a 16-bit
/// tensor, the same rounded in registers (`f16(x)` into an f32 tensor), and the rows'
/// 16-bit values read back into f32. One line for each disagreement (value, sign, a NaN
/// kept a NaN); none where all agree.
std::vector<std::string> check_half_conversions(runtime::Device &device, Target target);

}  // namespace ks
