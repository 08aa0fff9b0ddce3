// Scalar types of both IRs. Tensors hold f32, f16, bf16, i32 or i64; bool exists only
// as the type of comparisons and conditions; f64 only in the Loop IR of the reference
// at the timed sizes, whose sum and product accumulators are f64 (passes/lower.h).
// f16 and bf16 are storage types: a tensor's elements in 16 bits, a load of one an
// f32 value (exact), a store into one rounded to nearest even. No expression, constant
// or allocation has them; arithmetic on them is f32, as in PyTorch's fused kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ks {

enum class DType : uint8_t { Bool, I32, I64, F32, F64, F16, BF16 };

const char *dtype_name(DType type);                         // "f32"
std::optional<DType> parse_dtype(const std::string &name);  // "f32" -> F32
/// Whether expressions of this type are floats (f32, f64); a 16-bit tensor's values
/// are f32 (value_type).
inline bool is_float(DType type) { return type == DType::F32 || type == DType::F64; }
/// The 16-bit storage types.
inline bool is_half(DType type) { return type == DType::F16 || type == DType::BF16; }
/// The type of the values a tensor of this type holds: f32 for the 16-bit types.
inline DType value_type(DType type) { return is_half(type) ? DType::F32 : type; }
inline bool is_int(DType type) { return type == DType::I32 || type == DType::I64; }
int dtype_bytes(DType type);

/// value rounded to nearest (ties to even) in type's format: f32, f16 (subnormals
/// kept, past 65504 infinite) or bf16 (f32's range, 8 significant bits); NaN, the
/// infinities and the other types unchanged. Exactly what a device's store of the
/// value rounds to (vstore_half_rte, and bf16's rounding in codegen/opencl_c).
double round_to(DType type, double value);
/// The largest finite value of a float type (f64, f32, f16, bf16); 0 for the others.
double largest_finite(DType type);
/// A 16-bit type's bits of value (rounded as round_to does; NaN as a quiet NaN), and
/// the value of such bits.
uint16_t half_bits(DType type, double value);
double half_value(DType type, uint16_t bits);

}  // namespace ks
