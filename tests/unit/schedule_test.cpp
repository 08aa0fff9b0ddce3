// Schedule text, and each primitive: what it produces and every reason it refuses.
#include "passes/schedule.h"

#include <random>
#include <set>

#include "evolve/evaluation/evaluate.h"
#include "frontend/parser.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/lower.h"
#include "passes/pipeline.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/unguard_accumulators.h"
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
      "fuse y m n -> mn\nbind y.mo group.y\nbind y.mi local.x\nunroll y.ki\nvectorize y.v\ncross_reduce y.k 256 -> t\n"
      "compute_at total y.t\ncache_write c.tx private\ncache_read c.ko a local -> a_s\npad c.a_s 1\n"
      "transpose c.a_s\nprefetch c.a_s\nreverse_inline y\nasync_copy c.ko 3\n";
  EXPECT_EQ(print_schedule(schedule_of(text)), text);
  // Comments and spacing are not part of the data.
  EXPECT_EQ(print_schedule(schedule_of("# tiles\nsplit   y.m  64->mo mi  # outer first\n")), "split y.m 64 -> mo mi\n");
}

// The registry: each primitive's example is a schedule line of its kind that prints
// back as written, and every argument shape of the language is some primitive's.
TEST(PrimitiveRegistry, EachExampleParsesToItsKindAndPrintsBack) {
  std::set<ArgKind> shapes;
  for (PrimitiveKind k : all_primitive_kinds()) {
    const PrimitiveInfo &info = primitive_info(k);
    const Schedule s = schedule_of(info.example);
    ASSERT_EQ(s.steps.size(), 1u) << info.example;
    EXPECT_EQ(s.steps[0].kind, k) << info.example;
    EXPECT_EQ(print_primitive(s.steps[0]), info.example);
    EXPECT_EQ(parse_primitive_kind(primitive_name(k)), k);
    EXPECT_NE(std::string(info.doc), "");
    EXPECT_TRUE(info.apply && info.draw) << info.example;
    for (const PrimitiveArg &arg : info.args) shapes.insert(arg.kind);
  }
  EXPECT_EQ(shapes.size(), static_cast<size_t>(ArgKind::Result) + 1);
  EXPECT_EQ(parse_primitive_kind("wiggle"), std::nullopt);
}

// A refusal names what the step acted on, as written, up to its first argument
// that is not a stage, a loop of it or a buffer.
TEST(PrimitiveRegistry, ARefusalNamesTheStepsTarget) {
  EXPECT_EQ(first_line(refusal(kMatmul, "cache_read c.q a local -> a_s")),
            "s.sched:1:1: error: cache_read c.q a: no loop named q in stage c; loops are i, j, k");
  EXPECT_EQ(first_line(refusal(kMatmul, "tile c i q 2 2 -> a b d e")).rfind("s.sched:1:1: error: tile c: ", 0), 0u);
  EXPECT_EQ(
      first_line(refusal(kSoftmax, "compute_at row_max y.q")).rfind("s.sched:1:1: error: compute_at row_max y.q: ", 0),
      0u);
  EXPECT_EQ(first_line(refusal(kMatmul, "pad c.q 1")).rfind("s.sched:1:1: error: pad c.q: ", 0), 0u);
}

TEST(ScheduleText, ErrorsPointAtTheText) {
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("split y.m 64 -> mo mi\nshuffle y.m\n"); })),
            "s.sched:2:1: error: unknown primitive 'shuffle'; primitives are split, fuse, reorder, tile, bind, "
            "unroll, inline, cross_reduce, cache_write, cache_read, pad, compute_at, vectorize, transpose, prefetch, "
            "reverse_inline, scan, async_copy, tensorize");
  EXPECT_EQ(first_line(test::user_error([] { schedule_of("cache_write c.tx global"); })),
            "s.sched:1:18: error: unknown memory 'global'; caches are local or private");
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
  EXPECT_EQ(refusal(big, "split y.i 10 -> io ii\nunroll y.ii\nunroll y.io"), "") << "100 copies are allowed";
  const char *large = "kernel s(x: f32[N]) -> y: f32[] where N = 400 { y[] = sum(i) x[i] }";
  EXPECT_EQ(first_line(refusal(large, "split y.i 20 -> io ii\nunroll y.ii\nunroll y.io")),
            "s.sched:3:1: error: unroll y.io: unrolling loop io would make 400 copies of the innermost body with the "
            "unrolled loops around and inside it; at most 256");
  // A serial loop inside is copied too.
  const char *bigger = "kernel s(x: f32[N]) -> y: f32[] where N = 2000 { y[] = sum(i) x[i] }";
  EXPECT_EQ(refusal(bigger, "split y.i 50 -> io ii\nsplit y.io 20 -> a b\nunroll y.b"), "") << "20 x 50 iterations";
  EXPECT_EQ(first_line(refusal(bigger, "split y.i 100 -> io ii\nunroll y.io")),
            "s.sched:2:1: error: unroll y.io: unrolling loop io would copy 2000 iterations of the loops inside it; at "
            "most 1024");
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
  EXPECT_EQ(
      first_line(refusal(arg, "bind y.i group.x\ncross_reduce y.j 4 -> t")),
      "s.sched:2:1: error: cross_reduce y.j: y is not a sum, prod, max, min or logsumexp reduction into a private "
      "accumulator");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\nbind total.n local.x")),
            "s.sched:2:1: error: bind total.n: loop n is already group.x");
}

const char *kSoftmaxOneKernel =
    "inline e\nbind row_max.n group.x\ncross_reduce row_max.d 4 -> t\nbind total.n group.x\n"
    "cross_reduce total.d 4 -> t\nsplit y.d 4 -> dj t\nreorder y t dj\nbind y.n group.x\nbind y.t local.x\n";

Program scheduled(const char *spec, const std::string &text) {
  Program p = lowered(spec);
  for (const Primitive &s : schedule_of(text).steps) p = apply_primitive(p, s);
  return p;
}

using test::count;

const char *kScale = "kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 3, D = 8 { y[n, d] = x[n, d] * 2.0 }";

const char *kCumulative = R"(kernel c(x: f32[B, N]) -> (y: f32[B, N], r: f32[B, N], e: f32[B, N], w: f32[B, N],
                                     s: f32[B, N])
  where B = 2, N = 10
{
  y[b, i] = sum(k: 0..i + 1) x[b, k]
  r[b, i] = sum(k: i..N) x[b, k]
  e[b, i] = sum(k: 0..i) x[b, k]
  w[b, i] = sum(k: 0..i + 1) x[b, k] * i
  s[b, i] = sum(k: 0..i - 1) x[b, k] else 0.0
})";

// A running total: each work-item's chunk of consecutive k totalled, the totals
// scanned in local memory (a step per power of two, each between barriers), then
// the chunk again from its prefix, a store per k.
TEST(Scan, RunningTotalsFromPrefixes) {
  Program p = scheduled(kCumulative, "bind y.b group.x\nscan y.i 4 -> t");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "barrier local"), 5) << text;  // after the totals, then two per step (s = 1, 2)
  EXPECT_EQ(count(text, "y_part[t] = y_part[t] + y_carry[0]"), 2) << text;
  // ceil(10 / 4) consecutive k each, twice, a loop of its own name each time
  EXPECT_EQ(count(text, "for kc in 0..3"), 1) << text;
  EXPECT_EQ(count(text, "for kc1 in 0..3"), 1) << text;
  EXPECT_EQ(count(text, "let k = t * 3 + kc\n"), 1) << text;
  EXPECT_EQ(count(text, "let k = t * 3 + kc1\n"), 1) << text;
  EXPECT_EQ(count(text, "y[b, k] = y_acc[0]"), 1) << text;
  EXPECT_EQ(count(text, "writes(y[b, 0 +: 10])"), 1) << text;
  EXPECT_EQ(count(text, "y_acc[0] = select(t >= 1, y_part[max(t - 1, 0)], 0.0)"), 1) << text;
  EXPECT_EQ(launch_shape(p.kernels[0]).local[0], 4);
  // A primitive on the first pass leaves the second, which stores, as it was (the
  // two passes once shared a loop name, and a cache_read of the first replaced both).
  const std::string cached = print_stmt(
      scheduled(kCumulative, "bind y.b group.x\nscan y.i 4 -> t\ncache_read y.kc x private -> c").kernels[0].body);
  EXPECT_EQ(count(cached, "y[b, k] = y_acc[0]"), 1) << cached;
  EXPECT_EQ(count(cached, "allocate c:"), 1) << cached;
  EXPECT_EQ(count(cached, "y_acc[0] = y_acc[0] + x[b, k]"), 1) << cached;
  // The schedule prints and parses back.
  EXPECT_EQ(print_schedule(schedule_of("scan y.i 4 -> t")), "scan y.i 4 -> t\n");
  // Reversed: positions run down each chunk, and the chunks after t's are summed.
  const std::string r = print_stmt(scheduled(kCumulative, "bind r.b group.x\nscan r.i 4 -> t").kernels[1].body);
  EXPECT_EQ(count(r, "let k = t * 3 + (2 - kc)"), 1) << r;
  EXPECT_EQ(count(r, "let k = t * 3 + (2 - kc1)"), 1) << r;
  EXPECT_EQ(count(r, "r_carry[0] = select(t < 3, r_part[min(t + 1, 3)], 0.0)"), 1) << r;
  EXPECT_EQ(count(r, "r_acc[0] = select(t < 3, r_part[min(t + 1, 3)], 0.0)"), 1) << r;
  // Exclusive: each position stored before its own value is added, which its box
  // (one short) holds only up to 9.
  std::string e = print_stmt(scheduled(kCumulative, "bind e.b group.x\nscan e.i 4 -> t").kernels[2].body);
  std::erase_if(e, [](char ch) { return ch == ' ' || ch == '\n'; });
  EXPECT_NE(e.find("e[b,k]=e_acc[0]ifk<9{e_acc[0]=e_acc[0]+x[b,k]}"), std::string::npos) << e;
}

