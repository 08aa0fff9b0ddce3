// The rounding-error bound (evolve/evaluation/error_bound.h): honest float32 programs
// stay within it, whatever order their sums take, and programs that drop a term or
// round to less precision do not. Float32 programs are computed here on the host, in
// float, beside the interpreter's bound.
#include "evolve/evaluation/error_bound.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "evolve/evaluation/inputs.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "passes/rewrite.h"
#include "test_util.h"

namespace ks {
namespace {

// The graph's values and bounds on random inputs (each input by its declaration).
struct Evaluated {
  ErrorBounds bounds;
  std::map<std::string, std::vector<float>> inputs;  // as the device holds them
  TensorMap values;
  double value(const std::string &t, size_t i) const { return values.at(t).values[i]; }
  double bound(const std::string &t, size_t i) const { return values.at(bounds.bound_of.at(t)).values[i]; }
};

Evaluated evaluated(const std::string &spec, uint64_t seed, Precision precision = Precision::F32) {
  Evaluated e;
  const Graph graph = test::graph_of(spec);
  e.bounds = with_error_bounds(graph, precision);
  TensorMap in;
  uint64_t n = 0;
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Input) {
      HostBuffer b = random_input(t, seed + ++n);
      in[t.name] = to_tensor_data(b);
      std::vector<float> &f = e.inputs[t.name];
      f.resize(static_cast<size_t>(t.numel()));
      std::memcpy(f.data(), b.bytes.data(), b.bytes.size());
    }
  e.values = interpret(e.bounds.graph, in);
  return e;
}

// Float32 sums of x in several orders a schedule takes: in a row, backwards, a tree of
// pairs, 256 strided partial sums then a tree (cross_reduce), chunks of 64 in a row
// then in a row (split-K).
std::vector<std::pair<std::string, float>> float_sums(const std::vector<float> &x) {
  std::vector<std::pair<std::string, float>> out;
  float s = 0;
  for (float v : x) s += v;
  out.push_back({"in a row", s});
  s = 0;
  for (size_t i = x.size(); i-- > 0;) s += x[i];
  out.push_back({"backwards", s});
  std::function<float(size_t, size_t)> tree = [&](size_t lo, size_t hi) -> float {
    if (hi - lo == 1) return x[lo];
    const size_t mid = lo + (hi - lo) / 2;
    return tree(lo, mid) + tree(mid, hi);
  };
  out.push_back({"a tree of pairs", tree(0, x.size())});
  std::vector<float> part(256, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) part[i % 256] += x[i];
  for (size_t step = 128; step > 0; step /= 2)
    for (size_t t = 0; t < step; ++t) part[t] += part[t + step];
  out.push_back({"256 strided partial sums, then a tree", part[0]});
  s = 0;
  for (size_t c = 0; c < x.size(); c += 64) {
    float chunk = 0;
    for (size_t i = c; i < std::min(x.size(), c + 64); ++i) chunk += x[i];
    s += chunk;
  }
  out.push_back({"chunks of 64", s});
  return out;
}

// Sums of mixed signs and of positive squares, at the check's sizes and at a million
// terms: every order within the bound; a term of magnitude 8 or more left out is
// not (mixed signs: 8 is about 4e-6 of the magnitudes' sum at a million terms).
TEST(ErrorBound, EveryOrderOfASumStaysWithinItAndADroppedTermDoesNot) {
  for (int64_t n : {1000, 1048576}) {
    for (const char *term : {"x[i]", "x[i] * x[i]"}) {
      const std::string spec =
          "kernel k(x: f32[N]) -> s: f32[] where N = " + std::to_string(n) + " { s[] = sum(i) " + term + " }";
      for (uint64_t seed : {1, 2, 3}) {
        const Evaluated e = evaluated(spec, seed);
        const std::vector<float> &x = e.inputs.at("x");
        std::vector<float> terms(x.size());
        for (size_t i = 0; i < x.size(); ++i) terms[i] = std::string(term) == "x[i]" ? x[i] : x[i] * x[i];
        const double exact = e.value("s", 0), bound = e.bound("s", 0);
        ASSERT_GT(bound, 0);
        for (const auto &[order, sum] : float_sums(terms))
          EXPECT_LE(std::fabs(sum - exact), bound) << term << ", n = " << n << ", " << order;
        // One term left out: the first of magnitude 8 or more.
        size_t dropped = 0;
        while (std::fabs(terms[dropped]) < 8) ++dropped;
        std::vector<float> fewer = terms;
        fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(dropped));
        if (std::string(term) == "x[i]") {
          EXPECT_GT(std::fabs(float_sums(fewer)[2].second - exact), bound) << "n = " << n;
        }
      }
    }
  }
}

