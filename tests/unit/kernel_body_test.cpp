// Kernel bodies with their own launch plans: the plan's grammar and its resolution
// at sizes (frontend/kernel_body.h), Clang's checks on the catalogue in
// tests/bodies/ (frontend/body_check.h), and the catalogue's honest bodies run by the
// evaluator on an OpenCL device.
#include "frontend/kernel_body.h"

#include <filesystem>
#include <fstream>

#include "evolve/evaluation/evaluate.h"
#include "test_util.h"

namespace ks {
namespace {

const char *kSoftmax = R"(kernel softmax(x: f32[N, D]) -> y: f32[N, D]
  where N = 6, D = 100
{
  row_max[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - row_max[n])
  total[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / total[n]
}
)";

frontend::KernelBody body_of(const std::string &text) {
  return frontend::parse_kernel_body(test::source(text, "b.cl"));
}

frontend::ResolvedPlan resolved(const std::string &text) {
  frontend::KernelBody body = body_of(text);
  EXPECT_TRUE(body.plan);
  return frontend::resolve_plan(*body.plan, test::graph_of(kSoftmax));
}

TEST(KernelBody, WithoutAPlanItIsTheOlderForm) {
  EXPECT_FALSE(body_of("__kernel void softmax_k0(__global float *x) {}\n/* a comment */\n").plan);
  EXPECT_NE(test::user_error([] { body_of(" \n\t"); }).find("b.cl:1:1: error: the kernel body is empty"),
            std::string::npos);
}

TEST(KernelBody, APlanResolvesAtTheSizes) {
  frontend::ResolvedPlan p = resolved(R"(// a body
/* ksmith plan
   scratch stats: f32[N, 2]   # max and sum
   launch stats_k global [N * 64] local [64] (x, stats, D)
   launch out_k global [D, N] local [32, 1] (x, stats, y, D, N)
*/
__kernel void stats_k() {}
)");
  ASSERT_EQ(p.scratch.size(), 1u);
  EXPECT_EQ(p.scratch[0].name, "stats");
  EXPECT_EQ(p.scratch[0].shape, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(p.scratch[0].role, TensorRole::Temp);
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[0].global[0], 384);
  // Global sizes round up to a multiple of local: 100 -> 128.
  EXPECT_EQ(p.launches[1].dims, 2);
  EXPECT_EQ(p.launches[1].global[0], 128);
  EXPECT_EQ(p.launches[1].global[1], 6);
  EXPECT_EQ(p.launches[1].local[0], 32);
  ASSERT_EQ(p.launches[1].args.size(), 5u);
  EXPECT_EQ(p.launches[1].args[1].kind, frontend::ResolvedArg::Kind::Scratch);
  EXPECT_EQ(p.launches[1].args[2].kind, frontend::ResolvedArg::Kind::Tensor);
  EXPECT_EQ(p.launches[1].args[3].kind, frontend::ResolvedArg::Kind::Size);
  EXPECT_EQ(p.launches[1].args[3].value, 100);
  EXPECT_EQ(p.launches[1].args[4].value, 6);
}

// Each error names the place in the body (line and column of the body's own text)
// and what is wrong.
TEST(KernelBody, PlanErrorsPointAtTheBody) {
  struct Case {
    const char *plan, *where, *message;
  };
  const Case cases[] = {
      {"   launch k global [N] local [1] (x, y)\n   lanch j", "b.cl:3:4:", "expected 'scratch' or 'launch'"},
      {"   launch k global [N] (x, y)", "b.cl:2:24:", "expected 'local'"},
      {"   launch k global [N, D] local [1] (x, y)", "b.cl:2:27:", "2 global and 1 local dimensions"},
      {"   launch k global [N, D, 1, 1] local [1] (x, y)", "b.cl:2:30:", "the global sizes: at most 3 dimensions"},
      {"   launch k global [N] local [1] (x, total)", "b.cl:2:38:", "'total' is an intermediate of the spec"},
      {"   launch k global [N] local [1] (x, y, Q)",
       "b.cl:2:41:", "'Q' is neither a tensor of the spec (x, y), a scratch buffer nor a size; sizes are N, D"},
      {"   launch k global [N] local [1] (x)", "b.cl:1:1:", "output 'y' is passed to no kernel"},
      {"   launch k global [M] local [1] (x, y)", "b.cl:2:21:", "unknown size 'M'; sizes are N, D"},
      {"   launch k global [N] local [0] (x, y)", "b.cl:2:31:", "local size x of kernel k is 0"},
      {"   launch k global [N - 6] local [1] (x, y)", "b.cl:2:23:", "global size x of kernel k is 0"},
      {"   scratch s: f16[N]\n   launch k global [N] local [1] (x, y)", "b.cl:2:15:", "unknown type 'f16'"},
      {"   scratch D: f32[N]\n   launch k global [N] local [1] (x, y)", "b.cl:2:12:", "has the name of a size"},
      {"   scratch y: f32[N]\n   launch k global [N] local [1] (x, y)", "b.cl:2:12:", "name of a tensor of the spec"},
      {"   scratch s: f32[N]\n   scratch s: f32[1]\n   launch k global [N] local [1] (x, y)",
       "b.cl:3:12:", "declared twice"},
      {"   scratch s: f32[N - 7]\n   launch k global [N] local [1] (x, y)", "b.cl:2:21:", "must be at least 1"},
      {"", "b.cl:1:1:", "the plan launches no kernel"},
  };
  for (const Case &c : cases) {
    std::string text = std::string("/* ksmith plan\n") + c.plan + "\n*/\n__kernel void k() {}\n";
    std::string error = test::user_error([&] { resolved(text); });
    EXPECT_NE(error.find(c.where), std::string::npos) << c.plan << "\n" << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.plan << "\n" << error;
  }
  EXPECT_NE(test::user_error([] {
              body_of("/* ksmith plan\n launch k global [N] local [1] (x, y)\n");
            }).find("b.cl:1:1: error: the plan's comment is never closed"),
            std::string::npos);
  EXPECT_NE(test::user_error([] {
              body_of("/* ksmith plan launch k global [1] local [1] (x, y) */\n/* ksmith plan */\n");
            }).find("b.cl:2:1: error: a second plan"),
            std::string::npos);
}

// The catalogue: each file's first lines say its spec and what must happen.
struct Entry {
  std::string path, spec, expect, detail;
};

std::vector<Entry> catalogue() {
  std::vector<Entry> out;
  for (const auto &f : std::filesystem::directory_iterator(std::string(KS_SOURCE_DIR) + "/tests/bodies")) {
    if (f.path().extension() != ".cl") continue;
    std::ifstream in(f.path());
    Entry e{f.path().string(), "", "", ""};
    std::string line;
    while (std::getline(in, line) && line.rfind("//", 0) == 0) {
      if (line.rfind("// spec: ", 0) == 0) e.spec = line.substr(9);
      if (line.rfind("// expect: ", 0) == 0) {
        std::string what = line.substr(11);
        size_t space = what.find(' ');
        e.expect = what.substr(0, space);
        e.detail = space == std::string::npos ? "" : what.substr(space + 1);
      }
    }
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const Entry &a, const Entry &b) { return a.path < b.path; });
  return out;
}

EvalOptions options_for(const Entry &e) {
  EvalOptions options;
  options.kernel_source = read_source_file(e.path, "kernel body")->text;
  options.kernel_label = std::filesystem::path(e.path).filename().string();
  return options;
}

frontend::Spec spec_for(const Entry &e) {
  return frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + e.spec + ".ks");
}