TEST(Scan, Refusals) {
  EXPECT_EQ(first_line(refusal(kCumulative, "scan y.i 4 -> t")),
            "s.sched:1:1: error: scan y.i: loop b of y is serial; bind every other spatial loop of the stage to a "
            "work-group first");
  EXPECT_EQ(first_line(refusal(kCumulative, "bind y.b group.x\nscan y.i 6 -> t")),
            "s.sched:2:1: error: scan y.i: the number of work-items must be a power of two from 2 to 1024, not 6");
  EXPECT_EQ(first_line(refusal(kCumulative, "bind y.b group.x\nscan y.k 4 -> t")),
            "s.sched:2:1: error: scan y.k: loop k is not the innermost spatial loop of y (scan takes the spatial "
            "loop the cumulative range names)");
  EXPECT_EQ(first_line(refusal(kCumulative, "bind y.b group.x\nscan y.i 4 -> b")),
            "s.sched:2:1: error: scan y.i: name b is already used in kernel y");
  // A range that ends one before the exclusive total's is no running total.
  EXPECT_EQ(first_line(refusal(kCumulative, "bind s.b group.x\nscan s.i 4 -> t")),
            "s.sched:2:1: error: scan s.i: s is not a running total y[.., i] = sum(k: 0..i + 1), (k: 0..i), (k: i..N) "
            "or (k: i + 1..N) (or prod, max, min) as lowering writes it");
  EXPECT_EQ(first_line(refusal(kCumulative, "bind w.b group.x\nscan w.i 4 -> t")),
            "s.sched:2:1: error: scan w.i: the value w accumulates depends on i itself, not only on k");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\nscan total.n 4 -> t")),
            "s.sched:2:1: error: scan total.n: loop n of total must be serial and hold the stage's block directly");
  // The second pass stores the running total at each step: its loops keep their order
  // (reordered, a chunk of more than one step ran its positions out of order: wrong
  // past 4 x 3 positions here, past 1024 x 8 in issue 45's cumsum). The first pass,
  // a sum alone, may reorder.
  const std::string two_steps = "bind y.b group.x\nscan y.i 2 -> t\nsplit y.kc1 2 -> t0 t1\n";
  EXPECT_EQ(first_line(refusal(kCumulative, two_steps + "reorder y t1 t0")),
            "s.sched:4:1: error: reorder y: the iterations of t0 depend on their order (y stores the running value of "
            "y_acc at each step); reordering them would change what is stored");
  EXPECT_EQ(refusal(kCumulative, "bind y.b group.x\nscan y.i 2 -> t\nsplit y.kc 2 -> t0 t1\nreorder y t1 t0"), "");
}

TEST(Vectorize, MarksTheLoop) {
  Program p = scheduled(kScale, "split y.d 4 -> do dv\nvectorize y.dv\n");
  EXPECT_EQ(count(print_stmt(p.kernels[0].body), "for dv in 0..4 vectorized"), 1) << print_program(p);
  // An unrolled loop may be vectorized instead (cache_write unrolls its copies).
  Program q = scheduled(kScale, "split y.d 4 -> do dv\nunroll y.dv\nvectorize y.dv\n");
  EXPECT_EQ(count(print_stmt(q.kernels[0].body), "for dv in 0..4 vectorized"), 1);
}

TEST(Vectorize, Refusals) {
  EXPECT_EQ(first_line(refusal(kScale, "split y.d 4 -> do dv\nvectorize y.dq")),
            "s.sched:2:1: error: vectorize y.dq: no loop named dq in stage y; loops are n, do, dv");
  EXPECT_EQ(first_line(refusal(kScale, "split y.d 2 -> do dv\nvectorize y.do")),
            "s.sched:2:1: error: vectorize y.do: loop do is not innermost: it holds loop dv");
  EXPECT_EQ(first_line(refusal(kScale, "vectorize y.n")),
            "s.sched:1:1: error: vectorize y.n: loop n has 3 iterations; vectors have 2, 4, 8 or 16 lanes (split it "
            "first)");
  EXPECT_EQ(first_line(refusal(kScale, "split y.n 2 -> no ni\nreorder y no d ni\nvectorize y.ni")),
            "s.sched:3:1: error: vectorize y.ni: index 0 of the read of x (n) depends on ni; only the last index may");
  EXPECT_EQ(first_line(refusal(kScale, "split y.d 4 -> do dv\nvectorize y.dv\nvectorize y.dv")),
            "s.sched:3:1: error: vectorize y.dv: loop dv is already vectorized");
  EXPECT_EQ(first_line(refusal(kScale, "bind y.n group.x\nvectorize y.n")),
            "s.sched:2:1: error: vectorize y.n: loop n is already group.x");
  const char *row_sums = "kernel r(x: f32[N, K]) -> y: f32[N] where N = 3, K = 8 { y[n] = sum(k) x[n, k] }";
  EXPECT_EQ(first_line(refusal(row_sums, "vectorize y.k")),
            "s.sched:1:1: error: vectorize y.k: the store to y_acc writes the same element in every lane");
  // A tail (5 is not a multiple of 4) is vectorized where every lane is in range.
  EXPECT_EQ(refusal(kSoftmax, "split y.d 4 -> dj dv\nvectorize y.dv"), "");
}

// A matmul under a bias and an activation: the epilogue of KernelBench's level 2.
const char *kMatmulBias = R"(kernel mb(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> y: f32[M, N]
  where M = 4, N = 6, K = 3 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
  y[i, j] = relu(c[i, j] + bias[j])
})";

TEST(ReverseInline, TheEpilogueRunsWhereTheProducerStores) {
  std::string reason;
  auto p = reverse_inline(lowered(kMatmulBias), "y", &reason);
  ASSERT_TRUE(p) << reason;
  EXPECT_EQ(p->kernels.size(), 1u);
  EXPECT_EQ(p->find_buffer("c"), nullptr);
  const std::string text = print_program(*p);
  EXPECT_NE(text.find("y[i, j] = relu(c_acc[0] + bias[j])"), std::string::npos) << text;
  EXPECT_NE(text.find("block c reads(a[i, 0 +: 3], b[0 +: 3, j], bias[j]) writes(y[i, j])"), std::string::npos) << text;
  // On a register tile, each accumulator as it is written back.
  Program tiled = scheduled(kMatmulBias, "split c.j 3 -> jo ji\ncache_write c.jo private\nreverse_inline y\n");
  EXPECT_NE(print_program(tiled).find("y[i, j_out] = relu(c_acc[ji_out] + bias[j_out])"), std::string::npos)
      << print_program(tiled);
}

TEST(ReverseInline, Refusals) {
  EXPECT_EQ(first_line(refusal(kMatmulBias, "reverse_inline c")),
            "s.sched:1:1: error: reverse_inline c: c is not elementwise (it reduces or computes more than one store)");
  EXPECT_EQ(first_line(refusal(kSoftmax, "reverse_inline y")),
            "s.sched:1:1: error: reverse_inline y: y reads more than one temporary (e, total); reverse_inline "
            "computes it where the one temporary it reads is stored");
  EXPECT_EQ(first_line(refusal(kSoftmax, "reverse_inline e")),
            "s.sched:1:1: error: reverse_inline e: row_max and e differ in shape");
  const char *shifted = R"(kernel s(a: f32[M, K], b: f32[K, N]) -> y: f32[M, N] where M = 4, N = 6, K = 3 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
  y[i, j] = c[i, j] + c[i, 0]
})";
  EXPECT_EQ(first_line(refusal(shifted, "reverse_inline y")),
            "s.sched:1:1: error: reverse_inline y: y reads c at other elements than its own");
  const char *shared = R"(kernel s(a: f32[M, K], b: f32[K, N]) -> y: f32[M, N] where M = 4, N = 6, K = 3 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
  t[i, j] = c[i, j] * 2.0
  y[i, j] = t[i, j] + c[i, j]
})";
  EXPECT_EQ(first_line(refusal(shared, "reverse_inline t")),
            "s.sched:1:1: error: reverse_inline t: c is read by kernel y too, not by t alone");
  EXPECT_EQ(first_line(refusal(kMatmulBias, "reverse_inline y\nsplit y.i 2 -> io ii")),
            "s.sched:2:1: error: split y.i: no stage named y; stages are c");
}

TEST(ComputeAt, SoftmaxBecomesOneKernel) {
  Program p = scheduled(kSoftmax, std::string(kSoftmaxOneKernel) + "compute_at total y.t\ncompute_at row_max y.t\n");
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.buffers.size(), 2u);  // x and y: both temporaries moved to local memory
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate row_max: f32[1] local"), 1) << text;
  EXPECT_EQ(count(text, "allocate total: f32[1] local"), 1) << text;
  EXPECT_EQ(count(text, "row_max[0] = row_max_part[0]"), 1) << text;
  EXPECT_EQ(count(text, "barrier global"), 0) << text;
  // The order of the stages in the kernel: max, sum, normalisation.
  EXPECT_LT(text.find("block row_max"), text.find("block total"));
  EXPECT_LT(text.find("block total"), text.find("block y"));
  // Clashing names of the producers were renamed.
  EXPECT_EQ(count(text, "for dj in"), 1) << text;
}

