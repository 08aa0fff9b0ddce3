// The reference interpreter against values computed by hand.
#include "ir/interpreter.h"

#include <cmath>

#include "test_util.h"

namespace ks {
namespace {

TensorData tensor(std::vector<int64_t> shape, std::vector<double> values, DType type = DType::F32) {
  return TensorData{type, std::move(shape), std::move(values)};
}

std::vector<double> run(const std::string &spec, const TensorMap &inputs, const std::string &output) {
  return interpret(test::graph_of(spec), inputs).at(output).values;
}

TEST(Interpreter, Matmul2x2) {
  auto c =
      run("kernel mm(a: f32[N, N], b: f32[N, N]) -> c: f32[N, N] where N = 2 { c[i, j] = sum(k) a[i, k] * b[k, j] }",
          {{"a", tensor({2, 2}, {1, 2, 3, 4})}, {"b", tensor({2, 2}, {5, 6, 7, 8})}}, "c");
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50}));
}

TEST(Interpreter, SoftmaxOfLogs) {
  auto y = run(R"(kernel s(x: f32[N]) -> y: f32[N] where N = 3 {
  m[] = max(i) x[i]
  e[i] = exp(x[i] - m[])
  t[] = sum(i) e[i]
  y[i] = e[i] / t[]
})",
               {{"x", tensor({3}, {0.0, std::log(2.0), std::log(3.0)})}}, "y");
  ASSERT_EQ(y.size(), 3u);
  EXPECT_NEAR(y[0], 1.0 / 6, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 6, 1e-15);
  EXPECT_NEAR(y[2], 3.0 / 6, 1e-15);
}

// Reductions over ranges that depend on the indices: the cumulative forms and a
// triangular product, against loops written here.
TEST(Interpreter, RangesThatDependOnTheIndices) {
  const std::string spec = R"(kernel scans(x: f32[N]) -> (y: f32[N], r: f32[N], e: f32[N], p: f32[N], m: f32[N])
  where N = 5
{
  y[i] = sum(k: 0..i + 1) x[k]
  r[i] = sum(k: i..N) x[k]
  e[i] = sum(k: 0..i) x[k]
  p[i] = prod(k: 0..i + 1) x[k]
  m[i] = max(k: 0..i + 1) x[k]
})";
  const std::vector<double> x = {3, -1, 4, 1, -5};
  TensorMap out = interpret(test::graph_of(spec), {{"x", tensor({5}, x)}});
  for (int i = 0; i < 5; ++i) {
    double inclusive = 0, reverse = 0, product = 1, best = -INFINITY;
    for (int k = 0; k <= i; ++k) inclusive += x[k], product *= x[k], best = std::max(best, x[k]);
    for (int k = i; k < 5; ++k) reverse += x[k];
    EXPECT_EQ(out.at("y").values[i], inclusive) << i;
    EXPECT_EQ(out.at("r").values[i], reverse) << i;
    EXPECT_EQ(out.at("e").values[i], inclusive - x[i]) << i;  // exclusive: e[0] sums nothing
    EXPECT_EQ(out.at("p").values[i], product) << i;
    EXPECT_EQ(out.at("m").values[i], best) << i;
  }
  auto c = run(
      "kernel t(a: f32[N, N], b: f32[N, N]) -> c: f32[N, N] where N = 3 { c[i, j] = sum(k: j..i + 1) a[i, k] * b[k, j] "
      "}",
      {{"a", tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}, {"b", tensor({3, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3})}}, "c");
  // c[i, j] sums k from j to i: zero above the diagonal.
  EXPECT_EQ(c, (std::vector<double>{1, 0, 0, 4 + 10, 10, 0, 7 + 16 + 27, 16 + 27, 27}));
}

TEST(Interpreter, ArgmaxTakesTheFirstOfTies) {
  auto y = run("kernel a(x: f32[N, M]) -> y: i64[N] where N = 2, M = 4 { y[i] = argmax(j) x[i, j] }",
               {{"x", tensor({2, 4}, {1, 3, 3, 2, -5, -1, -7, -1})}}, "y");
  EXPECT_EQ(y, (std::vector<double>{1, 1}));
  auto z = run("kernel a(x: f32[N, M]) -> y: i64[N] where N = 2, M = 4 { y[i] = argmin(j) x[i, j] }",
               {{"x", tensor({2, 4}, {1, 3, 3, 1, -5, -1, -7, -7})}}, "y");
  EXPECT_EQ(z, (std::vector<double>{0, 2}));
}

