// Sketches (evolve/search/sketch.h): each stage's pattern, each rule on a spec of its
// pattern, and the schedules drawn agree with the interpreter on the device.
#include "evolve/search/sketch.h"

#include <functional>
#include <map>

#include "codegen/glsl.h"
#include "codegen/opencl_c.h"
#include "codegen/spirv.h"
#include "evolve/evaluation/evaluate.h"
#include "evolve/search/genome.h"
#include "ir/visitor.h"
#include "passes/pipeline.h"
#include "test_util.h"

namespace ks {
namespace {

// A GPU's limits, so that the rules' group sizes and local copies are drawn as on one.
runtime::DeviceInfo gpu_limits() {
  runtime::DeviceInfo d;
  d.api = "opencl";
  d.gpu = true;
  d.max_work_group_size = 1024;
  d.max_work_item_sizes = {1024, 1024, 64};
  d.local_memory_bytes = 48 * 1024;
  return d;
}

Graph example(const std::string &name, frontend::SizeSet sizes = frontend::SizeSet::Default) {
  return frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks"), sizes, {});
}

Graph example_at(const std::string &name, const std::string &sizes) {
  frontend::SizeOverrides overrides;
  frontend::parse_size_assignments(sizes, &overrides);
  return frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks"),
                             frontend::SizeSet::Default, overrides);
}

std::map<std::string, std::string> patterns(const Graph &g) {
  std::map<std::string, std::string> out;
  for (const Stage &s : g.stages) out[s.output] = stage_pattern_name(classify_stage(s));
  return out;
}

TEST(Sketches, ClassifyTheExamplesStages) {
  using P = std::map<std::string, std::string>;
  EXPECT_EQ(patterns(example("matmul")), (P{{"c", "contraction"}}));
  EXPECT_EQ(patterns(example("conv2d")), (P{{"y", "contraction"}}));
  EXPECT_EQ(patterns(example("softmax")),
            (P{{"row_max", "row"}, {"e", "elementwise"}, {"total", "row"}, {"y", "elementwise"}}));
  EXPECT_EQ(patterns(example("sum_dim")), (P{{"y", "column"}})) << "the sum runs along a strided dimension";
  EXPECT_EQ(patterns(example("max_pool2d")).begin()->second, "column") << "windows of 9: a work-item per output";
  EXPECT_EQ(patterns(example("matvec")).begin()->second, "row");
  EXPECT_EQ(patterns(example("cross_entropy"))["loss"], "row") << "a scalar output";
  EXPECT_EQ(patterns(example("group_norm"))["mean"], "row");
  EXPECT_EQ(patterns(example("matmul_gelu_softmax"))["acc"], "contraction");
}

// The steps of a kind in a schedule.
int count(const Schedule &s, PrimitiveKind kind) {
  int n = 0;
  for (const Primitive &p : s.steps) n += p.kind == kind;
  return n;
}

// Draws at the timed sizes: every one replays within the device's limits, and the
// pattern's rule shows in the steps of most of them.
struct Draws {
  std::vector<Sketch> sketches;
  int with(const std::function<bool(const Schedule &)> &has) const {
    int n = 0;
    for (const Sketch &s : sketches) n += has(s.schedule);
    return n;
  }
};

Draws draw(const Graph &g, int n, uint64_t seed = 1, bool async_copies = false, bool matrix_units = false,
           uint64_t local_memory_bytes = 48 * 1024) {
  Draws d;
  Rng rng(seed);
  runtime::DeviceInfo device = gpu_limits();
  device.async_copies = async_copies;
  device.matrix_units = matrix_units;
  device.local_memory_bytes = local_memory_bytes;
  for (int i = 0; i < n; ++i) {
    std::optional<Sketch> s = sample_sketch(g, device, rng);
    EXPECT_TRUE(s) << g.name << ": no sketch replays, draw " << i;
    if (!s) continue;
    Replayed r = replay(g, s->schedule, &device);
    EXPECT_TRUE(r.program) << r.refusal << "\n" << print_schedule(s->schedule);
    d.sketches.push_back(*s);
  }
  return d;
}

TEST(Sketches, TileContractions) {
  Draws d = draw(example("matmul"), 20);
  EXPECT_GE(d.with([](const Schedule &s) {
    return count(s, PrimitiveKind::CacheWrite) == 1 && count(s, PrimitiveKind::CacheRead) >= 1 &&
           count(s, PrimitiveKind::Bind) == 4;
  }),
            8)
      << "two levels bound, registers, local panels";
  EXPECT_GE(d.with([](const Schedule &s) { return count(s, PrimitiveKind::Transpose) >= 1; }), 3)
      << "a panel transposed";
  EXPECT_GE(d.with([](const Schedule &s) { return count(s, PrimitiveKind::Vectorize) >= 1; }), 3)
      << "a work-item's chunk of outputs as vector lanes";
  EXPECT_GE(d.with([](const Schedule &s) { return count(s, PrimitiveKind::Prefetch) >= 1; }), 3)
      << "the next panels prefetched into registers";
  EXPECT_EQ(d.with([](const Schedule &s) { return count(s, PrimitiveKind::AsyncCopy) >= 1; }), 0)
      << "no ring of asynchronous copies on a device without cp.async";
  EXPECT_EQ(d.with([](const Schedule &s) { return count(s, PrimitiveKind::Tensorize) >= 1; }), 0)
      << "no matrix tiles on a device without matrix units";
  // With cp.async (NVIDIA's OpenCL, 8.0+), rings of 2 or 3 slots in place of some
  // prefetches, each replayed (the ring fits the group's local memory).
  Draws ring = draw(example_at("matmul", "N=4096"), 30, 1, true);
  EXPECT_GE(ring.with([](const Schedule &s) { return count(s, PrimitiveKind::AsyncCopy) == 1; }), 3)
      << "the panels copied ahead asynchronously";
  EXPECT_GE(ring.with([](const Schedule &s) { return count(s, PrimitiveKind::Prefetch) >= 1; }), 2)
      << "and prefetched into registers in others";
  EXPECT_EQ(ring.with([](const Schedule &s) {
    return count(s, PrimitiveKind::AsyncCopy) >= 1 && count(s, PrimitiveKind::Prefetch) >= 1;
  }),
            0)
      << "never both";
  Draws conv = draw(example("conv_relu_bias"), 20);
  EXPECT_GE(conv.with([](const Schedule &s) { return count(s, PrimitiveKind::Bind) >= 5; }), 8)
      << "the conv tiled (group.z for the loops left)";
  // The tile reuses x along the output channels (x does not vary with o), not along
  // the batch or rows (x varies with them as with the columns).
  EXPECT_GE(conv.with([](const Schedule &s) {
    for (const Primitive &p : s.steps)
      if (p.kind == PrimitiveKind::Split && p.stage == "conv" && p.loops[0] == "o") return true;
    return false;
  }),
            10)
      << "the conv's output channels tiled";
}

// With matrix units (NVIDIA's OpenCL, 8.0+), contractions mostly become warp tiles of
// mma.sync, each replayed: matmul, x @ w.T (gemm_bias_leaky), a batched matmul (its
// batch on group.z) and a conv (implicit GEMM: the window's loops outside the panels of
// input channels, so that a panel is as small as a GEMM's).
TEST(Sketches, TileContractionsOnMatrixUnits) {
  auto tensorized = [](const Schedule &s) {
    return count(s, PrimitiveKind::Tensorize) == 1 && count(s, PrimitiveKind::CacheWrite) == 1;
  };
  Draws mm = draw(example_at("matmul", "N=4096"), 20, 1, true, true);
  EXPECT_GE(mm.with(tensorized), 10) << "most contractions on the matrix units";
  EXPECT_GE(mm.with([](const Schedule &s) { return count(s, PrimitiveKind::Tensorize) == 0; }), 2)
      << "some still on the CUDA cores";
  EXPECT_GE(mm.with([&](const Schedule &s) { return tensorized(s) && count(s, PrimitiveKind::AsyncCopy) == 1; }), 3)
      << "panels copied ahead";
  int largest = 0;  // warp tiles of 64 accumulators a lane: 32x64 or 64x32
  for (const Sketch &s : mm.sketches)
    largest += s.note.find("warps of 32x64") != std::string::npos || s.note.find("warps of 64x32") != std::string::npos;
  EXPECT_GE(largest, 5) << "mostly the largest warp tile";
  // a's panel runs along k: padded by 8 (a half-warp's float2 pairs on 32 banks) where
  // it and the ring fit, else by 4, or not at all where neither fits; b's, along n, by
  // 8 where it fits.
  auto padded = [](const Schedule &s, const std::string &what) {
    return print_schedule(s).find(what) != std::string::npos;
  };
  EXPECT_GE(mm.with([&](const Schedule &s) { return tensorized(s) && padded(s, ".a_s 8\n"); }), 3);
  EXPECT_EQ(mm.with([&](const Schedule &s) {
    return tensorized(s) && padded(s, "pad c.a_s") && !padded(s, ".a_s 8\n") && !padded(s, ".a_s 4\n");
  }),
            0);
  EXPECT_EQ(mm.with([&](const Schedule &s) { return tensorized(s) && padded(s, "pad c.b_s 4\n"); }), 0);
  // The accumulators stored a column pair at a time, mostly.
  EXPECT_GE(mm.with([&](const Schedule &s) { return tensorized(s) && padded(s, "vectorize c.cc_out\n"); }), 3);
  for (const char *name : {"gemm_bias_leaky", "batched_matmul", "conv2d"})
    EXPECT_GE(draw(example(name), 10, 2, true, true).with(tensorized), 3) << name;
  const Draws conv = draw(example_at("conv_relu_bias", "N=128,C=64,H=128,W=128,O=128,K=3"), 20, 3, true, true);
  EXPECT_GE(conv.with(tensorized), 5) << "a large conv's panels fit as well";
  EXPECT_EQ(conv.with([&](const Schedule &s) {
    return tensorized(s) && print_schedule(s).find("reorder conv kh kw co ci\n") == std::string::npos;
  }),
            0);
}

// Contractions of 16-bit operands on the matrix units: panels of 16 or 32 k (an
// instruction's step is 16), the accumulators in the instructions' own registers (warp
// tiles up to 64 x 64), panels along k read 8 bytes at a time unpadded at 16 and by 16
// at 32, a ring of three slots where it fits.
TEST(Sketches, TileSixteenBitContractionsOnMatrixUnits) {
  frontend::SizeOverrides overrides;
  frontend::parse_size_assignments("N=4096", &overrides);
  const Graph g =
      frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/matmul.ks", DType::BF16),
                          frontend::SizeSet::Default, overrides);
  const Draws mm = draw(g, 30, 1, true, true);
  auto has = [](const Sketch &s, const std::string &what) { return s.note.find(what) != std::string::npos; };
  int tiles = 0, sixty_four = 0, three = 0;
  for (const Sketch &s : mm.sketches) {
    if (count(s.schedule, PrimitiveKind::Tensorize) != 1) continue;
    ++tiles;
    const std::string text = print_schedule(s.schedule);
    EXPECT_FALSE(has(s, "k by 8")) << text;
    if (has(s, "k by 16")) EXPECT_EQ(text.find("pad c.a_s"), std::string::npos) << text;
    if (has(s, "k by 32") && has(s, "copied ahead")) EXPECT_NE(text.find("pad c.a_s 16\n"), std::string::npos) << text;
    sixty_four += has(s, "warps of 64x64");
    three += text.find("async_copy c.ko 3\n") != std::string::npos;
  }
  EXPECT_GE(tiles, 15) << "most contractions on the matrix units";
  EXPECT_GE(sixty_four, 3) << "warp tiles of 128 accumulators a lane";
  EXPECT_GE(three, 3) << "rings of three slots";
  // The most local memory a group of each draw takes. NVIDIA's 48 KiB hold rings that
  // OpenCL's minimum does not (two slots of 32 k, B's rows padded: 34 KiB); on a device
  // of 32 KiB every draw fits it (replay's device check), three slots of 16 k still.
  auto local_bytes = [&](const Sketch &s) {
    int64_t most = 0;
    for (const Kernel &k : run_pipeline(g, s.schedule).kernels) most = std::max(most, local_memory_bytes(k));
    return most;
  };
  int past = 0;
  for (const Sketch &s : mm.sketches) past += local_bytes(s) > 32 * 1024;
  EXPECT_GE(past, 2) << "rings past 32 KiB where the device has 48";
  const Draws small = draw(g, 30, 1, true, true, 32 * 1024);
  int small_three = 0;
  for (const Sketch &s : small.sketches) {
    EXPECT_LE(local_bytes(s), 32 * 1024) << print_schedule(s.schedule);
    small_three += print_schedule(s.schedule).find("async_copy c.ko 3\n") != std::string::npos;
  }
  EXPECT_EQ(small.sketches.size(), 30u);
  EXPECT_GE(small_three, 3) << "rings of three slots that fit 32 KiB";
}