TEST(ComputeAt, StaysGlobalWhileAnotherKernelReads) {
  // row_max moves into total's kernel but y still reads it: it stays global, and
  // the work-items of a group meet at a global barrier.
  Program p = scheduled(kSoftmax, std::string(kSoftmaxOneKernel) + "compute_at row_max total.t\n");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_NE(p.find_buffer("row_max"), nullptr);
  EXPECT_EQ(count(print_stmt(p.kernels[0].body), "barrier global"), 1);
}

TEST(ComputeAt, Refusals) {
  const std::string ready = kSoftmaxOneKernel;
  EXPECT_EQ(first_line(refusal(kSoftmax, ready + "compute_at row_max total.dj")),
            "s.sched:10:1: error: compute_at row_max total.dj: the loops of row_max's kernel do not match total's "
            "down to dj: no loop where total has dj (2, serial)");
  EXPECT_EQ(first_line(refusal(kSoftmax, ready + "compute_at y total.t")),
            "s.sched:10:1: error: compute_at y total.t: y runs after total");
  EXPECT_EQ(first_line(refusal(kSoftmax, ready + "compute_at total y.t\ncompute_at total y.t")),
            "s.sched:11:1: error: compute_at total y.t: total and y are already in one kernel");
  EXPECT_EQ(first_line(refusal(kSoftmax, "compute_at total y.n")),
            "s.sched:1:1: error: compute_at total y.n: loop n is serial; compute_at goes at y's innermost bound loop "
            "(bind its loops first)");
  EXPECT_EQ(first_line(refusal(kSoftmax, ready + "compute_at total y.n")),
            "s.sched:10:1: error: compute_at total y.n: loop n is not y's innermost bound loop");
  EXPECT_EQ(first_line(refusal(kSoftmax,
                               "bind total.n group.x\ncross_reduce total.d 2 -> t\nsplit y.d 4 -> dj t\n"
                               "reorder y t dj\nbind y.n group.x\nbind y.t local.x\ncompute_at total y.t")),
            "s.sched:7:1: error: compute_at total y.t: the loops of total's kernel do not match y's down to t: t (2, "
            "local.x) where y has t (4, local.x)");
  EXPECT_EQ(first_line(refusal(kSoftmax,
                               "bind total.n group.x\nsplit y.d 4 -> dj t\nreorder y t dj\n"
                               "bind y.n group.x\nbind y.t local.x\ncompute_at total y.t")),
            "s.sched:6:1: error: compute_at total y.t: the loops of total's kernel do not match y's down to t: no loop "
            "where y has t (4, local.x)");
  // Matching loops, but y's work-group n is total's work-group d: y would read
  // what another group writes.
  const char *square = R"(kernel s(x: f32[N, D]) -> y: f32[N, D] where N = 4, D = 4 {
  total[n] = sum(d) x[n, d]
  y[n, d] = x[n, d] / total[n]
})";
  EXPECT_EQ(first_line(refusal(square,
                               "bind total.n group.x\ncross_reduce total.d 4 -> t\nreorder y d n\n"
                               "bind y.d group.x\nbind y.n local.x\ncompute_at total y.n")),
            "s.sched:6:1: error: compute_at total y.n: y reads total[n] = total[1] at n = 1 in the work-group at d = "
            "0, which total does not write in that group");
  // A producer whose kernel has bound loops left over.
  EXPECT_EQ(first_line(refusal(square,
                               "bind total.n group.x\ncross_reduce total.d 4 -> t\nbind y.n group.x\n"
                               "compute_at total y.n")),
            "s.sched:4:1: error: compute_at total y.n: total's kernel has more bound loops than y has down to n");
}

// A row statistic of a contraction's tile in the tile's kernel: total's parts (rfactor)
// over each group's 4 columns, a part's work-item a row, c's a column. Each reads what
// three others of its group wrote, past the barrier compute_at puts between them.
const char *kTileStatistic = R"(kernel k(a: f32[M, K], b: f32[K, N]) -> y: f32[M, N] where M = 8, N = 8, K = 4 {
  c[i, j] = sum(k) a[i, k] * b[k, j]
  total[i] = sum(j) c[i, j]
  y[i, j] = c[i, j] / total[i]
})";
const char *kTileStatisticSchedule =
    "rewrite rfactor total.j 4 -> total_rf jo ji\ntile c i j 4 4 -> io jo ii ji\nreorder c io jo ji ii\n"
    "bind c.io group.y\nbind c.jo group.x\nbind c.ji local.x\nsplit total_rf.i 4 -> io ii\n"
    "reorder total_rf io jo ii\nbind total_rf.io group.y\nbind total_rf.jo group.x\nbind total_rf.ii local.x\n";

TEST(ComputeAt, AStatisticReadsWhatItsGroupWrote) {
  Program p = run_pipeline(test::graph_of(kTileStatistic),
                           schedule_of(std::string(kTileStatisticSchedule) + "compute_at c total_rf.ii\n"));
  ASSERT_EQ(p.kernels.size(), 3u);  // c and total_rf; total; y
  EXPECT_EQ(p.kernels[0].name, "total_rf");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "barrier global"), 1) << text;
  EXPECT_LT(text.find("block c"), text.find("barrier global"));
  EXPECT_LT(text.find("barrier global"), text.find("block total_rf"));
  EXPECT_NE(p.find_buffer("c"), nullptr) << "y reads c too: it stays global";
  // The same with c's work-groups numbered the other way: a group of total_rf would
  // read rows that another group of c computes.
  std::string swapped = std::string(kTileStatisticSchedule) + "compute_at c total_rf.ii\n";
  auto replace = [&](const std::string &from, const std::string &to) {
    swapped.replace(swapped.find(from), from.size(), to);
  };
  replace("reorder total_rf io jo ii", "reorder total_rf jo io ii");
  replace("bind total_rf.io group.y\nbind total_rf.jo group.x", "bind total_rf.jo group.y\nbind total_rf.io group.x");
  const std::string refused =
      test::user_error([&] { run_pipeline(test::graph_of(kTileStatistic), schedule_of(swapped)); });
  EXPECT_NE(refused.find("compute_at c total_rf.ii: total_rf reads c[i, jo * 4 + ji] = c[0, 4] at ii = 0 in the "
                         "work-group at jo = 1, io = 0, which c does not write in that group"),
            std::string::npos)
      << refused;
}

// A schedule checked on a device against the interpreter at `sizes` (not timed, one
// trial, asynchronous copies in order), the record shown where it is wrong.
void expect_agrees(const frontend::Spec &spec, const std::string &path, runtime::Device &device, const std::string &api,
                   const std::string &schedule, const std::string &sizes) {
  EvalOptions options;
  options.time = false;
  options.trials = 1;
  options.async_copies_in_order = true;
  options.schedule = schedule_of(schedule);
  frontend::parse_size_assignments(sizes, &options.check_sizes);
  EvalRecord r = evaluate(spec, path, device, options);
  EXPECT_TRUE(r.ok()) << api << " at " << sizes << ":\n" << schedule << r.to_json().dump(2);
}

// The fused kernel on the devices here (PoCL, lavapipe) agrees with the interpreter,
// where the tiles overhang the sizes (the guards evaluated in the group check) and
// where they fit.
TEST(ComputeAtOnDevice, AStatisticReadsWhatItsGroupWrote) {
  const frontend::Spec spec = frontend::parse_spec(test::source(kTileStatistic, "tile_statistic.ks"));
  test::on_each_device([&](const std::string &api, runtime::Device &device) {
    // The schedule's tiles of 4 and tiles of 2, 3 and 8 at random sizes (a part's last
    // columns past N read c's last column, which the group's tile must have written).
    std::mt19937 rng(11);
    std::vector<std::pair<int, std::string>> cases{{4, "M=13,N=11,K=5"}, {4, "M=16,N=8,K=3"}};
    for (int tile : {2, 3, 8}) {
      std::uniform_int_distribution<int> extent(tile + 1, 4 * tile + 3);
      cases.emplace_back(tile, "M=" + std::to_string(extent(rng)) + ",N=" + std::to_string(extent(rng)) + ",K=3");
    }
    for (const auto &[tile, sizes] : cases) {
      std::string schedule = std::string(kTileStatisticSchedule) + "compute_at c total_rf.ii\n";
      const std::string t = std::to_string(tile);
      for (const auto &[from, to] : {std::pair<std::string, std::string>{"total.j 4", "total.j " + t},
                                     {"j 4 4", "j " + t + " " + t},
                                     {"total_rf.i 4", "total_rf.i " + t}})
        schedule.replace(schedule.find(from), from.size(), to);
      expect_agrees(spec, "tile_statistic.ks", device, api, schedule, sizes);
    }
  });
}

