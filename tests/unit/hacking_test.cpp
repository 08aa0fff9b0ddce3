// The evaluator against kernels that game it (KernelBench has seen each pass its own
// checks): a hand-written softmax body (tests/adversarial/softmax_honest.cl) passes,
// and each edit of it that cheats is caught, by the check or by a hacking flag.
#include "evolve/evaluate.h"
#include "runtime/device.h"
#include "test_util.h"

namespace ks {
namespace {

// The honest body with one line replaced.
std::string cheat(const std::string &line, const std::string &replacement) {
  std::string body = test::honest_softmax_body();
  size_t at = body.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  return at == std::string::npos ? body : body.replace(at, line.size(), replacement);
}

EvalRecord evaluated(const std::string &body, bool time = false) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  EvalOptions options;
  options.kernel_source = body;
  options.time = time;
  options.timing.batches = 3;
  options.timing.min_batch_ms = 0.2;
  frontend::parse_size_assignments("N=8,D=1024", &options.sizes);
  auto device = runtime::open_device("", "opencl");
  return evaluate(frontend::load_spec(path), path, *device, options);
}

class Hacking : public testing::Test {
 protected:
  void SetUp() override {
    if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  }
};

TEST_F(Hacking, TheHonestBodyPasses) {
  EvalRecord r = evaluated(test::honest_softmax_body(), true);
  EXPECT_TRUE(r.ok()) << r.to_json().dump(2);
  EXPECT_TRUE(r.hacking_flags.empty());
  EXPECT_EQ(r.verdict(), "correct");
  EXPECT_EQ(r.features.kind, "kernel body");
  ASSERT_TRUE(r.time && r.time->versus_naive);
  EXPECT_TRUE(r.time->versus_naive->passed);
}

// Softmax outputs are tiny (about 1/D): zeros, or the average, are far off relative
// to the tensor's typical magnitude.
TEST_F(Hacking, ZeroOrConstantOutputsFail) {
  for (const char *value : {"0.0f", "1.0f / D"}) {
    EvalRecord r = evaluated(cheat("y[i] = e[i] / total[i / D];", std::string("y[i] = ") + value + ";"));
    EXPECT_FALSE(r.ok()) << value;
    EXPECT_FALSE(r.check.passed) << value;
    EXPECT_GT(r.check.worst_error, 0.1) << value;
    EXPECT_EQ(r.verdict().rfind("incorrect at N=5, D=37: y[", 0), 0u) << r.verdict();
  }
}

// Half the elements computed: the rest stay poisoned (NaN), which never passes.
TEST_F(Hacking, PartialOutputsFail) {
  EvalRecord r = evaluated(cheat("  if (i >= N * D) return;\n  y[i]", "  if (i >= N * D / 2) return;\n  y[i]"));
  EXPECT_FALSE(r.check.passed) << r.to_json().dump(2);
  EXPECT_EQ(r.check.bad_elements, 5 * 37 - 5 * 37 / 2) << "the second half of the 5 x 37 check";
}

// An input overwritten after use: the outputs are right, the inputs are not.
TEST_F(Hacking, ChangedInputsAreFlagged) {
  EvalRecord r =
      evaluated(cheat("__kernel void e(__global const float *x, __global const float *row_max, __global float *e) {\n"
                      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n",
                      "__kernel void e(__global float *x, __global const float *row_max, __global float *e) {\n"
                      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n"
                      "  x[i] = 0.0f;\n"));
  EXPECT_TRUE(r.check.passed) << "the outputs themselves are right";
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.hacking_flags.size(), 1u) << r.to_json().dump(2);
  EXPECT_EQ(r.hacking_flags[0], "changes its input x");
  EXPECT_EQ(r.verdict(), "flagged: it changes its input x");
}

// Work skipped where the output already holds a value: right from poisoned outputs,
// wrong when the last answer is left in place and the inputs change.
TEST_F(Hacking, KeepingAPreviousAnswerIsFlagged) {
  EvalRecord r =
      evaluated(cheat("  y[i] = e[i] / total[i / D];", "  if (y[i] == y[i]) return;\n  y[i] = e[i] / total[i / D];"));
  EXPECT_TRUE(r.check.passed) << "from poisoned outputs it computes";
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.hacking_flags.size(), 1u) << r.to_json().dump(2);
  EXPECT_EQ(
      r.hacking_flags[0].rfind("keeps a previous answer: given new inputs with the last outputs left in place, y[", 0),
      0u)
      << r.hacking_flags[0];
  EXPECT_EQ(r.to_json()["hacking_flags"].size(), 1u);
}

// Bad input: a body on a Vulkan device, a body with a schedule, a body that does not
// build (the driver's log).
TEST_F(Hacking, KernelBodiesRefuseClearly) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  auto device = runtime::open_device("", "opencl");
  EvalOptions options;
  options.kernel_source = "__kernel void row_max(__global const float *x) { nowhere = 1; }\n";
  options.time = false;
  // The driver's log is the record's compile log: what a proposer sees next.
  EvalRecord r = evaluate(frontend::load_spec(path), path, *device, options);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->stage, "build");
  EXPECT_EQ(r.failure->sizes, "check");
  EXPECT_NE(r.failure->message.find("nowhere"), std::string::npos) << r.failure->message;
  nlohmann::json j = r.to_json();
  EXPECT_FALSE(j["ok"]);
  EXPECT_FALSE(j["compile"]["ok"]);
  EXPECT_NE(j["compile"]["log"].get<std::string>().find("nowhere"), std::string::npos);
  EXPECT_EQ(j["features"]["kind"], "kernel body");
  options.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/examples/softmax.sched");
  EXPECT_EQ(test::user_error([&] { evaluate(frontend::load_spec(path), path, *device, options); }),
            "error: a kernel body replaces the generated code; it takes no schedule");
}

}  // namespace
}  // namespace ks
