// The evaluator against kernels that game it (KernelBench has seen each pass its own
// checks): a hand-written softmax body (tests/adversarial/softmax.cl) passes,
// and each edit of it that cheats is caught, by the check or by a hacking flag.
#include <limits>

#include "evolve/evaluation/compare.h"
#include "evolve/evaluation/evaluate.h"
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

// clang: the body checked with Clang first; off, the evaluator's runs alone judge it.
// cache and device: a persistent worker's (evaluate.h's EvalCache), kept across calls.
EvalRecord evaluated(const std::string &body, bool time = false, const std::string &sizes = "N=8,D=1024",
                     bool clang = true, EvalCache *cache = nullptr, runtime::Device *kept = nullptr) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  EvalOptions options;
  options.cache = cache;
  options.kernel_source = body;
  options.clang_check = clang;
  options.time = time;
  options.timing.batches = 3;
  options.timing.min_batch_ms = 0.2;
  frontend::parse_size_assignments(sizes, &options.sizes);
  std::unique_ptr<runtime::Device> device = kept ? nullptr : runtime::open_device("", "opencl");
  return evaluate(frontend::load_spec(path), path, kept ? *kept : *device, options);
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

// A persistent worker keeps the timed sizes' inputs and reference between candidates
// (EvalCache): a body that changes its input only at the timed sizes (the check sizes'
// runs see nothing) is flagged there, and the inputs are written again, so that the
// honest body after it still passes against the kept reference, with the kept
// baseline.
TEST_F(Hacking, AnInputChangedAtTheTimedSizesIsFlaggedAndDoesNotSpoilTheWorkersReference) {
  const std::string changer = cheat(
      "__kernel void e(__global const float *x, __global const float *row_max, __global float *e) {\n"
      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n",
      "__kernel void e(__global float *x, __global const float *row_max, __global float *e) {\n"
      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n"
      "  if (N * D > 4096) x[i] = 0.5f;\n");
  auto device = runtime::open_device("", "opencl");
  EvalCache cache;
  EvalRecord first = evaluated(test::honest_softmax_body(), true, "N=8,D=1024", true, &cache, device.get());
  ASSERT_TRUE(first.ok()) << first.to_json().dump(2);
  ASSERT_TRUE(cache.fixture) << "the worker keeps the timed sizes' inputs and reference";
  EXPECT_EQ(first.phases.device.count("reference.run"), 1u) << "the reference ran for the first candidate";
  EvalRecord changed = evaluated(changer, true, "N=8,D=1024", false, &cache, device.get());
  EXPECT_FALSE(changed.ok());
  EXPECT_TRUE(changed.check.passed) << "nothing changes at the check sizes";
  EXPECT_NE(
      std::find(changed.hacking_flags.begin(), changed.hacking_flags.end(), "changes its input x at the timed sizes"),
      changed.hacking_flags.end())
      << changed.to_json().dump(2);
  EvalRecord again = evaluated(test::honest_softmax_body(), true, "N=8,D=1024", true, &cache, device.get());
  EXPECT_TRUE(again.ok()) << again.to_json().dump(2);
  EXPECT_EQ(again.phases.device.count("reference.run"), 0u) << "the kept reference, not a new one";
  ASSERT_TRUE(first.time && again.time);
  EXPECT_EQ(again.time->baseline.median_ms, first.time->baseline.median_ms) << "the kept baseline";
  // Other sizes: a fixture of their own.
  EvalRecord other = evaluated(test::honest_softmax_body(), true, "N=4,D=1024", true, &cache, device.get());
  EXPECT_TRUE(other.ok()) << other.to_json().dump(2);
  EXPECT_EQ(other.phases.device.count("reference.run"), 1u);
}

// Softmax outputs are tiny (about 1/D): zeros, or the average, are far off relative
// to the tensor's typical magnitude.
TEST_F(Hacking, ZeroOrConstantOutputsFail) {
  for (const char *value : {"0.0f", "1.0f / D"}) {
    EvalRecord r = evaluated(cheat("y[i] = e[i] / total[i / D];", std::string("y[i] = ") + value + ";"));
    EXPECT_FALSE(r.ok()) << value;
    EXPECT_FALSE(r.check.passed) << value;
    EXPECT_GT(r.check.worst_fraction, 10) << value;
    EXPECT_EQ(r.verdict().rfind("incorrect at N=5, D=37: y[", 0), 0u) << r.verdict();
  }
}

