// Schedule text, and each primitive: what it produces and every reason it refuses.
#include "passes/schedule.h"

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/loops.h"
#include "passes/lower.h"
#include "passes/primitives.h"
#include "test_util.h"

namespace ks {
namespace {

const char *kMatmul =
    "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 10, N = 12, K = 8 "
    "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
const char *kSoftmax = R"(kernel softmax(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 5 {
  row_max[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - row_max[n])
  total[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / total[n]
})";

Program lowered(const char *spec) { return lower(test::graph_of(spec)); }

Schedule schedule_of(const std::string &text) { return parse_schedule(test::source(text, "s.sched")); }

// Applies a schedule text; returns the error message, "" when every step applied.
std::string refusal(const char *spec, const std::string &text) {
  Program p = lowered(spec);
  return test::user_error([&] {
    for (const Primitive &step : schedule_of(text).steps) p = apply_primitive(p, step);
  });
}

std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

TEST(ScheduleText, RoundTripIsExact) {
  const std::string text =
      "inline e\nsplit y.m 64 -> mo mi\ntile y m n 64 32 -> mo no mi ni\nreorder y mo no mi ni\n"
      "fuse y m n -> mn\nbind y.mo group.y\nbind y.mi local.x\nunroll y.ki\ncross_reduce y.k 256 -> t\n";
  EXPECT_EQ(print_schedule(schedule_of(text)), text);
  // Comments and spacing are not part of the data.
  EXPECT_EQ(print_schedule(schedule_of("# tiles\nsplit   y.m  64->mo mi  # outer first\n")), "split y.m 64 -> mo mi\n");
}

TEST(ScheduleText, ErrorsPointAtTheText) {
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("split y.m 64 -> mo mi\nshuffle y.m\n"); })),
            "s.sched:2:1: error: unknown primitive 'shuffle'; primitives are split, tile, reorder, fuse, bind, "
            "unroll, inline, cross_reduce");
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("split y.m 0 -> mo mi"); })),
            "s.sched:1:11: error: a factor must be at least 1");
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("split y.m 4 mo mi"); })),
            "s.sched:1:13: error: expected '->' before the names of the new loops, found 'mo'");
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("bind y.m serial"); })),
            "s.sched:1:10: error: unknown binding 'serial'; bind to group.x, group.y, group.z, local.x, local.y or "
            "local.z");
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("split y 4 -> a b"); })),
            "s.sched:1:9: error: expected '.' between the stage and the loop (stage.loop), found '4'");
}

TEST(Split, GuardsATail) {
  auto p = split(lowered(kMatmul), "c", "i", 4, "io", "ii", nullptr);
  ASSERT_TRUE(p);
  std::string text = print_stmt(p->kernels[0].body);
  EXPECT_NE(text.find("for io in 0..3 {\n  for ii in 0..4 {\n    let i = io * 4 + ii\n    if i < 10 {"),
            std::string::npos)
      << text;
  auto exact = split(lowered(kMatmul), "c", "j", 4, "jo", "ji", nullptr);
  EXPECT_EQ(print_stmt(exact->kernels[0].body).find("if "), std::string::npos) << "4 divides 12: no guard";
}

TEST(Split, SplitsAReductionLoopInsideTheBlock) {
  std::string reason;
  auto p = split(lowered(kMatmul), "c", "k", 2, "ko", "ki", &reason);
  ASSERT_TRUE(p) << reason;
  EXPECT_NE(print_stmt(p->kernels[0].body).find("let k = ko * 2 + ki"), std::string::npos);
}

