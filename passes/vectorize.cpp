// vectorize: a loop's iterations become the lanes of vector operations.
#include "ir/vector_form.h"
#include "passes/loops.h"
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

}  // namespace ks