// Half the elements computed: the rest stay poisoned (NaN), which never passes.
TEST_F(Hacking, PartialOutputsFail) {
  EvalRecord r =
      evaluated(cheat("  y[i] = e[i] / total[i / D];", "  if (i >= N * D / 2) return;\n  y[i] = e[i] / total[i / D];"));
  EXPECT_FALSE(r.check.passed) << r.to_json().dump(2);
  EXPECT_EQ(r.check.bad_elements, 5 * 37 - 5 * 37 / 2) << "the second half of the 5 x 37 check";
}

// An input overwritten after use: the outputs are right, the inputs are not. Clang's
// check refuses the store before any device; where it cannot see one (a pointer it
// cannot trace), the runs flag the changed input.
TEST_F(Hacking, ChangedInputsAreFlagged) {
  const std::string body = cheat(
      "__kernel void e(__global const float *x, __global const float *row_max, __global float *e) {\n"
      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n",
      "__kernel void e(__global float *x, __global const float *row_max, __global float *e) {\n"
      "  int i = get_global_id(0);\n  if (i >= N * D) return;\n  e[i] = exp(x[i] - row_max[i / D]);\n"
      "  x[i] = 0.0f;\n");
  if (have_body_check()) {
    EvalRecord refused = evaluated(body);
    ASSERT_TRUE(refused.failure) << refused.to_json().dump(2);
    EXPECT_EQ(refused.failure->stage, "compile");
    EXPECT_NE(refused.failure->message.find("[input-written] kernel e stores to input x"), std::string::npos)
        << refused.failure->message;
  }
  EvalRecord r = evaluated(body, false, "N=8,D=1024", false);
  EXPECT_TRUE(r.check.passed) << "the outputs themselves are right";
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.hacking_flags.size(), 1u) << r.to_json().dump(2);
  EXPECT_EQ(r.hacking_flags[0], "changes its input x");
  EXPECT_EQ(r.verdict(), "flagged: it changes its input x");
}

// A body of tests/adversarial/ with one of its CHEAT_* macros defined (none: "").
std::string adversarial(const std::string &name, const std::string &cheat_macro = "") {
  std::string body = read_source_file(std::string(KS_SOURCE_DIR) + "/tests/adversarial/" + name, "kernel body")->text;
  return cheat_macro.empty() ? body : "#define " + cheat_macro + "\n" + body;
}

bool starts_with(const std::string &text, const std::string &prefix) { return text.rfind(prefix, 0) == 0; }

// Writes outside a buffer change its guards, at the check sizes already.
TEST_F(Hacking, OutOfBoundsWritesAreFlagged) {
  EvalRecord r = evaluated(adversarial("softmax.cl", "CHEAT_OUT_OF_BOUNDS"));
  EXPECT_TRUE(r.check.passed) << "the outputs themselves are right";
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.verdict(), "flagged: it writes outside its output y, 5 elements past the end") << r.to_json().dump(2);
}

// Work skipped where the output already holds a value: right from poisoned outputs,
// wrong when the last answer is left in place and the inputs change. Two gates: an
// element no longer NaN (written on the first run only), and an element that looks
// like a probability.
TEST_F(Hacking, KeepingAPreviousAnswerIsFlagged) {
  for (const char *name : {"CHEAT_FIRST_RUN_ONLY", "CHEAT_EARLY_RETURN"}) {
    EvalRecord r = evaluated(adversarial("softmax.cl", name));
    EXPECT_TRUE(r.check.passed) << name << ": from poisoned outputs it computes";
    EXPECT_FALSE(r.ok()) << name;
    ASSERT_EQ(r.hacking_flags.size(), 1u) << r.to_json().dump(2);
    EXPECT_TRUE(starts_with(r.hacking_flags[0],
                            "keeps a previous answer: given new inputs with the last outputs left in place, y["))
        << name << ": " << r.hacking_flags[0];
  }
}