TEST(Split, Refusals) {
  EXPECT_EQ(first_line(refusal(kMatmul, "split q.i 4 -> p q")),
            "s.sched:1:1: error: split q.i: no stage named q; stages are c");
  EXPECT_EQ(first_line(refusal(kMatmul, "split c.q 4 -> p q")),
            "s.sched:1:1: error: split c.q: no loop named q in stage c; loops are i, j, k");
  EXPECT_EQ(refusal(kMatmul, "split c.i 16 -> p q"), "") << "a factor past the extent is one guarded iteration";
  EXPECT_EQ(first_line(refusal(kMatmul, "split c.i 2 -> p p")),
            "s.sched:1:1: error: split c.i: the two new loops need different names");
  EXPECT_EQ(first_line(refusal(kMatmul, "split c.i 2 -> j q")),
            "s.sched:1:1: error: split c.i: name j is already used in kernel c");
  EXPECT_EQ(first_line(refusal(kMatmul, "split c.i 2 -> p b")), "s.sched:1:1: error: split c.i: name b is a buffer");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i group.x\nsplit c.i 2 -> p q")),
            "s.sched:2:1: error: split c.i: loop i is group.x; split loops before binding or unrolling them");
  std::string reason;
  EXPECT_FALSE(split(lowered(kMatmul), "c", "i", 0, "p", "q", &reason));
  EXPECT_EQ(reason, "the factor must be at least 1, not 0");
}

TEST(Fuse, RecoversEachVariable) {
  auto p = fuse(lowered(kMatmul), "c", {"i", "j"}, "ij", nullptr);
  ASSERT_TRUE(p);
  EXPECT_NE(print_stmt(p->kernels[0].body).find("for ij in 0..120 {\n  let i = ij / 12\n  let j = ij % 12\n"),
            std::string::npos)
      << print_stmt(p->kernels[0].body);
}

TEST(Fuse, Refusals) {
  EXPECT_EQ(first_line(refusal(kMatmul, "fuse c i k -> ik")),
            "s.sched:1:1: error: fuse c: loop k is not directly inside loop i; fuse takes directly nested loops, "
            "outermost first");
  EXPECT_EQ(first_line(refusal(kMatmul, "fuse c j i -> ji")),
            "s.sched:1:1: error: fuse c: loop i is not directly inside loop j; fuse takes directly nested loops, "
            "outermost first");
  EXPECT_EQ(first_line(refusal(kMatmul, "fuse c i j -> k")),
            "s.sched:1:1: error: fuse c: name k is already used in kernel c");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i group.x\nfuse c i j -> ij")),
            "s.sched:2:1: error: fuse c: loop i is group.x; fuse loops before binding or unrolling them");
}

TEST(Reorder, SwapsThroughLetsAndGuards) {
  std::string reason;
  auto p = split(lowered(kMatmul), "c", "i", 4, "io", "ii", &reason);
  ASSERT_TRUE(p) << reason;
  p = reorder(*p, "c", {"j", "io"}, &reason);
  ASSERT_TRUE(p) << reason;
  std::string text = print_stmt(p->kernels[0].body);
  EXPECT_EQ(
      text.rfind(
          "for j in 0..12 {\n  for ii in 0..4 {\n    for io in 0..3 {\n      let i = io * 4 + ii\n      if i < 10 {",
          0),
      0u)
      << text;
}

TEST(Reorder, Refusals) {
  EXPECT_EQ(first_line(refusal(kMatmul, "reorder c j k")),
            "s.sched:1:1: error: reorder c: loops j and k lie on different sides of c's block (a spatial and a "
            "reduction loop)");
  EXPECT_EQ(first_line(refusal(kMatmul, "reorder c j j")), "s.sched:1:1: error: reorder c: loop j is listed twice");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i group.x\nreorder c j i")),
            "s.sched:2:1: error: reorder c: loop i is group.x; reorder loops before binding them");
  std::string reason;
  EXPECT_FALSE(reorder(lowered(kMatmul), "c", {"i"}, &reason));
  EXPECT_EQ(reason, "reorder needs at least two loops");
}

