// Graph IR -> naive Loop IR.
//
// Algorithm, for each stage `out[v0..vr) = reduce(k..) body`:
//  1. A serial loop per spatial variable, v0 outermost.
//  2. Inside, the stage's block: without a reduction, store body; with one,
//     allocate a private accumulator, initialise it with the reduction's identity,
//     run the reduction loops serially (first variable outermost), store the result.
//     Wide accumulators: a sum or product accumulates in f64.
//  3. The block's regions: it writes out[v0, ..], and reads what read_regions() finds.
#include "passes/lower.h"

#include <limits>

#include "passes/loops.h"
#include "passes/names.h"
#include "passes/regions.h"
#include "passes/softmax_sum.h"

namespace ks {

namespace {

Expr type_min(DType type) {
  if (type == DType::I32) return make_int(INT32_MIN, DType::I32);
  if (type == DType::I64) return make_int(INT64_MIN, DType::I64);
  return make_f32(-std::numeric_limits<double>::infinity());
}

Expr type_max(DType type) {
  if (type == DType::I32) return make_int(INT32_MAX, DType::I32);
  if (type == DType::I64) return make_int(INT64_MAX, DType::I64);
  return make_f32(std::numeric_limits<double>::infinity());
}

Expr constant(DType type, double value) {
  return is_int(type) ? make_int(static_cast<int64_t>(value), type) : make_f32(value);
}

// Serial loops of the reduction variables [from, to) as layers (passes/loops.h's wrap),
// first variable outermost.
std::vector<Stmt> reduction_layers(const Stage &stage, size_t from, size_t to) {
  std::vector<Stmt> layers;
  for (size_t r = from; r < to; ++r)
    layers.push_back(For::make(stage.reduce_vars[r].name, stage.reduce_vars[r].extent, ForKind::Serial, Seq::make({})));
  return layers;
}

// The serial loops of the reduction around body, first variable outermost.
Stmt reduction_loops(const Stage &stage, Stmt body) {
  return wrap(reduction_layers(stage, 0, stage.reduce_vars.size()), body);
}

Stmt lower_stage_block(const Graph &graph, const Program &program, const Stage &stage, NameSet &names,
                       bool wide_accumulators) {
  const TensorDecl &out = *graph.find_tensor(stage.output);
  std::vector<Expr> out_index;
  for (const IterVar &v : stage.spatial) out_index.push_back(Var::make(index_type_for(v.extent), v.name));

  std::vector<Region> writes = {Region{out.name, {}}};
  for (const Expr &index : out_index) writes[0].ranges.push_back(Range{index, 1});

  Stmt body;
  const DType value_type = stage.body.type();
  auto acc_at = [](const std::string &acc, DType type) { return Load::make(type, acc, {make_int(0)}); };
  switch (stage.reduce) {
    case ReduceOp::None: body = Store::make(out.name, out_index, stage.body); break;
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::LogSumExp: {
      std::string acc = names.fresh(stage.output + "_acc");
      const bool wide =
          wide_accumulators && is_float(value_type) &&
          (stage.reduce == ReduceOp::Sum || stage.reduce == ReduceOp::Prod || stage.reduce == ReduceOp::LogSumExp);
      const DType acc_type = wide ? DType::F64 : value_type;
      Expr current = acc_at(acc, acc_type);
      Expr init = stage.reduce == ReduceOp::Max || stage.reduce == ReduceOp::LogSumExp ? type_min(value_type)
                  : stage.reduce == ReduceOp::Min                                      ? type_max(value_type)
                                                  : constant(value_type, reduce_identity(stage.reduce));
      BinaryOp op = stage.reduce == ReduceOp::Sum    ? BinaryOp::Add
                    : stage.reduce == ReduceOp::Prod ? BinaryOp::Mul
                    : stage.reduce == ReduceOp::Max  ? BinaryOp::Max
                    : stage.reduce == ReduceOp::Min  ? BinaryOp::Min
                                                     : BinaryOp::LogAddExp;
      Stmt update = Store::make(acc, {make_int(0)}, Binary::make(op, current, cast_to(acc_type, stage.body)));
      body = Allocate::make(
          acc, acc_type, {1}, MemoryScope::Private,
          Seq::make({Store::make(acc, {make_int(0)}, cast_to(acc_type, init)), reduction_loops(stage, update),
                     Store::make(out.name, out_index, cast_to(value_type, current))}));
      break;
    }
    case ReduceOp::SoftmaxSum: {
      // One pass over the outer reduction variables, the score's sum inside each
      // step (passes/softmax_sum.h).
      const Call *pair = stage.body.as<Call>();
      SoftmaxSumForm form;
      form.maximum = names.fresh(stage.output + "_max");
      form.total = names.fresh(stage.output + "_sum");
      form.acc = names.fresh(stage.output + "_acc");
      form.score = names.fresh(stage.output + "_score");
      form.weight = names.fresh(stage.output + "_weight");
      form.x = names.fresh(stage.output + "_x");
      form.rescale = names.fresh(stage.output + "_rescale");
      form.value_type = value_type;
      form.acc_type = wide_accumulators ? DType::F64 : value_type;
      // A constant factor of the summand (attention's 1 / sqrt(D)) multiplies the sum
      // once rather than every term.
      Expr term = pair->args[0];
      if (const Binary *product = term.as<Binary>(); product && product->op == BinaryOp::Mul)
        if (product->b.as<FloatImm>() || product->a.as<FloatImm>()) {
          const bool right = product->b.as<FloatImm>() != nullptr;
          form.scale = cast_to(form.acc_type, right ? product->b : product->a);
          term = right ? product->a : product->b;
        }
      form.term = cast_to(form.acc_type, term);
      form.value = pair->args[1];
      const size_t outer = stage.reduce_vars.size() - stage.score_vars;
      form.score_layers = reduction_layers(stage, outer, stage.reduce_vars.size());
      body =
          softmax_sum_block(form, wrap(reduction_layers(stage, 0, outer), softmax_sum_step(form)), out.name, out_index);
      break;
    }
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
      // The row-major linear index of the reduction point, as the output's type.
      Expr linear;
      for (const IterVar &v : stage.reduce_vars) {
        Expr var = cast_to(out.type, Var::make(index_type_for(v.extent), v.name));
        linear = linear.defined() ? linear * make_int(v.extent, out.type) + var : var;
      }
      std::string best = names.fresh(stage.output + "_best");
      std::string best_index = names.fresh(stage.output + "_index");
      std::string value = names.fresh(stage.output + "_value");
      Expr current_best = acc_at(best, value_type);
      Expr value_var = Var::make(value_type, value);
      // The first index among equal values (as PyTorch and the interpreter), whatever
      // order a schedule visits the points in: a reordered or split reduction met ties
      // from a later index first (bf16's 8-bit significands tie often; issue 49).
      Expr better = Binary::make(BinaryOp::Or,
                                 stage.reduce == ReduceOp::ArgMax ? Binary::make(BinaryOp::Gt, value_var, current_best)
                                                                  : Binary::make(BinaryOp::Lt, value_var, current_best),
                                 Binary::make(BinaryOp::And, Binary::make(BinaryOp::Eq, value_var, current_best),
                                              Binary::make(BinaryOp::Lt, linear, acc_at(best_index, out.type))));
      Stmt update =
          LetStmt::make(value, stage.body,
                        IfThenElse::make(better, Seq::make({Store::make(best, {make_int(0)}, value_var),
                                                            Store::make(best_index, {make_int(0)}, linear)})));
      Expr init = stage.reduce == ReduceOp::ArgMax ? type_min(value_type) : type_max(value_type);
      body = Allocate::make(
          best, value_type, {1}, MemoryScope::Private,
          Allocate::make(
              best_index, out.type, {1}, MemoryScope::Private,
              Seq::make({Store::make(best, {make_int(0)}, init),
                         Store::make(best_index, {make_int(0)}, make_int(0, out.type)), reduction_loops(stage, update),
                         Store::make(out.name, out_index, acc_at(best_index, out.type))})));
      break;
    }
  }
  return Block::make(stage.output, read_regions(program, body), writes, body);
}

Kernel lower_stage(const Graph &graph, const Program &program, const Stage &stage, bool wide_accumulators) {
  NameSet names;
  for (const TensorDecl &t : graph.tensors) names.reserve(t.name);
  for (const IterVar &v : stage.spatial) names.reserve(v.name);
  for (const IterVar &v : stage.reduce_vars) names.reserve(v.name);
  Stmt body = lower_stage_block(graph, program, stage, names, wide_accumulators);
  for (size_t d = stage.spatial.size(); d-- > 0;)
    body = For::make(stage.spatial[d].name, stage.spatial[d].extent, ForKind::Serial, body);
  return Kernel{stage.output, body};
}

}  // namespace

Program lower(const Graph &graph, bool wide_accumulators) {
  Program program;
  program.name = graph.name;
  program.buffers = graph.tensors;
  for (const Stage &stage : graph.stages)
    program.kernels.push_back(lower_stage(graph, program, stage, wide_accumulators));
  return program;
}

}  // namespace ks
