#include "evolve/evaluation/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "codegen/c_printer.h"
#include "evolve/evaluation/parallel.h"

namespace ks {

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

double Tolerance::allowed(double expected, double bound) const {
  const double by_bound = allowance * bound;
  return closeness > 0 ? std::max(by_bound, closeness * (1 + std::fabs(expected))) : by_bound;
}

double closeness_for(Precision precision) { return precision == Precision::TF32 ? kTf32Closeness : 0; }

namespace {

// The fraction of what is allowed that one element's error takes: 0 where equal (equal
// infinities too) or both at or past the format's largest finite value `edge` with one
// sign, infinite where NaN, never written, or off where nothing is allowed. The edge:
// a temporary the reference stores in a 16-bit format may overflow where a schedule
// keeps it in f32 registers (as the issue allows), and then rounds the output to the
// largest finite value instead (an f16 conv_transpose3d_residual: 65504, expected inf).
double fraction_of(double got, double expected, double allowed, bool poisoned, double edge) {
  if (std::isnan(got) || std::isnan(expected) || poisoned) return std::numeric_limits<double>::infinity();
  if (got == expected || std::isinf(allowed)) return 0;
  if (edge > 0 && std::fabs(got) >= edge && std::fabs(expected) >= edge && (got > 0) == (expected > 0)) return 0;
  const double fraction = std::fabs(got - expected) / allowed;  // infinite where allowed is 0 (or NaN: a bound
  return std::isnan(fraction) ? std::numeric_limits<double>::infinity() : fraction;  // that says nothing)
}

// expected(i) and bound(i) are the reference's element i and its bound, as doubles;
// bounded false: exact.
template <typename Expected, typename BoundAt>
Mismatch compare_with(const HostBuffer &got, Expected expected, BoundAt bound, bool bounded, Tolerance tolerance) {
  auto allowed = [&](int64_t i) { return bounded ? tolerance.allowed(expected(i), bound(i)) : 0.0; };
  const int64_t n = got.numel();
  const double edge = largest_finite(got.type);
  const size_t chunks = static_cast<size_t>(chunk_count(n));
  struct Part {
    int64_t bad = 0, worst = -1;
    double worst_fraction = 0;
  };
  std::vector<Part> parts(chunks);
  for_chunks(n, [&](int64_t chunk, int64_t first, int64_t last) {
    Part &p = parts[static_cast<size_t>(chunk)];
    for (int64_t i = first; i < last; ++i) {
      const double g = got.at(i);
      const double fraction = fraction_of(g, expected(i), allowed(i), is_poison(got.type, g), edge);
      if (!(fraction <= 1)) ++p.bad;
      if (p.worst < 0 || fraction > p.worst_fraction) {
        p.worst_fraction = fraction;
        p.worst = i;
      }
    }
  });
  // The first element of the largest fraction, as one pass in order would find it.
  Mismatch m;
  int64_t worst = -1;
  for (const Part &p : parts) {
    m.bad_elements += p.bad;
    if (p.worst >= 0 && (worst < 0 || p.worst_fraction > m.worst_fraction)) {
      m.worst_fraction = p.worst_fraction;
      worst = p.worst;
    }
  }
  m.passed = m.bad_elements == 0;
  if (worst >= 0) {
    m.index = unflatten(worst, got.shape);
    m.expected = expected(worst);
    m.got = got.at(worst);
    m.allowed = allowed(worst);
  }
  return m;
}

}  // namespace

uint64_t fingerprint(const HostBuffer &buffer) {
  const int64_t words = static_cast<int64_t>(buffer.bytes.size() / 4);
  std::vector<uint64_t> parts(static_cast<size_t>(chunk_count(words)));
  for_chunks(words, [&](int64_t chunk, int64_t first, int64_t last) {
    uint64_t sum = 0;
    for (int64_t i = first; i < last; ++i) {
      uint32_t word;
      std::memcpy(&word, buffer.bytes.data() + 4 * i, 4);
      sum += uint64_t{word} * (2 * static_cast<uint64_t>(i) + 1);
    }
    parts[static_cast<size_t>(chunk)] = sum;
  });
  uint64_t sum = 0;
  for (uint64_t p : parts) sum += p;
  // The bytes past the last whole word (a bool tensor's), if any.
  for (size_t i = static_cast<size_t>(words) * 4; i < buffer.bytes.size(); ++i)
    sum += uint64_t{buffer.bytes[i]} * (2 * i + 1);
  return sum;
}

namespace {

constexpr size_t kCompareGroup = 256;    // work-items of a group
constexpr size_t kCompareGroups = 1024;  // groups at most: what comes back is this many partial results
constexpr size_t kReals = 4;             // ks_compare's reals per group

// compare_with's fraction and fingerprint's sum, as kernels. limits holds the
// tolerance's allowance, whether the tensor has a bound, and the tolerance's
// closeness; counts the element count; each group
// writes its partial results at its index: reals (worst fraction, got, expected and
// allowed there), counts after the first (its worst element's index, its count over
// what is allowed; or a fingerprint).
const char *kCompareSource = R"(
#ifdef KS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif
// The compared tensors' elements: f32, or 16-bit storage read as f32 (exactly).
#if defined(KS_F16)
#define ELEMENT half
#define READ(p, i) vload_half(i, p)
#elif defined(KS_BF16)  // ks_from_bf16: codegen's bf16_conversion, before this text
#define ELEMENT ushort
#define READ(p, i) ks_from_bf16((p)[i])
#else
#define ELEMENT float
#define READ(p, i) (p)[i]
#endif
#define GROUP 256
#define REALS 4
// The work-group's sum of value, left in s[0] (s: GROUP elements of local memory).
#define GROUP_SUM(s, value)                                  \
  do {                                                       \
    const size_t l = get_local_id(0);                        \
    s[l] = value;                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                            \
    for (size_t step = GROUP / 2; step > 0; step /= 2) {     \
      if (l < step) s[l] += s[l + step];                     \
      barrier(CLK_LOCAL_MEM_FENCE);                          \
    }                                                        \
  } while (0)

__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void ks_compare(__global const ELEMENT *got, __global const ELEMENT *expected, __global const float *bound,
                __global const real *limits, __global ulong *counts, __global real *reals) {
  const ulong n = counts[0];
  const real allowance = limits[0];
  const bool bounded = limits[1] != 0;
  const real closeness = limits[2];
  real worst = -1, worst_got = 0, worst_expected = 0, worst_allowed = 0;
  ulong where = 0, bad = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float g = READ(got, i), e = READ(expected, i);
    const real allowed = !bounded         ? 0
                         : closeness > 0 ? fmax(allowance * bound[i], closeness * (1 + fabs((real)e)))
                                         : allowance * bound[i];
    real fraction;
    if (isnan(g) || isnan(e)) {
      fraction = INFINITY;
    } else if (g == e || isinf(allowed) || (fabs(g) >= KS_EDGE && fabs(e) >= KS_EDGE && (g > 0) == (e > 0))) {
      fraction = 0;  // equal, nothing asked, or both at the format's largest finite value or past it
    } else {
      fraction = fabs((real)g - (real)e) / allowed;
      if (isnan(fraction)) fraction = INFINITY;
    }
    if (!(fraction <= 1)) ++bad;
    if (fraction > worst) {
      worst = fraction;
      where = i;
      worst_got = g;
      worst_expected = e;
      worst_allowed = allowed;
    }
  }
  __local real w[GROUP], wg[GROUP], we[GROUP], wa[GROUP];
  __local ulong at[GROUP], b[GROUP];
  const size_t l = get_local_id(0);
  w[l] = worst, at[l] = where, b[l] = bad, wg[l] = worst_got, we[l] = worst_expected, wa[l] = worst_allowed;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t step = GROUP / 2; step > 0; step /= 2) {
    if (l < step) {
      const size_t o = l + step;
      b[l] += b[o];
      // The larger fraction; of equal ones, the first element.
      if (w[o] > w[l] || (w[o] == w[l] && w[o] >= 0 && at[o] < at[l])) {
        w[l] = w[o], at[l] = at[o], wg[l] = wg[o], we[l] = we[o], wa[l] = wa[o];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    const size_t g = get_group_id(0);
    reals[REALS * g] = w[0], reals[REALS * g + 1] = wg[0], reals[REALS * g + 2] = we[0];
    reals[REALS * g + 3] = wa[0];
    counts[1 + 2 * g] = at[0], counts[2 + 2 * g] = b[0];
  }
}

__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void ks_fingerprint(__global const uint *words, __global const real *limits, __global ulong *counts,
                    __global real *reals) {
  const ulong n = counts[0];
  ulong sum = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) sum += (ulong)words[i] * (2 * i + 1);
  __local ulong s[GROUP];
  GROUP_SUM(s, sum);
  if (get_local_id(0) == 0) counts[1 + get_group_id(0)] = s[0];
}
)";

}  // namespace

