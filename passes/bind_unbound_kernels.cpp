// Default binding: fuse, split and bind the outer loops of unbound kernels, with
// the schedule primitives themselves.
#include "passes/bind_unbound_kernels.h"

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitives.h"

namespace ks {

namespace {

Program must(std::optional<Program> program, const std::string &reason) {
  if (!program) throw InternalError("bind-unbound-kernels: " + reason);
  return *program;
}

}  // namespace

Program bind_unbound_kernels(const Program &input) {
  Program program = input;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const Kernel &kernel = program.kernels[k];
    if (has_bound_loop(kernel.body)) continue;
    NameSet names = kernel_names(program, kernel);
    const std::string g = names.fresh("g"), l = names.fresh("l");
    std::vector<std::string> loops;
    for (const For *f = kernel.body.as<For>(); f && f->kind == ForKind::Serial; f = f->body.as<For>())
      loops.push_back(f->var);
    if (loops.empty()) {
      program.kernels[k].body = For::make(g, 1, ForKind::GroupX, For::make(l, 1, ForKind::LocalX, kernel.body));
      continue;
    }
    const std::string stage = stage_names(kernel.body).front();
    const std::string flat = names.fresh("i");
    std::string reason;
    program = must(fuse(program, stage, loops, flat, &reason), reason);
    const int64_t extent = program.kernels[k].body.as<For>()->extent;
    program = must(split(program, stage, flat, std::min(extent, kDefaultGroupSize), g, l, &reason), reason);
    program = must(ks::bind(program, stage, g, ForKind::GroupX, &reason), reason);
    program = must(ks::bind(program, stage, l, ForKind::LocalX, &reason), reason);
  }
  return program;
}

}  // namespace ks