// Whether a schedule's text has `what`.
std::function<bool(const Schedule &)> has(const std::string &what) {
  return [what](const Schedule &s) { return print_schedule(s).find(what) != std::string::npos; };
}

// Attention as written: the scores, scaled by 0.125, and the weighted sum, its
// weights exp(s - row_max) with e inlined and divided by their row's total, are
// contractions the matrix units take; on a device with them most draws keep the two
// passes (kAttentionShareWithMatrixUnits), whose contractions the units take, rather
// than the one pass's dot products, which they cannot.
TEST(Sketches, TileAttentionsContractionsOnMatrixUnits) {
  const Draws attention = draw(example_at("attention", "B=16,H=16,T=1024,D=64"), 20, 4, true, true);
  EXPECT_LE(attention.with(has("rewrite online_attention")), 10);
  EXPECT_GE(attention.with(has("tensorize s.")), 5);
  EXPECT_GE(attention.with(has("tensorize y.")), 5);
  EXPECT_GE(attention.with([&](const Schedule &s) { return has("tensorize s.")(s) && has("tensorize y.")(s); }), 3)
      << "both contractions on the units";
}

// An attention example at bf16 (B=16, H=16, T=1024, D=64) on a device with matrix
// units, drawn 24 times: at least 4 draws with the rewrites `recomputed`, 2 computing
// the scores' copy `y_scores` inside y's loop over j and 2 the logsumexp's; two of the
// first replayed at the check sizes (compute_at's group check takes a second or so at
// these tiles). Returns the draws around y's scores.
std::vector<Sketch> two_pass_draws(const std::string &name, const std::string &recomputed, const std::string &y_scores,
                                   const std::string &lse_scores) {
  frontend::SizeOverrides overrides;
  frontend::parse_size_assignments("B=16,H=16,T=1024,D=64", &overrides);
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
  const Graph half = frontend::elaborate(frontend::load_spec(path, DType::BF16), frontend::SizeSet::Default, overrides);
  const Draws d = draw(half, 24, 3, true, true);
  const int copies = d.with(has(recomputed)), y = d.with(has("compute_at " + y_scores + " y.")),
            lse = d.with(has("compute_at " + lse_scores + " row_max_lse."));
  std::printf("%s: %d of %d draws recompute the scores; %d and %d compute them inside the sum and the logsumexp\n",
              name.c_str(), copies, static_cast<int>(d.sketches.size()), y, lse);
  EXPECT_GE(copies, 3) << name;  // (about a quarter of the draws: 3 to 7 of 24 so far)
  EXPECT_GE(y, 2) << name << ": the weighted sum around its scores";
  EXPECT_GE(lse, 2) << name << ": the logsumexp around its scores";
  const Graph check = frontend::elaborate(frontend::load_spec(path, DType::BF16), frontend::SizeSet::Check, {});
  runtime::DeviceInfo device = gpu_limits();
  device.async_copies = device.matrix_units = true;
  std::vector<Sketch> around;
  for (const Sketch &s : d.sketches)
    if (has("compute_at " + y_scores + " y.")(s.schedule)) around.push_back(s);
  for (size_t i = 0; i < around.size() && i < 2; ++i) {
    Replayed r = replay(check, around[i].schedule, &device);
    EXPECT_TRUE(r.program) << r.refusal << "\n" << print_schedule(around[i].schedule);
  }
  return around;
}