TEST(Interpreter, ArgmaxOverTwoVariablesIsRowMajor) {
  auto y = run("kernel a(x: f32[N, M]) -> y: i64[] where N = 2, M = 3 { y[] = argmax(i, j) x[i, j] }",
               {{"x", tensor({2, 3}, {0, 1, 2, 3, 9, 4})}}, "y");
  EXPECT_EQ(y, (std::vector<double>{4}));
}

TEST(Interpreter, FloorDivisionAndModulo) {
  auto d = run("kernel f(x: f32[N]) -> y: f32[N] where N = 5 { y[i] = f32((i - 3) / 2) }",
               {{"x", tensor({5}, {0, 0, 0, 0, 0})}}, "y");
  EXPECT_EQ(d, (std::vector<double>{-2, -1, -1, 0, 0}));
  auto m = run("kernel f(x: f32[N]) -> y: f32[N] where N = 5 { y[i] = f32((i - 3) % 2) }",
               {{"x", tensor({5}, {0, 0, 0, 0, 0})}}, "y");
  EXPECT_EQ(m, (std::vector<double>{1, 0, 1, 0, 1}));
}

TEST(Interpreter, PaddedReads) {
  auto y = run("kernel p(x: f32[N]) -> y: f32[N] where N = 4 { y[i] = (x[i - 1] else 7.0) + (x[i + 1] else -1.0) }",
               {{"x", tensor({4}, {10, 20, 30, 40})}}, "y");
  EXPECT_EQ(y, (std::vector<double>{7 + 20, 10 + 30, 20 + 40, 30 - 1}));
}

TEST(Interpreter, MaxPoolWithInfinitePadding) {
  auto y = run("kernel p(x: f32[N]) -> y: f32[N / 2] where N = 4 { y[o] = max(k: 3) x[o * 2 + k - 1] else -inf }",
               {{"x", tensor({4}, {-3, -1, -4, -2})}}, "y");
  EXPECT_EQ(y, (std::vector<double>{-1, -1}));
}

TEST(Interpreter, ProductAndMinimum) {
  auto p = run("kernel p(x: f32[N]) -> y: f32[] where N = 4 { y[] = prod(i) x[i] }",
               {{"x", tensor({4}, {1, -2, 3, 0.5})}}, "y");
  EXPECT_EQ(p, (std::vector<double>{-3}));
  auto m = run("kernel p(x: f32[N]) -> y: f32[] where N = 4 { y[] = min(i) x[i] }",
               {{"x", tensor({4}, {1, -2, 3, 0.5})}}, "y");
  EXPECT_EQ(m, (std::vector<double>{-2}));
}

TEST(Interpreter, GatherThroughAnIntegerTensor) {
  auto y = run("kernel g(x: f32[N, C], t: i64[N] in 0..C) -> y: f32[N] where N = 2, C = 3 { y[n] = x[n, t[n]] }",
               {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, {"t", tensor({2}, {2, 0}, DType::I64)}}, "y");
  EXPECT_EQ(y, (std::vector<double>{3, 4}));
}

TEST(Interpreter, Builtins) {
  auto y = run(
      "kernel b(x: f32[N]) -> y: f32[N] where N = 3 { y[i] = gelu(x[i]) + relu(x[i]) * 0.0 + leaky_relu(x[i], 0.1) }",
      {{"x", tensor({3}, {-1, 0, 2})}}, "y");
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  EXPECT_DOUBLE_EQ(y[0], gelu(-1) - 0.1);
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  EXPECT_DOUBLE_EQ(y[2], gelu(2) + 2);
}

TEST(Interpreter, MissingOrMisshapedInput) {
  Graph g = test::graph_of("kernel k(x: f32[N]) -> y: f32[N] where N = 4 { y[i] = x[i] }");
  EXPECT_EQ(test::user_error([&] { interpret(g, {}); }), "error: no value given for input 'x'");
  EXPECT_EQ(test::user_error([&] {
              interpret(g, {{"x", tensor({3}, {1, 2, 3})}});
            }),
            "error: input 'x' has the wrong shape");
}

}  // namespace
}  // namespace ks