// Attention in two passes over the scores, as flash attention's backward pass runs:
// the rows' logsumexp, then the weighted sum, each computing the scores it reads
// (recompute, then compute_at inside each reduction), so s is never stored.
const char *kTwoPassAttention = R"(kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, D]) -> y: f32[T, D]
  where T = 64, D = 16
  check T = 13, D = 5
{
  s[i, j] = sum(d) q[i, d] * k[j, d] * 0.25
  l[i] = logsumexp(j) s[i, j]
  y[i, e] = sum(j) exp(s[i, j] - l[i]) * v[j, e]
})";
// y: 16 rows a group, a work-item a row and 4 of its columns (ei), panels of 8 j; its
// scores s_y 16 x 8 a panel, a work-item 2 of a row's 8 (jt, ja). l: a work-item a row,
// which computes its own row's scores s_l.
const char *kTwoPassSchedule =
    "rewrite recompute s\n"
    "split y.i 16 -> io ii\nsplit y.e 4 -> eo ei\nreorder y io ii ei eo\nbind y.io group.x\nbind y.ii local.y\n"
    "bind y.ei local.x\ncache_write y.ei private\nsplit y.j 8 -> ko ki\n"
    "split s_y.i 16 -> io ii\nsplit s_y.j 8 -> jq jr\nsplit s_y.jr 4 -> ja jt\nreorder s_y io ii jt jq ja\n"
    "bind s_y.io group.x\nbind s_y.ii local.y\nbind s_y.jt local.x\ncompute_at s_y y.ko\n"
    "split l.i 16 -> io ii\nbind l.io group.x\nbind l.ii local.x\nsplit l.j 8 -> ko ki\n"
    "split s_l.i 16 -> io ii\nsplit s_l.j 8 -> jq jr\nreorder s_l io ii jq jr\nbind s_l.io group.x\n"
    "bind s_l.ii local.x\ncompute_at s_l l.ko\n";

TEST(ComputeAt, InsideAReductionEachIterationComputesWhatItReads) {
  Program p = run_pipeline(test::graph_of(kTwoPassAttention), schedule_of(kTwoPassSchedule));
  ASSERT_EQ(p.kernels.size(), 2u);  // l with its scores; y with its own
  EXPECT_EQ(p.find_buffer("s_y"), nullptr);
  EXPECT_EQ(p.find_buffer("s_l"), nullptr);
  const std::string l = print_stmt(p.kernels[0].body), y = print_stmt(p.kernels[1].body);
  // One iteration's block of the scores in local memory: s[i, j] at rows io * 16 + ii and
  // columns ko * 8 + jr is s_y[ii, jr].
  EXPECT_EQ(count(y, "allocate s_y: f32[16, 8] local"), 1) << y;
  EXPECT_EQ(count(y, "s_y[ii, ei + ja * 4] = s_y_acc[0]"), 1) << y;  // (s_y's jt matched to y's ei)
  EXPECT_NE(y.find("exp(s_y[ii, ki] - l[i])"), std::string::npos) << y;
  // In each iteration of ko: the scores, a barrier, the sum, a barrier (the next
  // iteration's scores overwrite what this one read).
  const size_t ko = y.find("for ko in 0..8 {");
  ASSERT_NE(ko, std::string::npos) << y;
  EXPECT_LT(ko, y.find("block s_y"));
  EXPECT_LT(y.find("block s_y"), y.find("barrier local"));
  EXPECT_EQ(count(y, "barrier local"), 2) << y;
  EXPECT_EQ(count(l, "allocate s_l: f32[16, 8] local"), 1) << l;
  // At the check sizes the rows past T are guarded inside the loop, not around it: every
  // work-item meets the barriers.
  Program check =
      run_pipeline(test::graph_of(kTwoPassAttention, frontend::SizeSet::Check), schedule_of(kTwoPassSchedule));
  for (const Kernel &k : check.kernels)
    for (const IfThenElse *guard : collect<IfThenElse>(k.body))
      EXPECT_FALSE(has_barrier(guard->then_case)) << print_stmt(k.body);
}

TEST(ComputeAt, InsideAReductionRefusals) {
  const std::string base = kTwoPassSchedule;
  auto without = [&](const std::string &line) {
    std::string out = base;
    out.erase(out.find(line), line.size());
    return out;
  };
  // s_y's matched loop numbers the columns with a stride: the iteration of ko that reads
  // columns 8 ko .. 8 ko + 7 would find columns ko, ko + 8, ... computed.
  std::string strided = without("compute_at s_y y.ko\n");
  strided.replace(strided.find("split s_y.j 8 -> jq jr\nsplit s_y.jr 4 -> ja jt\nreorder s_y io ii jt jq ja\n"),
                  std::string("split s_y.j 8 -> jq jr\nsplit s_y.jr 4 -> ja jt\nreorder s_y io ii jt jq ja\n").size(),
                  "split s_y.j 8 -> jr jq\nsplit s_y.jr 4 -> ja jt\nreorder s_y io ii jt jq ja\n");
  const std::string refused = test::user_error(
      [&] { run_pipeline(test::graph_of(kTwoPassAttention), schedule_of(strided + "compute_at s_y y.ko\n")); });
  EXPECT_NE(refused.find("compute_at s_y y.ko: y reads s_y[i, j] = s_y[0, 1] at ii = 0, ei = 0 in the work-group at "
                         "io = 0, ko = 0, which s_y does not write in that group"),
            std::string::npos)
      << refused;
  // A reduction loop that is not serial.
  const std::string unrolled = test::user_error([&] {
    run_pipeline(test::graph_of(kTwoPassAttention),
                 schedule_of(without("compute_at s_y y.ko\n") + "unroll y.ki\ncompute_at s_y y.ki\n"));
  });
  EXPECT_NE(unrolled.find("compute_at s_y y.ki: loop ki is unrolled; compute_at goes at y's serial reduction loops"),
            std::string::npos)
      << unrolled;
}

// The same with local copies: q once a work-group (cache_read at s_y's work-item loop,
// before its serial loop: P's prologue), k at s_y's serial loop and v at y's, which
// compute_at puts in one copy phase at the start of ko, so that async_copy rings both.
std::string two_pass_with_copies() {
  std::string s = kTwoPassSchedule;
  auto insert_before = [&](const std::string &line, const std::string &text) { s.insert(s.find(line), text); };
  insert_before("split s_y.i 16", "cache_read y.ko v local -> v_s\n");
  insert_before("compute_at s_y y.ko\n", "cache_read s_y.jt q local -> q_s\ncache_read s_y.jq k local -> k_s\n");
  s.replace(s.find("compute_at s_y y.ko\n"), std::string("compute_at s_y y.ko\n").size(),
            "compute_at s_y y.ko\nasync_copy y.ko 2\n");
  return s;
}

TEST(ComputeAt, InsideAReductionTheProducersCopiesJoinTheRing) {
  Program p = run_pipeline(test::graph_of(kTwoPassAttention), schedule_of(two_pass_with_copies()));
  ASSERT_EQ(p.kernels.size(), 2u);
  const std::string y = print_stmt(p.kernels[1].body);
  // q's copy once, before y's block; k's and v's in one ring of two slots around ko.
  EXPECT_LT(y.find("allocate q_s: f32[16, 16] local"), y.find("block y"));
  EXPECT_EQ(count(y, "allocate k_s: f32[2, 8, 16] local"), 1) << y;
  EXPECT_EQ(count(y, "allocate v_s: f32[2, 8, 16] local"), 1) << y;
  EXPECT_LT(y.find("allocate k_s"), y.find("for ko in"));
  // The scores stay one iteration's, outside the ring.
  EXPECT_EQ(count(y, "allocate s_y: f32[16, 8] local"), 1) << y;
  EXPECT_LT(y.find("for ko in"), y.find("allocate s_y"));
  EXPECT_NE(y.find("k_s[ko % 2, "), std::string::npos) << y;
  EXPECT_NE(y.find("v_s[ko % 2, "), std::string::npos) << y;
}

// The two passes on the devices here against the interpreter, without local copies and
// with the ring: at the check sizes (the tiles overhang T and D), at the spec's, where
// 16 rows overhang T, and with other tiles at random sizes.
TEST(ComputeAtOnDevice, TwoPassAttentionAgreesWithTheInterpreter) {
  const frontend::Spec spec = frontend::parse_spec(test::source(kTwoPassAttention, "two_pass.ks"));
  test::on_each_device([&](const std::string &api, runtime::Device &device) {
    // The schedules' 16 rows and panels of 8, and other tiles at random sizes (the
    // folded block's extent, a panel past T, rows past T in the guards sunk into ko).
    std::vector<std::pair<std::string, std::string>> cases;
    for (const std::string &schedule : {std::string(kTwoPassSchedule), two_pass_with_copies()})
      for (const std::string sizes : {"T=13,D=5", "T=64,D=16", "T=40,D=12"}) cases.emplace_back(schedule, sizes);
    std::mt19937 rng(5);
    for (const auto &[rows, panel] : {std::pair<int, int>{4, 2}, {8, 4}, {16, 2}, {4, 8}}) {
      std::string schedule = rng() % 2 ? two_pass_with_copies() : std::string(kTwoPassSchedule);
      for (const std::string stage : {"y", "s_y", "l", "s_l"}) {
        const std::string i = "split " + stage + ".i 16 ", j = "split " + stage + ".j 8 ";
        schedule.replace(schedule.find(i), i.size(), "split " + stage + ".i " + std::to_string(rows) + " ");
        schedule.replace(schedule.find(j), j.size(), "split " + stage + ".j " + std::to_string(panel) + " ");
      }
      std::uniform_int_distribution<int> t(rows + 1, 4 * rows + 3), d(3, 17);
      cases.emplace_back(schedule, "T=" + std::to_string(t(rng)) + ",D=" + std::to_string(d(rng)));
    }
    for (const auto &[schedule, sizes] : cases) expect_agrees(spec, "two_pass.ks", device, api, schedule, sizes);
  });
}

