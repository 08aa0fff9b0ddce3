// inline: an elementwise temporary is recomputed where it is read.
//
// Algorithm:
//  1. The stage's block must be a single store `e[v0, ..] = body` with distinct
//     variables as indices (no reduction), and e a temporary.
//  2. In every other kernel, a read e[i0, ..] becomes body with vk := ik; a padded
//     read becomes select(every ik in range, body', pad), with body's own reads
//     padded so that the unselected branch never reads outside a buffer.
//  3. The stage's kernel and e's buffer are removed; blocks' read regions are
//     recomputed.
#include <map>

#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/regions.h"

namespace ks {

namespace {

struct Substitute : IRMutator {
  const std::map<std::string, Expr> &values;
  bool pad_loads;
  Substitute(const std::map<std::string, Expr> &values, bool pad_loads) : values(values), pad_loads(pad_loads) {}
  using IRMutator::visit;
  Expr visit(const Var *n, const Expr &self) override {
    auto it = values.find(n->name);
    return it == values.end() ? self : cast_to(n->type, it->second);
  }
  Expr visit(const Load *n, const Expr &self) override {
    Expr e = IRMutator::visit(n, self);
    const Load *load = e.as<Load>();
    if (pad_loads && !load->pad) return Load::make(load->type, load->buffer, load->indices, 0.0);
    return e;
  }
};

struct ReplaceReads : IRMutator {
  const std::string &tensor;
  const std::vector<int64_t> &shape;
  const std::vector<std::string> &vars;
  const Expr &body;
  ReplaceReads(const std::string &tensor, const std::vector<int64_t> &shape, const std::vector<std::string> &vars,
               const Expr &body)
      : tensor(tensor), shape(shape), vars(vars), body(body) {}
  using IRMutator::visit;
  Expr visit(const Load *n, const Expr &self) override {
    Expr e = IRMutator::visit(n, self);
    const Load *load = e.as<Load>();
    if (load->buffer != tensor) return e;
    std::map<std::string, Expr> values;
    for (size_t d = 0; d < vars.size(); ++d) values[vars[d]] = load->indices[d];
    Expr computed = Substitute(values, load->pad.has_value()).mutate(body);
    if (!load->pad) return computed;
    Expr inside;
    for (size_t d = 0; d < vars.size(); ++d) {
      const Expr &i = load->indices[d];
      Expr test = (i >= make_int(0, i.type())) && (i < make_int(shape[d], i.type()));
      inside = inside.defined() ? (inside && test) : test;
    }
    Expr pad =
        is_int(computed.type()) ? make_int(static_cast<int64_t>(*load->pad), computed.type()) : make_f32(*load->pad);
    return inside.defined() ? Select::make(inside, computed, pad) : computed;
  }
};

}  // namespace

std::optional<Program> inline_stage(const Program &program, const std::string &stage, std::string *reason) {
  auto where = stage_loops(program, stage, reason);
  if (!where) return std::nullopt;
  const TensorDecl *tensor = program.find_buffer(stage);
  if (!tensor || tensor->role != TensorRole::Temp) {
    *reason = stage + " is " + (tensor ? tensor_role_name(tensor->role) : std::string("not a buffer")) +
              "; only temporaries can be inlined";
    return std::nullopt;
  }
  std::vector<std::string> vars;
  const Store *store = elementwise_store(program, *where, stage, &vars, reason);
  if (!store) return std::nullopt;
  Program out;
  out.name = program.name;
  for (const TensorDecl &b : program.buffers)
    if (b.name != stage) out.buffers.push_back(b);
  ReplaceReads replace(stage, tensor->shape, vars, store->value);
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    if (k == where->kernel) continue;
    Kernel kernel = program.kernels[k];
    kernel.body = replace.mutate(kernel.body);
    out.kernels.push_back(kernel);
  }
  // Recompute the read regions of every block now that e is gone.
  struct Regions : IRMutator {
    const Program &program;
    explicit Regions(const Program &program) : program(program) {}
    using IRMutator::visit;
    Stmt visit(const Block *n, const Stmt &self) override {
      Stmt body = mutate(n->body);
      return Block::make(n->stage, read_regions(program, body), n->writes, body);
    }
  } regions(out);
  for (Kernel &k : out.kernels) k.body = regions.mutate(k.body);
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

void draw_inline(StepDraw &d) { d.next = inline_stage(d.program, d.p.stage, &d.reason); }

}  // namespace

const PrimitiveInfo inline_primitive = {{{ArgKind::Stage}},
                                        "inline e",
                                        "e computed where it is read",
                                        [](const Program &program, const Primitive &p, std::string *reason) {
                                          return inline_stage(program, p.stage, reason);
                                        },
                                        draw_inline};

}  // namespace ks
