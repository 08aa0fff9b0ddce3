// split: one loop becomes two.
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> split(const Program &program, const std::string &stage, const std::string &loop, int64_t factor,
                             const std::string &outer, const std::string &inner, std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  if (f->kind != ForKind::Serial) {
    *reason = "loop " + loop + " is " + for_kind_name(f->kind) + "; split loops before binding or unrolling them";
    return std::nullopt;
  }
  if (factor < 1) {
    *reason = "the factor must be at least 1, not " + std::to_string(factor);
    return std::nullopt;
  }
  if (outer == inner) {
    *reason = "the two new loops need different names";
    return std::nullopt;
  }
  const Kernel &kernel = program.kernels[where.kernel];
  for (const std::string &name : {outer, inner})
    if (name != loop && !name_is_free(program, kernel, name, reason)) return std::nullopt;
  if (outer == loop || inner == loop) {
    *reason = "the new loops need names other than " + loop;
    return std::nullopt;
  }

  const int64_t extent = f->extent;
  const int64_t outer_extent = (extent + factor - 1) / factor;
  const DType type = index_type_for(extent);
  const DType wide = index_type_for(outer_extent * factor);
  Program out = replace_loop(program, where.kernel, loop, [&](const For *n) {
    Expr o = Var::make(index_type_for(outer_extent), outer), i = Var::make(index_type_for(factor), inner);
    Expr value = outer_extent == 1 ? i : factor == 1 ? o : cast_to(wide, o) * make_int(factor, wide) + cast_to(wide, i);
    Stmt body = n->body;
    if (outer_extent * factor != extent) body = IfThenElse::make(Var::make(type, loop) < make_int(extent, type), body);
    body = LetStmt::make(loop, cast_to(type, value), body);
    return For::make(outer, outer_extent, ForKind::Serial, For::make(inner, factor, ForKind::Serial, body));
  });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

void draw_split(StepDraw &d) {
  if (d.all.empty()) return;
  const For *f = pick(d.all, d.rng);
  d.p.loops = {f->var};
  d.p.factors = {
      std::uniform_int_distribution<int64_t>(1, std::max<int64_t>(1, std::min<int64_t>(f->extent + 3, 40)))(d.rng)};
  d.p.results = {d.fresh_name(), d.fresh_name()};
  d.next = split(d.program, d.p.stage, f->var, d.p.factors[0], d.p.results[0], d.p.results[1], &d.reason);
}

}  // namespace

const PrimitiveInfo split_primitive = {{{ArgKind::StageLoop},
                                        {ArgKind::Factor},
                                        {ArgKind::Arrow, "before the names of the new loops"},
                                        {ArgKind::Result, "the outer loop's name"},
                                        {ArgKind::Result, "the inner loop's name"}},
                                       "split y.m 64 -> mo mi",
                                       "loop m: mo outside mi (64 iterations), guarded where 64 does not divide m",
                                       [](const Program &program, const Primitive &p, std::string *reason) {
                                         return split(program, p.stage, p.loops[0], p.factors[0], p.results[0],
                                                      p.results[1], reason);
                                       },
                                       draw_split,
                                       2};

}  // namespace ks
