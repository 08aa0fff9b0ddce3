// Scalar types of both IRs. Tensors hold f32, i32 or i64; bool exists only as the
// type of comparisons and conditions; f64 only in the Loop IR of the reference at
// the timed sizes, whose sum and product accumulators are f64 (passes/lower.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ks {

enum class DType : uint8_t { Bool, I32, I64, F32, F64 };

const char *dtype_name(DType type);                         // "f32"
std::optional<DType> parse_dtype(const std::string &name);  // "f32" -> F32
inline bool is_float(DType type) { return type == DType::F32 || type == DType::F64; }
inline bool is_int(DType type) { return type == DType::I32 || type == DType::I64; }
int dtype_bytes(DType type);

}  // namespace ks