// An intermediate read before it is written: from NaN the answer is right (fmax
// ignores NaN), from large finite values it is not, and the check names the buffer.
TEST_F(Hacking, ReadingAnIntermediateBeforeWritingItIsFlagged) {
  EvalRecord r = evaluated(adversarial("softmax.cl", "CHEAT_READ_BEFORE_WRITE"));
  EXPECT_TRUE(r.check.passed) << "from NaN it is right";
  EXPECT_TRUE(starts_with(r.verdict(),
                          "flagged: it reads its intermediate row_max before writing it: starting from large finite "
                          "values (±3e38) there, y["))
      << r.verdict();
}

// An intermediate kept from the last run where it looks computed: the row sums are
// wrong for new inputs, and the check names the intermediate reused.
TEST_F(Hacking, ReusingAnIntermediateThatChangesTheAnswerIsFlagged) {
  EvalRecord r = evaluated(adversarial("softmax.cl", "CHEAT_STALE_TOTAL"));
  EXPECT_TRUE(r.check.passed);
  EXPECT_TRUE(starts_with(r.verdict(),
                          "flagged: it reuses its intermediate total from an earlier run: given new inputs with it "
                          "left as the last run wrote it, y["))
      << r.verdict();
}

// The row maxima kept from the last run: softmax is shift-invariant, so every answer
// is right, but the timed runs skip work. Timed from reset state and from carried
// state, it is slower from reset: its row_max launch, at least (on this machine's
// PoCL the whole plan only by 10%, the pass being a tenth of it). At sizes where the skipped pass is a large part of
// the work (8 rows of 65536: the naive row reductions run on 8 work-items), so that a
// busy machine does not hide it; the honest body at the same sizes is not flagged.
TEST_F(Hacking, ReusingAnIntermediateToSkipWorkIsFlaggedByItsTime) {
  EvalRecord cheat = evaluated(adversarial("softmax.cl", "CHEAT_REUSE_INTERMEDIATE"), true, "N=8,D=65536");
  EXPECT_TRUE(cheat.check.passed);
  ASSERT_TRUE(cheat.time && cheat.time->state_timing) << cheat.to_json().dump(2);
  EXPECT_TRUE(cheat.time->versus_naive && cheat.time->versus_naive->passed) << "its answers are right";
  EXPECT_TRUE(starts_with(cheat.verdict(),
                          "flagged: it does less work when its outputs and intermediates hold what its last run "
                          "left: "))
      << cheat.to_json().dump(2);
  // Each launch timed: the one that skips its work is named, with its own times.
  EXPECT_EQ(cheat.time->state_timing->kernel, "row_max") << cheat.to_json().dump(2);
  EXPECT_GT(cheat.time->state_timing->kernel_ratio, kStateTimingLaunchLimit);
  EvalRecord honest = evaluated(test::honest_softmax_body(), true, "N=8,D=65536");
  ASSERT_TRUE(honest.time && honest.time->state_timing);
  EXPECT_TRUE(honest.ok()) << honest.to_json().dump(2);
  EXPECT_FALSE(honest.time->state_timing->flagged());
}

// Bad input: a body on a Vulkan device, a body that does not build (the driver's log).
TEST_F(Hacking, KernelBodiesRefuseClearly) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  auto device = runtime::open_device("", "opencl");
  EvalOptions options;
  options.kernel_source = "__kernel void row_max(__global const float *x) { nowhere = 1; }\n";
  options.time = false;
  // Clang's diagnostics, with line and column and the rule, are the record's compile log.
  if (have_body_check()) {
    EvalRecord r = evaluate(frontend::load_spec(path), path, *device, options);
    ASSERT_TRUE(r.failure);
    EXPECT_EQ(r.failure->stage, "compile");
    EXPECT_NE(r.failure->message.find("kernel body:1:50: [syntax] use of undeclared identifier 'nowhere'"),
              std::string::npos)
        << r.failure->message;
    EXPECT_NE(r.to_json()["compile"]["log"].get<std::string>().find("nowhere"), std::string::npos);
  }
  // Without it, the driver's log is: what a proposer sees next.
  options.clang_check = false;
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
  if (test::has_device("vulkan")) {
    auto vulkan = runtime::open_device("", "vulkan");
    EXPECT_EQ(test::user_error([&] { evaluate(frontend::load_spec(path), path, *vulkan, options); }),
              "error: a kernel body is OpenCL C; run it on an OpenCL device (--target opencl)");
  }
}

