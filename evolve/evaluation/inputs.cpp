#include "evolve/evaluation/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "codegen/c_printer.h"
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
    case DType::F16:
    case DType::BF16: {
      uint16_t v;
      std::memcpy(&v, p, sizeof v);
      return half_value(type, v);
    }
    case DType::Bool: return p[0];
  }
  return 0;
}

namespace {

// Element i's value, a function of (seed, i) alone (a counter-based generator), so that
// the values do not depend on threading and a device draws the same ones
// (kDrawSource below is this, in OpenCL C). Mixed signs over a wide range: each float
// uniform in [-1, 1) times 2^k, k from -4 to 4, so that rows differ in scale and a
// kernel that holds only for values near [-1, 1] (a clamp, an approximation fitted
// there) is caught; a declared range is the spec's domain, uniform within it.
uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const char *kDrawSource = R"(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
ulong mix(ulong x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ul;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBul;
  return x ^ (x >> 31);
}
// The tensor's elements: f32, or a 16-bit format the f32 value is rounded to (nearest
// even), as the host's random_input and a generated store round.
#if defined(KS_F16)
#define ELEMENT half
#define STORE(p, i, v) vstore_half_rte(v, i, p)
#elif defined(KS_BF16)  // ks_to_bf16: codegen's bf16_conversion, before this text
#define ELEMENT ushort
#define STORE(p, i, v) (p)[i] = ks_to_bf16(v)
#else
#define ELEMENT float
#define STORE(p, i, v) (p)[i] = (v)
#endif
// params: seed, count; limits: lo, hi (a declared range), ranged (1 or 0)
__kernel void ks_draw(__global ELEMENT *out, __global const ulong *params, __global const double *limits) {
  const ulong seed = params[0], n = params[1];
  const double lo = limits[0], hi = limits[1];
  const int ranged = limits[2] != 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const ulong h = mix(seed ^ mix(i));
    const double u = (double)(h >> 11) * 0x1.0p-53;
    if (ranged) {
      const double span = hi - lo;
      const double scaled = span * u;
      STORE(out, i, (float)(lo + scaled));
    } else {
      STORE(out, i, (float)ldexp(2 * u - 1, (int)(mix(h) % 9) - 4));
    }
  }
}
)";

}  // namespace

HostBuffer random_input(const TensorDecl &tensor, uint64_t seed) {
  HostBuffer buffer{tensor.type, tensor.shape, {}};
  buffer.bytes.resize(static_cast<size_t>(tensor.bytes()));
  const double lo = tensor.range ? tensor.range->lo : -1.0, hi = tensor.range ? tensor.range->hi : 1.0;
  const uint64_t span = std::max<int64_t>(1, static_cast<int64_t>(hi) - static_cast<int64_t>(lo));
  auto fill = [&](auto *data, auto value) {
    for_chunks(buffer.numel(), [&](int64_t, int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) data[i] = value(mix(seed ^ mix(static_cast<uint64_t>(i))));
    });
  };
  auto unit = [](uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; };
  auto real = [&](uint64_t h) {
    if (tensor.range) {
      volatile double scaled = (hi - lo) * unit(h);  // no fused multiply-add: the device's kernel has none
      return static_cast<float>(lo + scaled);
    }
    return static_cast<float>(std::ldexp(2 * unit(h) - 1, static_cast<int>(mix(h) % 9) - 4));
  };
  switch (tensor.type) {
    case DType::F32: fill(reinterpret_cast<float *>(buffer.bytes.data()), real); break;
    case DType::F16:
    case DType::BF16:  // the f32 value rounded to the tensor's format, as a store of it would
      fill(reinterpret_cast<uint16_t *>(buffer.bytes.data()),
           [&](uint64_t h) { return half_bits(tensor.type, real(h)); });
      break;
    case DType::I32:
      fill(reinterpret_cast<int32_t *>(buffer.bytes.data()),
           [&](uint64_t h) { return static_cast<int32_t>(static_cast<int64_t>(lo) + static_cast<int64_t>(h % span)); });
      break;
    case DType::I64:
      fill(reinterpret_cast<int64_t *>(buffer.bytes.data()),
           [&](uint64_t h) { return static_cast<int64_t>(lo) + static_cast<int64_t>(h % span); });
      break;
    case DType::F64:  // not a tensor type (types.h)
    case DType::Bool: break;
  }
  return buffer;
}

HostBuffer read_tensor(runtime::Device &device, runtime::BufferId id, const TensorDecl &t) {
  HostBuffer out{t.type, t.shape, std::vector<unsigned char>(static_cast<size_t>(t.bytes()))};
  device.read(id, out.bytes.data(), out.bytes.size());
  return out;
}

void draw_input(runtime::Device &device, runtime::BufferId id, const TensorDecl &tensor, uint64_t seed) {
  if (device.info().api != "opencl" || !device.info().fp64 || (tensor.type != DType::F32 && !is_half(tensor.type))) {
    HostBuffer host = random_input(tensor, seed);
    device.write(id, host.bytes.data(), host.bytes.size());
    return;
  }
  runtime::ScopedBuffer params(device, 16), limits(device, 24);
  const uint64_t p[2] = {seed, static_cast<uint64_t>(tensor.numel())};
  const double l[3] = {tensor.range ? tensor.range->lo : -1.0, tensor.range ? tensor.range->hi : 1.0,
                       tensor.range ? 1.0 : 0.0};
  device.write(params.id, p, sizeof p);
  device.write(limits.id, l, sizeof l);
  device.build({std::string(tensor.type == DType::F16    ? "#define KS_F16\n"
                            : tensor.type == DType::BF16 ? "#define KS_BF16\n" + bf16_conversion(true).definition
                                                         : "") +
                    kDrawSource,
                {}});
  runtime::KernelLaunch launch;
  launch.kernel = "ks_draw";
  launch.local[0] = 256;
  launch.global[0] = 256 * std::clamp<size_t>((static_cast<size_t>(tensor.numel()) + 255) / 256, 1, 4096);
  launch.args = {id, params.id, limits.id};
  device.run({{launch}});
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
    case DType::F16:
    case DType::BF16:  // NaN, and the largest finite values
      fill(half_bits(tensor.type, NAN), half_bits(tensor.type, tensor.type == DType::F16 ? 65504.0 : 3e38),
           half_bits(tensor.type, tensor.type == DType::F16 ? -65504.0 : -3e38));
      break;
    case DType::Bool: break;
  }
  return buffer;
}

uint32_t poison_pattern(DType type) {
  if (is_half(type)) return 0x10001u * half_bits(type, NAN);  // two NaNs a word
  return type == DType::F32 ? 0x7FC00000u : 0x80000000u;
}

bool is_poison(DType type, double value) {
  switch (type) {
    case DType::F32:
    case DType::F64:
    case DType::F16:
    case DType::BF16: return std::isnan(value);
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