// Causal attention in the same two passes: the mask's copies inline (recompute m, then
// s), so each pass reads its panel of scores under select(j <= i, .., -inf). A group
// of 16 rows from io * 16 needs the panels of 8 j up to ko * 8 <= io * 16 + 15: the
// others are not computed (skip_masked_steps), in both passes, nor are their zero
// weights summed (but at the first panel: a row whose every weight is masked keeps
// the NaN that summing them gives).
const char *kCausalTwoPassAttention = R"(kernel a(q: f32[T, D], k: f32[T, D], v: f32[T, D]) -> y: f32[T, D]
  where T = 64, D = 16
  check T = 13, D = 5
{
  s[i, j] = sum(d) q[i, d] * k[j, d] * 0.25
  m[i, j] = select(j <= i, s[i, j], -inf)
  l[i] = logsumexp(j) m[i, j]
  y[i, e] = sum(j) exp(m[i, j] - l[i]) * v[j, e]
})";
std::string causal_two_pass(std::string s) {
  s.replace(s.find("rewrite recompute s\n"), std::string("rewrite recompute s\n").size(),
            "rewrite recompute m\nrewrite recompute s\ninline m_y\ninline m_l\n");
  for (const auto &[from, to] : {std::pair<std::string, std::string>{"s_y", "s_m_y"}, {"s_l", "s_m_l"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

TEST(SkipMaskedSteps, PanelsTheMaskHidesAreNotComputed) {
  Program p = run_pipeline(test::graph_of(kCausalTwoPassAttention), schedule_of(causal_two_pass(kTwoPassSchedule)));
  ASSERT_EQ(p.kernels.size(), 2u);
  for (const Kernel &k : p.kernels) {
    const std::vector<const IfThenElse *> guards = collect<IfThenElse>(k.body);
    ASSERT_EQ(guards.size(), k.name == "y" ? 2u : 1u) << print_stmt(k.body);
    EXPECT_EQ(print_expr(guards[0]->condition), "i64(io) * 16L + i64(ko) * -8L + 15L >= 0L");
    const std::vector<const Block *> panel = collect<Block>(guards[0]->then_case);
    ASSERT_EQ(panel.size(), 1u) << print_stmt(k.body);
    EXPECT_EQ(panel[0]->stage, k.name == "y" ? "s_m_y" : "s_m_l");
    if (k.name != "y") continue;
    EXPECT_EQ(print_expr(guards[1]->condition), "ko == 0 || i64(io) * 16L + i64(ko) * -8L + 15L >= 0L");
    const std::vector<const Store *> sums = collect<Store>(guards[1]->then_case);
    ASSERT_EQ(sums.size(), 1u) << print_stmt(k.body);
    EXPECT_EQ(sums[0]->buffer, "y_acc");
  }
  // Read where no mask hides them, the panels are computed at every step.
  const Program plain = run_pipeline(test::graph_of(kTwoPassAttention), schedule_of(kTwoPassSchedule));
  for (const Kernel &k : plain.kernels) EXPECT_TRUE(collect<IfThenElse>(k.body).empty()) << print_stmt(k.body);
}

// The causal two passes on the devices here against the interpreter, at sizes whose
// groups skip panels and at the check sizes, without local copies and with the ring.
TEST(SkipMaskedStepsOnDevice, CausalTwoPassAttentionAgreesWithTheInterpreter) {
  const frontend::Spec spec = frontend::parse_spec(test::source(kCausalTwoPassAttention, "causal.ks"));
  test::on_each_device([&](const std::string &api, runtime::Device &device) {
    for (const std::string &schedule : {causal_two_pass(kTwoPassSchedule), causal_two_pass(two_pass_with_copies())})
      for (const std::string sizes : {"T=13,D=5", "T=64,D=16", "T=45,D=7"})
        expect_agrees(spec, "causal.ks", device, api, schedule, sizes);
  });
}

const char *kTiled =
    "tile c i j 8 8 -> io jo ii ji\nsplit c.ii 4 -> ri ty\nsplit c.ji 4 -> rj tx\nreorder c ty tx ri rj\n"
    "bind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\nbind c.tx local.x\n";

TEST(CacheWrite, AccumulatesATileInRegisters) {
  Program p = scheduled(kMatmul, std::string(kTiled) + "cache_write c.tx private\n");
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate c_acc: f32[2, 2] private"), 1) << text;
  EXPECT_EQ(count(text, "c_acc[ri_init, rj_init] = 0.0"), 1) << text;
  EXPECT_EQ(count(text, "c_acc[ri, rj] = c_acc[ri, rj] + a[i, k] * b[k, j]"), 1) << text;
  EXPECT_EQ(count(text, "c[i_out, j_out] = c_acc[ri_out, rj_out]"), 1) << text;
  // The reduction loop now encloses the tile's loops.
  EXPECT_LT(text.find("for k in"), text.find("for ri in"));
  EXPECT_EQ(count(text, "for ri_init in 0..2 unrolled"), 1) << text;
}

TEST(CacheWrite, Refusals) {
  const std::string tiled = kTiled;
  EXPECT_EQ(first_line(refusal(kMatmul, tiled + "cache_write c.tx local")),
            "s.sched:9:1: error: cache_write c.tx: only private accumulators are supported (the reduction loops would "
            "have to move outside local loops)");
  EXPECT_EQ(first_line(refusal(kMatmul, tiled + "cache_write c.k private")),
            "s.sched:9:1: error: cache_write c.k: loop k is a reduction loop of c; cache_write needs a loop around its "
            "block");
  EXPECT_EQ(first_line(refusal(kMatmul, tiled + "cache_write c.ty private")),
            "s.sched:9:1: error: cache_write c.ty: loop tx below ty is local.x");
  EXPECT_EQ(first_line(refusal(kMatmul, tiled + "cache_write c.rj private")),
            "s.sched:9:1: error: cache_write c.rj: no spatial loops of c lie below loop rj; nothing to accumulate");
  EXPECT_EQ(first_line(refusal(kMatmul, tiled + "cache_write c.tx private\ncache_write c.tx private")),
            "s.sched:10:1: error: cache_write c.tx: no spatial loops of c lie below loop tx; nothing to accumulate");
  EXPECT_EQ(first_line(refusal(kSoftmax,
                               std::string(kSoftmaxOneKernel) + "compute_at total y.t\ncache_write total.t private")),
            "s.sched:11:1: error: cache_write total.t: only loops, lets and guards may lie between loop t and the "
            "block of total");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind y.n group.x\ncache_write y.n private")),
            "s.sched:2:1: error: cache_write y.n: y is not a reduction into one private accumulator (or it is "
            "already cached)");
  const char *wide =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 4, N = 512, K = 8 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  EXPECT_EQ(first_line(refusal(wide, "bind c.i group.x\ncache_write c.i private")),
            "s.sched:2:1: error: cache_write c.i: the accumulators (512 per work-item) exceed 256");
}

TEST(CacheRead, CopiesTheBoxToLocalMemory) {
  Program p = scheduled(kMatmul, std::string(kTiled) +
                                     "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                     "cache_read c.ko b local -> b_s\n");
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate a_s: f32[8, 4] local"), 1) << text;
  EXPECT_EQ(count(text, "allocate b_s: f32[4, 8] local"), 1) << text;
  // One copy per element of the box per 16 work-items, from the group's corner.
  EXPECT_EQ(count(text, "a_s[a_s_f / 4, a_s_f % 4] = a[io * 8 + a_s_f / 4, ko * 4 + a_s_f % 4] else 0.0"), 1) << text;
  EXPECT_EQ(count(text, "a_s[ri * 4 + ty, ki]"), 1) << text;
  EXPECT_EQ(count(text, "b_s[ki, rj * 4 + tx]"), 1) << text;
  // Both copies share one barrier before the use and one after.
  EXPECT_EQ(count(text, "barrier local"), 2) << text;
}

TEST(CacheRead, StridedBoxInRegisters) {
  // Work-item t reads x[n, dj * 4 + t]: its box is 2 elements, 4 apart.
  Program p = scheduled(kSoftmax, std::string(kSoftmaxOneKernel) +
                                      "compute_at total y.t\ncompute_at row_max y.t\n"
                                      "cache_read y.t x private -> x_r\n");
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate x_r: f32[1, 2] private"), 1) << text;
  EXPECT_EQ(count(text, "x_r[x_r_f / 2, x_r_f % 2] = x[n + x_r_f / 2, t + x_r_f % 2 * 4] else 0.0"), 1) << text;
  EXPECT_EQ(count(text, "x_r[0, dj"), 3) << text;  // the max, the sum and the normalisation read x_r
  EXPECT_EQ(count(text, "exp(x["), 0) << text;
}

// Softmax at D = 64 in one kernel, a row a group of 4 work-items, each reading 2-element
// chunks d = (cj * 4 + t) * 2 + v, interleaved with the others' (coalesced): the schedule
// that makes its private box a dimension in parts.
const std::string kSoftmaxWideText = [] {
  std::string wide = kSoftmax;
  return wide.replace(wide.find("D = 5"), 5, "D = 64");
}();
const char *kSoftmaxWide = kSoftmaxWideText.c_str();
const char *kInterleavedChunks =
    "inline e\nsplit row_max.d 4 -> c v\nbind row_max.n group.x\ncross_reduce row_max.c 4 -> t\n"
    "split total.d 4 -> c v\nbind total.n group.x\ncross_reduce total.c 4 -> t\n"
    "split y.d 4 -> c v\nsplit y.c 4 -> cj t\nreorder y t cj v\nbind y.n group.x\nbind y.t local.x\n"
    "vectorize y.v\ncompute_at total y.t\ncompute_at row_max y.t\ncache_read y.t x private -> x_r\n";

TEST(CacheRead, ADimensionInPartsWhereItsSpanIsMostlyGaps) {
  // Work-item t reads x[n, cj * 16 + t * 4 + v]: 16 elements of a span of 52. Each
  // ranging variable, whatever its name in each stage (cj, cj1, v, v1 ...), indexes a
  // dimension of its own, the largest step first.
  Program p = scheduled(kSoftmaxWide, kInterleavedChunks);
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate x_r: f32[1, 4, 4] private"), 1) << text;
  // The copy, four elements (16 bytes) a step.
  EXPECT_EQ(count(text, "for x_r_i in 0..4 unrolled"), 1) << text;
  EXPECT_EQ(count(text, "for x_r_i_v in 0..4 vectorized"), 1) << text;
  EXPECT_EQ(count(text, "x[n + x_r_f_q16, t * 4 + (x_r_f_r4 + x_r_i_v) + x_r_f_q4_r4 * 16]"), 1) << text;
  EXPECT_EQ(count(text, "exp(x["), 0) << text;
  EXPECT_EQ(count(text, "x_r[0, cj"), 3) << text;  // the max, the sum and the normalisation
  // A contiguous chunk (d = t * 16 + v) stays one plain dimension, its copy in vectors too.
  const std::string chunk =
      "inline e\nsplit row_max.d 16 -> c v\nbind row_max.n group.x\ncross_reduce row_max.c 4 -> t\n"
      "split total.d 16 -> c v\nbind total.n group.x\ncross_reduce total.c 4 -> t\n"
      "split y.d 16 -> c v\nsplit y.c 4 -> cj t\nreorder y t cj v\nbind y.n group.x\nbind y.t local.x\n"
      "compute_at total y.t\ncompute_at row_max y.t\ncache_read y.t x private -> x_r\n";
  text = print_stmt(scheduled(kSoftmaxWide, chunk).kernels[0].body);
  EXPECT_EQ(count(text, "allocate x_r: f32[1, 16] private"), 1) << text;
  EXPECT_EQ(count(text, "vectorized"), 1) << text;
  // A box of one dimension (its copy indexed by the flat element itself) too.
  text = print_stmt(scheduled("kernel k(x: f32[N]) -> y: f32[N] where N = 64 { y[i] = x[i] * 2.0 }",
                              "split y.i 8 -> io ii\nbind y.io local.x\ncache_read y.io x private -> x_r\n")
                        .kernels[0]
                        .body);
  EXPECT_EQ(count(text, "for x_r_i_v in 0..4 vectorized"), 1) << text;
  // Reads at different offsets keep the plain box (StridedBoxInRegisters: 2 elements, 4
  // apart), and a local copy stays element by element.
  text = print_stmt(
      scheduled(kSoftmaxWide, std::string(kSoftmaxOneKernel) + "cache_read y.t x local -> x_s\n").kernels[0].body);
  EXPECT_EQ(count(text, "vectorized"), 0) << text;
}

// The boxes in parts and the copies in vectors on the devices here, against the
// interpreter: f32 and bf16 (eight 2-byte lanes a copy), at sizes the chunks fill and
// at sizes they overhang (the reads guarded, the box plain).
TEST(CacheReadOnDevice, BoxesInPartsAgreeWithTheInterpreter) {
  std::string bf16_schedule = kInterleavedChunks;
  for (const char *stage : {"row_max", "total", "y"}) {
    const std::string from = "split " + std::string(stage) + ".d 4 ", to = "split " + std::string(stage) + ".d 8 ";
    bf16_schedule.replace(bf16_schedule.find(from), from.size(), to);
  }
  test::on_each_device([&](const std::string &api, runtime::Device &device) {
    for (const DType type : {DType::F32, DType::BF16}) {
      const std::string text = frontend::with_dtype(test::source(kSoftmaxWide, "wide.ks"), type);
      const frontend::Spec spec = frontend::parse_spec(test::source(text, "wide.ks"));
      for (const std::string sizes : {"N=3,D=64", "N=2,D=128", "N=3,D=50"}) {
        EvalOptions options;
        options.time = false;
        options.trials = 1;
        options.schedule = schedule_of(type == DType::F32 ? std::string(kInterleavedChunks) : bf16_schedule);
        frontend::parse_size_assignments(sizes, &options.check_sizes);
        EvalRecord r = evaluate(spec, "wide.ks", device, options);
        EXPECT_TRUE(r.ok()) << api << " " << dtype_name(type) << " at " << sizes << ":\n" << r.to_json().dump(2);
      }
    }
  });
}

TEST(CacheRead, Refusals) {
  const std::string ready = std::string(kTiled) + "cache_write c.tx private\nsplit c.k 4 -> ko ki\n";
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "cache_read c.io a local -> a_s")),
            "s.sched:11:1: error: cache_read c.io a: loop io is group.y; the copy goes in a serial loop or the "
            "innermost local loop");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "cache_read c.ko q local -> a_s")),
            "s.sched:11:1: error: cache_read c.ko q: no global buffer named q");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "cache_read c.ko c local -> a_s")),
            "s.sched:11:1: error: cache_read c.ko c: kernel c writes c; only what it just reads can be cached");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "cache_read c.ko a local -> ko")),
            "s.sched:11:1: error: cache_read c.ko a: name ko is already used in kernel c");
  EXPECT_EQ(first_line(refusal(kSoftmax, "cache_read total.d row_max private -> r")),
            "s.sched:1:1: error: cache_read total.d row_max: loop d of total does not read row_max");
  EXPECT_EQ(first_line(refusal(kMatmul, "fuse c i j -> ij\ncache_read c.ij a private -> a_r")),
            "s.sched:2:1: error: cache_read c.ij a: an index of a uses i, which is not affine in the loops");
  // A local copy serves every work-item of the group: where what they read varies among
  // them through a let that is not affine (c's rows, i = ij / 12, of a group of 32
  // fused elements), one box cannot hold it (issue 45: it kept b[o] of work-item 0).
  EXPECT_EQ(first_line(refusal(kMatmul,
                               "fuse c i j -> ij\nsplit c.ij 32 -> g l\nbind c.g group.x\nbind c.l local.x\n"
                               "cache_read c.k a local -> a_s")),
            "s.sched:5:1: error: cache_read c.k a: an index of a uses i, which takes several values across the "
            "group's work-items (through local loop l) and is not affine in them: no one box of a serves the group");
  const char *big =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 4, N = 4, K = 13000 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  EXPECT_EQ(first_line(refusal(kMatmul, "cache_read c.k a local -> a_s")),
            "s.sched:1:1: error: cache_read c.k a: no local loop encloses k: a local copy is shared by the work-items "
            "of a group, so bind them first");
  EXPECT_EQ(first_line(refusal(big, "bind c.i group.x\nbind c.j local.x\ncache_read c.j a local -> a_s")),
            "s.sched:3:1: error: cache_read c.j a: the box of a needs 52000 bytes of local memory; at most 49152");
  EXPECT_EQ(first_line(refusal(big, "cache_read c.j a private -> a_r")),
            "s.sched:1:1: error: cache_read c.j a: the box of a has 13000 elements; private caches hold at most 256");
}