// Terms that repeat one value (a bias over a zero-padded region: most of the terms
// of a mean over a strided transposed convolution's output, which the fuzzer met)
// round alike step after step: their serial float sum, off by more than the random
// rounding of its partial sums, stays within the bound.
TEST(ErrorBound, RepeatedTermsThatRoundAlikeStayWithinIt) {
  for (int64_t n : {961, 100000}) {
    const Evaluated e = evaluated("kernel k(x: f32[N], b: f32[B]) -> s: f32[] where N = " + std::to_string(n) +
                                      ", B = 1 { s[] = sum(i) select(i % 7 < 2, x[i], b[0] * 2.5) / N }",
                                  4);
    const std::vector<float> &x = e.inputs.at("x");
    const float bias = e.inputs.at("b")[0] * 2.5f;
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (i % 7 < 2 ? x[static_cast<size_t>(i)] : bias) / static_cast<float>(n);
    EXPECT_LE(std::fabs(sum - e.value("s", 0)), e.bound("s", 0)) << n;
  }
}

// A logsumexp computed online (a logaddexp a step, as lowering does), over terms
// most of which are 0 (a relu's): each step adds the same small increment to a large
// partial log-sum, rounding alike (the fuzzer met 144U at 495 terms; at 8000 the error
// is about twice the random rounding's bound); within the bound.
TEST(ErrorBound, AnOnlineLogSumExpOfRepeatedTermsStaysWithinIt) {
  for (uint64_t seed : {1, 2, 3}) {
    const Evaluated e =
        evaluated("kernel k(x: f32[N]) -> s: f32[] where N = 8000 { s[] = logsumexp(i) relu(x[i] - 4.0) }", seed);
    float acc = -INFINITY;
    for (float v : e.inputs.at("x")) {
      const float t = std::max(v - 4.0f, 0.0f), top = std::max(acc, t), low = std::min(acc, t);
      acc = top + std::log(1.0f + std::exp(low - top));  // as the code generator writes logaddexp
    }
    EXPECT_LE(std::fabs(acc - e.value("s", 0)), e.bound("s", 0)) << seed;
  }
}

// The largest error of a 16 x 16 x K matrix product whose operands are rounded to
// `bits` bits after the point (to nearest), as a fraction of e's bound.
double worst_rounded_product(const Evaluated &e, int64_t k_extent, int bits) {
  auto rounded = [bits](float v) {
    if (bits >= 23) return v;
    uint32_t u;
    std::memcpy(&u, &v, 4);
    const uint32_t drop = 23 - static_cast<uint32_t>(bits), half = 1u << (drop - 1);
    u = (u + half) & ~((1u << drop) - 1);
    std::memcpy(&v, &u, 4);
    return v;
  };
  const size_t kn = static_cast<size_t>(k_extent);
  const std::vector<float> &a = e.inputs.at("a"), &b = e.inputs.at("b");
  double worst = 0;
  for (size_t i = 0; i < 16; ++i)
    for (size_t j = 0; j < 16; ++j) {
      float s = 0;
      for (size_t k = 0; k < kn; ++k) s += rounded(a[i * kn + k]) * rounded(b[k * 16 + j]);
      worst = std::max(worst, std::fabs(s - e.value("c", i * 16 + j)) / e.bound("c", i * 16 + j));
    }
  return worst;
}

