#include "ir/types.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ks {

const char *dtype_name(DType type) {
  switch (type) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string &name) {
  if (name == "bool") return DType::Bool;
  if (name == "i32") return DType::I32;
  if (name == "i64") return DType::I64;
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return std::nullopt;
}

int dtype_bytes(DType type) {
  switch (type) {
    case DType::Bool: return 1;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::F16: return 2;
    case DType::BF16: return 2;
  }
  return 0;
}

namespace {

// Significant bits, the least normal exponent and the largest finite value of f16 and
// bf16.
struct HalfFormat {
  int precision, least_exponent;
  double largest;
};

HalfFormat format_of(DType type) {
  if (type == DType::F16) return {11, -14, 65504.0};
  return {8, -126, std::ldexp(255.0, 120)};  // bf16: (2 - 2^-7) 2^127
}

}  // namespace

double largest_finite(DType type) {
  if (type == DType::F64) return std::numeric_limits<double>::max();
  if (type == DType::F32) return std::numeric_limits<float>::max();
  return is_half(type) ? format_of(type).largest : 0;
}

double round_to(DType type, double value) {
  if (type == DType::F32) return static_cast<double>(static_cast<float>(value));
  if (!is_half(type) || !std::isfinite(value) || value == 0) return value;
  const HalfFormat f = format_of(type);
  int e = 0;
  std::frexp(std::fabs(value), &e);  // |value| in [2^(e-1), 2^e)
  // The step between neighbours at |value|'s binade, fixed below the normal range.
  const double step = std::ldexp(1.0, std::max(e - 1, f.least_exponent) - f.precision + 1);
  const double rounded = std::nearbyint(std::fabs(value) / step) * step;  // ties to even
  return std::copysign(rounded > f.largest ? INFINITY : rounded, value);
}

uint16_t half_bits(DType type, double value) {
  if (type == DType::BF16) {
    if (std::isnan(value)) return 0x7fc0;
    const float f = static_cast<float>(round_to(type, value));  // exact: its low 16 bits are 0
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);
  }
  if (std::isnan(value)) return 0x7e00;
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double r = std::fabs(round_to(DType::F16, value));
  if (std::isinf(r)) return sign | 0x7c00;
  if (r == 0) return sign;
  int e = 0;
  std::frexp(r, &e);
  if (e - 1 < -14) return sign | static_cast<uint16_t>(std::ldexp(r, 24));  // a subnormal: r = k 2^-24
  const auto fraction = static_cast<uint16_t>((std::ldexp(r, 1 - e) - 1) * 1024);
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | fraction;
}

double half_value(DType type, uint16_t bits) {
  if (type == DType::BF16) {
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float f = 0;
    std::memcpy(&f, &wide, 4);
    return f;
  }
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 31, fraction = bits & 1023;
  if (exponent == 0) return sign * std::ldexp(fraction, -24);
  if (exponent == 31) return fraction ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

}  // namespace ks