// Attention at bf16 on a device with matrix units: in some draws the scores are
// recomputed by each reader and computed at each panel of its loop over j (compute_at
// inside the reduction), as bench/mma/attention/attention_two_pass_half_b64x16.sched
// does, and those replay at the timed sizes and at the check sizes. At f32 never (the
// weighted sum's operand would be f32: 3xTF32).
TEST(Sketches, ComputeAttentionsScoresWhereTheyAreRead) {
  const std::vector<Sketch> around = two_pass_draws("attention", "rewrite recompute s\n", "s_y", "s_row_max_lse");
  for (size_t i = 0; i < around.size() && i < 2; ++i)
    EXPECT_NE(around[i].note.find("y: matrix units, 64 rows per group"), std::string::npos) << around[i].note;
  const Draws f32 = draw(example_at("attention", "B=16,H=16,T=1024,D=64"), 10, 3, true, true);
  EXPECT_EQ(f32.with(has("rewrite recompute")), 0);
}

// Causal attention the same way: the mask (an elementwise temporary that alone reads
// the scores, read by the logsumexp and the sum) copied first, then the scores its
// copies read; the copies of the mask drawn inline, so each reader computes its masked
// panel inside its loop over j (bench/mma/attention/attention_causal_two_pass_half_b64x16.sched
// is such a draw).
TEST(Sketches, ComputeCausalAttentionsScoresWhereTheyAreRead) {
  two_pass_draws("attention_causal", "rewrite recompute masked\nrewrite recompute s\n", "s_masked_y",
                 "s_masked_row_max_lse");
}

