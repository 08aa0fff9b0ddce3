// cache_write: a reduction's results for one iteration of a loop accumulate in
// private memory (registers), and its reduction loops move outside the spatial
// loops below that loop: register tiling.
//
// Algorithm, for `cache_write y.L private` where, below L, the spatial loops S
// (with their lets and guards) enclose the block
//   allocate acc: T[1] private { acc[0] = init; R; y[idx] = f(acc[0]) }
// and R is a chain of loops, lets and guards around `acc[0] = op(acc[0], value)`:
//  1. acc becomes T[extents of S], indexed by S's loop variables.
//  2. Initialisation: S's loops alone (renamed *_init) around `acc[s] = init`,
//     unrolled (as is step 4) where the tile has at most kMaxUnroll elements.
//  3. Update: R's loops around S (original names) around `acc[s] = op(acc[s],
//     value)`; R's lets and guards that use what S defines move inside S.
//  4. Write-back: a copy of S (renamed *_out) around `y[idx] = f(acc[s])`.
// Each element still combines its values in the same order, so the result is
// unchanged. The block now encloses all three, right inside L.
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"
#include "passes/regions.h"
#include "passes/softmax_sum.h"

namespace ks {

namespace {

// Replaces loads and stores of acc[0] by acc[index].
Stmt index_accumulator(const Stmt &s, const std::string &acc, const std::vector<Expr> &index) {
  struct Index : IRMutator {
    const std::string &acc;
    const std::vector<Expr> &index;
    Index(const std::string &acc, const std::vector<Expr> &index) : acc(acc), index(index) {}
    using IRMutator::visit;
    Expr visit(const Load *n, const Expr &self) override {
      return n->buffer == acc ? Load::make(n->type, acc, index) : IRMutator::visit(n, self);
    }
    Stmt visit(const Store *n, const Stmt &self) override {
      if (n->buffer != acc) return IRMutator::visit(n, self);
      return Store::make(acc, index, mutate(n->value));
    }
  } i(acc, index);
  return i.mutate(s);
}

// A softmax_sum's register tile (passes/softmax_sum.h): its row state per row of the
// tile (the loops the score depends on), its accumulator per element.
std::optional<Program> tile_softmax_sum(const Program &program, const StageLoops &where, const std::string &stage,
                                        const std::string &loop, const std::vector<Stmt> &spatial, SoftmaxSumForm form,
                                        const std::vector<Stmt> &reduction, const std::string &output,
                                        const std::vector<Expr> &output_index, std::string *reason) {
  std::set<std::string> tile_vars;
  for (const Stmt &layer : spatial) {
    if (const For *f = layer.as<For>()) tile_vars.insert(f->var);
    if (const LetStmt *l = layer.as<LetStmt>()) tile_vars.insert(l->var);
  }
  auto uses_tile = [&](const Stmt &layer) {
    if (const LetStmt *l = layer.as<LetStmt>()) return mentions(l->value, tile_vars);
    if (const IfThenElse *g = layer.as<IfThenElse>()) return mentions(g->condition, tile_vars);
    return false;
  };
  for (const std::vector<Stmt> *layers :
       std::initializer_list<const std::vector<Stmt> *>{&reduction, &form.score_layers})
    for (const Stmt &layer : *layers)
      if (uses_tile(layer)) {
        *reason = "a let or guard of " + stage + "'s reduction depends on its tile's loops";
        return std::nullopt;
      }
  // The loops the score depends on, through the tile's lets.
  std::set<std::string> needed = vars_in(form.term);
  for (const Stmt &layer : form.score_layers) {
    if (const LetStmt *l = layer.as<LetStmt>()) needed.merge(vars_in(l->value));
    if (const IfThenElse *g = layer.as<IfThenElse>()) needed.merge(vars_in(g->condition));
  }
  for (size_t i = spatial.size(); i-- > 0;)
    if (const LetStmt *l = spatial[i].as<LetStmt>(); l && needed.count(l->var)) needed.merge(vars_in(l->value));
  std::set<std::string> others;  // the tile's loops and lets the score does not need
  form.row_shape.clear();
  form.tile_shape.clear();
  for (const Stmt &layer : spatial) {
    bool row = true;
    if (const For *f = layer.as<For>()) {
      row = needed.count(f->var) > 0;
      form.tile_shape.push_back(f->extent);
      form.tile_index.push_back(f->loop_var());
      if (row)
        form.row_shape.push_back(f->extent), form.row_index.push_back(f->loop_var());
      else
        others.insert(f->var);
    } else if (const LetStmt *l = layer.as<LetStmt>()) {
      row = !mentions(l->value, others);
      if (!row) others.insert(l->var);
    } else if (const IfThenElse *g = layer.as<IfThenElse>()) {
      row = !mentions(g->condition, others);
    }
    (row ? form.row_layers : form.value_layers).push_back(layer);
  }
  if (form.row_shape.empty()) form.row_shape = {1};
  form.tile_layers = spatial;
  form.copies = shape_numel(form.tile_shape) <= kMaxUnroll ? ForKind::Unrolled : ForKind::Serial;
  NameSet names = kernel_names(program, program.kernels[where.kernel]);
  form.names = &names;
  Stmt body = softmax_sum_block(form, wrap(reduction, softmax_sum_step(form)), output, output_index);
  Stmt new_block = Block::make(stage, read_regions(program, body), write_regions(program, body), body);
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *f) { return For::make(f->var, f->extent, f->kind, new_block); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

}  // namespace

std::optional<Program> cache_write(const Program &program, const std::string &stage, const std::string &loop,
                                   MemoryScope scope, std::string *reason) {
  StageLoops where;
  const For *at = find_loop(program, stage, loop, &where, reason);
  if (!at) return std::nullopt;
  if (scope != MemoryScope::Private) {
    *reason = "only private accumulators are supported (the reduction loops would have to move outside local loops)";
    return std::nullopt;
  }
  if (where.is_inner(loop)) {
    *reason = "loop " + loop + " is a reduction loop of " + stage + "; cache_write needs a loop around its block";
    return std::nullopt;
  }
  std::vector<Stmt> spatial;
  const Block *block = peel(at->body, &spatial).as<Block>();
  if (!block || block->stage != stage) {
    *reason = "only loops, lets and guards may lie between loop " + loop + " and the block of " + stage;
    return std::nullopt;
  }
  std::vector<Expr> index;
  std::vector<int64_t> shape;
  std::set<std::string> spatial_names;
  for (const Stmt &layer : spatial) {
    if (const For *f = layer.as<For>()) {
      if (f->kind != ForKind::Serial && f->kind != ForKind::Unrolled) {
        *reason = "loop " + f->var + " below " + loop + " is " + for_kind_name(f->kind);
        return std::nullopt;
      }
      index.push_back(f->loop_var());
      shape.push_back(f->extent);
      spatial_names.insert(f->var);
    } else if (const LetStmt *l = layer.as<LetStmt>()) {
      spatial_names.insert(l->var);
    }
  }
  if (shape.empty()) {
    *reason = "no spatial loops of " + stage + " lie below loop " + loop + "; nothing to accumulate";
    return std::nullopt;
  }
  if (shape_numel(shape) > kMaxPrivateElements) {
    *reason = "the accumulators (" + std::to_string(shape_numel(shape)) + " per work-item) exceed " +
              std::to_string(kMaxPrivateElements);
    return std::nullopt;
  }
  {
    SoftmaxSumForm form;
    std::vector<Stmt> reduction;
    std::string output;
    std::vector<Expr> output_index;
    if (read_softmax_sum(block->body, &form, &reduction, &output, &output_index))
      return tile_softmax_sum(program, where, stage, loop, spatial, form, reduction, output, output_index, reason);
  }
  const Allocate *acc = block->body.as<Allocate>();
  const Seq *steps = acc ? acc->body.as<Seq>() : nullptr;
  std::vector<Stmt> reduction;
  Stmt update_stmt;
  if (steps && steps->stmts.size() == 3) update_stmt = peel(steps->stmts[1], &reduction);
  const Store *update = update_stmt.defined() ? update_stmt.as<Store>() : nullptr;
  if (!acc || acc->scope != MemoryScope::Private || !update || update->buffer != acc->buffer ||
      !steps->stmts[0].as<Store>() || !steps->stmts[2].as<Store>() || reduction.empty()) {
    *reason = stage + " is not a reduction into one private accumulator (or it is already cached)";
    return std::nullopt;
  }

  NameSet names = kernel_names(program, program.kernels[where.kernel]);
  std::map<std::string, std::string> init_names, out_names;
  for (const std::string &n : spatial_names) out_names[n] = names.fresh(n + "_out");
  // 2. Initialisation. It and the write-back are unrolled where the limit allows:
  // registers need constant indices.
  const ForKind copies = shape_numel(shape) <= kMaxUnroll ? ForKind::Unrolled : ForKind::Serial;
  std::vector<Stmt> init_loops, write_back_layers;
  for (const Stmt &layer : spatial) {
    const For *f = layer.as<For>();
    if (!f) {
      write_back_layers.push_back(layer);
      continue;
    }
    Stmt copy = For::make(f->var, f->extent, copies, f->body);
    init_loops.push_back(copy);
    write_back_layers.push_back(copy);
    init_names[f->var] = names.fresh(f->var + "_init");
  }
  Stmt init = rename(wrap(init_loops, index_accumulator(steps->stmts[0], acc->buffer, index)), init_names);
  // 3. Update: R's loops outside, S inside, then what of R depends on S.
  std::vector<Stmt> outer_layers, inner_layers = spatial;
  std::set<std::string> dependent = spatial_names;
  for (const Stmt &layer : reduction) {
    bool uses = false;
    if (const LetStmt *l = layer.as<LetStmt>()) {
      uses = mentions(l->value, dependent);
      if (uses) dependent.insert(l->var);
    } else if (const IfThenElse *g = layer.as<IfThenElse>()) {
      uses = mentions(g->condition, dependent);
    }
    (uses ? inner_layers : outer_layers).push_back(layer);
  }
  Stmt updated = wrap(outer_layers, wrap(inner_layers, index_accumulator(update_stmt, acc->buffer, index)));
  // 4. Write-back.
  Stmt write_back = rename(wrap(write_back_layers, index_accumulator(steps->stmts[2], acc->buffer, index)), out_names);

  Stmt body =
      Allocate::make(acc->buffer, acc->type, shape, MemoryScope::Private, Seq::make({init, updated, write_back}));
  Stmt new_block = Block::make(stage, read_regions(program, body), write_regions(program, body), body);
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *f) { return For::make(f->var, f->extent, f->kind, new_block); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// A tile of a reduction accumulated in registers.
void draw_cache_write(StepDraw &d) {
  if (d.loops.outer.empty()) return;
  d.p.loops = {pick(d.loops.outer, d.rng)->var};
  d.next = cache_write(d.program, d.p.stage, d.p.loops[0], d.p.memory, &d.reason);
}

}  // namespace

const PrimitiveInfo cache_write_primitive = {{{ArgKind::StageLoop}, {ArgKind::Memory}},
                                             "cache_write c.tx private",
                                             "c's accumulators for one iteration of tx in registers",
                                             [](const Program &program, const Primitive &p, std::string *reason) {
                                               return cache_write(program, p.stage, p.loops[0], p.memory, reason);
                                             },
                                             draw_cache_write};

}  // namespace ks
