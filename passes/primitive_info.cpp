// The registry's table, from primitives.def, and what the drawers share.
#include "passes/primitive_info.h"

#include "passes/primitives.h"

namespace ks {

const PrimitiveInfo &primitive_info(PrimitiveKind kind) {
  switch (kind) {
// clang-format off
#define PRIMITIVE(Kind, name) case PrimitiveKind::Kind: return name##_primitive;
#include "passes/primitives.def"
    // clang-format on
  }
  throw std::logic_error("primitive_info: a kind outside primitives.def");
}

const std::vector<PrimitiveKind> &all_primitive_kinds() {
  static const std::vector<PrimitiveKind> kinds = {
#define PRIMITIVE(Kind, name) PrimitiveKind::Kind,
#include "passes/primitives.def"
  };
  return kinds;
}

std::optional<PrimitiveKind> parse_primitive_kind(const std::string &name) {
  for (PrimitiveKind k : all_primitive_kinds())
    if (name == primitive_name(k)) return k;
  return std::nullopt;
}

StepDraw::StepDraw(const Program &program, Rng &rng, int64_t max_group, int64_t max_copies,
                   const std::vector<std::string> &stages, const StageLoops &loops, PrimitiveKind kind,
                   const std::string &stage)
    : program(program),
      rng(rng),
      max_group(max_group),
      max_copies(max_copies),
      stages(stages),
      loops(loops),
      all(loops.outer),
      used_(program_names(program)) {
  all.insert(all.end(), loops.inner.begin(), loops.inner.end());
  p.kind = kind;
  p.stage = stage;
}

std::string StepDraw::fresh_name() {
  std::string n;
  do n = "t" + std::to_string(fresh_++);
  while (used_.contains(n));
  used_.reserve(n);
  return n;
}

bool StepDraw::group_too_large(const Program &candidate) const {
  return launch_shape(candidate.kernels[loops.kernel]).group_size() > max_group;
}

bool StepDraw::bind(Program *bound, const std::string &stage, const std::string &loop, ForKind kind,
                    std::vector<Primitive> *steps) const {
  std::string why;
  auto next = ks::bind(*bound, stage, loop, kind, &why);
  if (!next) return false;
  *bound = *next;
  Primitive b;
  b.kind = PrimitiveKind::Bind;
  b.stage = stage;
  b.loops = {loop};
  b.binding = kind;
  steps->push_back(b);
  return true;
}

bool StepDraw::bind_to_groups(size_t count, Program *bound, std::vector<Primitive> *steps) const {
  static const ForKind groups[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ};
  for (size_t i = 0; i < count; ++i)
    if (!bind(bound, p.stage, loops.outer[i]->var, groups[i], steps)) return false;
  return true;
}

bool StepDraw::draw_panel(size_t spread) {
  const std::vector<std::string> panels = local_panels(program.kernels[loops.kernel], spread);
  if (panels.empty()) return false;
  p.buffer = pick(panels, rng);
  return true;
}

}  // namespace ks
