#include "evolve/evaluation/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "evolve/evaluation/parallel.h"

namespace ks {

double HostBuffer::at(int64_t i) const {
  const unsigned char *p = bytes.data() + static_cast<size_t>(i) * static_cast<size_t>(dtype_bytes(type));
  switch (type) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::Bool: return p[0];
  }
  return 0;
}

namespace {

template <typename T, typename Fill>
void fill_parallel(HostBuffer &buffer, uint64_t seed, Fill fill) {
  T *data = reinterpret_cast<T *>(buffer.bytes.data());
  for_chunks(buffer.numel(), [&](int64_t chunk, int64_t first, int64_t last) {
    // Each chunk has its own stream, so the values do not depend on threading.
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(chunk));
    for (int64_t i = first; i < last; ++i) data[i] = fill(rng);
  });
}

}  // namespace

HostBuffer random_input(const TensorDecl &tensor, uint64_t seed) {
  HostBuffer buffer{tensor.type, tensor.shape, {}};
  buffer.bytes.resize(static_cast<size_t>(tensor.bytes()));
  double lo = tensor.range ? tensor.range->lo : -1.0;
  double hi = tensor.range ? tensor.range->hi : 1.0;
  switch (tensor.type) {
    case DType::F32:
      if (tensor.range) {  // the spec's domain
        fill_parallel<float>(buffer, seed, [lo, hi](std::mt19937_64 &rng) {
          return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
        });
        break;
      }
      // Mixed signs over a wide range: each value uniform in [-1, 1] times 2^k, k from
      // -4 to 4, so that rows differ in scale and a kernel that holds only for values
      // near [-1, 1] (a clamp, an approximation fitted there) is caught.
      fill_parallel<float>(buffer, seed, [](std::mt19937_64 &rng) {
        double u = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
        return static_cast<float>(std::ldexp(u, std::uniform_int_distribution<int>(-4, 4)(rng)));
      });
      break;
    case DType::I32:
      fill_parallel<int32_t>(buffer, seed, [lo, hi](std::mt19937_64 &rng) {
        return static_cast<int32_t>(
            std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi) - 1)(rng));
      });
      break;
    case DType::I64:
      fill_parallel<int64_t>(buffer, seed, [lo, hi](std::mt19937_64 &rng) {
        return std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi) - 1)(rng);
      });
      break;
    case DType::F64:  // not a tensor type (types.h)
    case DType::Bool: break;
  }
  return buffer;
}

HostBuffer poisoned(const TensorDecl &tensor, Poison kind) {
  HostBuffer buffer{tensor.type, tensor.shape, {}};
  buffer.bytes.resize(static_cast<size_t>(tensor.bytes()));
  const int64_t n = tensor.numel();
  auto fill = [&](auto unwritten, auto high, auto low) {
    auto *data = reinterpret_cast<decltype(unwritten) *>(buffer.bytes.data());
    if (kind == Poison::Unwritten)
      std::fill_n(data, n, unwritten);
    else
      for (int64_t i = 0; i < n; ++i) data[i] = i % 2 ? low : high;
  };
  switch (tensor.type) {
    case DType::F32: fill(std::numeric_limits<float>::quiet_NaN(), 3e38f, -3e38f); break;
    case DType::I32: fill(INT32_MIN, INT32_MAX, INT32_MIN + 1); break;
    case DType::I64: fill(INT64_MIN, INT64_MAX, INT64_MIN + 1); break;
    case DType::F64: fill(std::numeric_limits<double>::quiet_NaN(), 3e38, -3e38); break;
    case DType::Bool: break;
  }
  return buffer;
}

uint32_t poison_pattern(DType type) { return type == DType::F32 ? 0x7FC00000u : 0x80000000u; }

bool is_poison(DType type, double value) {
  switch (type) {
    case DType::F32:
    case DType::F64: return std::isnan(value);
    case DType::I32: return value == static_cast<double>(INT32_MIN);
    case DType::I64: return value == static_cast<double>(INT64_MIN);
    case DType::Bool: return false;
  }
  return false;
}

TensorData to_tensor_data(const HostBuffer &buffer) {
  TensorData t{buffer.type, buffer.shape, std::vector<double>(static_cast<size_t>(buffer.numel()))};
  for (int64_t i = 0; i < buffer.numel(); ++i) t.values[static_cast<size_t>(i)] = buffer.at(i);
  return t;
}

}  // namespace ks
