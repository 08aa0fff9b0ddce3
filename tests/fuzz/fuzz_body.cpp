// Kernel bodies (`ksmith run SPEC --kernel FILE`, a model's <kernel>): the launch
// plan comment parsed, then resolved against a spec's Graph IR at its sizes (the
// kernels' geometry and arguments). The OpenCL C itself is Clang's to parse
// (frontend/body_check.cpp), and LLVM fuzzes Clang.
#include "frontend/elaborate.h"
#include "frontend/kernel_body.h"
#include "frontend/parser.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

namespace {

const Graph &row_sum() {
  static const Graph graph = fuzz::elaborated(R"(
kernel row_sum(x: f32[M, N]) -> y: f32[M]
  where M = 64, N = 1000
{
  y[m] = sum(n) x[m, n]
})");
  return graph;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = fuzz::source(data, size, "fuzz.cl");
  std::optional<frontend::KernelBody> body;
  fuzz::guarded(file->name, true, [&] { body = frontend::parse_kernel_body(file); });
  if (!body || !body->plan) return 0;
  fuzz::guarded(file->name, true, [&] { frontend::resolve_plan(*body->plan, row_sum()); });
  return 0;
}