// More work-items than i32 numbers a copy's elements by (a split far past its loop,
// bound to local.x: the device's limits refuse it later, the IR must not crash first).
// Found by fuzz_schedule (tests/fuzz/regressions/schedule/split_factor_past_i32).
TEST(CacheRead, NumbersTheCopyInI64WhenTheWorkItemsNeedIt) {
  Program p = scheduled(kMatmul,
                        "split c.i 16 -> io ti\nsplit c.j 394887983 -> jo tj\nreorder c io jo ti tj\nbind c.io "
                        "group.y\nbind c.jo group.x\n"
                        "bind c.ti local.y\nbind c.tj local.x\ncache_read c.tj a local -> a_s\n");
  std::string text = print_stmt(p.kernels[0].body);
  EXPECT_NE(text.find("i64(a_s_i) * 6318207728L + (i64(ti) * 394887983L + i64(tj))"), std::string::npos) << text;
}

TEST(Bind, RefusesMoreWorkItemsOnceTheySynchronise) {
  EXPECT_EQ(first_line(refusal(kMatmul, "bind c.i local.x\ncache_read c.k b local -> b_s\nbind c.j local.y")),
            "s.sched:3:1: error: bind c.j: kernel c already synchronises its work-items (barriers); bind local loops "
            "before cache_read, cross_reduce and compute_at");
}

TEST(Pad, LengthensTheRows) {
  Program p = scheduled(kMatmul, std::string(kTiled) +
                                     "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                     "pad c.a_s 1\n");
  EXPECT_EQ(count(print_stmt(p.kernels[0].body), "allocate a_s: f32[8, 5] local"), 1);
}

// A convolution's copy keeps a dimension of one element for an index that does not
// range at the copy's loop (w[c, o, kw] copied inside kw's loop: [2, 8, 1]). The rows
// are the innermost dimension of more than one element; padding the last would grow
// the copy eightfold and move no two reads to different banks.
const char *kConvRows = R"(kernel cv(x: f32[C, H, W], w: f32[C, O, K]) -> y: f32[O, H, W]
  where C = 4, O = 8, H = 6, W = 6, K = 3
{ y[o, h, v: W] = sum(c, kw) (x[c, h, v - kw] else 0.0) * w[c, o, kw] })";
const char *kConvRowsCopy =
    "reorder y h o v\nbind y.h group.x\nbind y.o local.x\nreorder y kw c\nsplit y.c 2 -> co ci\n"
    "cache_read y.co w local -> w_s\n";

TEST(Pad, LengthensTheRowsPastDimensionsOfOneElement) {
  Program p = scheduled(kConvRows, std::string(kConvRowsCopy) + "pad y.w_s 1\n");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate w_s: f32[2, 9, 1] local"), 1) << text;
}