const char *kMatmul256 =
    "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 16, N = 16, K = 256 "
    "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";

// The operands of a matrix product rounded to TF32 (10 bits of mantissa) or bf16 (7):
// past the bound of an f32 product, which the f32 product itself stays within.
TEST(ErrorBound, ProductsRoundedToLessPrecisionThanDeclaredExceedIt) {
  const Evaluated e = evaluated(kMatmul256, 7);
  EXPECT_LT(worst_rounded_product(e, 256, 23), 1) << "f32";
  EXPECT_GT(worst_rounded_product(e, 256, 10), 1) << "TF32";
  EXPECT_GT(worst_rounded_product(e, 256, 7), 1) << "bf16";
}

// Where the user asked for TF32, the bound takes the factors of a contraction rounded
// to TF32: such a product stays within it at every length of reduction (0.68 of it
// at 8 terms), and so does f32; an elementwise product keeps f32's bound.
TEST(ErrorBound, InTf32TheFactorsOfASumRoundToTf32) {
  for (int64_t k : {8, 256, 4096}) {
    const std::string spec =
        "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 16, N = 16, K = " + std::to_string(k) +
        " { c[i, j] = sum(k) a[i, k] * b[k, j] }";
    const Evaluated e = evaluated(spec, 11, Precision::TF32);
    EXPECT_LT(worst_rounded_product(e, k, 10), 1) << "K = " << k;
    EXPECT_LT(worst_rounded_product(e, k, 23), 1) << "K = " << k;
    // bf16 (7 bits) exceeds it where the reduction is short (8: 5 times, 256: 1.5
    // times); over 4096 terms its random errors stay below the worst case the bound
    // must allow TF32 (inputs that round alike add theirs in full).
    if (k <= 256) {
      EXPECT_GT(worst_rounded_product(e, k, 7), 1) << "K = " << k << ": bf16";
    }
  }
  const Graph g = test::graph_of("kernel m(a: f32[N], b: f32[N]) -> c: f32[N] where N = 8 { c[i] = a[i] * b[i] }");
  EXPECT_EQ(print_graph(with_error_bounds(g, Precision::TF32).graph), print_graph(with_error_bounds(g).graph));
}

// Elementwise chains computed in float with the C library's functions (within the
// ulps the model allows) are within the bound at every element.
TEST(ErrorBound, FloatChainsStayWithinIt) {
  const Evaluated e = evaluated(
      "kernel k(x: f32[N], y: f32[N]) -> z: f32[N] where N = 4096 "
      "{ z[i] = sqrt(abs(x[i] * y[i] + 1.0)) * exp(x[i] / 4.0) - log(1.0 + y[i] * y[i]) / (x[i] - y[i]) }",
      3);
  const std::vector<float> &x = e.inputs.at("x"), &y = e.inputs.at("y");
  for (size_t i = 0; i < x.size(); ++i) {
    const float got =
        std::sqrt(std::fabs(x[i] * y[i] + 1.0f)) * std::exp(x[i] / 4.0f) - std::log(1.0f + y[i] * y[i]) / (x[i] - y[i]);
    EXPECT_LE(std::fabs(got - e.value("z", i)), e.bound("z", i)) << i;
  }
}

// A comparison its operands' rounding may flip makes either side possible: a select
// of 1 or 0 on a computed value equal to the threshold (x * 3 / 3 against x) is off by
// 1; on a computed value far from it, and on inputs as they are, exact.
TEST(ErrorBound, ComparisonsThatMayFlipTakeEitherSide) {
  const Evaluated e = evaluated(
      "kernel k(x: f32[N]) -> (p: f32[N], q: f32[N], r: f32[N]) where N = 64 "
      "{ p[i] = select(x[i] * 3.0 / 3.0 > x[i], 1.0, 0.0)\n q[i] = select(x[i] > 1.0, 2.0, 0.0)\n"
      " r[i] = select(x[i] * 3.0 > x[i] * 3.0 + 100.0, 1.0, 0.0) }",
      5);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_GE(e.bound("p", i), 1) << i;
    // Only the stored value's own rounding (2U at most for 1.0 or 2.0).
    EXPECT_LE(e.bound("q", i), 2.4e-7) << "an input compared as it is: exact";
    EXPECT_LE(e.bound("r", i), 1.2e-7) << i;
  }
}