TEST(Tile, SplitsAndReorders) {
  std::string reason;
  auto p = tile(lowered(kMatmul), "c", "i", "j", 4, 6, {"io", "jo", "ii", "ji"}, &reason);
  ASSERT_TRUE(p) << reason;
  EXPECT_EQ(print_stmt(p->kernels[0].body)
                .rfind("for io in 0..3 {\n  for jo in 0..2 {\n    for ii in 0..4 {\n      for ji in 0..6 {", 0),
            0u)
      << print_stmt(p->kernels[0].body);
  EXPECT_EQ(first_line(refusal(kMatmul, "tile c i k 2 2 -> io ko ii ki")),
            "s.sched:1:1: error: tile c: loops io and ko lie on different sides of c's block (a spatial and a "
            "reduction loop)");
}

TEST(Bind, LaunchShapeFollowsTheBoundLoops) {
  Program p = lowered(kMatmul);
  for (const Primitive &s : schedule_of("bind c.i group.y\nbind c.j local.x").steps) p = apply_primitive(p, s);
  LaunchShape shape = launch_shape(p.kernels[0]);
  EXPECT_EQ(shape.groups[1], 10);
  EXPECT_EQ(shape.local[0], 12);
}

TEST(Bind, Refusals) {
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.k local.x")),
            "s.sched:1:1: error: bind c.k: loop k is a reduction loop of c; its iterations accumulate into one "
            "value, so work-items cannot share it");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i local.x\nbind c.j group.x")),
            "s.sched:2:1: error: bind c.j: kernel 'c': group loop j is inside a local loop");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i group.x\nbind c.j group.x")),
            "s.sched:2:1: error: bind c.j: kernel 'c': loop kind group.x is bound twice");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.j group.x")),
            "s.sched:1:1: error: bind c.j: kernel 'c': loop j is bound inside a serial loop");
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i group.x\nbind c.i group.y")),
            "s.sched:2:1: error: bind c.i: loop i is already group.x");
}

TEST(Unroll, Refusals) {
  EXPECT_EQ(refusal(kMatmul, "unroll c.k"), "");
  const char *big = "kernel s(x: f32[N]) -> y: f32[] where N = 100 { y[] = sum(i) x[i] }";
  EXPECT_EQ(first_line(refusal(big, "unroll y.i")),
            "s.sched:1:1: error: unroll y.i: loop i has 100 iterations; unroll loops of at most 64 (split it first)");
  EXPECT_EQ(refusal(kMatmul, "split c.k 4 -> ko ki\nunroll c.ki\nunroll c.ko"), "") << "8 copies are allowed";
  EXPECT_EQ(first_line(refusal(big, "split y.i 10 -> io ii\nunroll y.ii\nunroll y.io")),
            "s.sched:3:1: error: unroll y.io: unrolling loop io would make 100 copies of the innermost body with the "
            "unrolled loops around and inside it; at most 64");
  EXPECT_EQ(first_line(refusal(kMatmul, "unroll c.k\nunroll c.k")),
            "s.sched:2:1: error: unroll c.k: loop k is already unrolled");
}

TEST(Inline, RecomputesWhereRead) {
  std::string reason;
  auto p = inline_stage(lowered(kSoftmax), "e", &reason);
  ASSERT_TRUE(p) << reason;
  EXPECT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->find_buffer("e"), nullptr);
  std::string text = print_program(*p);
  EXPECT_NE(text.find("total_acc[0] = total_acc[0] + exp(x[n, d] - row_max[n])"), std::string::npos) << text;
  EXPECT_NE(text.find("block total reads(x[n, 0 +: 5], row_max[n]) writes(total[n])"), std::string::npos) << text;
}

TEST(Inline, PaddedReadsSelect) {
  const char *spec = R"(kernel p(x: f32[N]) -> y: f32[N] where N = 4 {
  t[i] = x[i] * 2.0
  y[i] = t[i - 1] else 5.0
})";
  std::string reason;
  auto p = inline_stage(lowered(spec), "t", &reason);
  ASSERT_TRUE(p) << reason;
  EXPECT_NE(print_program(*p).find("y[i] = select(i - 1 >= 0 && i - 1 < 4, (x[i - 1] else 0.0) * 2.0, 5.0)"),
            std::string::npos)
      << print_program(*p);
}