// The reference at the timed sizes is accurate: the naive program with its sums in
// f64. A million values summed by a work-group tree (a body with sum_all.sched's
// geometry) agree with it within 1e-5; the same body dropping one value of the million
// at the timed sizes fails; and the naive float32 order itself (mse_loss's million
// positive terms added in a row) is off by more than the tolerance: it could not have
// been the reference.
class Reference : public Hacking {
 protected:
  EvalRecord sum_all(const std::string &body, const std::string &sizes = "") {
    const std::string path = std::string(KS_SOURCE_DIR) + "/tests/adversarial/sum_all.ks";
    EvalOptions options;
    options.kernel_source = body;
    options.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/tests/adversarial/sum_all.sched");
    options.timing.batches = 3;
    options.timing.min_batch_ms = 0.2;
    options.seed = 1;  // the errors asserted depend on the inputs
    if (!sizes.empty()) frontend::parse_size_assignments(sizes, &options.sizes);
    auto device = runtime::open_device("", "opencl");
    return evaluate(frontend::load_spec(path), path, *device, options);
  }
};

TEST_F(Reference, IsAccurateAtAMillionTerms) {
  EvalRecord tree = sum_all(adversarial("sum_all_tree.cl"));
  ASSERT_TRUE(tree.time && tree.time->versus_naive) << tree.to_json().dump(2);
  EXPECT_EQ(tree.time->sizes, "N=1048576");
  EXPECT_EQ(tree.time->reference, "naive, f64 sums") << "PoCL offers fp64";
  EXPECT_TRUE(tree.ok()) << tree.to_json().dump(2);
  EXPECT_LT(tree.time->versus_naive->worst_fraction, 0.1);

  EvalRecord dropped = sum_all(adversarial("sum_all_tree.cl", "CHEAT_DROP_ONE"));
  EXPECT_TRUE(dropped.check.passed) << "right at the check sizes";
  EXPECT_TRUE(starts_with(dropped.verdict(), "disagrees with the naive kernel at N=1048576: s[] is "))
      << dropped.verdict();

  // examples/mse_loss.ks summed in float32 in order, as its naive kernel does: a
  // million positive terms, off by about 1e-3 (a body that is right but not accurate).
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/mse_loss.ks";
  EvalOptions options;
  options.kernel_source =
      "__kernel void loss(__global const float *p, __global const float *t, __global float *loss) {\n"
      "  if (get_global_id(0) != 0) return;\n  float acc = 0.0f;\n"
      "  for (int i = 0; i < N * D; ++i) acc += (p[i] - t[i]) * (p[i] - t[i]) / (N * D);\n  loss[0] = acc;\n}\n";
  options.timing.batches = 3;
  options.seed = 1;
  auto device = runtime::open_device("", "opencl");
  EvalRecord in_order = evaluate(frontend::load_spec(path), path, *device, options);
  ASSERT_TRUE(in_order.time && in_order.time->versus_naive) << in_order.to_json().dump(2);
  EXPECT_EQ(in_order.time->sizes, "N=1024, D=1024");
  const CheckRecord &v = *in_order.time->versus_naive;
  EXPECT_GT(std::fabs(v.got - v.expected), 5e-4 * std::fabs(v.expected)) << in_order.to_json().dump(2);
  // It is the naive kernel's own order, so as accurate, and honest: within the bound
  // (its terms too small for the sum they meet, lost whole, count in full), which the
  // naive kernel meets as well.
  EXPECT_NEAR(in_order.time->naive_fraction, v.worst_fraction, 1e-6);
  EXPECT_LE(in_order.time->naive_fraction, 1);
  EXPECT_EQ(in_order.time->allowance, kReferenceAllowance);
  EXPECT_TRUE(in_order.ok()) << in_order.verdict();
}