// Each primitive's allocation is held to kMaxLocalBytes; the kernel's whole local
// memory is the device's to allow (checked before launch): padding one of two 24-KiB
// panels takes the kernel past 48 KiB, and is applied; padding a 48-KiB panel is not.
TEST(Pad, HoldsThePaddedBufferNotTheKernelToTheLimit) {
  const char *spec =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 64, N = 64, K = 384 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  const std::string tile =
      "tile c i j 64 64 -> io jo ii ji\nsplit c.ii 4 -> ri ty\nsplit c.ji 4 -> rj tx\nreorder c ty tx ri rj\n"
      "bind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\nbind c.tx local.x\ncache_write c.tx private\n";
  Program p = scheduled(spec, tile +
                                  "split c.k 96 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                  "cache_read c.ko b local -> b_s\npad c.a_s 4\n");
  EXPECT_EQ(local_memory_bytes(p.kernels[0]), (64 * 100 + 96 * 64) * 4);
  EXPECT_GT(local_memory_bytes(p.kernels[0]), kMaxLocalBytes);
  EXPECT_EQ(first_line(refusal(spec, tile + "split c.k 192 -> ko ki\ncache_read c.ko a local -> a_s\npad c.a_s 1")),
            "s.sched:12:1: error: pad c.a_s: padded, a_s would take 49408 bytes of local memory; at most 49152");
}

TEST(Pad, Refusals) {
  const std::string ready =
      std::string(kTiled) + "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n";
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "pad c.a_s 40")),
            "s.sched:12:1: error: pad c.a_s: padding must be 1 to 32 elements, not 40");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "pad c.q 1")),
            "s.sched:12:1: error: pad c.q: kernel c allocates no buffer named q");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "pad c.c_acc 1")),
            "s.sched:12:1: error: pad c.c_acc: c_acc is in private memory; only the rows of a local buffer of two or "
            "more dimensions are padded");
  EXPECT_EQ(first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.d 4 -> t\npad total.total_part 1")),
            "s.sched:3:1: error: pad total.total_part: total_part is one-dimensional; only the rows of a local buffer "
            "of two or more dimensions are padded");
  EXPECT_EQ(first_line(refusal(kMatmul, "pad q.a_s 1")),
            "s.sched:1:1: error: pad q.a_s: no stage named q; stages are c");
}

TEST(Transpose, SwapsTheShapeAndEveryIndex) {
  Program p = scheduled(kMatmul, std::string(kTiled) +
                                     "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                     "transpose c.a_s\npad c.a_s 4\n");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate a_s: f32[4, 12] local"), 1) << text;  // [8, 4] before, rows padded by 4
  EXPECT_EQ(count(text, "a_s[ki, "), 1) << text;                        // read with k outermost
  EXPECT_EQ(count(text, "a_s[ii, ki]"), 0) << text;
}

TEST(Transpose, SwapsTheInnermostDimensionsOfMoreThanOneElement) {
  Program p = scheduled(kConvRows, std::string(kConvRowsCopy) + "transpose y.w_s\n");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "allocate w_s: f32[8, 2, 1] local"), 1) << text;
  EXPECT_EQ(count(text, "* w_s[o, ci, 0]"), 1) << text;
  // A copy with one dimension of more than one element has nothing to transpose.
  EXPECT_EQ(first_line(refusal(kConvRows,
                               "reorder y h o v\nbind y.h group.x\nbind y.o local.x\nreorder y kw c\n"
                               "cache_read y.c w local -> w_s\ntranspose y.w_s")),
            "s.sched:6:1: error: transpose y.w_s: w_s has fewer than two dimensions of more than one element; there "
            "is nothing to transpose");
}

TEST(Transpose, Refusals) {
  const std::string ready =
      std::string(kTiled) + "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n";
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "transpose c.q")),
            "s.sched:12:1: error: transpose c.q: kernel c allocates no buffer named q");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "transpose c.c_acc")),
            "s.sched:12:1: error: transpose c.c_acc: c_acc is in private memory; only a local buffer of two or more "
            "dimensions is transposed");
  EXPECT_EQ(
      first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.d 4 -> t\ntranspose total.total_part")),
      "s.sched:3:1: error: transpose total.total_part: total_part is one-dimensional; only a local buffer of two or "
      "more dimensions is transposed");
  // A vector load whose lanes ran along the rows is no longer contiguous.
  const std::string vector =
      "split c.j 4 -> jo jv\nbind c.i group.x\nbind c.jo local.x\ncache_write c.jo private\nsplit c.k 4 -> ko ki\n"
      "cache_read c.ko b local -> b_s\nvectorize c.jv\ntranspose c.b_s";
  EXPECT_NE(refusal(kMatmul, vector).find("error: transpose c.b_s: "), std::string::npos) << refusal(kMatmul, vector);
}

TEST(Prefetch, ReadsTheNextStepIntoRegisters) {
  Program p = scheduled(kMatmul, std::string(kTiled) +
                                     "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                     "prefetch c.a_s\n");
  const std::string text = print_stmt(p.kernels[0].body);
  // a_s holds 8 x 4 values for 16 work-items: 2 steps of the copy, a register each.
  EXPECT_EQ(count(text, "allocate a_s_next: f32[2] private"), 1) << text;
  // The first step's values before the loop (ko = 0), the next step's after the barrier.
  EXPECT_EQ(count(text, "a_s_next[a_s_i_first] = a["), 1) << text;
  // No branch around the next step's loads: the last iteration reads its own again.
  EXPECT_EQ(count(text, "a_s_next[a_s_i_next] = a["), 1) << text;
  EXPECT_EQ(count(text, "min(ko + 1, 1) * 4"), 1) << text;
  EXPECT_EQ(count(text, "if ko"), 0) << text;
  EXPECT_EQ(count(text, "= a_s_next[a_s_i]"), 1) << text;  // stored into the panel from registers
  const size_t barrier = text.find("barrier local"), next = text.find("a_s_next[a_s_i_next]"),
               work = text.find("for ki");
  EXPECT_LT(barrier, next) << text;
  EXPECT_LT(next, work) << text;
  // A later layout change reaches the stores from registers too.
  Program t = scheduled(kMatmul, std::string(kTiled) +
                                     "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                                     "prefetch c.a_s\ntranspose c.a_s\n");
  EXPECT_EQ(count(print_stmt(t.kernels[0].body), "allocate a_s: f32[4, 8] local"), 1);
}

TEST(Prefetch, Refusals) {
  const std::string ready =
      std::string(kTiled) + "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n";
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "prefetch c.q")),
            "s.sched:12:1: error: prefetch c.q: kernel c allocates no buffer named q");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "prefetch c.c_acc")),
            "s.sched:12:1: error: prefetch c.c_acc: c_acc is in private memory; only a local cache copied in a serial "
            "loop (cache_read at that loop) is prefetched");
  EXPECT_EQ(first_line(refusal(kMatmul, ready + "prefetch c.a_s\nprefetch c.a_s")),
            "s.sched:13:1: error: prefetch c.a_s: a_s is already prefetched");
  // A copy at the work-items' loop runs once: there is no next iteration.
  EXPECT_EQ(
      first_line(refusal(kMatmul, std::string(kTiled) + "cache_read c.tx b local -> b_s\nprefetch c.b_s")),
      "s.sched:10:1: error: prefetch c.b_s: b_s is copied in loop tx, which is local.x; only a local cache copied "
      "in a serial loop (cache_read at that loop) is prefetched");
  // A cross_reduce's local buffer is no copy.
  EXPECT_EQ(
      first_line(refusal(kSoftmax, "bind total.n group.x\ncross_reduce total.d 4 -> t\nprefetch total.total_part")),
      "s.sched:3:1: error: prefetch total.total_part: total_part is no copy of a global buffer; only a local "
      "cache copied in a serial loop (cache_read at that loop) is prefetched");
  // At most 32 registers a work-item: b's panel of 128 x 8 by 16 work-items takes 64.
  const char *long_k =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 10, N = 12, K = 640 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  EXPECT_EQ(first_line(
                refusal(long_k, std::string(kTiled) +
                                    "cache_write c.tx private\nsplit c.k 128 -> ko ki\ncache_read c.ko b local -> b_s\n"
                                    "prefetch c.b_s")),
            "s.sched:12:1: error: prefetch c.b_s: the copy into b_s takes 64 steps a work-item; at most 32 fit in "
            "registers");
}

// The loops of kTiled with both panels copied per 8 steps of k (8 x 8 each, 4 elements
// a work-item): K = 64 gives 8 copies.
const char *kLongerK =
    "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 16, N = 16, K = 64 "
    "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
const std::string kPanels = std::string(kTiled) +
                            "cache_write c.tx private\nsplit c.k 8 -> ko ki\ncache_read c.ko a local -> a_s\n"
                            "cache_read c.ko b local -> b_s\n";

