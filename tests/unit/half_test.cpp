// f16 and bf16 tensors (issue 49, first part): the conversions against a table, the
// device's stores against the host's rounding, specs checked against the interpreter
// on PoCL (naive and scheduled), and what is refused with its reason.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "codegen/glsl.h"
#include "codegen/opencl_c.h"
#include "codegen/spirv.h"
#include "evolve/evaluation/device_limits.h"
#include "evolve/evaluation/evaluate.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "passes/pipeline.h"
#include "passes/rewrite.h"
#include "passes/schedule.h"
#include "test_util.h"
#include "tests/device/half_conversions.h"

namespace ks {
namespace {

// f32 values and their f16 and bf16 bits (tests/device/half_conversions.cpp's table).
TEST(HalfTypes, RoundToNearestEvenAgainstATable) {
  for (const HalfRow &r : half_rows()) {
    EXPECT_EQ(half_bits(DType::F16, r.value), r.f16) << r.value;
    EXPECT_EQ(half_bits(DType::BF16, r.value), r.bf16) << r.value;
    // Each format's bits give back the value they round to.
    for (DType t : {DType::F16, DType::BF16}) {
      const double rounded = round_to(t, r.value);
      const uint16_t bits = t == DType::F16 ? r.f16 : r.bf16;
      EXPECT_EQ(half_value(t, bits), rounded) << dtype_name(t) << " " << r.value;
      EXPECT_EQ(std::signbit(half_value(t, bits)), std::signbit(r.value)) << dtype_name(t) << " " << r.value;
    }
  }
  EXPECT_TRUE(std::isnan(half_value(DType::F16, half_bits(DType::F16, NAN))));
  EXPECT_TRUE(std::isnan(half_value(DType::BF16, half_bits(DType::BF16, NAN))));
  EXPECT_EQ(dtype_bytes(DType::F16), 2);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2);
}

// The 16-bit tests on each API's device: PoCL and lavapipe here.
class HalfOnDevice : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!test::has_device(api)) GTEST_SKIP() << test::missing_device(api);
    device = runtime::open_device("", api);
  }
  const std::string api = GetParam();
  std::unique_ptr<runtime::Device> device;
};

// The generated code's 16-bit conversions agree with the table on each device, as
// `ksmith run` writes them there (tests/device/half_conversions.h): stores of f32 values
// into a 16-bit tensor, the same rounded in registers (`bf16(x)` into an f32 tensor: the
// random inputs of the other tests cannot tell, a value left unrounded being within a
// rounding's bound), and 16-bit values read into f32; one element a statement and
// vectors of 8. On PoCL (vstore_half_rte, bf16's shifts) and lavapipe (GLSL's uint16_t
// through ks_to_f16 and ks_to_bf16); on the GPU machine ks_half_conversions runs it, where
// NVIDIA's OpenCL converts through PTX cvt.
TEST_P(HalfOnDevice, StoresRoundAsTheHostDoes) {
  const std::vector<std::string> failures =
      check_half_conversions(*device, api == "vulkan" ? Target::SPIRV : Target::OpenCL);
  for (const std::string &f : failures) ADD_FAILURE() << api << ": " << f;
}

// 16-bit activations and weights, f32 arithmetic: the intermediates of one 16-bit
// type are stored in it, a mix is f32.
const char *kHalfSoftmax = R"(kernel sm(x: TYPE[N, D]) -> y: TYPE[N, D] where N = 8, D = 40 {
  row_max[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - row_max[n])
  total[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / total[n]
})";
const char *kHalfMatmul = R"(kernel mm(a: TYPE[M, K], b: f32[K, N], bias: TYPE[N]) -> c: TYPE[M, N]
  where M = 16, N = 24, K = 40 {
  p[i, j] = sum(k) a[i, k] * b[k, j]
  c[i, j] = gelu(p[i, j] + bias[j])
})";

// Rows of 6 elements: a vector of 4 starts at an offset no multiple of 4 in odd rows,
// and the last vector of a row overhangs it.
const char *kHalfRowsOfSix = R"(kernel sh(x: TYPE[N, D]) -> y: TYPE[N, D] where N = 5, D = 6 {
  y[n, d] = x[n, d] * 2.0 + 1.0
})";

// A rounding in registers, seen in an f32 output.
const char *kHalfRoundings = R"(kernel rd(x: TYPE[N, D]) -> y: f32[N, D] where N = 3, D = 8 {
  y[n, d] = TYPE(x[n, d] * 3.0 + 0.001) + x[n, d] * 0.5
})";

// A register tile over panels of a cached in local memory.
const char *kHalfTiledMatmul =
    "tile p i j 8 8 -> io jo ii ji\nsplit p.ii 4 -> ri ty\nsplit p.ji 4 -> rj tx\nreorder p ty tx ri rj\n"
    "bind p.io group.y\nbind p.jo group.x\nbind p.ty local.y\nbind p.tx local.x\ncache_write p.tx private\n"
    "split p.k 8 -> ko ki\ncache_read p.ko a local -> a_s\n";

std::string half_spec(const char *spec, const std::string &type) {
  std::string s = spec;
  for (size_t at; (at = s.find("TYPE")) != std::string::npos;) s.replace(at, 4, type);
  return s;
}

TEST(HalfTypes, IntermediatesTakeTheirOperandsType) {
  const Graph g = test::graph_of(half_spec(kHalfSoftmax, "bf16"));
  for (const char *name : {"row_max", "e", "total", "y"}) EXPECT_EQ(g.find_tensor(name)->type, DType::BF16) << name;
  const Graph mixed = test::graph_of(half_spec(kHalfMatmul, "f16"));
  EXPECT_EQ(mixed.find_tensor("p")->type, DType::F32) << "f16 times f32";
  EXPECT_EQ(mixed.find_tensor("c")->type, DType::F16) << "as declared";
  // f32(...) is f32, as x.float(); a condition's operands are not the value's.
  const Graph g2 = test::graph_of(R"(kernel k(x: bf16[N], m: f32[N]) -> y: bf16[N] where N = 4 {
  widened[i] = f32(x[i]) * 2.0
  kept[i] = select(m[i] > 0.0, x[i], 0.0) + exp(x[i])
  y[i] = widened[i] + kept[i]
})");
  EXPECT_EQ(g2.find_tensor("widened")->type, DType::F32);
  EXPECT_EQ(g2.find_tensor("kept")->type, DType::BF16);
}