std::vector<double> DeviceComparer::read_reals(size_t count) {
  const bool wide = device_.info().fp64;
  std::vector<unsigned char> bytes((wide ? 8 : 4) * count);
  device_.read(reals_->id, bytes.data(), bytes.size());
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (wide) {
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    } else {
      float v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    }
  }
  return out;
}

size_t DeviceComparer::launch(const char *kernel, std::vector<runtime::LaunchArg> args, uint64_t n, DType element,
                              Tolerance tolerance, bool bounded) {
  const bool wide = device_.info().fp64;
  const size_t real_bytes = wide ? 8 : 4;
  if (!limits_) {
    limits_.emplace(device_, 3 * real_bytes);
    counts_.emplace(device_, 8 * (1 + 2 * kCompareGroups));
    reals_.emplace(device_, real_bytes * kReals * kCompareGroups);
  }
  const std::string element_define = element == DType::F16    ? "#define KS_F16\n"
                                     : element == DType::BF16 ? "#define KS_BF16\n" + bf16_conversion(false).definition
                                                              : "";
  char edge[64];
  std::snprintf(edge, sizeof edge, "#define KS_EDGE %.9ef\n", largest_finite(element));
  device_.build({std::string(wide ? "#define KS_FP64\n" : "") + element_define + edge + kCompareSource, {}});
  unsigned char limits[24];
  if (wide) {
    const double v[3] = {tolerance.allowance, bounded ? 1.0 : 0.0, tolerance.closeness};
    std::memcpy(limits, v, sizeof v);
  } else {
    const float v[3] = {static_cast<float>(tolerance.allowance), bounded ? 1.0f : 0.0f,
                        static_cast<float>(tolerance.closeness)};
    std::memcpy(limits, v, sizeof v);
  }
  device_.write(limits_->id, limits, 3 * real_bytes);
  device_.write(counts_->id, &n, 8);
  const size_t groups = std::clamp<size_t>((n + kCompareGroup - 1) / kCompareGroup, 1, kCompareGroups);
  runtime::KernelLaunch l;
  l.kernel = kernel;
  l.global[0] = groups * kCompareGroup;
  l.local[0] = kCompareGroup;
  args.insert(args.end(), {limits_->id, counts_->id, reals_->id});
  l.args = std::move(args);
  device_.run({{l}});
  return groups;
}