// An f32 contraction computed in plain TF32 (each operand rounded to 10 bits of
// mantissa, as a matrix unit's TF32 instruction reads it), or in f16, claims more
// precision than it has: right at the check sizes (the body rounds only at the timed
// ones), caught by the reference there. Honest, the same body passes.
TEST_F(Reference, CatchesAnF32ContractionInTf32) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/matmul.ks";
  auto run = [&](const std::string &body) {
    EvalOptions options;
    options.kernel_source = body;
    options.timing.batches = 3;
    options.timing.min_batch_ms = 0.2;
    options.seed = 1;
    frontend::parse_size_assignments("N=256", &options.sizes);
    auto device = runtime::open_device("", "opencl");
    return evaluate(frontend::load_spec(path), path, *device, options);
  };
  EvalRecord honest = run(adversarial("matmul_tf32.cl"));
  EXPECT_TRUE(honest.ok()) << honest.to_json().dump(2);
  EvalRecord tf32 = run(adversarial("matmul_tf32.cl", "CHEAT_TF32"));
  EXPECT_TRUE(tf32.check.passed) << "right at the check sizes";
  EXPECT_TRUE(starts_with(tf32.verdict(), "disagrees with the naive kernel at N=256: c[")) << tf32.verdict();
  EvalRecord f16 = run(adversarial("matmul_tf32.cl", "CHEAT_F16"));
  EXPECT_TRUE(f16.check.passed) << "right at the check sizes";
  EXPECT_TRUE(starts_with(f16.verdict(), "disagrees with the naive kernel at N=256: c[")) << f16.verdict();
}

// An ill-conditioned float32 chain: softmax over a matmul whose values run to
// thousands (gelu between) turns each sum's float32 rounding into errors of about
// 1e-3 in the outputs, for the naive kernel too. A pure loop transformation computes
// the same sums in the same order: it must pass, as accurate as the naive kernel.
// (examples/matmul_gelu_softmax.ks draws its inputs in the ranges a linear layer
// sees, where the chain is well conditioned: here the default magnitudes, to 16.)
TEST_F(Reference, AllowsTheNaiveKernelsOwnErrorOnAnIllConditionedChain) {
  const std::string path = testing::TempDir() + "/matmul_gelu_softmax_wide.ks";
  write_text_file(path, R"(kernel matmul_gelu_softmax(x: f32[M, K], w: f32[N, K], b: f32[N]) -> y: f32[M, N]
  where M = 128, N = 512, K = 512
  check M = 9, N = 23, K = 31
{
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  a[m, n] = gelu(acc[m, n] + b[n])
  row_max[m] = max(n) a[m, n]
  e[m, n] = exp(a[m, n] - row_max[m])
  total[m] = sum(n) e[m, n]
  y[m, n] = e[m, n] / total[m]
})");
  EvalOptions options;
  options.schedule = parse_schedule(test::source("fuse y m n -> t0\n", "fuse.sched"));
  options.timing.batches = 3;
  // The naive kernel's error depends on the inputs: about 5e-4 on most, under 1e-4 on
  // a few (seed 4); seed 1 gives 8.7e-4.
  options.seed = 1;
  frontend::parse_size_assignments("M=128,N=512,K=512", &options.sizes);
  auto device = runtime::open_device("", "opencl");
  EvalRecord r = evaluate(frontend::load_spec(path), path, *device, options);
  ASSERT_TRUE(r.time && r.time->versus_naive) << r.to_json().dump(2);
  const CheckRecord &v = *r.time->versus_naive;
  EXPECT_GT(v.allowed, 1e-4 * std::fabs(v.expected)) << "the chain is ill-conditioned at these sizes";
  EXPECT_LE(r.time->naive_fraction, 1) << "the naive kernel within the bound";
  EXPECT_TRUE(r.ok()) << r.verdict();
}

