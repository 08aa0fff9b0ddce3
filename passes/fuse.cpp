// fuse: directly nested loops become one.
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> fuse(const Program &program, const std::string &stage, const std::vector<std::string> &loops,
                            const std::string &fused, std::string *reason) {
  if (loops.empty()) {
    *reason = "no loops to fuse";
    return std::nullopt;
  }
  StageLoops where;
  const For *first = find_loop(program, stage, loops[0], &where, reason);
  if (!first) return std::nullopt;
  // The loops must be directly nested, in the order given.
  std::vector<const For *> chain = {first};
  for (size_t i = 1; i < loops.size(); ++i) {
    if (!where.find(loops[i])) {
      *reason = "no loop named " + loops[i] + " in stage " + stage + "; loops are " + where.names();
      return std::nullopt;
    }
    const For *next = chain.back()->body.as<For>();
    if (!next || next->var != loops[i]) {
      *reason = "loop " + loops[i] + " is not directly inside loop " + chain.back()->var +
                "; fuse takes directly nested loops, outermost first";
      return std::nullopt;
    }
    chain.push_back(next);
  }
  int64_t total = 1;
  for (const For *f : chain) {
    if (f->kind != ForKind::Serial) {
      *reason = "loop " + f->var + " is " + for_kind_name(f->kind) + "; fuse loops before binding or unrolling them";
      return std::nullopt;
    }
    if (__builtin_mul_overflow(total, f->extent, &total)) {
      *reason = "the fused extent overflows";
      return std::nullopt;
    }
  }
  const Kernel &kernel = program.kernels[where.kernel];
  bool renames_one = loops.size() == 1 && fused == loops[0];
  if (!renames_one && !name_is_free(program, kernel, fused, reason)) return std::nullopt;

  const DType type = index_type_for(total);
  Program out = replace_loop(program, where.kernel, loops[0], [&](const For *) {
    Stmt body = chain.back()->body;
    // Innermost variable fastest; the outermost needs no modulo.
    Expr flat = Var::make(type, fused);
    std::vector<Expr> values(chain.size());
    int64_t stride = 1;
    for (size_t d = chain.size(); d-- > 0;) {
      Expr value = flat;
      if (stride != 1) value = value / make_int(stride, type);
      if (d > 0 && chain[d]->extent != 1) value = value % make_int(chain[d]->extent, type);
      if (d > 0 && chain[d]->extent == 1) value = make_int(0, type);
      values[d] = cast_to(index_type_for(chain[d]->extent), value);
      stride *= chain[d]->extent;
    }
    for (size_t d = chain.size(); d-- > 0;)
      if (!(renames_one && d == 0)) body = LetStmt::make(chain[d]->var, values[d], body);
    return For::make(fused, total, ForKind::Serial, body);
  });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// A loop fused with the one directly inside it.
void draw_fuse(StepDraw &d) {
  if (d.all.empty()) return;
  const For *f = pick(d.all, d.rng);
  const For *inner = f->body.as<For>();
  if (!inner) return;
  d.p.loops = {f->var, inner->var};
  d.p.results = {d.fresh_name()};
  d.next = fuse(d.program, d.p.stage, d.p.loops, d.p.results[0], &d.reason);
}

}  // namespace

const PrimitiveInfo fuse_primitive = {{{ArgKind::Stage},
                                       {ArgKind::Loops, "its loops", 1},
                                       {ArgKind::Arrow, "before the fused loop's name"},
                                       {ArgKind::Result, "the fused loop's name"}},
                                      "fuse y m n -> mn",
                                      "directly nested loops m and n become one loop mn",
                                      [](const Program &program, const Primitive &p, std::string *reason) {
                                        return fuse(program, p.stage, p.loops, p.results[0], reason);
                                      },
                                      draw_fuse};

}  // namespace ks
