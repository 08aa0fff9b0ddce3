// pack_half_stores: a short loop of 16-bit stores as one vector store (pack_half_stores.h).
#include "passes/pack_half_stores.h"

#include <set>

#include "ir/types.h"
#include "ir/vector_form.h"
#include "ir/visitor.h"

namespace ks {
namespace {

class PackHalfStores : public IRMutator {
 public:
  explicit PackHalfStores(std::set<std::string> half_globals) : half_globals_(std::move(half_globals)) {}
  using IRMutator::visit;
  bool changed = false;

 protected:
  Stmt visit(const For *n, const Stmt &self) override {
    if (n->kind == ForKind::Matrix) return self;  // the tile's own nest, as tensorize checked it
    if (!candidate(*n)) return IRMutator::visit(n, self);
    std::string reason;
    if (!vector_form(*n, &reason)) return self;
    changed = true;
    return For::make(n->var, n->extent, ForKind::Vectorized, n->body);
  }

 private:
  bool candidate(const For &loop) const {
    if (loop.kind != ForKind::Serial && loop.kind != ForKind::Unrolled) return false;
    if (loop.extent != 2 && loop.extent != 4 && loop.extent != 8) return false;
    if (!collect<For>(loop.body).empty()) return false;  // innermost only
    const std::vector<const Store *> stores = collect<Store>(loop.body);
    if (stores.empty()) return false;
    for (const Store *s : stores)
      if (!half_globals_.count(s->buffer)) return false;
    return true;
  }
  const std::set<std::string> half_globals_;
};

}  // namespace

Program pack_half_stores(const Program &input) {
  std::set<std::string> half_globals;
  for (const TensorDecl &b : input.buffers)
    if (is_half(b.type)) half_globals.insert(b.name);
  if (half_globals.empty()) return input;
  Program program = input;
  for (Kernel &kernel : program.kernels) {
    PackHalfStores pack(half_globals);
    Stmt body = pack.mutate(kernel.body);
    if (pack.changed) kernel.body = body;
  }
  return program;
}

}  // namespace ks