// Where a divisor is within its bound of zero, the quotient may be anything: the
// bound is infinite there (only NaN fails), finite elsewhere.
TEST(ErrorBound, ADivisorThatMayBeZeroLeavesTheQuotientUnknown) {
  const Evaluated e =
      evaluated("kernel k(x: f32[N]) -> y: f32[N] where N = 8 { y[i] = 1.0 / (x[i] * 3.0 - x[i] * 3.0) }", 1);
  for (size_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isinf(e.bound("y", i))) << i;
  const Evaluated f =
      evaluated("kernel k(x: f32[N]) -> y: f32[N] where N = 8 { y[i] = 1.0 / (x[i] * 3.0 + 100.0) }", 1);
  for (size_t i = 0; i < 8; ++i) EXPECT_TRUE(std::isfinite(f.bound("y", i))) << i;
}

// A difference that is exactly 0 in the reference but not on a device (two roundings
// of the same value), normalised by a root whose argument may reach 0: the quotient
// is unknown, and so is all that is computed from it. 0 times an unknown bound is 0
// (that term: the other factor is exact), never NaN: the fuzzer met a group norm over
// groups of one at bf16 (push_sum's mean) whose bound a NaN made 3.3e-6, the device
// 0.03 off.
TEST(ErrorBound, AnExactZeroTimesAnUnknownFactorLeavesTheProductUnknown) {
  const Evaluated e = evaluated(
      "kernel k(x: f32[N]) -> y: f32[N] where N = 8 {\n a[i] = x[i] * 3.0\n b[i] = x[i] + x[i] + x[i]\n"
      " y[i] = (a[i] - b[i]) * rsqrt((a[i] - b[i]) * (a[i] - b[i]) + 1e-30) * 2.0 + 1.0\n}",
      1);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(e.value("y", i), 1.0) << i;
    EXPECT_TRUE(std::isinf(e.bound("y", i))) << i << ": " << e.bound("y", i);
  }
}

// A computed 16-bit value within its bound of the format's largest finite value may be
// stored as that or as an infinity (a variance of large activations at f16, found at
// conv_transpose3d_batch_norm_pool's check sizes: 65504 on the device, inf in the
// reference): unknown there, finite far from it, and an exact infinity (a mask) stays
// exact.
TEST(ErrorBound, SixteenBitValuesAtTheFormatsEdgeAreUnknown) {
  const Evaluated e = evaluated(
      "kernel k(x: f16[N]) -> (t: f16[N], u: f16[N], m: f16[N]) where N = 64 "
      "{ t[i] = x[i] * x[i] * 0.001 + 65500.0\n u[i] = x[i] * x[i] * 0.001 + 100.0\n"
      " m[i] = select(x[i] > 0.0, x[i], -inf) }",
      3);
  int masked = 0;
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(std::isinf(e.bound("t", i))) << i;
    EXPECT_LT(e.bound("u", i), 0.5) << i;  // 100 at f16: a step of 0.0625
    if (std::isinf(e.value("m", i))) {
      ++masked;
      EXPECT_TRUE(std::isfinite(e.bound("m", i))) << i;
    }
  }
  EXPECT_GT(masked, 0);
}