TEST(AsyncCopy, FillsARingOfSlotsAhead) {
  Program p = scheduled(kLongerK, kPanels + "async_copy c.ko 3\n");
  const std::string text = print_stmt(p.kernels[0].body);
  // Both panels get 3 slots, allocated around the loop.
  EXPECT_EQ(count(text, "allocate a_s: f32[3, 8, 8] local"), 1) << text;
  EXPECT_EQ(count(text, "allocate b_s: f32[3, 8, 8] local"), 1) << text;
  // Iterations 0 and 1 before the loop, each its own group of copies into its slot.
  EXPECT_EQ(count(text, "async_copy {"), 3) << text;
  EXPECT_EQ(count(text, "a_s[0, "), 1) << text;
  EXPECT_EQ(count(text, "a_s[1, "), 1) << text;
  // In the loop: one barrier, after this iteration's slot has landed; the copies of
  // iteration ko + 2 into slot (ko + 2) % 3, clamped rather than branched around.
  EXPECT_EQ(count(text, "barrier local after_copies 1"), 1) << text;
  EXPECT_EQ(count(text, "a_s[(ko + 2) % 3, "), 1) << text;
  EXPECT_EQ(count(text, "let ko_ahead = min(ko + 2, 7)"), 1) << text;
  EXPECT_EQ(count(text, "ko_ahead * 8 + "), 2) << text;
  EXPECT_EQ(count(text, "if ko"), 0) << text;
  // The work reads slot ko % 3 of each.
  EXPECT_EQ(count(text, "a_s[ko % 3, "), 1) << text;
  EXPECT_EQ(count(text, "b_s[ko % 3, "), 1) << text;
  // After the loop every copy has landed before the slots are used again.
  EXPECT_EQ(count(text, "barrier local after_copies 0"), 1) << text;
  EXPECT_EQ(count(text, "barrier local\n"), 0) << text;
  // Both panels' rows of 8 in lanes of 4 (16-byte pieces), a step a work-item; none
  // padded (every read is inside its buffer).
  EXPECT_EQ(count(text, "vectorized"), 6) << text;
  EXPECT_EQ(count(text, "else 0.0"), 0) << text;
}

TEST(AsyncCopy, TakesNoMoreSlotsThanIterations) {
  // 8 iterations: 9 slots are 8; at the check sizes' single iteration, 2 (the ring's least).
  const std::string eight = print_stmt(scheduled(kLongerK, kPanels + "async_copy c.ko 9\n").kernels[0].body);
  EXPECT_EQ(count(eight, "allocate a_s: f32[8, 8, 8] local"), 1) << eight;
  EXPECT_EQ(count(eight, "barrier local after_copies 6"), 1) << eight;
  const char *one =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 16, N = 16, K = 5 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  const std::string two = print_stmt(scheduled(one, kPanels + "async_copy c.ko 3\n").kernels[0].body);
  EXPECT_EQ(count(two, "allocate a_s: f32[2, 8, 8] local"), 1) << two;
  EXPECT_EQ(count(two, "barrier local after_copies 0"), 2) << two;
  EXPECT_EQ(count(two, "let ko_ahead = min(ko + 1, 0)"), 1) << two;
}

TEST(AsyncCopy, KeepsElementCopiesThatAreNotContiguous) {
  // Transposed, a's panel is written down its columns: one element a step, padded.
  Program p = scheduled(kLongerK, kPanels + "transpose c.a_s\nasync_copy c.ko 2\n");
  const std::string text = print_stmt(p.kernels[0].body);
  EXPECT_EQ(count(text, "vectorized"), 2) << text;  // b's copies only (prologue, ahead)
  EXPECT_EQ(count(text, "a_s[ko % 2, "), 1) << text;
  EXPECT_EQ(count(text, "barrier local after_copies 0"), 2) << text;  // in the loop and after it
}

TEST(AsyncCopy, Refusals) {
  EXPECT_EQ(first_line(refusal(kLongerK, kPanels + "async_copy c.ko 1")),
            "s.sched:13:1: error: async_copy c.ko: 1 slot: a ring needs at least 2 (one read while the next lands)");
  EXPECT_EQ(first_line(refusal(kLongerK, kPanels + "async_copy c.tx 2")),
            "s.sched:13:1: error: async_copy c.tx: loop tx is local.x; async_copy takes a serial loop whose iterations "
            "start by copying local caches (cache_read c.tx BUFFER local -> CACHE first)");
  EXPECT_EQ(first_line(refusal(kLongerK, std::string(kTiled) + "cache_write c.tx private\nsplit c.k 4 -> ko ki\n"
                                                               "async_copy c.ko 2")),
            "s.sched:11:1: error: async_copy c.ko: no local cache is copied at the start of each iteration of ko; "
            "async_copy takes a serial loop whose iterations start by copying local caches (cache_read c.ko BUFFER "
            "local -> CACHE first)");
  EXPECT_EQ(first_line(refusal(kLongerK, kPanels + "prefetch c.a_s\nasync_copy c.ko 2")),
            "s.sched:14:1: error: async_copy c.ko: a_s is copied from a_s_next, not from a global buffer (prefetch "
            "stages it in registers; async_copy copies from global memory itself)");
  EXPECT_EQ(first_line(refusal(kLongerK, kPanels + "async_copy c.ko 2\nasync_copy c.ko 2")),
            "s.sched:14:1: error: async_copy c.ko: no local cache is copied at the start of each iteration of ko; "
            "async_copy takes a serial loop whose iterations start by copying local caches (cache_read c.ko BUFFER "
            "local -> CACHE first)");
  EXPECT_EQ(first_line(refusal(kLongerK, kPanels + "async_copy c.ko 2\nprefetch c.a_s")),
            "s.sched:14:1: error: prefetch c.a_s: a_s is copied ahead already, by async_copy");
  // 7 slots of a 64 x 64 panel of k by 16: 7 x 2 x 4 KiB over the 48 KiB a group may take.
  const char *big =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 64, N = 64, K = 112 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  EXPECT_EQ(first_line(refusal(big,
                               "tile c i j 64 64 -> io jo ii ji\nsplit c.ii 16 -> ri ty\nsplit c.ji 16 -> rj tx\n"
                               "reorder c ty tx ri rj\nbind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\n"
                               "bind c.tx local.x\ncache_write c.tx private\nsplit c.k 16 -> ko ki\n"
                               "cache_read c.ko a local -> a_s\ncache_read c.ko b local -> b_s\nasync_copy c.ko 7")),
            "s.sched:13:1: error: async_copy c.ko: 7 slots of ko's caches take 57344 bytes of local memory; at most "
            "49152");
}

TEST(UnguardAccumulators, ATileReadFromPanelsComputesPastTheEdge) {
  // 8 x 8 tiles over 10 x 12 outputs: the last tiles overhang.
  const Program p =
      scheduled(kMatmul, std::string(kTiled) +
                             "cache_write c.tx private\nsplit c.k 4 -> ko ki\ncache_read c.ko a local -> a_s\n"
                             "cache_read c.ko b local -> b_s\n");
  const std::string before = print_stmt(p.kernels[0].body);
  ASSERT_EQ(count(before, "if i < 10 {"), 1) << before;
  const Program q = unguard_accumulators(p);
  std::string reason;
  EXPECT_TRUE(verified(q, &reason)) << reason;
  const std::string after = print_stmt(q.kernels[0].body);
  // The accumulation runs on the panels' zero padding past the edge, unguarded...
  EXPECT_EQ(count(after, "if i < 10"), 0) << after;
  EXPECT_EQ(count(after, "let j = jo * 8 + ji\n"), 1) << after;  // its lets kept
  EXPECT_EQ(count(after, "c_acc[ri, rj] = c_acc[ri, rj] + a_s["), 1) << after;
  // ...and only the elements inside are written back.
  EXPECT_EQ(count(after, "if i_out < 10 {"), 1) << after;
  EXPECT_EQ(count(after, "if j_out < 12 {"), 1) << after;
}

TEST(UnguardAccumulators, KeepsAGuardThatMatters) {
  // The update reads a and b in global memory, past their edge without the guard.
  const Program global = scheduled(kMatmul, std::string(kTiled) + "cache_write c.tx private\n");
  EXPECT_EQ(print_program(unguard_accumulators(global)), print_program(global));
  // A guard on the reduction (k's tail) would let the padding into elements inside.
  const char *odd_k =
      "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 10, N = 12, K = 7 "
      "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
  const Program tail = scheduled(odd_k, std::string(kTiled) +
                                            "cache_write c.tx private\nsplit c.k 4 -> ko ki\n"
                                            "cache_read c.ko a local -> a_s\ncache_read c.ko b local -> b_s\n");
  const std::string tail_text = print_stmt(unguard_accumulators(tail).kernels[0].body);
  EXPECT_EQ(count(tail_text, "if k < 7"), 1) << tail_text;
  // An element the guard skips is read elsewhere without it (y[3] = acc[3]): kept;
  // with the reader under the same guard, dropped.
  const std::string ir = R"(program p
input x: f32[4]
output y: f32[4]

kernel k {
  for l in 0..1 local.x {
    allocate acc: f32[4] private
    for i in 0..4 unrolled {
      acc[i] = 0.0
    }
    for r in 0..8 {
      for i in 0..4 unrolled {
        if i < 3 {
          acc[i] = acc[i] + x[i]
        }
      }
    }
    for o in 0..4 unrolled {
      READ
    }
  }
}
)";
  auto program = [&](const std::string &read) {
    std::string text = ir;
    text.replace(text.find("READ"), 4, read);
    return parse_program(test::source(text, "p.ir"));
  };
  const Program unguarded_read = program("y[o] = acc[o]");
  EXPECT_EQ(print_program(unguard_accumulators(unguarded_read)), print_program(unguarded_read));
  const Program guarded_read = program("if o < 3 {\n        y[o] = acc[o]\n      }");
  const std::string text = print_program(unguard_accumulators(guarded_read));
  EXPECT_EQ(count(text, "if i < 3"), 0) << text;
  EXPECT_EQ(count(text, "if o < 3"), 1) << text;
  // A guard on another variable than the element's (r, the reduction) is kept.
  std::string on_r = ir;
  on_r.replace(on_r.find("if i < 3"), 8, "if r < 7");
  on_r.replace(on_r.find("READ"), 4, "if o < 3 {\n        y[o] = acc[o]\n      }");
  const Program reduction_guard = parse_program(test::source(on_r, "p.ir"));
  EXPECT_EQ(print_program(unguard_accumulators(reduction_guard)), print_program(reduction_guard));
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