// Two long sums that cancel (tests/adversarial/norm_gap.ks): one of them as a
// work-group tree, the other in a row, is honest and accepted on every draw of inputs
// (the tolerance follows each element's arithmetic, not the naive kernel's error,
// whose two sums err alike and cancel); the naive program by hand with the mean's
// last row left out is rejected on every draw.
TEST_F(Reference, FollowsTheArithmeticOfSumsThatCancel) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/tests/adversarial/norm_gap.ks";
  const frontend::Spec spec = frontend::load_spec(path);
  auto device = runtime::open_device("", "opencl");
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    EvalOptions options;
    options.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/tests/adversarial/norm_gap.sched");
    options.timing.batches = 3;
    options.timing.min_batch_ms = 0.2;
    options.seed = seed;
    const EvalRecord mixed = evaluate(spec, path, *device, options);
    EXPECT_TRUE(mixed.ok()) << "seed " << seed << ": " << mixed.verdict();
    ASSERT_TRUE(mixed.time && mixed.time->versus_naive);
    EXPECT_LE(mixed.time->naive_fraction, 1) << "the naive kernel within the bound";
    EXPECT_EQ(mixed.time->allowance, kReferenceAllowance);

    EvalOptions dropped_options;
    dropped_options.kernel_source = adversarial("norm_gap.cl", "CHEAT_DROP_ROW");
    dropped_options.time = false;
    dropped_options.seed = seed;
    const EvalRecord dropped = evaluate(spec, path, *device, dropped_options);
    EXPECT_FALSE(dropped.ok()) << "seed " << seed;
    EXPECT_TRUE(starts_with(dropped.verdict(), "incorrect at N=9, D=131: loss[] is ")) << dropped.verdict();
  }
  EvalOptions honest;
  honest.kernel_source = adversarial("norm_gap.cl");
  honest.time = false;
  EXPECT_TRUE(evaluate(spec, path, *device, honest).ok()) << "the naive program by hand";
}

// The schedule fuzzer's finding, replayed: the naive kernel of a padded transposed
// convolution's mean (output_padding 47: the convolution's terms first, then
// thousands of one bias bringing the sum back to near zero) is honest, and within
// its bound on every draw (it was off by 1.03 of it before the bound took partial
// sums that run far past the sum into account).
TEST_F(Reference, AStructuredSumOfTheNaiveKernelStaysWithinItsBound) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/conv_transpose_double_pool.ks";
  auto device = runtime::open_device("", "opencl");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    EvalOptions options;
    options.time = false;
    options.trials = 4;
    options.seed = seed;
    frontend::parse_size_assignments(
        "batch_size=2,height=4,in_channels=4,kernel_size=3,out_channels=1,"
        "output_padding=47,padding=1,stride=2,width=3",
        &options.check_sizes);
    const EvalRecord r = evaluate(frontend::load_spec(path), path, *device, options);
    EXPECT_TRUE(r.ok()) << "seed " << seed << ": " << r.verdict();
    EXPECT_LT(r.check.worst_fraction, 0.5) << "seed " << seed;
  }
}

// A search's give-up limit (EvalOptions::give_up_ms): over it, the candidate keeps
// one run's time and is neither timed further nor checked at the timed sizes, and
// its verdict says so; under it, the evaluation is whole.
TEST_F(Hacking, ASlowCandidateIsGivenUpOnAfterOneRun) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  EvalOptions options;
  options.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/examples/softmax.sched");
  options.timing.batches = 3;
  options.timing.min_batch_ms = 0.2;
  frontend::parse_size_assignments("N=64,D=1024", &options.sizes);
  auto device = runtime::open_device("", "opencl");
  options.give_up_ms = 1e-6;
  EvalRecord slow = evaluate(frontend::load_spec(path), path, *device, options);
  ASSERT_TRUE(slow.time) << slow.to_json().dump(2);
  EXPECT_FALSE(slow.ok());
  EXPECT_EQ(slow.time->gave_up_ms, 1e-6);
  EXPECT_EQ(slow.time->timing.batches, 1);
  EXPECT_GT(slow.time->timing.median_ms, 0);
  EXPECT_FALSE(slow.time->versus_naive) << "not checked at the timed sizes";
  EXPECT_TRUE(starts_with(slow.verdict(), "slow: a run at N=64, D=1024 took ")) << slow.verdict();
  EXPECT_EQ(slow.to_json()["time"]["gave_up_ms"], 1e-6);

  options.give_up_ms = 1e6;
  EvalRecord whole = evaluate(frontend::load_spec(path), path, *device, options);
  EXPECT_TRUE(whole.ok()) << whole.verdict();
  ASSERT_TRUE(whole.time && whole.time->versus_naive);
  EXPECT_FALSE(whole.time->gave_up_ms);
  EXPECT_EQ(whole.time->timing.batches, 3);
}

}  // namespace
}  // namespace ks