// An argmax of computed terms may go to either of two terms within their bounds of
// each other (PoCL's exp(tanh(x)) picked the second of two 1 ulp apart): any index
// passes there, and only there; a tie of inputs as they are stays exact (the first).
TEST(ErrorBound, AnArgmaxOfTermsWithinRoundingOfEachOtherIsUnknown) {
  const Graph g = test::graph_of(R"(kernel k(x: f32[N, D]) -> (a: i64[N], b: i64[N]) where N = 3, D = 2 {
  a[n] = argmax(d) exp(tanh(x[n, d]))
  b[n] = argmin(d) x[n, d]
})");
  const ErrorBounds bounds = with_error_bounds(g);
  ASSERT_TRUE(bounds.bound_of.count("a"));
  EXPECT_FALSE(bounds.bound_of.count("b")) << "an argmin of inputs is exact";
  TensorData x{DType::F32, {3, 2}, {}};
  const double next = static_cast<double>(std::nextafter(0.5f, 1.0f));
  x.values = {0.5, next, 0.5, 0.9, 0.7, 0.7};  // 1 ulp apart, far apart, equal
  const TensorMap values = interpret(bounds.graph, {{"x", x}});
  const std::vector<double> &bound = values.at(bounds.bound_of.at("a")).values;
  EXPECT_TRUE(std::isinf(bound[0])) << "terms 1 ulp apart";
  EXPECT_EQ(bound[1], 0) << "terms far apart";
  EXPECT_TRUE(std::isinf(bound[2])) << "equal computed terms: a device may round them apart";
  EXPECT_EQ(values.at("b").values[2], 0) << "a tie of inputs: the first index";
}

// What the bound graph holds: a bound per float stage after it (f32, the tensor's
// shape), an output's an output too; none for integers that cannot flip, for an
// argmax of inputs, and for a max of inputs (exact); a spec that verifies.
TEST(ErrorBound, EachFloatTensorHasItsBoundAfterIt) {
  const Graph g = test::graph_of(R"(kernel k(x: f32[N, D]) -> (y: f32[N, D], m: f32[N], a: i64[N]) where N = 3, D = 5 {
  m[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - m[n])
  t[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / t[n]
  a[n] = argmax(d) x[n, d]
})");
  const ErrorBounds b = with_error_bounds(g);
  EXPECT_FALSE(b.bound_of.count("m")) << "a max of inputs is exact";
  EXPECT_FALSE(b.bound_of.count("a")) << "an argmax of inputs is exact";
  for (const char *t : {"e", "t", "y"}) {
    ASSERT_TRUE(b.bound_of.count(t)) << t;
    const TensorDecl *d = b.graph.find_tensor(b.bound_of.at(t));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->type, DType::F32);
    EXPECT_EQ(d->shape, g.find_tensor(t)->shape);
    EXPECT_EQ(d->role, std::string(t) == "y" ? TensorRole::Output : TensorRole::Temp) << t;
  }
  // The graph's own stages keep their order; each bound comes after its stage.
  std::vector<std::string> order;
  for (const Stage &s : b.graph.stages) order.push_back(s.output);
  auto at = [&](const std::string &name) { return std::find(order.begin(), order.end(), name) - order.begin(); };
  EXPECT_LT(at("e"), at(b.bound_of.at("e")));
  EXPECT_LT(at(b.bound_of.at("e")), at("t"));
  EXPECT_LT(at("t"), at("y"));
}

// A softmax_sum's bound is computed as the two passes it stands for: its scores and
// their exponentials over the rows and j alone, never over the value's columns too (at
// KernelBench's attention sizes that was a tensor of B H T T D floats, 64 GiB, and no
// one-pass candidate of a search on a GPU could be checked).
TEST(ErrorBound, ASoftmaxSumsPassesAreNoLargerThanItsScores) {
  Graph g = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/attention.ks"),
                                frontend::SizeSet::Default, {});
  std::string reason;
  std::optional<Graph> one_pass = try_rewrite(g, Rewrite{RewriteKind::OnlineAttention, "y", {}, {}, 0, {}}, &reason);
  ASSERT_TRUE(one_pass) << reason;
  const ErrorBounds b = with_error_bounds(*one_pass);
  const int64_t scores = g.find_tensor("s")->numel();  // B H T T
  for (const TensorDecl &t : b.graph.tensors) EXPECT_LE(t.numel(), scores) << t.name;
  EXPECT_TRUE(b.bound_of.count("y"));
}

}  // namespace
}  // namespace ks
