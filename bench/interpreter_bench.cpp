// Times the reference interpreter on a 256 x 256 x 256 matmul (the foundation issue
// asks for well under a second). A benchmark, not a test: it prints, never fails.
#include <chrono>
#include <cstdio>
#include <memory>

#include "evolve/evaluation/inputs.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"

int main() {
  using namespace ks;
  auto file = std::make_shared<SourceFile>(SourceFile{
      "matmul.ks",
      "kernel mm(a: f32[N, N], b: f32[N, N]) -> c: f32[N, N] where N = 256 { c[i, j] = sum(k) a[i, k] * b[k, j] }"});
  Graph g = frontend::elaborate(frontend::parse_spec(file), frontend::SizeSet::Default, {});
  TensorMap inputs;
  for (const TensorDecl &t : g.tensors)
    if (t.role == TensorRole::Input) inputs[t.name] = to_tensor_data(random_input(t, 1));
  double best = 1e9;
  for (int run = 0; run < 5; ++run) {
    auto start = std::chrono::steady_clock::now();
    TensorMap out = interpret(g, inputs);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds);
  }
  std::printf("interpreter: 256x256x256 matmul in %.3f s (best of 5), %.0f M multiply-adds/s\n", best,
              256.0 * 256 * 256 / best * 1e-6);
  return 0;
}