// A large contraction on a GPU mostly gets a GPU GEMM's shape: 128 to 512
// work-items, 16 or more outputs each (the register tile), and on the way k
// unrolled with both panels prefetched now and then.
TEST(Sketches, GiveLargeContractionsOnAGpuAGemmsShape) {
  // matmul at 512^3; a conv with 128 output channels and rows of 126 (a tile of
  // 128 overhangs them: the prior looks at the tiles, not the extents).
  frontend::SizeOverrides conv_sizes;
  frontend::parse_size_assignments("N=1,C=8,H=128,W=128,O=128", &conv_sizes);
  const std::pair<Graph, std::string> cases[] = {
      {example("matmul"), "c_acc"},
      {frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/conv_relu_bias.ks"),
                           frontend::SizeSet::Default, conv_sizes),
       "conv_acc"}};
  for (const auto &[g, accumulator] : cases) {
    Rng rng(5);
    runtime::DeviceInfo device = gpu_limits();
    int gemm_shaped = 0, pipelined = 0;
    const int n = 40;
    for (int i = 0; i < n; ++i) {
      std::optional<Sketch> s = sample_sketch(g, device, rng);
      ASSERT_TRUE(s);
      Replayed r = replay(g, s->schedule, &device);
      ASSERT_TRUE(r.program) << r.refusal;
      struct Accumulators : IRVisitor {
        std::string name;
        int64_t count = 0;
        using IRVisitor::visit;
        void visit(const Allocate *a) override {
          if (a->buffer == name) count = shape_numel(a->shape);
          IRVisitor::visit(a);
        }
      } accumulators;
      accumulators.name = accumulator;
      int64_t items = 0;
      for (const Kernel &k : r.program->kernels) {
        const int64_t before = accumulators.count;
        accumulators.dispatch(k.body);
        if (accumulators.count != before) items = launch_shape(k).group_size();
      }
      gemm_shaped += items >= 128 && items <= 512 && accumulators.count >= 16;
      pipelined += count(s->schedule, PrimitiveKind::Prefetch) >= 1 && s->note.find("k unrolled") != std::string::npos;
    }
    EXPECT_GE(gemm_shaped, n / 3) << accumulator << ": of " << n;
    EXPECT_GE(pipelined, 2) << accumulator << ": of " << n;
  }
}

// A contraction's epilogue (bias, activation) runs in its kernel, on the accumulators
// as they are written back, in most draws: one kernel, and the temporary gone.
// Attention: most draws compute it in one pass (kAttentionShare), and those tile the
// softmax_sum with the score's row operand in registers and the others in local panels.
TEST(Sketches, ComputeAttentionInOneKernel) {
  Draws d = draw(example_at("attention", "B=16,H=16,T=1024,D=64"), 20, 5, true);
  auto one_pass = [](const Schedule &s) {
    return !s.rewrites.empty() && s.rewrites.back().kind == RewriteKind::OnlineAttention;
  };
  const int fused = d.with(one_pass);
  EXPECT_GE(fused, 10);
  EXPECT_LT(fused, 20) << "and the passes as written in some";
  EXPECT_EQ(patterns(rewritten_graph(example("attention"), d.sketches[0].schedule)).count("row_max"),
            one_pass(d.sketches[0].schedule) ? 0u : 1u);
  EXPECT_GE(d.with([&](const Schedule &s) {
    int private_reads = 0, local_reads = 0;
    for (const Primitive &p : s.steps)
      if (p.kind == PrimitiveKind::CacheRead && p.stage == "y")
        (p.memory == MemoryScope::Private ? private_reads : local_reads) += 1;
    return one_pass(s) && count(s, PrimitiveKind::CacheWrite) >= 1 && private_reads == 1 && local_reads == 2;
  }),
            fused / 2)
      << "q in registers, k and v in local memory";
}

TEST(Sketches, RunEpiloguesInTheContractionsKernel) {
  for (const char *name : {"conv_relu_bias", "gemm_bias_leaky"}) {
    const Graph g = example(name);
    Draws d = draw(g, 20);
    runtime::DeviceInfo device = gpu_limits();
    int one_kernel = 0;
    for (const Sketch &s : d.sketches)
      if (count(s.schedule, PrimitiveKind::ReverseInline) == 1) {
        Replayed r = replay(g, s.schedule, &device);
        one_kernel += r.program && r.program->kernels.size() == 1;
      }
    EXPECT_GE(one_kernel, 12) << name << ": of 20";
  }
}

TEST(Sketches, SumColumnsAsVectors) {
  // sum_dim reduces its middle dimension: most draws read rows of neighbouring
  // columns as vectors and keep their sums in registers (the hand-written
  // sum_dim.sched's shape), at sizes where the columns divide and where they do not.
  for (const char *sizes : {"B=4,R=64,D=256", "B=4,R=64,D=255"}) {
    frontend::SizeOverrides o;
    frontend::parse_size_assignments(sizes, &o);
    Draws d = draw(frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/sum_dim.ks"),
                                       frontend::SizeSet::Default, o),
                   20);
    EXPECT_GE(d.with([](const Schedule &s) {
      return count(s, PrimitiveKind::CacheWrite) == 1 && count(s, PrimitiveKind::Vectorize) == 3;
    }),
              8)
        << sizes;
  }
}

TEST(Sketches, PutRowStatisticsInTheirConsumersKernel) {
  for (const char *name : {"softmax", "layer_norm", "matmul_gelu_softmax"}) {
    Draws d = draw(example(name), 20);
    // Two statistics, or one where the draw made a softmax's two a logsumexp.
    EXPECT_GE(d.with([](const Schedule &s) {
      const int statistics = s.rewrites.empty() || s.rewrites.back().kind != RewriteKind::OnlineSoftmax ? 2 : 1;
      return count(s, PrimitiveKind::ComputeAt) == statistics && count(s, PrimitiveKind::CrossReduce) == statistics;
    }),
              10)
        << name;
  }
  Draws loss = draw(example("cross_entropy"), 20);
  EXPECT_GE(loss.with([](const Schedule &s) { return count(s, PrimitiveKind::CrossReduce) >= 2; }), 10);
}

// A row chain mostly reads its row in 16-byte chunks, interleaved across the group's
// work-items: 4 elements of f32, 8 of bf16, the output's lanes vectorized and the input
// held in registers at the work-item (sketch.h's kVectorRowsShare).
TEST(Sketches, ReadRowsInSixteenByteChunks) {
  for (const DType type : {DType::F32, DType::BF16})
    for (const char *name : {"softmax", "layer_norm"}) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(type));
      const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
      const Draws d = draw(frontend::elaborate(frontend::load_spec(path, type), frontend::SizeSet::Default, {}), 20);
      const std::string chunks = (type == DType::F32 ? "4" : "8") + std::string("-element chunks");
      int in_chunks = 0;
      for (const Sketch &s : d.sketches) {
        if (s.note.find(chunks) == std::string::npos) continue;
        ++in_chunks;
        EXPECT_EQ(count(s.schedule, PrimitiveKind::Vectorize), 1) << print_schedule(s.schedule);
        EXPECT_EQ(count(s.schedule, PrimitiveKind::CacheRead), 1) << print_schedule(s.schedule);
      }
      EXPECT_GE(in_chunks, 5);  // of 20: 7 (softmax, whose draws also rewrite) and 16 here
    }
}

