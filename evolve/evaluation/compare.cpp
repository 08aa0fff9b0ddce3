#include "evolve/evaluation/compare.h"

#include <algorithm>
#include <cmath>
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

// expected(i) is the reference's element i, as a double.
template <typename Expected>
Mismatch compare_with(const HostBuffer &got, Expected expected, std::optional<double> tolerance_given) {
  const int64_t n = got.numel();
  const size_t chunks = static_cast<size_t>(chunk_count(n));
  // Summed per chunk, then in chunk order: the same rms whatever the threads.
  std::vector<double> squares(chunks);
  for_chunks(n, [&](int64_t chunk, int64_t first, int64_t last) {
    double sum = 0;
    for (int64_t i = first; i < last; ++i) sum += expected(i) * expected(i);
    squares[static_cast<size_t>(chunk)] = sum;
  });
  double sum_squares = 0;
  for (double s : squares) sum_squares += s;
  const double rms = n > 0 ? std::sqrt(sum_squares / static_cast<double>(n)) : 0;
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

Mismatch compare(const HostBuffer &got, const TensorData &expected, std::optional<double> tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.values[static_cast<size_t>(i)]; }, tolerance);
}

Mismatch compare(const HostBuffer &got, const HostBuffer &expected, std::optional<double> tolerance) {
  return compare_with(
      got, [&](int64_t i) { return expected.at(i); }, tolerance);
}

}  // namespace ks