// --dtype: a spec's f32 declarations another type, the rest as written.
TEST(HalfTypes, WithDtypeDeclaresTheF32TensorsAnotherType) {
  const std::string text =
      "# a comment: x: f32[N]\nkernel k(x: f32[N], i: i64[N] in 0..3, s:f32[4]) ->\n  (y: f32[N], z: f16[N])\n"
      "  where N = 4 {\n  t[n] = x[n] * s[i[n]]\n  y[n] = t[n]\n  z[n] = t[n] + 1.0\n}\n";
  const std::string retyped = frontend::with_dtype(test::source(text, "w.ks"), DType::BF16);
  EXPECT_EQ(retyped,
            "# a comment: x: f32[N]\nkernel k(x: bf16[N], i: i64[N] in 0..3, s:bf16[4]) ->\n  (y: bf16[N], z: f16[N])\n"
            "  where N = 4 {\n  t[n] = x[n] * s[i[n]]\n  y[n] = t[n]\n  z[n] = t[n] + 1.0\n}\n");
  const Graph g = test::graph_of(retyped);
  EXPECT_EQ(g.find_tensor("t")->type, DType::BF16) << "an intermediate follows its operands";
  EXPECT_EQ(frontend::with_dtype(test::source(text, "w.ks"), DType::F32), text);
  EXPECT_NE(test::user_error([] { frontend::parse_spec_dtype("i32"); }).find("f32, f16 and bf16"), std::string::npos);
}

// On PoCL and lavapipe: each spec naive and under schedules that cache, reduce across
// work-items, rewrite and vectorize (GLSL writes vector loops lane by lane).
TEST_P(HalfOnDevice, SpecsAgreeWithTheInterpreter) {
  const std::vector<std::pair<const char *, std::string>> cases = {
      {kHalfSoftmax, ""},
      // rows of 8 work-items, the statistics in y's kernel (f32 in local memory), x cached
      {kHalfSoftmax,
       "bind row_max.n group.x\ncross_reduce row_max.d 8 -> t\nbind total.n group.x\ncross_reduce total.d 8 -> t1\n"
       "split y.d 8 -> dj1 t2\nreorder y t2 dj1\nbind y.n group.x\nbind y.t2 local.x\ninline e\n"
       "compute_at total y.t2\ncompute_at row_max y.t2\ncache_read y.t2 x private -> x_r\n"},
      // the row's two statistics one logsumexp in f32 (online_softmax drops e and total)
      {kHalfSoftmax,
       "rewrite online_softmax total\nbind row_max_lse.n group.x\ncross_reduce row_max_lse.d 8 -> t\n"
       "unroll row_max_lse.dj\nsplit y.d 8 -> dj1 t1\nreorder y t1 dj1\nbind y.n group.x\nbind y.t1 local.x\n"
       "compute_at row_max_lse y.t1\n"},
      // vectors of 16-bit elements: aligned (vloada_half4, ushort4), and not
      {kHalfSoftmax, "split y.d 4 -> do dv\nvectorize y.dv\nsplit e.d 8 -> do dv\nvectorize e.dv\n"},
      {kHalfRowsOfSix, "split y.d 4 -> do dv\nvectorize y.dv\n"},
      {kHalfMatmul, ""},
      {kHalfMatmul, kHalfTiledMatmul},
      // roundings in registers (of one element, and of a vector of them)
      {kHalfRoundings, ""},
      {kHalfRoundings, "split y.d 4 -> do dv\nvectorize y.dv\n"},
  };
  for (const char *type : {"f16", "bf16"})
    for (const auto &[spec, schedule] : cases) {
      const std::string text = half_spec(spec, type);
      EvalOptions options;
      options.time = false;
      options.trials = 3;
      if (!schedule.empty()) options.schedule = parse_schedule(test::source(schedule, "half.sched"));
      EvalRecord r = evaluate(frontend::parse_spec(test::source(text, "half.ks")), "half.ks", *device, options);
      EXPECT_TRUE(r.ok()) << api << " " << type << ":\n" << text << "\n" << schedule << r.to_json().dump(2);
    }
}

// Matrix tiles of 16-bit operands (exact in their format through the local panels):
// mma.sync.m16n8k16 on the format, packed by cvt; one operand f32, the 3xTF32 form.
const char *kHalfGemm =
    "kernel mm(a: TYPE[M, K], b: TYPE[K, N]) -> c: TYPE[M, N] where M = 32, N = 32, K = 48 "
    "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";
const char *kHalfGemmTile =
    "tile c i j 32 32 -> io jo ii ji\nsplit c.ii 16 -> wy wi\nsplit c.wi 16 -> mi r\nsplit c.r 8 -> h g\n"
    "split c.ji 16 -> wx wj\nsplit c.wj 8 -> nj q\nsplit c.q 2 -> t cc\nreorder c io jo wy wx g t mi h nj cc\n"
    "fuse c wy wx -> warp\nfuse c g t -> lane\nbind c.io group.y\nbind c.jo group.x\nbind c.warp local.y\n"
    "bind c.lane local.x\ncache_write c.lane private\nsplit c.k 16 -> ko ki\ncache_read c.ko a local -> a_s\n"
    "cache_read c.ko b local -> b_s\ntensorize c.ki\n";

// A of values rounded to the format (each a * 1.5 needs a bit more), c in f32. (A value
// left unrounded is within the rounding's bound, so that the device's rounding of an f32
// value may land beside the reference's; StoresRoundAsTheHostDoes checks the rounding.)
const char *kHalfRoundedGemm =
    "kernel mm(a: TYPE[M, K], b: TYPE[K, N]) -> c: f32[M, N] where M = 32, N = 32, K = 48 "
    "{ c[i, j] = sum(k) TYPE(a[i, k] * 1.5) * b[k, j] }";

// Local copies of a and b in panels of k that overhang K = 48 (padded reads).
const char *kHalfTiledCopies =
    "tile c i j 32 32 -> io jo ii ji\nsplit c.ii 8 -> ty ri\nsplit c.ji 4 -> tx rj\nreorder c ty tx ri rj\n"
    "bind c.io group.y\nbind c.jo group.x\nbind c.ty local.y\nbind c.tx local.x\ncache_write c.tx private\n"
    "split c.k 20 -> ko ki\ncache_read c.ko a local -> a_s\ncache_read c.ko b local -> b_s\n";

