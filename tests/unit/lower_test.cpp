// Naive lowering: one kernel per stage, one work-item per element, guards, wide
// indices; and the OpenCL C it becomes.
#include "passes/lower.h"

#include "codegen/opencl_c.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "passes/schedule.h"
#include "test_util.h"

namespace ks {
namespace {

// Through the whole pipeline: lowering, then the default binding.
Program lowered(const std::string &spec) {
  Program p = run_pipeline(test::graph_of(spec));
  verify_program(p);
  return p;
}

TEST(Lower, SerialLoopsNamedAfterTheSpec) {
  Program p = lower(test::graph_of("kernel r(x: f32[N, K]) -> y: f32[N] where N = 4, K = 6 { y[n] = sum(k) x[n, k] }"));
  EXPECT_EQ(print_stmt(p.kernels[0].body),
            "for n in 0..4 {\n"
            "  block y reads(x[n, 0 +: 6]) writes(y[n]) {\n"
            "    allocate y_acc: f32[1] private\n"
            "    y_acc[0] = 0.0\n"
            "    for k in 0..6 {\n"
            "      y_acc[0] = y_acc[0] + x[n, k]\n"
            "    }\n"
            "    y[n] = y_acc[0]\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(launch_shape(p.kernels[0]).work_items(), 1) << "lowering binds nothing";
}

TEST(Lower, OneKernelPerStageInOrder) {
  Program p = lowered(R"(kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 5 {
  m[n] = max(d) x[n, d]
  y[n, d] = x[n, d] - m[n]
})");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].name, "m");
  EXPECT_EQ(p.kernels[1].name, "y");
  EXPECT_EQ(kernel_buffers(p, p.kernels[1]), (std::vector<std::string>{"x", "y", "m"}));
  EXPECT_EQ(kernel_written_buffers(p.kernels[0]), (std::vector<std::string>{"m"}));
}

TEST(Lower, LaunchShapeAndGuard) {
  Program exact = lowered("kernel k(x: f32[N]) -> y: f32[N] where N = 512 { y[i] = x[i] }");
  LaunchShape s = launch_shape(exact.kernels[0]);
  EXPECT_EQ(s.groups[0], 2);
  EXPECT_EQ(s.local[0], 256);
  EXPECT_EQ(print_program(exact).find("if "), std::string::npos) << "no guard when groups divide the work";

  Program ragged = lowered("kernel k(x: f32[N]) -> y: f32[N] where N = 1000 { y[i] = x[i] }");
  s = launch_shape(ragged.kernels[0]);
  EXPECT_EQ(s.groups[0], 4);
  EXPECT_EQ(s.work_items(), 1024);
  EXPECT_NE(print_program(ragged).find("if i1 < 1000 {"), std::string::npos);

  Program tiny = lowered("kernel k(x: f32[N]) -> y: f32[N] where N = 5 { y[i] = x[i] }");
  s = launch_shape(tiny.kernels[0]);
  EXPECT_EQ(s.groups[0], 1);
  EXPECT_EQ(s.local[0], 5);
}

TEST(Lower, ReductionAccumulatesPrivately) {
  Program p = lowered("kernel r(x: f32[N, K]) -> y: f32[N] where N = 4, K = 6 { y[n] = sum(k) x[n, k] }");
  std::string text = print_program(p);
  EXPECT_NE(text.find("allocate y_acc: f32[1] private"), std::string::npos) << text;
  EXPECT_NE(text.find("y_acc[0] = 0.0"), std::string::npos) << text;
  EXPECT_NE(text.find("for k in 0..6 {"), std::string::npos) << text;
  EXPECT_NE(text.find("block y reads(x[n, 0 +: 6]) writes(y[n])"), std::string::npos) << text;
}

TEST(Lower, HugeOutputsUse64BitIndices) {
  // 65536 x 65536 elements: the flat index does not fit 32 bits.
  Program p = lowered("kernel k(x: f32[N, N]) -> y: f32[N, N] where N = 65536 { y[i, j] = x[i, j] * 2.0 }");
  std::string text = print_program(p);
  EXPECT_NE(text.find("let i1 = i64(g) * 256L + i64(l)"), std::string::npos) << text;
  std::string source = generate_opencl_c(p).source;
  EXPECT_NE(source.find("const long i1 ="), std::string::npos) << source;
  EXPECT_NE(source.find("y[(long)i * 65536L + (long)j]"), std::string::npos) << source;
}

TEST(Lower, NamesDoNotCollide) {
  // The stage uses g, l and i: the default binding picks other names for its own.
  Program p =
      lowered("kernel k(x: f32[G, L, I]) -> y: f32[G, L, I] where G = 2, L = 3, I = 4 { y[g, l, i] = x[g, l, i] }");
  std::string text = print_program(p);
  EXPECT_NE(text.find("for g1 in"), std::string::npos) << text;
  EXPECT_NE(text.find("for l1 in"), std::string::npos) << text;
  EXPECT_NE(text.find("let i1 ="), std::string::npos) << text;
}

TEST(Codegen, ReservedNamesAreRenamed) {
  Program p = lowered("kernel k(float: f32[N]) -> int: f32[N] where N = 4 { int[i] = float[i] }");
  std::string source = generate_opencl_c(p).source;
  EXPECT_NE(source.find("void int_("), std::string::npos) << source;
  EXPECT_NE(source.find("__global const float *restrict float_"), std::string::npos) << source;
}

// A statistic computed into its consumer's kernel (cross_reduce, then compute_at)
// is written by one work-item and read by the others after a global barrier: that
// buffer is volatile (NVIDIA's compiler read it before the barrier otherwise); other
// buffers, and kernels without a global barrier, keep plain pointers.
TEST(Codegen, BuffersSharedAcrossAGlobalBarrierAreVolatile) {
  const char *spec =
      "kernel k(x: f32[N, C]) -> y: f32[N] where N = 8, C = 64 {\n"
      "  row_max[n] = max(c) x[n, c]\n  total[n] = sum(c) exp(x[n, c] - row_max[n])\n"
      "  y[n] = log(total[n]) + row_max[n]\n}";
  const Schedule schedule =
      parse_schedule(test::source("bind total.n group.x\ncross_reduce total.c 16 -> t1\nbind row_max.n group.x\n"
                                  "cross_reduce row_max.c 16 -> t2\ncompute_at row_max total.t1\n",
                                  "fused.sched"));
  Program p = run_pipeline(test::graph_of(spec), schedule);
  verify_program(p);
  ASSERT_EQ(p.kernels.size(), 2u);  // row_max and total in one, y in the other
  std::string source = generate_opencl_c(p).source;
  EXPECT_NE(source.find("barrier(CLK_GLOBAL_MEM_FENCE)"), std::string::npos) << source;
  EXPECT_NE(source.find("__global volatile float *restrict row_max"), std::string::npos) << source;
  EXPECT_NE(source.find("__global float *restrict total"), std::string::npos) << "written, not read back";
  EXPECT_NE(source.find("__global const float *restrict x"), std::string::npos) << source;
  std::string naive = generate_opencl_c(run_pipeline(test::graph_of(spec))).source;
  EXPECT_EQ(naive.find("volatile"), std::string::npos) << naive;
}

TEST(Codegen, IsDeterministic) {
  const char *spec = "kernel k(x: f32[N]) -> y: f32[N] where N = 9 { y[i] = gelu(x[i]) + sigmoid(x[i]) }";
  EXPECT_EQ(generate_opencl_c(lowered(spec)).source, generate_opencl_c(lowered(spec)).source);
}

}  // namespace
}  // namespace ks
