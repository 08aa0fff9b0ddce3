// Naive lowering: one kernel per stage, one work-item per element, guards, wide
// indices; and the OpenCL C it becomes.
#include "passes/lower.h"

#include "codegen/glsl.h"
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

// async_copy's copies as PTX: 16-byte cp.async where a copy's four lanes are
// contiguous and aligned at both ends, a commit after each group, a wait before the
// barrier; refused with the reason where the target has none, plain stores in order.
TEST(Codegen, AsyncCopiesArePtxWhereAsked) {
  const Graph g = test::graph_of(
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 64, N = 64, K = 64 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }");
  const Schedule s = parse_schedule(test::source(
      "tile c i j 32 32 -> io jo ii ji\nsplit c.ii 8 -> ri ty\nsplit c.ji 8 -> rj tx\nreorder c ty tx ri rj\n"
      "bind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\nbind c.tx local.x\ncache_write c.tx private\n"
      "split c.k 8 -> ko ki\ncache_read c.ko a local -> a_s\ntranspose c.a_s\ncache_read c.ko b local -> b_s\n"
      "async_copy c.ko 2\n",
      "ring.sched"));
  const Program p = run_pipeline(g, s);
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx).source;
  // b's rows: one 16-byte copy a work-item a step; a's transposed panel: 4-byte ones.
  EXPECT_NE(ptx.find("asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\""), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4;\""), std::string::npos) << ptx;
  EXPECT_EQ(test::count(ptx, "  ks_copy_async16(&b_s["), 2) << ptx;  // before the loop, and ahead in it
  EXPECT_EQ(test::count(ptx, "ks_copies_commit();"), 2) << ptx;
  const size_t wait = ptx.find("ks_copies_wait0();\n      barrier(CLK_LOCAL_MEM_FENCE);");
  EXPECT_NE(wait, std::string::npos) << ptx;  // two slots: wait for all but none, in the loop
  EXPECT_LT(wait, ptx.find("ks_copy_async16(&b_s[(ko + 1) % 2")) << ptx;
  // Nowhere else.
  EXPECT_EQ(test::user_error([&] { generate_opencl_c(p, AsyncCopies::Refused, "opencl:0 (pocl) does not offer"); }),
            "error: the schedule's async_copy needs asynchronous global-to-local copies (PTX cp.async through "
            "NVIDIA's OpenCL, compute capability 8.0 or later), which opencl:0 (pocl) does not offer");
  EXPECT_NE(
      test::user_error([&] { generate_glsl(p); }).find("which kernelsmith's SPIR-V target (Vulkan) does not offer"),
      std::string::npos);
  const std::string in_order = generate_opencl_c(p, AsyncCopies::InOrder).source;
  EXPECT_EQ(in_order.find("cp.async"), std::string::npos);
  EXPECT_NE(in_order.find("b_s[((ko + 1) % 2"), std::string::npos) << in_order;
}

}  // namespace
}  // namespace ks