// A row reduction with many rows mostly leaves each work-item 8 or more of its row: a
// short row's tree of barriers outweighs its loads (sketch.cpp's row_reduction).
TEST(Sketches, GiveManyShortRowsSmallGroups) {
  const Graph rows =
      test::graph_of("kernel rows(x: f32[N, D]) -> y: f32[N] where N = 65536, D = 1024 { y[n] = sum(d) x[n, d] }");
  const Draws d = draw(rows, 20, 3);
  int small = 0, drawn = 0;
  for (const Sketch &s : d.sketches) {
    const size_t at = s.note.find("a work-group per output (");
    if (at == std::string::npos) continue;
    ++drawn;
    small += std::stoi(s.note.substr(at + 25)) <= 128;
  }
  EXPECT_GE(drawn, 15);
  EXPECT_GE(small, drawn * 3 / 4) << "of " << drawn << " row reductions, " << small << " at 128 work-items or fewer";
}

TEST(Sketches, GiveAWorkItemPerOutputElsewhere) {
  Draws d = draw(example("sum_dim"), 20);
  EXPECT_EQ(d.with([](const Schedule &s) { return count(s, PrimitiveKind::CrossReduce) > 0; }), 0);
  EXPECT_EQ(d.with([](const Schedule &s) {
    return count(s, PrimitiveKind::Bind) == 2 && count(s, PrimitiveKind::Fuse) == 1;
  }),
            20);
  Draws gelu = draw(example("gelu"), 30);
  EXPECT_GE(gelu.with([](const Schedule &s) { return count(s, PrimitiveKind::Vectorize) == 1; }), 3);
}

// The device can refuse what the rules draw (a group larger than its limit): then
// the draw is smaller, never over it.
// The rfactor rewrites of a schedule.
std::vector<Rewrite> splits_of(const Schedule &s) {
  std::vector<Rewrite> out;
  for (const Rewrite &r : s.rewrites)
    if (r.kind == RewriteKind::Rfactor) out.push_back(r);
  return out;
}

// A reduction whose outputs are too few for the device's compute units is split
// across work-groups in most draws, into parts that give every unit 2 to 16 groups;
// one with outputs enough never is.
TEST(Sketches, SplitReductionsTooNarrowForTheDevice) {
  runtime::DeviceInfo h100 = gpu_limits();
  h100.compute_units = 132;
  auto draws = [&](const Graph &g, int n) {
    Rng rng(11);
    std::vector<Schedule> out;
    for (int i = 0; i < n; ++i) {
      std::optional<Sketch> s = sample_sketch(g, h100, rng);
      EXPECT_TRUE(s) << g.name;
      if (!s) continue;
      Replayed r = replay(g, s->schedule, &h100);
      EXPECT_TRUE(r.program) << r.refusal << "\n" << print_schedule(s->schedule);
      out.push_back(s->schedule);
    }
    return out;
  };
  // 512 x 512 outputs (64 tiles of 4,096) and K = 262,144: split-K.
  int split = 0, tiled = 0;
  for (const Schedule &s : draws(example_at("matmul_long_k", "M=512,N=512,K=262144"), 20)) {
    std::vector<Rewrite> r = splits_of(s);
    if (r.empty()) continue;
    ++split;
    ASSERT_EQ(r.size(), 1u) << print_schedule(s);
    EXPECT_EQ(r[0].stage, "c");
    EXPECT_EQ(r[0].loop, "k");
    const int64_t parts = (262144 + r[0].factor - 1) / r[0].factor;
    EXPECT_GE(parts * 64, 2 * 132) << print_schedule(s);
    EXPECT_LE(parts * 64, 16 * 132) << print_schedule(s);
    // The partial results are tiled as a contraction (group, local and register levels).
    int bound = 0;
    for (const Primitive &p : s.steps) bound += p.kind == PrimitiveKind::Bind && p.stage == r[0].results[0];
    tiled += bound >= 3;
  }
  EXPECT_GE(split, 6) << "split-K in most draws";
  EXPECT_GE(tiled * 10, split * 7) << "its partial results mostly tiled";
  EXPECT_LT(split, 20) << "and the GEMM whole in some";
  // A channel's statistics over a million elements (64 channels): split over the batch.
  int statistics = 0;
  for (const Schedule &s : draws(example_at("batch_norm", "N=32,C=64,H=256,W=128"), 20))
    for (const Rewrite &r : splits_of(s)) statistics += (r.stage == "mean" || r.stage == "var") && r.loop == "n";
  EXPECT_GE(statistics, 6);
  // 4,096 rows of softmax and a 4096^2 GEMM fill the device as they are.
  for (const Schedule &s : draws(example_at("matmul", "N=4096"), 10)) EXPECT_TRUE(splits_of(s).empty());
  for (const Schedule &s : draws(example_at("softmax", "N=4096,D=16384"), 10)) EXPECT_TRUE(splits_of(s).empty());
}

TEST(Sketches, StayWithinASmallDevicesLimits) {
  runtime::DeviceInfo small = gpu_limits();
  small.max_work_group_size = 64;
  small.max_work_item_sizes = {64, 64, 64};
  Rng rng(3);
  for (const char *name : {"matmul", "softmax", "gelu"}) {
    Graph g = example(name);
    for (int i = 0; i < 10; ++i) {
      std::optional<Sketch> s = sample_sketch(g, small, rng);
      ASSERT_TRUE(s) << name;
      Replayed r = replay(g, s->schedule, &small);
      EXPECT_TRUE(r.program) << r.refusal;
      if (r.program) {
        EXPECT_LE(launch_shape(r.program->kernels.back()).group_size(), 64);
      }
    }
  }
}

