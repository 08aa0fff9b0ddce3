// The loop form of a softmax_sum: see softmax_sum.h.
#include "passes/softmax_sum.h"

#include <limits>

#include "passes/loops.h"

namespace ks {

namespace {

std::vector<Expr> index_or_zero(const std::vector<Expr> &index) {
  return index.empty() ? std::vector<Expr>{make_int(0)} : index;
}
Expr row_load(const SoftmaxSumForm &f, const std::string &buffer, DType type) {
  return Load::make(type, buffer, index_or_zero(f.row_index));
}
Stmt row_store(const SoftmaxSumForm &f, const std::string &buffer, Expr value) {
  return Store::make(buffer, index_or_zero(f.row_index), value);
}
Expr acc_load(const SoftmaxSumForm &f) { return Load::make(f.acc_type, f.acc, index_or_zero(f.tile_index)); }
Stmt acc_store(const SoftmaxSumForm &f, Expr value) {
  return Store::make(f.acc, index_or_zero(f.tile_index), value);
}

// The loops' and lets' names in layers, and uses of them in body, made fresh: a kernel
// names each loop once, and the tile's loops appear in several nests.
// (fresh names, the loops of kind `copies`)
Stmt fresh_nest(const SoftmaxSumForm &f, const std::vector<Stmt> &layers, Stmt body, const std::string &suffix) {
  std::map<std::string, std::string> renames;
  std::vector<Stmt> copied;
  for (const Stmt &layer : layers) {
    if (const For *loop = layer.as<For>()) {
      renames[loop->var] = f.names->fresh(loop->var + suffix);
      copied.push_back(For::make(loop->var, loop->extent, f.copies, loop->body));
      continue;
    }
    if (const LetStmt *l = layer.as<LetStmt>()) renames[l->var] = f.names->fresh(l->var + suffix);
    copied.push_back(layer);
  }
  return rename(wrap(copied, body), renames);
}

}  // namespace

Stmt softmax_sum_block(const SoftmaxSumForm &f, Stmt reduction, const std::string &output,
                       const std::vector<Expr> &output_index) {
  const Expr lowest = make_f32(-std::numeric_limits<float>::max());
  Stmt init_rows = Seq::make({row_store(f, f.maximum, cast_to(f.value_type, lowest)),
                              row_store(f, f.total, cast_to(f.acc_type, make_f32(0)))});
  Stmt init_tile = acc_store(f, cast_to(f.acc_type, make_f32(0)));
  Stmt out = Store::make(output, output_index, cast_to(f.value_type, acc_load(f) / row_load(f, f.total, f.acc_type)));
  if (!f.tile_layers.empty()) {
    init_rows = fresh_nest(f, f.row_layers, init_rows, "_init");
    init_tile = fresh_nest(f, f.tile_layers, init_tile, "_init");
    out = fresh_nest(f, f.tile_layers, out, "_out");
  }
  return Allocate::make(
      f.maximum, f.value_type, f.row_shape, MemoryScope::Private,
      Allocate::make(f.total, f.acc_type, f.row_shape, MemoryScope::Private,
                     Allocate::make(f.acc, f.acc_type, f.tile_shape, MemoryScope::Private,
                                    Seq::make({init_rows, init_tile, reduction, out}))));
}

Stmt softmax_sum_step(const SoftmaxSumForm &f) {
  const Expr score = row_load(f, f.score, f.acc_type);
  const Expr maximum = row_load(f, f.maximum, f.value_type);
  const Expr total = row_load(f, f.total, f.acc_type);
  const Expr x = Var::make(f.value_type, f.x);
  const Expr c = Var::make(f.value_type, f.rescale);
  const bool tiled = !f.tile_layers.empty();
  // The score's sum: its loops outside the rows (a load of the summand's operands
  // serves every row of the tile), as cache_write orders a reduction.
  Stmt zero = row_store(f, f.score, cast_to(f.acc_type, make_f32(0)));
  Stmt sum = wrap(f.score_layers, tiled ? fresh_nest(f, f.row_layers, row_store(f, f.score, score + f.term), "_s")
                                        : row_store(f, f.score, score + f.term));
  if (tiled) zero = fresh_nest(f, f.row_layers, zero, "_z");
  // A larger score rescales what was summed; then its weight joins the sum.
  Stmt rescale_acc = acc_store(f, acc_load(f) * cast_to(f.acc_type, c));
  if (tiled) rescale_acc = fresh_nest(f, f.value_layers, rescale_acc, "_r");
  Stmt grow = IfThenElse::make(
      Binary::make(BinaryOp::Gt, x, maximum),
      LetStmt::make(f.rescale, Call::make(Builtin::Exp, {maximum - x}),
                    Seq::make({row_store(f, f.total, total * cast_to(f.acc_type, c)), rescale_acc,
                               row_store(f, f.maximum, x)})));
  Stmt statistics = LetStmt::make(
      f.x, cast_to(f.value_type, f.scale.defined() ? score * f.scale : score),
      Seq::make({grow, row_store(f, f.weight, Call::make(Builtin::Exp, {x - maximum})),
                 row_store(f, f.total, total + cast_to(f.acc_type, row_load(f, f.weight, f.value_type)))}));
  if (tiled) statistics = fresh_nest(f, f.row_layers, statistics, "_x");
  Stmt accumulate = wrap(tiled ? f.tile_layers : std::vector<Stmt>{},
                         acc_store(f, acc_load(f) + cast_to(f.acc_type, row_load(f, f.weight, f.value_type)) *
                                                        cast_to(f.acc_type, f.value)));
  return Allocate::make(
      f.score, f.acc_type, f.row_shape, MemoryScope::Private,
      Allocate::make(f.weight, f.value_type, f.row_shape, MemoryScope::Private,
                     Seq::make({zero, sum, statistics, accumulate})));
}

bool read_softmax_sum(const Stmt &block_body, SoftmaxSumForm *f, std::vector<Stmt> *reduction_layers,
                      std::string *output, std::vector<Expr> *output_index) {
  const Allocate *m = block_body.as<Allocate>();
  const Allocate *t = m ? m->body.as<Allocate>() : nullptr;
  const Allocate *a = t ? t->body.as<Allocate>() : nullptr;
  const Seq *parts = a ? a->body.as<Seq>() : nullptr;
  // (the initial values of M, S and A, the reduction, the result)
  if (!parts || parts->stmts.size() != 5 || m->shape != std::vector<int64_t>{1} ||
      a->shape != std::vector<int64_t>{1})
    return false;
  const Store *out = parts->stmts[4].as<Store>();
  if (!out) return false;
  const Allocate *s = peel(parts->stmts[3], reduction_layers).as<Allocate>();
  const Allocate *w = s ? s->body.as<Allocate>() : nullptr;
  const Seq *step = w ? w->body.as<Seq>() : nullptr;
  if (reduction_layers->empty() || !step || step->stmts.size() != 4) return false;
  std::vector<Stmt> score_layers;
  const Store *sum = peel(step->stmts[1], &score_layers).as<Store>();
  const LetStmt *x = step->stmts[2].as<LetStmt>();
  const Seq *stats = x ? x->body.as<Seq>() : nullptr;
  const IfThenElse *grow = stats && stats->stmts.size() == 3 ? stats->stmts[0].as<IfThenElse>() : nullptr;
  const LetStmt *c = grow ? grow->then_case.as<LetStmt>() : nullptr;
  const Store *accumulate = step->stmts[3].as<Store>();
  const Binary *add = accumulate ? accumulate->value.as<Binary>() : nullptr;
  const Binary *times = add ? add->b.as<Binary>() : nullptr;
  const Binary *summed = sum ? sum->value.as<Binary>() : nullptr;
  if (!c || !times || !summed || sum->buffer != s->buffer || accumulate->buffer != a->buffer) return false;
  f->maximum = m->buffer;
  f->total = t->buffer;
  f->acc = a->buffer;
  f->score = s->buffer;
  f->weight = w->buffer;
  f->x = x->var;
  f->rescale = c->var;
  f->value_type = m->type;
  f->acc_type = a->type;
  f->term = summed->b;
  Expr scaled = x->value;
  if (const Cast *narrow = scaled.as<Cast>()) scaled = narrow->value;
  if (const Binary *times_scale = scaled.as<Binary>(); times_scale && times_scale->op == BinaryOp::Mul)
    f->scale = times_scale->b;
  const Cast *wide = times->b.as<Cast>();
  f->value = wide && f->acc_type != f->value_type ? wide->value : times->b;
  f->score_layers = score_layers;
  *output = out->buffer;
  *output_index = out->indices;
  return true;
}

}  // namespace ks
