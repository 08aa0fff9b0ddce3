// Parsing and elaboration of specs: inference of shapes and extents, sizes, types.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "frontend/elaborate.h"
#include "ir/diagnostic.h"
#include "ir/printer.h"
#include "test_util.h"

namespace ks {
namespace {

const Stage &stage_of(const Graph &g, const std::string &name) {
  for (const Stage &s : g.stages)
    if (s.output == name) return s;
  throw std::runtime_error("no stage " + name);
}

TEST(Frontend, IntermediateShapesAreInferred) {
  Graph g = test::graph_of(R"(
kernel softmax(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 5 {
  row_max[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - row_max[n])
  total[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / total[n]
})");
  ASSERT_NE(g.find_tensor("row_max"), nullptr);
  EXPECT_EQ(g.find_tensor("row_max")->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(g.find_tensor("row_max")->role, TensorRole::Temp);
  EXPECT_EQ(g.find_tensor("e")->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(stage_of(g, "row_max").reduce, ReduceOp::Max);
  ASSERT_EQ(stage_of(g, "row_max").reduce_vars.size(), 1u);
  EXPECT_EQ(stage_of(g, "row_max").reduce_vars[0].extent, 5);
}

TEST(Frontend, ReductionExtentsComeFromBareIndices) {
  Graph g = test::graph_of(R"(
kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 2, N = 3, K = 7 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
})");
  const Stage &s = stage_of(g, "c");
  EXPECT_EQ(s.spatial[0].extent, 2);
  EXPECT_EQ(s.spatial[1].extent, 3);
  EXPECT_EQ(s.reduce_vars[0].extent, 7);
  EXPECT_EQ(print_expr(s.body), "a[i, k] * b[k, j]");
}

TEST(Frontend, IntegersBecomeFloatsInFloatArithmetic) {
  Graph g = test::graph_of("kernel k(x: f32[N]) -> y: f32[N] where N = 4 { y[i] = x[i] * 2 + i / N }");
  // i / N stays integer division (floor), then converts; 2 folds to 2.0.
  EXPECT_EQ(print_expr(stage_of(g, "y").body), "x[i] * 2.0 + f32(i / 4)");
}

TEST(Frontend, SizeSetsAndOverrides) {
  const char *text =
      "kernel k(x: f32[N, M]) -> y: f32[N, M] where N = 100, M = N * 2 check N = 3 { y[i, j] = x[i, j] }";
  frontend::Spec spec = frontend::parse_spec(test::source(text));
  Graph full = frontend::elaborate(spec, frontend::SizeSet::Default, {});
  EXPECT_EQ(full.find_tensor("x")->shape, (std::vector<int64_t>{100, 200}));
  Graph check = frontend::elaborate(spec, frontend::SizeSet::Check, {});
  EXPECT_EQ(check.find_tensor("x")->shape, (std::vector<int64_t>{3, 6})) << "derived sizes follow the check size";
  frontend::SizeOverrides o;
  o.values["N"] = 7;
  EXPECT_EQ(frontend::elaborate(spec, frontend::SizeSet::Check, o).find_tensor("x")->shape,
            (std::vector<int64_t>{7, 14}));
  // M is derived from N: set alone, the spec would describe another problem.
  o.values["M"] = 5;
  EXPECT_EQ(test::user_error([&] { frontend::elaborate(spec, frontend::SizeSet::Default, o); }),
            "error: --size M=5: M is derived from N (line 1); give those instead");
}

TEST(Frontend, SizeAssignments) {
  frontend::SizeOverrides o;
  frontend::parse_size_assignments("M=64,N=32", &o);
  frontend::parse_size_assignments("K=0", &o);
  EXPECT_EQ(o.values.at("M"), 64);
  EXPECT_EQ(o.values.at("N"), 32);
  EXPECT_EQ(o.values.at("K"), 0);
  // Any other number is a constant's value; only the spec can say a size got one.
  frontend::parse_size_assignments("eps=1e-3,slope=-1", &o);
  EXPECT_EQ(o.constants.at("eps"), 1e-3);
  EXPECT_EQ(o.constants.at("slope"), -1.0);
  EXPECT_EQ(o.values.count("slope"), 0u);
  for (const char *bad : {"M", "=3", "M=", "M=3x", "M=3,,N=2", "M=nan", "M=inf", "M=1e999"})
    EXPECT_NE(test::user_error([&] { frontend::parse_size_assignments(bad, &o); }), "") << bad;
}

TEST(Frontend, MaxIsAReductionOnlyOverNewNames) {
  Graph g = test::graph_of(R"(
kernel k(x: f32[N, M]) -> (y: f32[N, M], z: f32[N]) where N = 2, M = 3 {
  y[i, j] = max(x[i, j], 0.0)
  z[i] = max(j) x[i, j]
})");
  EXPECT_EQ(stage_of(g, "y").reduce, ReduceOp::None);
  EXPECT_EQ(print_expr(stage_of(g, "y").body), "max(x[i, j], 0.0)");
  EXPECT_EQ(stage_of(g, "z").reduce, ReduceOp::Max);
}

TEST(Frontend, ArgmaxIntermediateIsI64AndBoundsIndices) {
  // The argmax result indexes x: its range [0, M) is known, so no pad is needed.
  Graph g = test::graph_of(R"(
kernel k(x: f32[N, M]) -> y: f32[N] where N = 2, M = 3 {
  best[i] = argmax(j) x[i, j]
  y[i] = x[i, best[i]]
})");
  EXPECT_EQ(g.find_tensor("best")->type, DType::I64);
}

TEST(Frontend, PadsAndDataDependentIndices) {
  Graph g = test::graph_of(R"(
kernel k(x: f32[N], t: i32[N] in 0..N) -> y: f32[N] where N = 4 {
  y[i] = (x[i - 1] else -inf) + x[t[i]]
})");
  EXPECT_EQ(print_expr(stage_of(g, "y").body), "(x[i - 1] else -inf) + x[t[i]]");
  const Load *first = stage_of(g, "y").body.as<Binary>()->a.as<Load>();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->pad.has_value());
  EXPECT_TRUE(std::isinf(*first->pad) && *first->pad < 0);
}

TEST(Frontend, ScalarOutput) {
  Graph g = test::graph_of("kernel k(x: f32[N]) -> s: f32[] where N = 4 { s[] = sum(i) x[i] }");
  EXPECT_TRUE(g.find_tensor("s")->shape.empty());
  EXPECT_EQ(g.find_tensor("s")->numel(), 1);
}

TEST(Frontend, ExplicitExtentsForSpatialAndReductionVariables) {
  Graph g = test::graph_of(R"(
kernel pool(x: f32[H]) -> y: f32[H / 2] where H = 8 {
  t[o: H / 2] = max(k: 2) x[o * 2 + k]
  y[o] = t[o]
})");
  EXPECT_EQ(g.find_tensor("t")->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(stage_of(g, "t").reduce_vars[0].extent, 2);
}

TEST(Frontend, ErrorsPointAtTheSource) {
  std::string m =
      test::user_error([] { test::graph_of("kernel k(x: f32[N]) -> y: f32[N] where N = 4 {\n  y[i] = x[i + 1]\n}"); });
  EXPECT_EQ(m,
            "test.ks:2:14: error: index i + 1 of 'x' ranges over [1, 4] but dimension 0 has extent 4; add 'else "
            "VALUE' to read padding outside\n  y[i] = x[i + 1]\n             ^");
}

TEST(Frontend, MissingFileIsAPlainError) {
  EXPECT_EQ(test::user_error([] { frontend::load_spec("/nonexistent/spec.ks"); }),
            "error: cannot open spec '/nonexistent/spec.ks'");
}

// What is not a spec says what it is: a folder (and which commands take one), a
// binary; a byte-order mark is dropped, so the spec parses and its places stay right.
TEST(Frontend, AFolderOrABinaryIsNotASpec) {
  const std::string dir = testing::TempDir() + "/not_a_spec";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_EQ(
      test::user_error([&] { frontend::load_spec(dir); }),
      "error: '" + dir + "' is a folder, not a spec file (a folder of specs is for `ksmith tune` and `ksmith bench`)");
  write_text_file(dir + "/db.ks", std::string("SQLite format 3\0\x10\x00", 19));
  EXPECT_EQ(test::user_error([&] { frontend::load_spec(dir + "/db.ks"); }),
            "error: spec '" + dir + "/db.ks' is not a text file (a NUL byte at offset 15)");
  write_text_file(dir + "/bom.ks",
                  "\xEF\xBB\xBFkernel k(x: f32[N]) -> y: f32[N] where N = 4 {\n  y[i] = x[i + 1]\n}\n");
  const std::string m = test::user_error(
      [&] { frontend::elaborate(frontend::load_spec(dir + "/bom.ks"), frontend::SizeSet::Default, {}); });
  EXPECT_EQ(m.substr(0, m.find(": error:")), dir + "/bom.ks:2:14") << m;
}

// Output files are written whole through a rename, but never a rename over what is not
// a file: `ksmith interpret -o /dev/null` as root had put a file in /dev/null's place.
// A pipe keeps being a pipe and gets the text; a link stays a link, its file written.
TEST(WriteTextFile, WritesIntoAPipeAndThroughALink) {
  const std::string dir = testing::TempDir() + "/write_text_file";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so that the writer's open returns
  ASSERT_GE(reader, 0);
  write_text_file(fifo, "through the pipe");
  char got[64] = {};
  const ssize_t n = ::read(reader, got, sizeof got - 1);
  ::close(reader);
  EXPECT_EQ(std::string(got, n > 0 ? static_cast<size_t>(n) : 0), "through the pipe");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo)) << "a file took the pipe's place";
  const std::string file = dir + "/file", link = dir + "/link";
  write_text_file(file, "old");
  std::filesystem::create_symlink(file, link);
  write_text_file(link, "new");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "new");
}

}  // namespace
}  // namespace ks