// On the device, at the check sizes (small, odd: every tail and guard runs), the
// sketches of every example compute the interpreter's answer and are never flagged.
class SketchesOnDevice : public testing::TestWithParam<std::string> {};

TEST_P(SketchesOnDevice, AgreeWithTheInterpreter) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  const std::string path = GetParam();
  frontend::Spec spec = frontend::load_spec(path);
  Graph g = frontend::elaborate(spec, frontend::SizeSet::Check, {});
  Rng rng(std::hash<std::string>{}(spec.name));
  for (int n = 0; n < 4; ++n) {
    std::optional<Sketch> s = sample_sketch(g, device->info(), rng);
    ASSERT_TRUE(s);
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    options.seed = static_cast<uint64_t>(n);
    options.schedule = s->schedule;
    EvalRecord r = evaluate(spec, path, *device, options);
    EXPECT_TRUE(r.ok()) << r.verdict() << "\n" << s->note << "\n" << print_schedule(s->schedule);
  }
}

// Draws sketches of an example (at its check sizes, with overrides) until `wanted`
// have a shape, and checks each on the device; returns how many were checked.
int check_drawn(runtime::Device &device, const char *name, const frontend::SizeOverrides &sizes, uint64_t seed,
                int wanted, const std::function<bool(const Schedule &)> &has,
                std::optional<DType> dtype = std::nullopt) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
  frontend::Spec spec = frontend::load_spec(path, dtype);
  Graph g = frontend::elaborate(spec, frontend::SizeSet::Check, sizes);
  Rng rng(seed);
  int checked = 0;
  for (int draws = 0; draws < 400 && checked < wanted; ++draws) {
    std::optional<Sketch> s = sample_sketch(g, device.info(), rng);
    if (!s) {
      ADD_FAILURE() << name << ": no sketch replays";
      break;
    }
    if (!has(s->schedule)) continue;
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    options.check_sizes = sizes;
    options.schedule = s->schedule;
    EvalRecord r = evaluate(spec, path, device, options);
    EXPECT_TRUE(r.ok()) << r.verdict() << "\n" << s->note << "\n" << print_schedule(s->schedule);
    ++checked;
  }
  return checked;
}

// Split reductions (rfactor) drawn where a reduction is too narrow for PoCL's cores,
// at sizes where they are: a GEMM with a long K, a channel's statistics, a loss
// summed to one value; each checked on the device.
TEST(SketchesOnDevice, SplitReductionsAgree) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  const std::pair<const char *, const char *> cases[] = {
      {"matmul_long_k", "M=3,N=5,K=2049"}, {"batch_norm", "N=9,C=2,H=16,W=15"}, {"mse_loss", "N=33,D=65"}};
  for (const auto &[name, sizes] : cases) {
    frontend::SizeOverrides overrides;
    frontend::parse_size_assignments(sizes, &overrides);
    EXPECT_EQ(check_drawn(*device, name, overrides, 3, 3, [](const Schedule &s) { return !splits_of(s).empty(); }), 3)
        << name;
  }
}

// f(api, its device) for OpenCL and Vulkan, SKIP said for an API this machine lacks.
void on_each_api(const std::function<void(const char *, runtime::Device &)> &f) {
  for (const char *api : {"opencl", "vulkan"}) {
    if (!test::has_device(api)) {
      std::printf("SKIP %s: %s\n", api, test::missing_device(api).c_str());
      continue;
    }
    auto device = runtime::open_device("", api);
    f(api, *device);
  }
}

// Row chains in 16-byte chunks at sizes the chunks fill (D = 256) and overhang (D =
// 200, a multiple of 8 that 32 work-items' chunks do not divide), f32 and bf16.
TEST(SketchesOnDevice, RowsInChunksAgree) {
  on_each_api([&](const char *api, runtime::Device &device) {
    for (const DType type : {DType::F32, DType::BF16})
      for (const char *name : {"softmax", "layer_norm"})
        for (const char *sizes : {"N=3,D=256", "N=2,D=200"}) {
          frontend::SizeOverrides overrides;
          frontend::parse_size_assignments(sizes, &overrides);
          const auto in_chunks = [](const Schedule &s) {
            return count(s, PrimitiveKind::Vectorize) == 1 && count(s, PrimitiveKind::CacheRead) == 1;
          };
          EXPECT_EQ(check_drawn(device, name, overrides, 7, 1, in_chunks, type), 1)
              << api << " " << name << " " << dtype_name(type) << " " << sizes;
        }
  });
}

// The online softmax's logsumexp shared by a group's work-items (cross_reduce: the
// tree combines partial results with logaddexp) on both APIs, at values whose exp
// overflows f32, at values whose exp underflows, and at tiny ones: the interpreter's
// answer, no NaN. (Not at magnitudes like 8e4: there f32's spacing, 0.008, is the
// error of the logsumexp itself, and exp(x - lse) is off by as much; the two-pass
// form divides by a sum and keeps f32's relative precision. passes/README.md.)
TEST(SketchesOnDevice, OnlineSoftmaxAgreesAtLargeAndTinyValues) {
  on_each_api([&](const char *api, runtime::Device &device) {
    // Past 88, exp(x) alone overflows f32; the one-value accumulator costs |L| times
    // f32's epsilon of relative precision (passes/README.md), which at 2,000 to 3,000
    // reaches the check's tolerance on some draws: the device's values stay at a few
    // hundred (the f64 interpreter's test takes them to 20,000).
    for (const char *range : {"-300.0..300.0", "-400.0..-200.0", "-1e-30..1e-30"}) {
      const std::string path = ::testing::TempDir() + "/online_softmax.ks";
      write_text_file(path, std::string("kernel s(x: f32[N, D] in ") + range +
                                ") -> y: f32[N, D]\n  where N = 8, D = 1000\n  check N = 3, D = 77\n{\n"
                                "  row_max[n] = max(d) x[n, d]\n  e[n, d] = exp(x[n, d] - row_max[n])\n"
                                "  total[n] = sum(d) e[n, d]\n  y[n, d] = e[n, d] / total[n]\n}\n");
      EvalOptions options;
      options.time = false;
      options.trials = 1;
      options.schedule = parse_schedule(test::source(
          "rewrite online_softmax total\nbind row_max_lse.n group.x\ncross_reduce row_max_lse.d 64 -> t\n", "o.sched"));
      EvalRecord r = evaluate(frontend::load_spec(path), path, device, options);
      EXPECT_TRUE(r.ok()) << api << ", x in " << range << ": " << r.verdict();
    }
  });
}