Mismatch DeviceComparer::compare(const TensorDecl &t, runtime::BufferId got, runtime::BufferId expected,
                                 std::optional<runtime::BufferId> bound, Tolerance tolerance) {
  if (!opencl() || (t.type != DType::F32 && !is_half(t.type))) {
    std::optional<HostBuffer> bounds;
    if (bound) bounds = read_tensor(device_, *bound, TensorDecl{t.name, DType::F32, t.shape});
    return ks::compare(read_tensor(device_, got, t), read_tensor(device_, expected, t), bounds ? &*bounds : nullptr,
                       tolerance);
  }
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const size_t groups =
      launch("ks_compare", {got, expected, bound.value_or(got)}, n, t.type, tolerance, bound.has_value());
  const std::vector<double> reals = read_reals(kReals * groups);
  std::vector<uint64_t> counts(1 + 2 * groups);
  device_.read(counts_->id, counts.data(), 8 * counts.size());
  Mismatch m;
  int64_t worst = -1;
  for (size_t g = 0; g < groups; ++g) {
    m.bad_elements += static_cast<int64_t>(counts[2 + 2 * g]);
    const double fraction = reals[kReals * g];
    const int64_t at = static_cast<int64_t>(counts[1 + 2 * g]);
    if (fraction < 0) continue;  // a group with no element
    if (worst < 0 || fraction > m.worst_fraction || (fraction == m.worst_fraction && at < worst)) {
      m.worst_fraction = fraction;
      worst = at;
      m.got = reals[kReals * g + 1];
      m.expected = reals[kReals * g + 2];
      m.allowed = reals[kReals * g + 3];
    }
  }
  m.passed = m.bad_elements == 0;
  if (worst >= 0) m.index = unflatten(worst, t.shape);
  return m;
}

uint64_t DeviceComparer::fingerprint(const TensorDecl &t, runtime::BufferId buffer) {
  if (!opencl() || t.bytes() % 4 != 0) return ks::fingerprint(read_tensor(device_, buffer, t));
  const uint64_t words = static_cast<uint64_t>(t.bytes() / 4);
  const size_t groups = launch("ks_fingerprint", {buffer}, words, DType::F32, 0, 0);
  std::vector<uint64_t> counts(1 + groups);
  device_.read(counts_->id, counts.data(), 8 * counts.size());
  uint64_t sum = 0;
  for (size_t g = 0; g < groups; ++g) sum += counts[1 + g];
  return sum;
}

Mismatch compare(const HostBuffer &got, const TensorData &expected, const TensorData *bound, Tolerance tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.values[static_cast<size_t>(i)]; },
      [&](int64_t i) { return bound->values[static_cast<size_t>(i)]; }, bound != nullptr, tolerance);
}

Mismatch compare(const HostBuffer &got, const HostBuffer &expected, const HostBuffer *bound, Tolerance tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.at(i); }, [&](int64_t i) { return bound->at(i); }, bound != nullptr,
      tolerance);
}

}  // namespace ks
