#include "evolve/evaluation/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "evolve/evaluation/parallel.h"

namespace ks {

double tolerance_for(DType type) {
  switch (type) {
    case DType::F32: return 1e-4;  // float32 arithmetic against a float64 reference
    case DType::F64: return 1e-12;
    case DType::I32:
    case DType::I64:
    case DType::Bool: return 0.0;
  }
  return 0.0;
}

double naive_relative_tolerance(double naive_error) {
  if (!std::isfinite(naive_error)) return tolerance_for(DType::F32);  // a naive kernel overflowing says nothing
  return std::clamp(4 * naive_error, tolerance_for(DType::F32), 5e-2);
}

double float_reference_tolerance(const Graph &graph) {
  double longest = 1;
  for (const Stage &stage : graph.stages) {
    double n = 1;
    for (const IterVar &v : stage.reduce_vars) n *= static_cast<double>(v.extent);
    longest = std::max(longest, n);
  }
  return std::max(tolerance_for(DType::F32), longest * std::ldexp(1.0, -24));
}

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

namespace {

// The rms of n elements, expected(i) the ith: summed per chunk, then in chunk order,
// the same whatever the threads.
template <typename Expected>
double rms_over(int64_t n, Expected expected) {
  std::vector<double> squares(static_cast<size_t>(chunk_count(n)));
  for_chunks(n, [&](int64_t chunk, int64_t first, int64_t last) {
    double sum = 0;
    for (int64_t i = first; i < last; ++i) sum += expected(i) * expected(i);
    squares[static_cast<size_t>(chunk)] = sum;
  });
  double sum = 0;
  for (double s : squares) sum += s;
  return n > 0 ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

// expected(i) is the reference's element i, as a double.
template <typename Expected>
Mismatch compare_with(const HostBuffer &got, Expected expected, std::optional<double> tolerance_given) {
  const int64_t n = got.numel();
  const size_t chunks = static_cast<size_t>(chunk_count(n));
  const double rms = rms_over(n, expected);
  const double tolerance = is_int(got.type) ? 0.0 : tolerance_given.value_or(tolerance_for(got.type));
  struct Part {
    int64_t bad = 0, worst = -1;
    double worst_error = 0;
  };
  std::vector<Part> parts(chunks);
  for_chunks(n, [&](int64_t chunk, int64_t first, int64_t last) {
    Part &p = parts[static_cast<size_t>(chunk)];
    for (int64_t i = first; i < last; ++i) {
      double g = got.at(i), e = expected(i);
      double error;
      if (std::isnan(g) || std::isnan(e) || is_poison(got.type, g)) {
        error = std::numeric_limits<double>::infinity();
      } else if (g == e) {
        error = 0;  // also equal infinities
      } else {
        double scale = std::max(std::fabs(e), rms);
        error = scale > 0 ? std::fabs(g - e) / scale : std::numeric_limits<double>::infinity();
        if (std::isnan(error)) error = std::numeric_limits<double>::infinity();
      }
      if (error > tolerance) ++p.bad;
      if (p.worst < 0 || error > p.worst_error) {
        p.worst_error = error;
        p.worst = i;
      }
    }
  });
  // The first element of the largest error, as one pass in order would find it.
  Mismatch m;
  int64_t worst = -1;
  for (const Part &p : parts) {
    m.bad_elements += p.bad;
    if (p.worst >= 0 && (worst < 0 || p.worst_error > m.worst_error)) {
      m.worst_error = p.worst_error;
      worst = p.worst;
    }
  }
  m.passed = m.bad_elements == 0;
  if (worst >= 0) {
    m.index = unflatten(worst, got.shape);
    m.expected = expected(worst);
    m.got = got.at(worst);
  }
  return m;
}

}  // namespace

double rms_of(const HostBuffer &expected) {
  return rms_over(expected.numel(), [&](int64_t i) { return expected.at(i); });
}

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

// compare_with's error and fingerprint's sum, as kernels. limits holds the reference's
// rms and the tolerance, counts the element count; each group writes its partial
// results at its index: reals (worst error, got, expected there; or a sum of
// squares), counts after the first (its worst element's index, its count over the
// tolerance; or a fingerprint).
const char *kCompareSource = R"(
#ifdef KS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif
#define GROUP 256
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
void ks_compare(__global const float *got, __global const float *expected, __global const real *limits,
                __global ulong *counts, __global real *reals) {
  const ulong n = counts[0];
  const real rms = limits[0], tolerance = limits[1];
  real worst = -1, worst_got = 0, worst_expected = 0;
  ulong where = 0, bad = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float g = got[i], e = expected[i];
    real error;
    if (isnan(g) || isnan(e)) {
      error = INFINITY;
    } else if (g == e) {
      error = 0;
    } else {
      const real scale = fmax(fabs((real)e), rms);
      error = scale > 0 ? fabs((real)g - (real)e) / scale : INFINITY;
      if (isnan(error)) error = INFINITY;
    }
    if (error > tolerance) ++bad;
    if (error > worst) {
      worst = error;
      where = i;
      worst_got = g;
      worst_expected = e;
    }
  }
  __local real w[GROUP];
  __local ulong at[GROUP], b[GROUP];
  __local real wg[GROUP], we[GROUP];
  const size_t l = get_local_id(0);
  w[l] = worst, at[l] = where, b[l] = bad, wg[l] = worst_got, we[l] = worst_expected;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t step = GROUP / 2; step > 0; step /= 2) {
    if (l < step) {
      const size_t o = l + step;
      b[l] += b[o];
      // The larger error; of equal ones, the first element.
      if (w[o] > w[l] || (w[o] == w[l] && w[o] >= 0 && at[o] < at[l])) {
        w[l] = w[o], at[l] = at[o], wg[l] = wg[o], we[l] = we[o];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    const size_t g = get_group_id(0);
    reals[3 * g] = w[0], reals[3 * g + 1] = wg[0], reals[3 * g + 2] = we[0];
    counts[1 + 2 * g] = at[0], counts[2 + 2 * g] = b[0];
  }
}

__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void ks_sum_squares(__global const float *expected, __global const real *limits, __global ulong *counts,
                    __global real *reals) {
  const ulong n = counts[0];
  real sum = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) sum += (real)expected[i] * expected[i];
  __local real s[GROUP];
  GROUP_SUM(s, sum);
  if (get_local_id(0) == 0) reals[get_group_id(0)] = s[0];
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

size_t DeviceComparer::launch(const char *kernel, std::vector<runtime::LaunchArg> args, uint64_t n, double rms,
                              double tolerance) {
  const bool wide = device_.info().fp64;
  const size_t real_bytes = wide ? 8 : 4;
  if (!limits_) {
    limits_.emplace(device_, 2 * real_bytes);
    counts_.emplace(device_, 8 * (1 + 2 * kCompareGroups));
    reals_.emplace(device_, real_bytes * 3 * kCompareGroups);
  }
  device_.build({std::string(wide ? "#define KS_FP64\n" : "") + kCompareSource, {}});
  unsigned char limits[16];
  if (wide) {
    const double v[2] = {rms, tolerance};
    std::memcpy(limits, v, sizeof v);
  } else {
    const float v[2] = {static_cast<float>(rms), static_cast<float>(tolerance)};
    std::memcpy(limits, v, sizeof v);
  }
  device_.write(limits_->id, limits, 2 * real_bytes);
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

double DeviceComparer::rms(const TensorDecl &t, runtime::BufferId expected) {
  if (!opencl() || t.type != DType::F32) return rms_of(read_tensor(device_, expected, t));
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const size_t groups = launch("ks_sum_squares", {expected}, n, 0, 0);
  double sum = 0;
  for (double part : read_reals(groups)) sum += part;
  return n > 0 ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

Mismatch DeviceComparer::compare(const TensorDecl &t, runtime::BufferId got, runtime::BufferId expected, double rms,
                                 double tolerance) {
  if (!opencl() || t.type != DType::F32)
    return ks::compare(read_tensor(device_, got, t), read_tensor(device_, expected, t), tolerance);
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const size_t groups = launch("ks_compare", {got, expected}, n, rms, tolerance);
  const std::vector<double> reals = read_reals(3 * groups);
  std::vector<uint64_t> counts(1 + 2 * groups);
  device_.read(counts_->id, counts.data(), 8 * counts.size());
  Mismatch m;
  int64_t worst = -1;
  for (size_t g = 0; g < groups; ++g) {
    m.bad_elements += static_cast<int64_t>(counts[2 + 2 * g]);
    const double error = reals[3 * g];
    const int64_t at = static_cast<int64_t>(counts[1 + 2 * g]);
    if (error < 0) continue;  // a group with no element
    if (worst < 0 || error > m.worst_error || (error == m.worst_error && at < worst)) {
      m.worst_error = error;
      worst = at;
      m.got = reals[3 * g + 1];
      m.expected = reals[3 * g + 2];
    }
  }
  m.passed = m.bad_elements == 0;
  if (worst >= 0) m.index = unflatten(worst, t.shape);
  return m;
}

uint64_t DeviceComparer::fingerprint(const TensorDecl &t, runtime::BufferId buffer) {
  if (!opencl() || t.bytes() % 4 != 0) return ks::fingerprint(read_tensor(device_, buffer, t));
  const uint64_t words = static_cast<uint64_t>(t.bytes() / 4);
  const size_t groups = launch("ks_fingerprint", {buffer}, words, 0, 0);
  std::vector<uint64_t> counts(1 + groups);
  device_.read(counts_->id, counts.data(), 8 * counts.size());
  uint64_t sum = 0;
  for (size_t g = 0; g < groups; ++g) sum += counts[1 + g];
  return sum;
}

Mismatch compare(const HostBuffer &got, const TensorData &expected, std::optional<double> tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.values[static_cast<size_t>(i)]; }, tolerance);
}

Mismatch compare(const HostBuffer &got, const HostBuffer &expected, std::optional<double> tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.at(i); }, tolerance);
}

}  // namespace ks