TEST(Inline, Refusals) {
  EXPECT_EQ(first_line(refusal(kSoftmax, "inline y")),
            "s.sched:1:1: error: inline y: y is output; only temporaries can be inlined");
  EXPECT_EQ(first_line(refusal(kSoftmax, "inline total")),
            "s.sched:1:1: error: inline total: total is not elementwise (it reduces or computes more than one store)");
  EXPECT_EQ(first_line(refusal(kSoftmax, "inline e\ninline e")),
            "s.sched:2:1: error: inline e: no stage named e; stages are row_max, total, y");
}

TEST(CrossReduce, TreeInLocalMemory) {
  Program p = lowered(kSoftmax);
  for (const Primitive &s : schedule_of("bind total.n group.x\ncross_reduce total.d 4 -> t").steps)
    p = apply_primitive(p, s);
  std::string text = print_stmt(p.kernels[2].body);
  EXPECT_EQ(text,
            "for n in 0..3 group.x {\n"
            "  for t in 0..4 local.x {\n"
            "    block total reads(e[n, 0 +: 5]) writes(total[n]) {\n"
            "      allocate total_acc: f32[1] private\n"
            "      allocate total_part: f32[4] local\n"
            "      total_acc[0] = 0.0\n"
            "      for dj in 0..2 {\n"
            "        let d = dj * 4 + t\n"
            "        if d < 5 {\n"
            "          total_acc[0] = total_acc[0] + e[n, d]\n"
            "        }\n"
            "      }\n"
            "      total_part[t] = total_acc[0]\n"
            "      barrier local\n"
            "      if t < 2 {\n"
            "        total_part[t] = total_part[t] + total_part[t + 2]\n"
            "      }\n"
            "      barrier local\n"
            "      if t < 1 {\n"
            "        total_part[t] = total_part[t] + total_part[t + 1]\n"
            "      }\n"
            "      if t == 0 {\n"
            "        total[n] = total_part[0]\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(launch_shape(p.kernels[2]).local[0], 4);
}

TEST(CrossReduce, Refusals) {
  EXPECT_EQ(first_line(refusal(kSoftmax, "cross_reduce total.d 4 -> t")),
            "s.sched:1:1: error: cross_reduce total.d: loop n of total is serial; bind every spatial loop of the "
            "stage to a work-group first");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.d 6 -> t")),
            "s.sched:2:1: error: cross_reduce total.d: the number of work-items must be a power of two from 2 to "
            "1024, not 6");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.n 4 -> t")),
            "s.sched:2:1: error: cross_reduce total.n: loop n is not a reduction loop of total (bind spatial loops "
            "instead)");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.d 4 -> n")),
            "s.sched:2:1: error: cross_reduce total.d: name n is already used in kernel total");
  const char *arg = "kernel a(x: f32[N, M]) -> y: i64[N] where N = 2, M = 8 { y[i] = argmax(j) x[i, j] }";
  EXPECT_EQ(first_line(refusal(arg, "bind y.i group.x\ncross_reduce y.j 4 -> t")),
            "s.sched:2:1: error: cross_reduce y.j: y is not a sum, prod, max or min reduction into a private "
            "accumulator");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\nbind total.n local.x")),
            "s.sched:2:1: error: bind total.n: loop n is already group.x");
}

TEST(Verifier, BarrierInsideAConditional) {
  Program p = parse_program(test::source(
      "program p\noutput y: f32[4]\nkernel k {\n  for l in 0..4 local.x {\n    if l < 2 {\n      barrier local\n"
      "    }\n    y[l] = 1.0\n  }\n}\n"));
  std::string reason;
  EXPECT_FALSE(verified(p, &reason));
  EXPECT_EQ(reason, "kernel 'k': barrier inside a conditional");
}

}  // namespace
}  // namespace ks