TEST(HalfTypes, MatrixTilesOfHalfOperandsAreSixteenPointInstructions) {
  for (const char *type : {"f16", "bf16"}) {
    const Program p = run_pipeline(test::graph_of(half_spec(kHalfGemm, type)),
                                   parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
    const std::string t = type;
    EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32." + t + "." + t + ".f32"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("cvt.rn." + t + "x2.f32"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("1 steps of 16, " + t + " operands (exact products)"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ks_mma_tf32"), std::string::npos) << ptx;
    // The instructions sum into the accumulator's registers themselves (no runs).
    EXPECT_NE(ptx.find(": \"+f\"(c_acc["), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ks_d"), std::string::npos) << ptx;
    // The panels keep the format (their copies are the bits); a row's four k points are
    // one 8-byte load of two registers as they are.
    EXPECT_NE(ptx.find("__local ushort a_s["), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("const uint2 x = *(__local const uint2 *)&a_s["), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("ks_a[0] = x.x;"), std::string::npos) << ptx;
  }
  // A rounded to bf16 where it loads: the packing's cvt.rn is the rounding.
  {
    const Program p = run_pipeline(test::graph_of(half_spec(kHalfRoundedGemm, "bf16")),
                                   parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
    EXPECT_NE(ptx.find("1 steps of 16, bf16 operands"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("ks_pack_bf16(x.x, x.y)"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("* 1.5f, "), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ks_from_bf16(ks_to_bf16("), std::string::npos) << ptx;  // (half_round's spelling)
  }
  // bf16 times f32: B's values are not all bf16, so 3xTF32 (steps of 8).
  std::string mixed = half_spec(kHalfGemm, "bf16");
  mixed.replace(mixed.find("b: bf16"), 7, "b: f32");
  const Program p = run_pipeline(test::graph_of(mixed), parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
  EXPECT_NE(ptx.find("m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  EXPECT_EQ(ptx.find("m16n8k16"), std::string::npos);
}

// The tile's write-back stores its accumulators' pairs (cc) as one 4-byte word each: a
// finishing pass vectorizes the copy loop of 16-bit stores (pack_half_stores.h). An f32
// output keeps its loop. (MatrixTilesAgreeWithTheInterpreter runs the packed form.)
TEST(HalfTypes, ATilesWriteBackStoresItsPairsAsOneWord) {
  for (const std::string t : {"f16", "bf16"}) {
    SCOPED_TRACE(t);
    const Program p = run_pipeline(test::graph_of(half_spec(kHalfGemm, t.c_str())),
                                   parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
    int packed = 0;
    for (const For *f : collect<For>(p.kernels[0].body))
      if (f->var == "cc_out") packed += f->kind == ForKind::Vectorized;
    EXPECT_EQ(packed, 1) << print_stmt(p.kernels[0].body);
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
    const std::string c = t == "f16" ? "((__global ushort *)c)" : "c";
    EXPECT_NE(ptx.find("*(__global uint *)&" + c + "[i_out * 32 + j_out] = ks_pack_" + t + "_2((float2)("),
              std::string::npos)
        << ptx;
  }
  const Program f32_out = run_pipeline(test::graph_of(half_spec(kHalfRoundedGemm, "bf16")),
                                       parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
  for (const For *f : collect<For>(f32_out.kernels[0].body)) EXPECT_NE(f->kind, ForKind::Vectorized) << f->var;
}

// A's panel transposed (rows of m, as a convolution's weight panel w[c, o] comes): each m
// tile's four registers by one ldmatrix.x4.trans, where the rows' eight elements are
// 16-byte aligned; rows of 36 are not, and A's elements are read two bytes a load.
TEST(HalfTypes, SixteenBitFragmentsOfATransposedAComeByLdmatrix) {
  std::string tile = kHalfGemmTile;
  tile.replace(tile.find("tensorize"), 0, "transpose c.a_s\n");
  const Program p =
      run_pipeline(test::graph_of(half_spec(kHalfGemm, "bf16")), parse_schedule(test::source(tile, "t.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
  EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"), std::string::npos)
      << ptx;
  EXPECT_EQ(test::count(ptx, "= ks_ldmatrix_x4_trans(&a_s["), 1) << ptx;  // the warp's one m tile
  EXPECT_EQ(test::count(ptx, "ks_a[3] = x.w;"), 1) << ptx;
  EXPECT_EQ(test::count(ptx, "= ks_ldmatrix_x2_trans(&b_s["), 2) << ptx;  // B's as before
  tile.replace(tile.find("tensorize"), 0, "pad c.a_s 4\n");
  const Program padded =
      run_pipeline(test::graph_of(half_spec(kHalfGemm, "bf16")), parse_schedule(test::source(tile, "t.sched")));
  const std::string unaligned = generate_opencl_c(padded, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
  EXPECT_EQ(unaligned.find("ks_ldmatrix_x4_trans"), std::string::npos) << unaligned;
  EXPECT_NE(unaligned.find("ks_a[0] = (uint)a_s["), std::string::npos) << unaligned;
}

// The tile with panels of 32 k (eight elements a work-item) in a ring of two slots, and
// the spec with two such panels.
std::string half_gemm_ring() {
  std::string ring = std::string(kHalfGemmTile) + "async_copy c.ko 2\n";
  return ring.replace(ring.find("split c.k 16"), 12, "split c.k 32");
}
std::string half_gemm_of_two_panels(const char *type) {
  std::string s = half_spec(kHalfGemm, type);
  return s.replace(s.find("K = 48"), 6, "K = 64");
}

// A ring of 16-bit panels: one 16-byte cp.async a work-item, the panels' bits as they
// are (on the devices, in order: HalfOnDevice.MatrixTilesAgreeWithTheInterpreter).
TEST(HalfTypes, RingsOfSixteenBitPanelsAreCopiedSixteenBytesAPiece) {
  const std::string ring = half_gemm_ring();
  auto spec = half_gemm_of_two_panels;
  for (const char *type : {"f16", "bf16"}) {
    const Program p = run_pipeline(test::graph_of(spec(type)), parse_schedule(test::source(ring, "r.sched")));
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
    EXPECT_NE(ptx.find("__local ushort a_s[2048]"), std::string::npos) << ptx;  // two slots of 32 x 32
    // A global f16 element's address through its bits: `half` has no lvalue without cl_khr_fp16.
    const std::string a = std::string(type) == "f16" ? "&((__global ushort *)a)[" : "&a[";
    EXPECT_NE(ptx.find("ks_copy_async16(&a_s["), std::string::npos) << ptx;
    EXPECT_NE(ptx.find(", " + a), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("ks_copy_async4"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("m16n8k16"), std::string::npos) << ptx;
    // B's fragments: ldmatrix.trans from the panel's rows of n.
    EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"), std::string::npos) << ptx;
    EXPECT_EQ(test::count(ptx, "= ks_ldmatrix_x2_trans(&b_s["), 2) << ptx;  // the warp's two n tiles
  }
  {
    // Four 2-byte elements a work-item (8 x 8 panels, 16 work-items): no 16-byte
    // pieces, so the ring's copies are made in place.
    const Program p =
        run_pipeline(test::graph_of(half_spec(kHalfMatmul, "f16")),
                     parse_schedule(test::source(std::string(kHalfTiledMatmul) + "async_copy p.ko 2\n", "v.sched")));
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx).source;
    EXPECT_EQ(ptx.find("ks_copy_async"), std::string::npos) << ptx;
    EXPECT_NE(ptx.find("ks_copies_commit();"), std::string::npos) << ptx;
    // Their bits as they are (an f16 parameter's through a ushort pointer), no conversion.
    EXPECT_NE(ptx.find("] = ((__global ushort *)a)["), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("((__local half *)a_s));"), std::string::npos) << ptx;
  }
  {
    // A padded copy of bf16 (zeros past the tensor's edge: K = 48 in panels of 20): bits, 0
    // outside, no conversion.
    const Program p = run_pipeline(test::graph_of(half_spec(kHalfGemm, "bf16")),
                                   parse_schedule(test::source(kHalfTiledCopies, "c.sched")));
    const std::string code = generate_opencl_c(p).source;
    EXPECT_NE(code.find("] : 0;"), std::string::npos) << code;
    EXPECT_EQ(code.find("ks_to_bf16(ks_from_bf16"), std::string::npos) << code;  // (c's store rounds)
  }
  {
    // The ring's copies in order (a device without cp.async): eight elements a work-item
    // as one ushort8 of bits.
    const Program p = run_pipeline(test::graph_of(spec("bf16")), parse_schedule(test::source(ring, "r.sched")));
    const std::string code = generate_opencl_c(p, AsyncCopies::InOrder, "", MatrixUnits::Emulated).source;
    EXPECT_NE(code.find("= *(__global ushort8 *)&a["), std::string::npos) << code;
    EXPECT_EQ(code.find("ks_to_bf16(ks_from_bf16"), std::string::npos) << code;  // (c's store rounds)
  }
}

// The emulated instructions (each lane reads its operands where the k16 layout puts
// them) against the interpreter on PoCL and lavapipe, f16 and bf16: the tile, and the
// ring of 16-bit panels (local 16-bit arrays; GLSL's int16 types).
TEST_P(HalfOnDevice, MatrixTilesAgreeWithTheInterpreter) {
  if (device->info().matrix_units) GTEST_SKIP() << device->info().name << " has matrix units: not emulated";
  // The tile, K of three panels; the ring (its copies in order), K of three panels of 32;
  // A computed and rounded to the format as its fragments load, the sums f32.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {kHalfGemmTile, "M=32,N=32,K=48", ""},
      {half_gemm_ring(), "M=32,N=32,K=96", "ring"},
      {kHalfGemmTile, "M=32,N=32,K=48", "rounded"}};
  for (const char *type : {"f16", "bf16"})
    for (const auto &[schedule, sizes, ring] : cases) {
      EvalOptions options;
      options.time = false;
      options.trials = 2;
      options.emulate_matrix_units = true;
      options.async_copies_in_order = true;
      options.schedule = parse_schedule(test::source(schedule, "mma.sched"));
      frontend::parse_size_assignments(sizes, &options.check_sizes);
      const std::string spec = ring == "rounded" ? half_spec(kHalfRoundedGemm, type)
                               : ring.empty()    ? half_spec(kHalfGemm, type)
                                                 : half_gemm_of_two_panels(type);
      EvalRecord r = evaluate(frontend::parse_spec(test::source(spec, "mm.ks")), "mm.ks", *device, options);
      EXPECT_TRUE(r.ok()) << api << " " << type << " " << ring << r.to_json().dump(2);
    }
}

// bf16(x) and f16(x): an f32 value rounded to the format (PyTorch's x.to(torch.bfloat16)
// meeting f32 values), in the spec, the Graph IR's text and the interpreter.
// Where the target takes inline PTX (NVIDIA's OpenCL), 16-bit stores round through
// cvt.rn.f16x2.f32 and cvt.rn.bf16x2.f32, a pair of lanes a word; elsewhere through
// vstore_half_rte and bf16's integer rounding (PoCL runs those:
// HalfOnDevice.StoresRoundAsTheHostDoes).
TEST(HalfTypes, SixteenBitStoresThroughPtxWhereTheTargetTakesIt) {
  for (const char *schedule : {"", "split y.i 8 -> io iv\nvectorize y.iv\n"})
    for (const std::string t : {"f16", "bf16"}) {
      SCOPED_TRACE(t + " " + schedule);
      const Program p =
          run_pipeline(test::graph_of("kernel k(x: f32[N]) -> y: " + t + "[N] where N = 64 { y[i] = x[i] }"),
                       parse_schedule(test::source(schedule, "v.sched")));
      const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
      const std::string portable = generate_opencl_c(p).source;
      EXPECT_NE(ptx.find("asm(\"cvt.rn." + t + "x2.f32 %0, %1, %2;\""), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find("vstore"), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find("ks_to_bf16"), std::string::npos) << ptx;
      EXPECT_EQ(portable.find("cvt.rn"), std::string::npos) << portable;
      const std::string y = t == "f16" ? "((__global ushort *)y)" : "y";
      if (*schedule) {
        EXPECT_NE(ptx.find("*(__global uint4 *)&" + y + "[i] = ks_pack_" + t + "_8("), std::string::npos) << ptx;
        EXPECT_NE(ptx.find("ks_pack_" + t + "(v.s6, v.s7)"), std::string::npos) << ptx;
        EXPECT_NE(portable.find(t == "f16" ? "vstorea_half8_rte(" : "ks_to_bf16_8("), std::string::npos) << portable;
      } else {
        EXPECT_NE(ptx.find(y + "[i] = convert_ushort(ks_pack_" + t + "(x[i], 0.0f));"), std::string::npos) << ptx;
        EXPECT_NE(portable.find(t == "f16" ? "vstore_half_rte(" : "ks_to_bf16("), std::string::npos) << portable;
      }
    }
}

// A rounding kept in registers (a 16-bit value read where it was computed, never
// stored) rounds as a store does: through cvt where the target takes inline PTX, then
// widened again; elsewhere through vstore_half_rte and bf16's integer rounding.
TEST(HalfTypes, RoundingsInRegistersThroughPtxWhereTheTargetTakesIt) {
  for (const char *schedule : {"", "split y.i 8 -> io iv\nvectorize y.iv\n"})
    for (const std::string t : {"f16", "bf16"}) {
      SCOPED_TRACE(t + " " + schedule);
      const Program p = run_pipeline(
          test::graph_of("kernel k(x: f32[N]) -> y: f32[N] where N = 64 { y[i] = f32(" + t + "(x[i] * 3.0)) * 2.0 }"),
          parse_schedule(test::source(schedule, "r.sched")));
      const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
      const std::string portable = generate_opencl_c(p).source;
      EXPECT_NE(ptx.find(*schedule ? "ks_pack_" + t + "_8(" : "ks_pack_" + t + "(x[i] * 3.0f, 0.0f)"),
                std::string::npos)
          << ptx;
      for (const char *slow : {"ks_round_f16", "vstore_half", "ks_to_bf16"})
        EXPECT_EQ(ptx.find(slow), std::string::npos) << ptx;
      EXPECT_NE(portable.find(t == "f16" ? "ks_round_f16" : "ks_to_bf16"), std::string::npos) << portable;
    }
}

// Where the target takes inline PTX, f16 reads widen through cvt.f32.f16: a vector's
// elements as one load of their bits, a pair a word; a scalar as the low half of one.
// Elsewhere vloada_halfN and vload_half (PoCL runs those: HalfOnDevice). The H200's
// tables run the PTX forms on random inputs (bench/results.md).
TEST(HalfTypes, F16ReadsWidenThroughPtxWhereTheTargetTakesIt) {
  for (const char *schedule : {"", "split y.i 8 -> io iv\nvectorize y.iv\n"}) {
    SCOPED_TRACE(schedule);
    const Program p =
        run_pipeline(test::graph_of("kernel k(x: f16[N]) -> y: f32[N] where N = 64 { y[i] = x[i] * 2.0 }"),
                     parse_schedule(test::source(schedule, "v.sched")));
    const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
    const std::string portable = generate_opencl_c(p).source;
    EXPECT_NE(ptx.find("mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("vload"), std::string::npos) << ptx;
    EXPECT_EQ(portable.find("cvt.f32.f16"), std::string::npos) << portable;
    if (*schedule) {
      EXPECT_NE(ptx.find("ks_from_f16_8(as_uint4(*(__global ushort8 *)&((__global ushort *)x)[i]))"), std::string::npos)
          << ptx;
      EXPECT_NE(
          ptx.find("return (float8)(ks_from_f16(w.s0), ks_from_f16(w.s1), ks_from_f16(w.s2), ks_from_f16(w.s3));"),
          std::string::npos)
          << ptx;
      EXPECT_NE(portable.find("vloada_half8(0, x + i)"), std::string::npos) << portable;
    } else {
      EXPECT_NE(ptx.find("ks_from_f16(convert_uint(((__global ushort *)x)[i])).s0"), std::string::npos) << ptx;
      EXPECT_NE(portable.find("vload_half(i, x)"), std::string::npos) << portable;
    }
  }
  // Rows of 63 elements: vectors not aligned to their size, their bits read and written by
  // vloadN and vstoreN (2-byte alignment), converted by cvt all the same.
  const Program p = run_pipeline(
      test::graph_of("kernel k(x: f16[N, D]) -> y: f16[N, D] where N = 2, D = 63 { y[n, d] = x[n, d] * 2.0 }"),
      parse_schedule(test::source("split y.d 8 -> do dv\nvectorize y.dv\n", "u.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Refused, "", MatrixUnits::Ptx).source;
  EXPECT_NE(ptx.find("ks_from_f16_8(as_uint4(vload8(0, &((__global ushort *)x)["), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("vstore8(as_ushort8(ks_pack_f16_8("), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("vload_half"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("vstore_half"), std::string::npos) << ptx;
}

// A private copy of a bf16 tensor (cache_read's, into registers) holds the bits, two
// to a word: a vector copy stores words, a scalar one halves, every read widens by a
// shift or a mask. f16, f32 and GLSL keep f32 registers. On the devices:
// CacheReadOnDevice.BoxesInPartsAgreeWithTheInterpreter.
TEST(HalfTypes, PrivateCopiesOfBf16HoldPairsOfThem) {
  const std::string spec = "kernel k(x: bf16[N, D]) -> y: bf16[N, D] where N = 4, D = 64 { y[n, d] = x[n, d] * 2.0 }";
  const std::string rows = "bind y.n group.x\nsplit y.d 8 -> c v\nbind y.c local.x\n";
  for (const bool vector : {true, false}) {
    SCOPED_TRACE(vector ? "vector copy" : "scalar copy");
    // Scalar: work-item c's elements d = v * 8 + c, 8 apart.
    const std::string schedule =
        (vector ? rows : "bind y.n group.x\nsplit y.d 8 -> v c\nreorder y c v\nbind y.c local.x\n") +
        std::string("cache_read y.c x private -> x_r\n");
    const Program p = run_pipeline(test::graph_of(spec), parse_schedule(test::source(schedule, "p.sched")));
    const std::string c = generate_opencl_c(p).source;
    EXPECT_NE(c.find("uint x_r[4];  // bf16 pairs"), std::string::npos) << c;
    EXPECT_NE(c.find("& 0xffff0000u) : (x_r["), std::string::npos) << c;  // a read
    if (vector)
      EXPECT_NE(c.find("const uint4 ks_words = as_uint4(*(__global ushort8 *)&x["), std::string::npos) << c;
    else
      EXPECT_NE(c.find("& 0xffffu) | (convert_uint(x["), std::string::npos) << c;
    const std::string glsl = generate_glsl(p).kernels[0].source;
    EXPECT_EQ(glsl.find("pairs"), std::string::npos) << glsl;
  }
  std::string f16 = spec;
  for (size_t at; (at = f16.find("bf16")) != std::string::npos;) f16.replace(at, 4, "f16");
  const Program p = run_pipeline(test::graph_of(f16),
                                 parse_schedule(test::source(rows + "cache_read y.c x private -> x_r\n", "p.sched")));
  const std::string c = generate_opencl_c(p).source;
  EXPECT_NE(c.find("float x_r[8];"), std::string::npos) << c;
}

TEST(HalfTypes, RoundingsAreValuesOfTheirFormat) {
  const char *spec = R"(kernel k(x: f32[N]) -> (y: f32[N], z: f32[N]) where N = 3 {
  r[i] = bf16(x[i] * 3.0)
  y[i] = r[i] + f16(x[i])
  z[i] = f32(bf16(x[i])) + 1.0
})";
  const Graph g = test::graph_of(spec);
  EXPECT_EQ(g.find_tensor("r")->type, DType::BF16) << "an intermediate of a bf16 value is stored in bf16";
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("bf16(x[i] * 3.0)"), std::string::npos) << text;
  EXPECT_EQ(print_graph(parse_graph(test::source(text, "g.graph"))), text);  // the text parses back
  // 1 + 2^-7 + 2^-9: bf16 keeps 7 bits after the point (1 + 2^-7), f16 ten (all of it).
  const double x = 1 + 0x1p-7 + 0x1p-9;
  const TensorMap out = interpret(g, {{"x", TensorData{DType::F32, {3}, {x, -x, 0x1p-30}}}});
  EXPECT_EQ(out.at("y").values[0], round_to(DType::BF16, 3 * x) + x);
  EXPECT_EQ(out.at("y").values[1], round_to(DType::BF16, -3 * x) - x);
  EXPECT_EQ(out.at("z").values[0], 1 + 0x1p-7 + 1.0);
  EXPECT_EQ(out.at("y").values[2], round_to(DType::BF16, 3 * 0x1p-30)) << "f16 has no 2^-30: 0";
}

// A rewrite that folds a 16-bit temporary into its readers keeps its format there:
// attention's weights e (bf16 at --dtype bf16) read as bf16(exp(s - lse)), and so both
// of its contractions are 16-bit matrix tiles; at f32 nothing is rounded.
TEST(HalfTypes, FoldedTemporariesKeepTheirFormat) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/attention.ks";
  const std::string f32 = read_source_file(path, "spec")->text;
  const std::string bf16 = frontend::with_dtype(test::source(f32, "attention.ks"), DType::BF16);
  for (const bool half : {false, true}) {
    std::string reason;
    const std::optional<Graph> g = online_softmax(test::graph_of(half ? bf16 : f32), "total", &reason);
    ASSERT_TRUE(g) << reason;
    const std::string printed = print_graph(*g);
    EXPECT_EQ(printed.find("sum(j: 256) bf16(exp(s[b, h, i, j] - row_max_lse[b, h, i])) * v"),
              half ? printed.find("sum(j: 256) bf16") : std::string::npos)
        << printed;
    EXPECT_EQ(printed.find("bf16(") != std::string::npos, half) << printed;
  }
  const std::string sched =
      read_source_file(std::string(KS_SOURCE_DIR) + "/bench/mma/attention/attention_lse_half_s128x64_y64x32.sched",
                       "schedule")
          ->text;
  const Program p = run_pipeline(test::graph_of(bf16), parse_schedule(test::source(sched, "a.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
  EXPECT_EQ(test::count(ptx, "mma.sync.m16n8k16, 1 steps of 16, bf16 operands"), 2) << ptx;
  EXPECT_EQ(ptx.find("tf32"), std::string::npos) << ptx;
  // The weights are rounded by the packing's cvt.rn, not twice.
  EXPECT_EQ(ptx.find("ks_from_bf16(ks_to_bf16(exp("), std::string::npos) << ptx;
}

// Attention in two passes at bf16 (bench/mma/attention/attention_two_pass_half_b64x16.sched):
// two kernels, each computing its panels of the scores on 16-bit matrix tiles at every step
// of its loop over j; no buffer of scores; the weighted sum's second contraction on tiles
// too. Checked against the interpreter on the H200 (bench/results.md, "Attention in two
// passes"); here its structure, and on PoCL the emulated tiles (too slow for the suite).
// An attention example at bf16 under one of bench/mma/attention's schedules.
Program bf16_attention(const std::string &example, const std::string &schedule) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/" + example + ".ks";
  const std::string bf16 = frontend::with_dtype(read_source_file(path, "spec"), DType::BF16);
  const std::string sched =
      read_source_file(std::string(KS_SOURCE_DIR) + "/bench/mma/attention/" + schedule, "schedule")->text;
  return run_pipeline(test::graph_of(bf16), parse_schedule(test::source(sched, "a.sched")));
}

TEST(HalfTypes, AttentionInTwoPassesStoresNoScores) {
  const Program p = bf16_attention("attention", "attention_two_pass_half_b64x16.sched");
  ASSERT_EQ(p.kernels.size(), 2u);
  for (const TensorDecl &b : p.buffers) EXPECT_EQ(b.role == TensorRole::Temp, b.name == "row_max_lse") << b.name;
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
  EXPECT_EQ(test::count(ptx, "bf16 operands"), 3) << ptx;  // the scores twice, the weighted sum
  EXPECT_NE(ptx.find("cp.async"), std::string::npos);
  // q's fragments, the same at every step over j, are loaded once before that loop in
  // both kernels (the scores' A operand); k's and v's, copied at each step, are not.
  EXPECT_EQ(test::count(ptx, "uint ks_a_ki1_[32];  // A's fragments of ki1, the same at every ko"), 2) << ptx;
  EXPECT_EQ(test::count(ptx, "&q_s2["), 4) << ptx;  // y's four loads a step, once
  EXPECT_EQ(test::count(ptx, "&q_s3["), 4) << ptx;
  EXPECT_EQ(ptx.find("ks_b_"), std::string::npos) << ptx;
  EXPECT_LT(ptx.find("ks_a_ki1_[ks_step_ * 8 + 7] = ks_a[7];"), ptx.find("for (int ko = 0;")) << ptx;
  // Not on the emulated tiles (each lane reads its operands where the layout puts them).
  const std::string emulated = generate_opencl_c(p, AsyncCopies::InOrder, "", MatrixUnits::Emulated).source;
  EXPECT_EQ(emulated.find("the same at every"), std::string::npos) << emulated;
}

// A GEMM's panels are copied at every step of its loop over k: nothing is hoisted.
TEST(HalfTypes, PanelsWrittenInTheLoopAreNotHoisted) {
  const Program p = run_pipeline(test::graph_of(half_spec(kHalfGemm, "bf16")),
                                 parse_schedule(test::source(half_gemm_ring(), "ring.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("the same at every"), std::string::npos) << ptx;
}

// Causal attention the same way (bench/mma/attention/attention_causal_two_pass_half_b64x16.sched):
// the panels of scores above the diagonal not computed in either kernel, nor summed in
// the weighted sum (skip-masked-steps), the conditions around the warps' instructions
// the whole group's (the matrix tile allows them).
TEST(HalfTypes, CausalAttentionInTwoPassesSkipsThePanelsAboveTheDiagonal) {
  const Program p = bf16_attention("attention_causal", "attention_causal_two_pass_half_b64x16.sched");
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
  EXPECT_EQ(test::count(ptx, "bf16 operands"), 3) << ptx;
  EXPECT_EQ(test::count(ptx, "if ((long)io * 64L + (long)ko * -16L + 63L >= 0L) {"), 2) << ptx;
  EXPECT_EQ(test::count(ptx, "if (ko == 0 || (long)io * 64L + (long)ko * -16L + 63L >= 0L) {"), 1) << ptx;
}

// conv_transpose3d_batch_norm_pool's transposed convolution at bf16
// (bench/mma/conv/conv_transpose3d_batch_norm_pool_128x4x40_w64x40_c16_half.sched): the
// weight's panel w[c, o] runs along o, so each of a warp's four m tiles loads A by one
// ldmatrix.x4.trans; x's panel, read at columns ow - kw, comes two bytes a load. Checked
// against the interpreter on the H200 (bench/results.md, "A transposed convolution on
// the matrix units"); the emulated tiles take a minute on PoCL, too slow for the suite.
TEST(HalfTypes, ATransposedConvolutionsWeightsComeByLdmatrix) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/conv_transpose3d_batch_norm_pool.ks";
  const std::string bf16 = frontend::with_dtype(read_source_file(path, "spec"), DType::BF16);
  const std::string sched =
      read_source_file(std::string(KS_SOURCE_DIR) +
                           "/bench/mma/conv/conv_transpose3d_batch_norm_pool_128x4x40_w64x40_c16_half.sched",
                       "schedule")
          ->text;
  frontend::SizeOverrides timed;  // (at the spec's own sizes the panels hold 4 of o)
  frontend::parse_size_assignments(
      "batch_size=16,in_channels=64,out_channels=128,depth=16,height=32,width=32,kernel_size=5", &timed);
  const Graph g = frontend::elaborate(frontend::parse_spec(test::source(bf16)), frontend::SizeSet::Default, timed);
  const Program p = run_pipeline(g, parse_schedule(test::source(sched, "c.sched")));
  const std::string ptx = generate_opencl_c(p, AsyncCopies::Ptx, "", MatrixUnits::Ptx).source;
  EXPECT_EQ(test::count(ptx, "= ks_ldmatrix_x4_trans(&w_s["), 4) << ptx;
  EXPECT_EQ(test::count(ptx, "ks_ldmatrix_x2_trans"), 0) << ptx;
  EXPECT_NE(ptx.find("4 x 5 mma.sync.m16n8k16, 1 steps of 16, bf16 operands"), std::string::npos) << ptx;
}

// The reference at the timed sizes keeps 16-bit temporaries in f32, as the interpreter
// keeps them exact; the outputs keep their type.
TEST(HalfTypes, TheTimedReferenceKeepsSixteenBitTemporariesExact) {
  const Program p = reference_program(test::graph_of(half_spec(kHalfMatmul, "bf16")));
  std::map<std::string, DType> types;
  for (const TensorDecl &b : p.buffers) types[b.name] = b.type;
  EXPECT_EQ(types.at("p"), DType::F32) << "bf16 x f32: f32 as declared";
  EXPECT_EQ(types.at("c"), DType::BF16);
  const Program q = reference_program(test::graph_of(half_spec(kHalfSoftmax, "bf16")));
  for (const TensorDecl &b : q.buffers)
    EXPECT_EQ(b.type, b.role == TensorRole::Temp ? DType::F32 : DType::BF16) << b.name;
}

// A rewrite that never stores a 16-bit temporary (push_sum: gemm_divide_sum's row sums of
// a GEMM as a GEMV of the weight's column sums) is held to the oracle at the timed sizes.
// When the reference stored the GEMM in bf16, its own rounding put it several of the
// rewritten graph's (smaller) bounds away, and the correct candidate was failed.
TEST_P(HalfOnDevice, ARewriteThatDropsASixteenBitTemporaryPassesAtTheTimedSizes) {
  const std::string path = std::string(KS_SOURCE_DIR) + "/examples/gemm_divide_sum.ks";
  EvalOptions options;
  options.trials = 1;
  options.timing.batches = 1;
  options.timing.min_batch_ms = 0.1;
  options.seed = 1;  // the same inputs every run
  options.schedule = parse_schedule(test::source("rewrite push_sum total\n", "p.sched"));
  frontend::parse_size_assignments("batch_size=64,input_size=2048,hidden_size=2048", &options.sizes);
  const EvalRecord r = evaluate(frontend::load_spec(path, DType::BF16), path, *device, options);
  EXPECT_TRUE(r.ok()) << api << r.to_json().dump(2);
}

// A Vulkan device without 16-bit storage buffers (or without 16-bit integers, which a
// local copy of a 16-bit tensor takes) refuses such kernels by the feature's name, a
// failed record and no crash: lavapipe made to lack each (KSMITH_VULKAN_WITHOUT).
TEST(HalfOnVulkan, ADeviceWithoutTheFeaturesRefusesByName) {
  if (!test::has_device("vulkan")) GTEST_SKIP() << test::missing_device("vulkan");
  const std::vector<std::tuple<const char *, const char *, std::string>> cases = {
      {"storageBuffer16BitAccess", kHalfSoftmax, ""}, {"shaderInt16", kHalfMatmul, kHalfTiledMatmul}};
  for (const auto &[feature, spec, schedule] : cases) {
    setenv("KSMITH_VULKAN_WITHOUT", feature, 1);
    std::unique_ptr<runtime::Device> device = runtime::open_device("", "vulkan");
    unsetenv("KSMITH_VULKAN_WITHOUT");
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    if (!schedule.empty()) options.schedule = parse_schedule(test::source(schedule, "half.sched"));
    const EvalRecord r =
        evaluate(frontend::parse_spec(test::source(half_spec(spec, "bf16"), "half.ks")), "half.ks", *device, options);
    const std::string record = r.to_json().dump();
    EXPECT_FALSE(r.ok()) << record;
    EXPECT_NE(record.find(std::string("needs the Vulkan feature ") + feature), std::string::npos) << record;
  }
}

// On Vulkan, an f16 tile as cooperative matrices (GL_NV_cooperative_matrix): each m
// tile's 16 x 16 block of A and n tile's 16 x 8 of B loaded whole from the local panels
// at their strides, one multiply-add a pair, the sums run across ko and passed to the
// lanes through the warp's 16 x 8 matrix of local memory. The shader compiles to valid
// SPIR-V (compile_glsl_to_spirv runs the validator). Operands cooperative matrices do
// not take are refused with the reason.
TEST(HalfTypes, CooperativeMatricesLoadF16BlocksWhole) {
  auto program = [](const std::string &spec, const std::string &schedule) {
    return run_pipeline(test::graph_of(spec), parse_schedule(test::source(schedule, "mma.sched")));
  };
  auto glsl = [](const Program &p) { return generate_glsl(p, true, AsyncCopies::Refused, MatrixUnits::Cooperative); };
  const GeneratedProgram code = glsl(program(half_spec(kHalfGemm, "f16"), kHalfGemmTile));
  ASSERT_EQ(code.kernels.size(), 1u);
  const std::string &s = code.kernels[0].source;
  EXPECT_FALSE(compile_glsl_to_spirv(s, "mm").empty());
  EXPECT_NE(s.find("#extension GL_NV_cooperative_matrix : require"), std::string::npos) << s;
  // 32 x 32 blocks of 4 warps of 16 x 16: one m tile, two n tiles; K = 48 is 3 panels.
  EXPECT_NE(s.find("ki's instructions accumulate over 3 iterations of ko"), std::string::npos) << s;
  EXPECT_NE(s.find("fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> ks_c[2];"), std::string::npos) << s;
  EXPECT_NE(s.find("coopMatLoadNV(ks_ca[0], a_s, uint("), std::string::npos) << s;
  EXPECT_NE(s.find("), 16u, false);"), std::string::npos) << s;  // A's rows of 16 k
  EXPECT_NE(s.find("), 32u, false);"), std::string::npos) << s;  // B's rows of 32 columns
  EXPECT_NE(s.find("ks_c[1] = coopMatMulAddNV(ks_ca[0], ks_cb[1], ks_c[1]);"), std::string::npos) << s;
  EXPECT_EQ(s.find("ks_c[2] = coopMatMulAddNV"), std::string::npos) << s;
  EXPECT_NE(s.find("if (ko == 2) {"), std::string::npos) << s;
  EXPECT_NE(s.find("coopMatStoreNV(ks_c[1], ks_scratch, uint(ks_warp), 8u, false);"), std::string::npos) << s;
  EXPECT_NE(s.find("shared float ks_scratch[512];"), std::string::npos) << s;  // 4 warps
  EXPECT_NE(s.find("ks_scratch[ks_at + 65]"), std::string::npos) << s;         // row g + 8, column 2t + 1

  const std::string where = "error: the schedule's tensorize of loop ki as cooperative matrices: ";
  EXPECT_EQ(test::user_error([&] { glsl(program(half_spec(kHalfGemm, "bf16"), kHalfGemmTile)); }),
            where +
                "their operands must be f16, these are bf16; VK_NV_cooperative_matrix, which Debian 12's "
                "glslang writes, has no bf16 or TF32 types");
  EXPECT_NE(test::user_error([&] {
              glsl(program(half_spec(kHalfGemm, "f32"), kHalfGemmTile));
            }).find("these are f32 (3xTF32 needs mma.sync"),
            std::string::npos);
  // A's rows padded to 20 elements: 40 bytes apart, not the 16-byte multiple Vulkan asks.
  EXPECT_NE(test::user_error([&] {
              glsl(program(half_spec(kHalfGemm, "f16"), std::string(kHalfGemmTile) + "pad c.a_s 4\n"));
            }).find(where + "A's 16 x 16 blocks must start at a multiple of 8 elements"),
            std::string::npos);
  // K = 40: the last panel's step past K (its points' guards) runs lane by lane, as the
  // emulated form; the other steps as blocks.
  std::string ragged = half_spec(kHalfGemm, "f16");
  ragged.replace(ragged.find("K = 48"), 6, "K = 40");
  const GeneratedProgram edge = glsl(program(ragged, kHalfGemmTile));
  const std::string &e = edge.kernels[0].source;
  EXPECT_FALSE(compile_glsl_to_spirv(e, "mm").empty());
  EXPECT_NE(e.find("} else {  // the reduction's edge"), std::string::npos) << e;
  EXPECT_LT(e.find("coopMatMulAddNV"), e.find("// the reduction's edge")) << e;
  // One nest whose loops number the tiles too (GLSL names them apart): written a nest a
  // pair of tiles, NVIDIA's Vulkan driver took 38 s to build a 64 x 64 warp tile's.
  EXPECT_NE(e.find("ks_d[(ks_ti_ * 2 + ks_tj_) * 4 + ks_r_] += a * b;"), std::string::npos) << e;
  // Its loops stay loops: unrolled, 4 x 16 points a tile pair took glslang and the SPIR-V
  // optimiser up to 55 s for a 64 x 64 warp tile.
  const size_t k_loop = e.find("for (int ks_k_ = 0");
  ASSERT_NE(k_loop, std::string::npos) << e;
  const size_t line_before = e.rfind('\n', e.rfind('\n', k_loop) - 1);
  EXPECT_EQ(e.substr(line_before, k_loop - line_before).find("[[unroll]]"), std::string::npos) << e;
  // OpenCL C has no cooperative matrices: refused as a target without matrix units.
  EXPECT_NE(test::user_error([&] {
              generate_opencl_c(program(half_spec(kHalfGemm, "f16"), kHalfGemmTile), AsyncCopies::Refused,
                                "opencl:0 does not offer", MatrixUnits::Cooperative);
            }).find("the schedule's tensorize needs matrix units"),
            std::string::npos);
}

// The warps' 16 x 8 f32 matrices of local memory count against the device's local memory.
TEST(HalfTypes, CooperativeMatricesLocalMemoryIsCounted) {
  const Program p = run_pipeline(test::graph_of(half_spec(kHalfGemm, "f16")),
                                 parse_schedule(test::source(kHalfGemmTile, "mma.sched")));
  runtime::DeviceInfo device;
  device.api = "vulkan";
  device.name = "a Vulkan GPU";
  device.max_work_group_size = 1024;
  device.max_work_item_sizes = {1024, 1024, 64};
  const int64_t panels = local_memory_bytes(p.kernels[0]);
  device.local_memory_bytes = static_cast<uint64_t>(panels);
  check_device_limits(p, device);  // no matrix units: the panels alone
  device.matrix_units = true;
  EXPECT_EQ(test::user_error([&] { check_device_limits(p, device); }),
            "error: kernel 'c' needs " + std::to_string(panels + 4 * 512) +
                " bytes of local memory per group; a Vulkan GPU has " + std::to_string(panels));
}

// The same tile on a Vulkan device with cooperative matrices (NVIDIA's), against the
// interpreter at f16, K a multiple of the panels and not.
TEST(HalfOnVulkan, CooperativeMatricesAgreeWithTheInterpreter) {
  if (!test::has_device("vulkan")) GTEST_SKIP() << test::missing_device("vulkan");
  std::unique_ptr<runtime::Device> device = runtime::open_device("", "vulkan");
  if (!device->info().matrix_units)
    GTEST_SKIP() << device->info().name << " has no cooperative matrices (VK_NV_cooperative_matrix, f16 16 x 8 x 16)";
  for (const char *sizes : {"M=32,N=32,K=48", "M=37,N=29,K=40"}) {  // (K = 40: the edge's step)
    EvalOptions options;
    options.time = false;
    options.trials = 2;
    options.schedule = parse_schedule(test::source(kHalfGemmTile, "mma.sched"));
    frontend::parse_size_assignments(sizes, &options.check_sizes);
    const EvalRecord r =
        evaluate(frontend::parse_spec(test::source(half_spec(kHalfGemm, "f16"), "mm.ks")), "mm.ks", *device, options);
    EXPECT_TRUE(r.ok()) << sizes << r.to_json().dump(2);
  }
}

INSTANTIATE_TEST_SUITE_P(Apis, HalfOnDevice, testing::Values("opencl", "vulkan"),
                         [](const testing::TestParamInfo<std::string> &info) { return info.param; });

TEST(HalfTypes, WhatIsNotGeneratedYetIsRefusedWithItsReason) {
  // Registers and local memory hold f32.
  EXPECT_NE(test::user_error([] {
              parse_program(
                  test::source("program p\ninput x: f16[4]\noutput y: f16[4]\n\nkernel y {\n  block y "
                               "reads(x[0 +: 4]) writes(y[0 +: 4]) {\n    allocate t: f16[4] private\n"
                               "    y[0] = x[0]\n  }\n}\n",
                               "p.loops"));
            }).find("an allocation of f16"),
            std::string::npos);
}

}  // namespace
}  // namespace ks
