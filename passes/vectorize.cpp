// vectorize: a loop's iterations become the lanes of vector operations.
#include "ir/vector_form.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

std::optional<Program> vectorize(const Program &program, const std::string &stage, const std::string &loop,
                                 std::string *reason) {
  StageLoops where;
  const For *f = find_loop(program, stage, loop, &where, reason);
  if (!f) return std::nullopt;
  // An unrolled loop may be vectorized instead (cache_write unrolls its copy loops).
  if (f->kind != ForKind::Serial && f->kind != ForKind::Unrolled) {
    *reason = "loop " + loop + " is already " + for_kind_name(f->kind);
    return std::nullopt;
  }
  // A reduction loop fails the vector form: its store is the same element in every lane.
  if (!vector_form(*f, reason)) return std::nullopt;
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *n) { return For::make(n->var, n->extent, ForKind::Vectorized, n->body); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// A loop of a vector width vectorised, or the innermost spatial loop split into one first.
void draw_vectorize(StepDraw &d) {
  std::vector<const For *> widths;
  for (const For *f : d.all)
    if (is_vector_width(f->extent)) widths.push_back(f);
  Program base = d.program;
  std::optional<Primitive> split_step;
  if (!widths.empty() && std::uniform_int_distribution<int>(0, 1)(d.rng)) {
    d.p.loops = {pick(widths, d.rng)->var};
  } else if (!d.loops.outer.empty()) {
    Primitive sp;
    sp.kind = PrimitiveKind::Split;
    sp.stage = d.p.stage;
    sp.loops = {d.loops.outer.back()->var};
    sp.factors = {int64_t{2} << std::uniform_int_distribution<int>(0, 2)(d.rng)};
    sp.results = {d.fresh_name(), d.fresh_name()};
    auto split_program =
        split(d.program, d.p.stage, sp.loops[0], sp.factors[0], sp.results[0], sp.results[1], &d.reason);
    if (!split_program) return;
    base = *split_program;
    split_step = sp;
    d.p.loops = {sp.results[1]};
  } else {
    return;
  }
  d.next = vectorize(base, d.p.stage, d.p.loops[0], &d.reason);
  if (d.next && split_step) d.before = {*split_step};
}

}  // namespace

const PrimitiveInfo vectorize_primitive = {{{ArgKind::StageLoop}},
                                           "vectorize y.v",
                                           "loop v's 2, 4, 8 or 16 iterations as the lanes of vector operations",
                                           [](const Program &program, const Primitive &p, std::string *reason) {
                                             return vectorize(program, p.stage, p.loops[0], reason);
                                           },
                                           draw_vectorize};

}  // namespace ks
