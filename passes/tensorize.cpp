// tensorize: a loop nest of multiply-adds marked as a warp's matrix instructions.
// The nest stays as written (the interpreter and every check run it as loops); the
// form the code generator needs is ir/matrix_tile.h's, which the verifier holds
// every matrix loop to, so a later step that breaks the layout is refused there.
// The accumulators' edge guards are dropped first (unguard_accumulators), as the
// pipeline does at its end: the instruction computes the whole tile.
#include "ir/matrix_tile.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/unguard_accumulators.h"

namespace ks {

std::optional<Program> tensorize(const Program &program, const std::string &stage, const std::string &loop,
                                 std::string *reason) {
  StageLoops where;
  const For *l = find_loop(program, stage, loop, &where, reason);
  if (!l) return std::nullopt;
  if (std::string half = half_access_refusal(program, l->body, "matrix fragments"); !half.empty())
    return *reason = half, std::nullopt;
  if (l->kind != ForKind::Serial && l->kind != ForKind::Unrolled) {
    *reason = "loop " + loop + " is " + for_kind_name(l->kind) +
              "; tensorize takes a serial loop over a register tile's reduction (cache_write ... private first)";
    return std::nullopt;
  }
  // The tile's edge guards go first (the pipeline drops them at its end anyway): a
  // warp's instruction covers the whole tile.
  Program out = replace_loop(unguard_accumulators(program, /*pad_reads=*/true), where.kernel, loop,
                             [](const For *f) { return For::make(f->var, f->extent, ForKind::Matrix, f->body); });
  if (verified(out, reason)) return out;  // the verifier holds the matrix loop to its form
  // Where the form is what failed, its own reason rather than the verifier's word on it.
  StageLoops marked;
  if (const For *m = find_loop(out, stage, loop, &marked, reason))
    matrix_tile(out.kernels[marked.kernel].body, *m, reason);
  return std::nullopt;
}

namespace {

void draw_tensorize(StepDraw &d) {
  if (d.all.empty()) return;
  d.p.loops = {pick(d.all, d.rng)->var};
  d.next = tensorize(d.program, d.p.stage, d.p.loops[0], &d.reason);
}

}  // namespace

// Drawn only where asked for (draw_cases 0): it needs the instruction's layout,
// which the matrix sketch builds (evolve/search/sketch.cpp).
const PrimitiveInfo tensorize_primitive = {
    {{ArgKind::StageLoop}},
    "tensorize c.ki",
    "the multiply-adds inside ki run as a warp's matrix instructions (mma.sync m16n8k8)",
    [](const Program &program, const Primitive &p, std::string *reason) {
      return tensorize(program, p.stage, p.loops[0], reason);
    },
    draw_tensorize,
    0};

}  // namespace ks
