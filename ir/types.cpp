#include "ir/types.h"

namespace ks {

const char *dtype_name(DType type) {
  switch (type) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string &name) {
  if (name == "bool") return DType::Bool;
  if (name == "i32") return DType::I32;
  if (name == "i64") return DType::I64;
  if (name == "f32") return DType::F32;
  if (name == "f64") return DType::F64;
  return std::nullopt;
}

int dtype_bytes(DType type) {
  switch (type) {
    case DType::Bool: return 1;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::F32: return 4;
    case DType::F64: return 8;
  }
  return 0;
}

}  // namespace ks
