// Schedules: the first byte picks one of a few specs (a contraction with an
// epilogue, a normalisation, a running total, a convolution: the stage and loop
// names of gemm_bias_leaky, softmax, cumsum and conv2d in examples/, so that their
// schedules are seeds, tests/fuzz/seeds.sh; and one made for the graph rewrites,
// their stage names gemm_divide_sum's); the rest is a
// schedule, parsed, printed and parsed back (the same text again), then replayed on
// the spec's Graph IR (each refusal a located error), verified, and emitted as OpenCL C.
#include "codegen/opencl_c.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "passes/pipeline.h"
#include "passes/schedule.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

namespace {

const char *const kSpecs[] = {
    R"(kernel gemm(x: f32[M, K], w: f32[N, K], b: f32[N]) -> y: f32[M, N]
  where M = 33, N = 17, K = 40
{
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  y[m, n] = relu(acc[m, n] + b[n])
})",
    R"(kernel softmax(x: f32[N, D]) -> y: f32[N, D]
  where N = 5, D = 37
{
  row_max[n] = max(d) x[n, d]
  e[n, d] = exp(x[n, d] - row_max[n])
  total[n] = sum(d) e[n, d]
  y[n, d] = e[n, d] / total[n]
})",
    R"(kernel cumsum(x: f32[B, N]) -> y: f32[B, N]
  where B = 3, N = 29
{
  y[b, i] = sum(k: 0..i + 1) x[b, k]
})",
    R"(kernel conv(x: f32[N, C, H, W], w: f32[O, C, KH, KW]) -> y: f32[N, O, H - KH + 1, W - KW + 1]
  where N = 2, C = 3, H = 9, W = 8, O = 4, KH = 3, KW = 3
{
  y[n, o, oh, ow] = sum(c, kh, kw) x[n, c, oh + kh, ow + kw] * w[o, c, kh, kw]
})",
    // What the graph rewrites look for: a sum over a GEMM's outputs with a bias, a
    // max over an axis of one, a masked running total, a copy and a constant.
    R"(kernel rewrites(x: f32[M, K], w: f32[N, K], b: f32[N]) -> (y: f32[M, 1], c: f32[M, K])
  where M = 5, N = 6, K = 7
{
  acc[m, n] = sum(k) x[m, k] * w[n, k]
  total[m, u: 1] = sum(n) (acc[m, n] + b[n]) / 2.0
  top[m] = max(u: 1) total[m, u]
  one[m: M] = exp(0.0)
  y[m, u] = total[m, u] - top[m] + total[m, u] * one[m] + total[m, u]
  c[m, i] = sum(k) select(k <= i, x[m, k], 0.0)
})",
};
constexpr size_t kSpecCount = sizeof(kSpecs) / sizeof(kSpecs[0]);

const Graph &graph_of(size_t which) {
  static std::vector<Graph> graphs = [] {
    std::vector<Graph> g;
    for (const char *text : kSpecs) g.push_back(fuzz::elaborated(text));
    return g;
  }();
  return graphs[which];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const Graph &graph = graph_of(data[0] % kSpecCount);
  auto file = fuzz::source(data + 1, size - 1, "fuzz.sched");
  std::optional<Schedule> schedule;
  fuzz::guarded(file->name, true, [&] { schedule = parse_schedule(file); });
  if (!schedule) return 0;
  fuzz::round_trip("schedule", print_schedule(*schedule), parse_schedule, print_schedule);
  std::optional<Program> program;
  fuzz::guarded(file->name, true, [&] { program = run_pipeline(graph, *schedule); });
  // As for a device with cp.async and matrix units, so that async_copy's and tensorize's
  // printing is fuzzed too (on any other their refusal is the answer, tested in
  // tests/unit); the spec byte's next bit picks the matrix loops' PTX or emulation.
  const MatrixUnits units = (data[0] / kSpecCount) % 2 ? MatrixUnits::Emulated : MatrixUnits::Ptx;
  if (program)
    fuzz::must("code generation failed on a replayed schedule",
               [&] { generate_opencl_c(*program, AsyncCopies::Ptx, "this target does not offer", units); });
  return 0;
}