// Attention in one kernel (online_attention, then the attention rule) on both APIs, at
// scores whose exponentials overflow f32 (|q . k| up to 10^4), underflow it, and
// tiny ones, with and without a mask, a row tile of 2 and a column split that
// leaves the last work-item's columns past the edge: the interpreter's answer, no NaN.
TEST(SketchesOnDevice, OnlineAttentionAgreesAtLargeAndTinyScores) {
  const std::string tile =
      "rewrite online_attention y\nsplit y.i 8 -> io ii\nsplit y.ii 2 -> it iv\nsplit y.c 3 -> co cv\n"
      "reorder y io co it iv cv\nbind y.io group.y\nbind y.co group.x\nbind y.it local.x\n"
      "cache_write y.it private\nsplit y.j 4 -> jo ji\ncache_read y.jo v local -> v_s\nunroll y.iv\n"
      "unroll y.cv\n";
  // The scores' sum inside each step; or, masked, the stored scores read (and masked).
  const std::string fused = tile +
                            "cache_read y.jo k local -> k_s\ncache_read y.it q private -> q_r\n"
                            "prefetch y.k_s\nunroll y.d\n";
  const std::string masked = tile + "cache_read y.jo s local -> s_s\n";
  on_each_api([&](const char *api, runtime::Device &device) {
    for (const char *range : {"-100.0..100.0", "-1e-20..1e-20", "-10.0..10.0"})
      for (const char *score : {"s[i, j]", "select(j <= i, s[i, j], -inf)"}) {
        const std::string path = ::testing::TempDir() + "/online_attention.ks";
        write_text_file(path, std::string("kernel a(q: f32[T, D] in ") + range + ", k: f32[T, D] in " + range +
                                  ", v: f32[T, C]) -> y: f32[T, C]\n  where T = 64, D = 8, C = 5\n"
                                  "  check T = 37, D = 3, C = 5\n{\n  s[i, j] = sum(d) q[i, d] * k[j, d]\n"
                                  "  z[i, j] = " +
                                  score +
                                  "\n  m[i] = max(j) z[i, j]\n  e[i, j] = exp(z[i, j] - m[i])\n"
                                  "  t[i] = sum(j) e[i, j]\n  y[i, c] = sum(j) e[i, j] / t[i] * v[j, c]\n}\n");
        EvalOptions options;
        options.time = false;
        options.trials = 1;
        options.schedule = parse_schedule(test::source(std::string(score) == "s[i, j]" ? fused : masked, "a.sched"));
        EvalRecord r = evaluate(frontend::load_spec(path), path, device, options);
        EXPECT_TRUE(r.ok()) << api << ", q and k in " << range << ", " << score << ": " << r.verdict();
      }
  });
}

// The contraction rule's rarer shapes (chunks as vector lanes, transposed and
// padded panels) drawn until four have both, each checked on the device.
TEST(SketchesOnDevice, ChunkedTransposedContractionsAgree) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  for (const char *name : {"matmul", "gemm_bias_leaky"})
    EXPECT_EQ(check_drawn(*device, name, {}, 7, 4,
                          [](const Schedule &s) {
                            return count(s, PrimitiveKind::Transpose) > 0 && count(s, PrimitiveKind::Vectorize) > 0;
                          }),
              4)
        << name;
}

// Prefetched panels (the copy of the next step in registers, stored after the
// barrier) with the reduction's loops unrolled, for a matmul and a conv (boxes with
// guards at the edges; 10 input channels, so that the rule splits them), each
// checked on the device.
TEST(SketchesOnDevice, PrefetchedContractionsAgree) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  frontend::SizeOverrides conv;
  conv.values["C"] = 10;
  auto prefetched = [](const Schedule &s) { return count(s, PrimitiveKind::Prefetch) > 0; };
  EXPECT_EQ(check_drawn(*device, "matmul", {}, 11, 3, prefetched), 3);
  EXPECT_EQ(check_drawn(*device, "conv_relu_bias", conv, 11, 3, prefetched), 3);
}

// Epilogues computed in the contraction's kernel (reverse_inline), with and without
// the accumulators' write-back as vector lanes, each checked on the device: the bias
// and activation applied once to every element, at the edges too.
TEST(SketchesOnDevice, EpiloguesInTheContractionsKernelAgree) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  auto fused = [](const Schedule &s) { return count(s, PrimitiveKind::ReverseInline) > 0; };
  auto fused_lanes = [](const Schedule &s) {
    return count(s, PrimitiveKind::ReverseInline) > 0 && count(s, PrimitiveKind::Vectorize) > 0;
  };
  for (const char *name : {"conv_relu_bias", "gemm_bias_leaky"}) {
    EXPECT_EQ(check_drawn(*device, name, {}, 13, 2, fused), 2) << name;
    EXPECT_EQ(check_drawn(*device, name, {}, 17, 2, fused_lanes), 2) << name;
  }
}

// On a Vulkan device with cooperative matrices, matrix tiles are drawn where both
// operands are f16 (and then print as cooperative matrices), never for bf16 or f32
// operands, which VK_NV_cooperative_matrix does not take.
TEST(Sketches, CooperativeMatricesAreDrawnForF16OperandsAlone) {
  runtime::DeviceInfo vulkan = gpu_limits();
  vulkan.api = "vulkan";
  vulkan.matrix_units = true;
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/matmul.ks";
  for (const DType type : {DType::F16, DType::BF16, DType::F32}) {
    const Graph g = frontend::elaborate(frontend::load_spec(path, type), frontend::SizeSet::Default, {});
    Rng rng(5);
    int tiles = 0, printed = 0;
    for (int i = 0; i < 30; ++i) {
      std::optional<Sketch> s = sample_sketch(g, vulkan, rng);
      ASSERT_TRUE(s);
      if (count(s->schedule, PrimitiveKind::Tensorize) == 0) continue;
      ++tiles;
      if (printed++ == 0) {
        const std::string glsl =
            generate_glsl(run_pipeline(g, s->schedule), true, AsyncCopies::Refused, MatrixUnits::Cooperative).source;
        EXPECT_NE(glsl.find("coopMatMulAddNV"), std::string::npos) << print_schedule(s->schedule);
      }
    }
    if (type == DType::F16)
      EXPECT_GE(tiles, 5) << "f16: matrix tiles drawn";
    else
      EXPECT_EQ(tiles, 0) << dtype_name(type) << ": no matrix tile";
  }
}