TEST(KernelBody, TheCatalogueHasEveryKind) {
  std::map<std::string, int> kinds;
  std::set<std::string> rules;
  for (const Entry &e : catalogue()) {
    ++kinds[e.expect];
    if (e.expect == "rule") rules.insert(e.detail);
  }
  EXPECT_GE(kinds["accepted"], 10);
  EXPECT_GE(kinds["rule"] + kinds["plan"] + kinds["wrong"], 12);
  for (const char *rule : {"syntax", "kernel", "arity", "type", "output-not-written", "input-written", "input-unread",
                           "printf", "pointer-from-integer"})
    EXPECT_TRUE(rules.count(rule)) << "no body in tests/bodies breaks rule " << rule;
}

TEST(KernelBody, ClangChecksTheCatalogue) {
  if (!have_body_check()) GTEST_SKIP() << "this build has no Clang to check bodies with (libclang-cpp15-dev)";
  for (const Entry &e : catalogue()) {
    SCOPED_TRACE(e.path);
    ASSERT_FALSE(e.spec.empty() || e.expect.empty()) << "the first lines say '// spec: NAME' and '// expect: ...'";
    if (e.expect == "plan") {
      std::string error = test::user_error([&] { check_kernel_body(spec_for(e), options_for(e)); });
      EXPECT_NE(error.find(e.detail), std::string::npos) << error;
      continue;
    }
    frontend::BodyCheck check = check_kernel_body(spec_for(e), options_for(e));
    if (e.expect == "accepted" || e.expect == "wrong") {
      EXPECT_TRUE(check.ok()) << check.text(e.path);
      EXPECT_GE(check.features.kernels, 1);
    } else {
      ASSERT_EQ(e.expect, "rule");
      bool found = false;
      for (const frontend::BodyProblem &p : check.problems) found |= p.rule == e.detail;
      EXPECT_TRUE(found) << "expected rule " << e.detail << ", got:\n" << check.text(e.path);
      // Each problem with a place has the body's line.
      for (const frontend::BodyProblem &p : check.problems) EXPECT_GE(p.line, 0);
    }
  }
}

// The honest bodies run correctly at the spec's check sizes (odd ones: every guard
// matters) and at a small timed size; the wrong ones are caught by the evaluator.
TEST(KernelBody, TheCatalogueRunsOnTheDevice) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  for (const Entry &e : catalogue()) {
    if (e.expect != "accepted" && e.expect != "wrong") continue;
    SCOPED_TRACE(e.path);
    EvalOptions options = options_for(e);
    options.time = true;
    options.timing.batches = 3;
    options.timing.min_batch_ms = 0.2;
    // An honest body's time from reset and from carried state is the Hacking tests'
    // (run alone): under ctest -j2 another test's compiles skew it.
    options.state_timing = e.expect != "accepted";
    // Timed at twice the check sizes plus one: small, and odd again.
    frontend::Spec spec = spec_for(e);
    Graph check = frontend::elaborate(spec, frontend::SizeSet::Check, {});
    for (const frontend::AstSize &s : spec.check_sizes)
      for (const SizeBinding &b : check.sizes)
        if (b.name == s.name) options.sizes.values[s.name] = b.value * 2 + 1;
    EvalRecord r = evaluate(spec, e.path, *device, options);
    if (e.expect == "accepted") {
      EXPECT_TRUE(r.ok()) << r.verdict();
      EXPECT_EQ(r.features.kind, "kernel body");
    } else {
      EXPECT_FALSE(r.ok());
      EXPECT_NE(r.verdict().find(e.detail), std::string::npos) << r.verdict();
    }
  }
}

}  // namespace
}  // namespace ks