// The f16 contractions' drawn tiles, as cooperative matrices: each either compiles to
// SPIR-V that the validator takes or is refused with a reason (a UserError), never an
// internal error; the GEMMs' tiles compile.
TEST(Sketches, DrawnF16TilesCompileAsCooperativeMatricesOrSayWhyNot) {
  runtime::DeviceInfo vulkan = gpu_limits();
  vulkan.api = "vulkan";
  vulkan.matrix_units = true;
  for (const std::string name :
       {"matmul", "gemm_bias_leaky", "batched_matmul", "matmul_gelu_softmax", "conv2d", "attention"}) {
    const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
    const Graph g = frontend::elaborate(frontend::load_spec(path, DType::F16), frontend::SizeSet::Check, {});
    Rng rng(7);
    int compiled = 0, refused = 0;
    for (int i = 0; i < 12; ++i) {
      std::optional<Sketch> s = sample_sketch(g, vulkan, rng);
      if (!s || count(s->schedule, PrimitiveKind::Tensorize) == 0) continue;
      try {
        const GeneratedProgram code =
            generate_glsl(run_pipeline(g, s->schedule), true, AsyncCopies::Refused, MatrixUnits::Cooperative);
        for (const GeneratedKernel &k : code.kernels) EXPECT_FALSE(compile_glsl_to_spirv(k.source, k.name).empty());
        ++compiled;
      } catch (const UserError &e) {
        EXPECT_NE(std::string(e.what()).find("error: "), std::string::npos) << e.what();
        ++refused;
      }
    }
    std::printf("%s: %d drawn tiles compiled, %d refused\n", name.c_str(), compiled, refused);
    if (name == "matmul" || name == "gemm_bias_leaky") EXPECT_GE(compiled, 1) << name;
  }
}

// Matrix tiles drawn for a device with matrix units, run on PoCL with the
// instruction emulated (its fragment layout and rounding), at the check sizes: the
// tiles overhang every edge. The conv's reduction runs over its window too (16
// output channels: the rows of one instruction at least).
TEST(SketchesOnDevice, MatrixTilesAgreeEmulated) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  runtime::DeviceInfo with_units = device->info();
  with_units.matrix_units = true;
  // The last a bf16 matmul's tile of 16-bit instructions, its ring's copies in order.
  const std::vector<std::pair<std::string, std::optional<DType>>> cases = {
      {"matmul", {}}, {"gemm_bias_leaky", {}}, {"batched_matmul", {}}, {"conv2d", {}}, {"matmul", DType::BF16}};
  for (const auto &[name, dtype] : cases) {
    const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks";
    frontend::Spec spec = frontend::load_spec(path, dtype);
    frontend::SizeOverrides sizes;
    if (name == "conv2d") sizes.values["O"] = 16;
    Graph g = frontend::elaborate(spec, frontend::SizeSet::Check, sizes);
    with_units.async_copies = dtype.has_value();
    Rng rng(5);
    int checked = 0;
    for (int draws = 0; draws < 200 && checked < 1; ++draws) {  // one each: PoCL compiles the emulation slowly
      std::optional<Sketch> s = sample_sketch(g, with_units, rng);
      if (!s || count(s->schedule, PrimitiveKind::Tensorize) == 0) continue;
      EvalOptions options;
      options.time = false;
      options.trials = 1;
      options.emulate_matrix_units = true;
      options.async_copies_in_order = true;
      options.check_sizes = sizes;
      options.schedule = s->schedule;
      EvalRecord r = evaluate(spec, path, *device, options);
      EXPECT_TRUE(r.ok()) << r.verdict() << "\n" << s->note << "\n" << print_schedule(s->schedule);
      if (dtype) {
        const std::string code =
            generate_opencl_c(run_pipeline(g, s->schedule), AsyncCopies::InOrder, "", MatrixUnits::Emulated).source;
        EXPECT_NE(code.find("bf16 operands (exact products)"), std::string::npos) << code;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 1) << name << ": a matrix tile drawn";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, SketchesOnDevice, testing::ValuesIn(test::example_paths()), test::example_name);

// A running total (a cumulative sum over the last index, rows of a 3-D tensor) is a
// pattern of its own: most draws scan each row with a work-group, and those agree
// with the interpreter on the device: forward and reversed, inclusive and exclusive.
TEST(Sketches, ScanRunningTotals) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/tests/lit/inputs/cumulative.ks";
  Graph g = frontend::elaborate(frontend::load_spec(path), frontend::SizeSet::Default, {});
  EXPECT_EQ(patterns(g), (std::map<std::string, std::string>{
                             {"inclusive", "scan"}, {"product", "scan"}, {"reverse", "scan"}, {"exclusive", "scan"}}));
  Draws d = draw(g, 20);
  EXPECT_GE(d.with([](const Schedule &s) { return count(s, PrimitiveKind::Scan) >= 3; }), 12);
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto device = runtime::open_device("", "opencl");
  frontend::Spec spec = frontend::load_spec(path);
  Graph check = frontend::elaborate(spec, frontend::SizeSet::Check, {});
  Rng rng(5);
  int scanned = 0;
  for (int draws = 0; draws < 40 && scanned < 3; ++draws) {
    std::optional<Sketch> s = sample_sketch(check, device->info(), rng);
    ASSERT_TRUE(s);
    if (count(s->schedule, PrimitiveKind::Scan) == 0) continue;
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    options.schedule = s->schedule;
    EvalRecord r = evaluate(spec, path, *device, options);
    EXPECT_TRUE(r.ok()) << r.verdict() << "\n" << s->note << "\n" << print_schedule(s->schedule);
    ++scanned;
  }
  EXPECT_EQ(scanned, 3);
}

}  // namespace
}  // namespace ks
