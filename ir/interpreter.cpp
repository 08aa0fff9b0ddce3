// Float64 interpreter of Graph IR over a per-stage stack bytecode.
#include "ir/interpreter.h"

#include <cmath>
#include <limits>
#include <map>

#include "ir/visitor.h"

namespace ks {

namespace {

enum class Op : uint8_t {
  Const,
  LoadVar,
  AffineLoad,
  Load,
  Neg,
  Not,
  Add,
  Sub,
  Mul,
  FDiv,
  IDiv,
  FMod,
  IMod,
  Min,
  Max,
  LogAddExp,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Call,
  ToInt,
  ToBool,
  Select
};

struct Instr {
  Op op;
  int a = 0;  // variable slot, tensor slot, builtin id or form index
  int b = 0;  // rank for general loads
  double imm = 0;
};

// offset = constant + sum(coefficient * variable) over the listed variable slots.
struct AffineForm {
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> terms;
};

struct TensorSlot {
  const TensorData *data = nullptr;
  std::vector<int64_t> strides;
};

struct Bytecode {
  std::vector<Instr> code;
  std::vector<AffineForm> forms;
  std::vector<int> load_tensor;             // per general Load: tensor slot (in Instr.a)
  std::vector<std::optional<double>> pads;  // per general Load (index in Instr.imm)
};

inline double floor_div(double a, double b) { return std::floor(a / b); }

class Compiler : public IRVisitorStrict {
 public:
  Compiler(const std::map<std::string, int> &var_slots, const std::map<std::string, int> &tensor_slots,
           const std::vector<TensorSlot> &tensors, Bytecode *out)
      : vars_(var_slots), tensor_ids_(tensor_slots), tensors_(tensors), out_(out) {}

 protected:
  void emit(Op op, int a = 0, int b = 0, double imm = 0) { out_->code.push_back({op, a, b, imm}); }

  bool linearize(const Expr &e, int64_t scale, AffineForm *form) {
    if (const IntImm *imm = e.as<IntImm>()) {
      form->constant += scale * imm->value;
      return true;
    }
    if (const Var *v = e.as<Var>()) {
      auto it = vars_.find(v->name);
      if (it == vars_.end()) return false;
      form->terms.push_back({it->second, scale});
      return true;
    }
    if (const Cast *c = e.as<Cast>()) return is_int(c->value.type()) && linearize(c->value, scale, form);
    if (const Unary *u = e.as<Unary>()) return u->op == UnaryOp::Neg && linearize(u->a, -scale, form);
    if (const Binary *b = e.as<Binary>()) {
      if (b->op == BinaryOp::Add) return linearize(b->a, scale, form) && linearize(b->b, scale, form);
      if (b->op == BinaryOp::Sub) return linearize(b->a, scale, form) && linearize(b->b, -scale, form);
      if (b->op == BinaryOp::Mul) {
        if (auto c = as_const_int(b->b)) return linearize(b->a, scale * *c, form);
        if (auto c = as_const_int(b->a)) return linearize(b->b, scale * *c, form);
      }
    }
    return false;
  }

  void visit(const IntImm *n) override { emit(Op::Const, 0, 0, static_cast<double>(n->value)); }
  void visit(const FloatImm *n) override { emit(Op::Const, 0, 0, n->value); }
  void visit(const Var *n) override {
    auto it = vars_.find(n->name);
    if (it == vars_.end()) throw InternalError("interpreter: unbound variable " + n->name);
    emit(Op::LoadVar, it->second);
  }
  void visit(const Unary *n) override {
    dispatch(n->a);
    emit(n->op == UnaryOp::Neg ? Op::Neg : Op::Not);
  }
  void visit(const Binary *n) override {
    dispatch(n->a);
    dispatch(n->b);
    bool integer = is_int(n->a.type());
    switch (n->op) {
      case BinaryOp::Add: emit(Op::Add); break;
      case BinaryOp::Sub: emit(Op::Sub); break;
      case BinaryOp::Mul: emit(Op::Mul); break;
      case BinaryOp::Div: emit(integer ? Op::IDiv : Op::FDiv); break;
      case BinaryOp::Mod: emit(integer ? Op::IMod : Op::FMod); break;
      case BinaryOp::Min: emit(Op::Min); break;
      case BinaryOp::Max: emit(Op::Max); break;
      case BinaryOp::LogAddExp: emit(Op::LogAddExp); break;
      case BinaryOp::Lt: emit(Op::Lt); break;
      case BinaryOp::Le: emit(Op::Le); break;
      case BinaryOp::Gt: emit(Op::Gt); break;
      case BinaryOp::Ge: emit(Op::Ge); break;
      case BinaryOp::Eq: emit(Op::Eq); break;
      case BinaryOp::Ne: emit(Op::Ne); break;
      case BinaryOp::And: emit(Op::And); break;
      case BinaryOp::Or: emit(Op::Or); break;
    }
  }
  void visit(const Call *n) override {
    for (const Expr &arg : n->args) dispatch(arg);
    emit(Op::Call, static_cast<int>(n->fn), static_cast<int>(n->args.size()));
  }
  void visit(const Cast *n) override {
    dispatch(n->value);
    if (is_int(n->type) && is_float(n->value.type())) emit(Op::ToInt);
    if (n->type == DType::Bool) emit(Op::ToBool);
  }
  void visit(const Select *n) override {
    dispatch(n->condition);
    dispatch(n->true_value);
    dispatch(n->false_value);
    emit(Op::Select);
  }
  void visit(const Load *n) override {
    auto it = tensor_ids_.find(n->buffer);
    if (it == tensor_ids_.end()) throw InternalError("interpreter: unknown tensor " + n->buffer);
    const TensorSlot &t = tensors_[it->second];
    if (!n->pad) {
      AffineForm form;
      bool affine = true;
      for (size_t d = 0; d < n->indices.size() && affine; ++d) affine = linearize(n->indices[d], t.strides[d], &form);
      if (affine) {
        out_->forms.push_back(form);
        emit(Op::AffineLoad, it->second, static_cast<int>(out_->forms.size() - 1));
        return;
      }
    }
    for (const Expr &index : n->indices) dispatch(index);
    out_->pads.push_back(n->pad);
    emit(Op::Load, it->second, static_cast<int>(n->indices.size()), static_cast<double>(out_->pads.size() - 1));
  }
#define KS_EXPR_NODE(N)
#define KS_STMT_NODE(N) \
  void visit(const N *) override { throw InternalError("interpreter: statement in Graph IR"); }
#include "ir/nodes.def"

 private:
  const std::map<std::string, int> &vars_;
  const std::map<std::string, int> &tensor_ids_;
  const std::vector<TensorSlot> &tensors_;
  Bytecode *out_;
};

double run(const Bytecode &bc, const double *vars, const std::vector<TensorSlot> &tensors, double *stack) {
  int sp = 0;
  for (const Instr &in : bc.code) {
    switch (in.op) {
      case Op::Const: stack[sp++] = in.imm; break;
      case Op::LoadVar: stack[sp++] = vars[in.a]; break;
      case Op::AffineLoad: {
        const AffineForm &f = bc.forms[static_cast<size_t>(in.b)];
        int64_t offset = f.constant;
        for (const auto &[slot, coefficient] : f.terms) offset += coefficient * static_cast<int64_t>(vars[slot]);
        stack[sp++] = tensors[static_cast<size_t>(in.a)].data->values[static_cast<size_t>(offset)];
        break;
      }
      case Op::Load: {
        const TensorSlot &t = tensors[static_cast<size_t>(in.a)];
        sp -= in.b;
        int64_t offset = 0;
        bool inside = true;
        for (int d = 0; d < in.b; ++d) {
          double index = stack[sp + d];
          // Written so that a NaN index counts as outside.
          if (!(index >= 0 && index < static_cast<double>(t.data->shape[static_cast<size_t>(d)]))) inside = false;
          if (inside) offset += static_cast<int64_t>(index) * t.strides[static_cast<size_t>(d)];
        }
        const std::optional<double> &pad = bc.pads[static_cast<size_t>(in.imm)];
        if (!inside && !pad) throw InternalError("interpreter: read outside a tensor without a pad value");
        stack[sp++] = inside ? t.data->values[static_cast<size_t>(offset)] : *pad;
        break;
      }
      case Op::Neg: stack[sp - 1] = -stack[sp - 1]; break;
      case Op::Not: stack[sp - 1] = stack[sp - 1] != 0 ? 0.0 : 1.0; break;
#define KS_BINARY(OPNAME, EXPR) \
  case Op::OPNAME: {            \
    double b = stack[--sp];     \
    double a = stack[sp - 1];   \
    stack[sp - 1] = (EXPR);     \
    break;                      \
  }
        KS_BINARY(Add, a + b)
        KS_BINARY(Sub, a - b)
        KS_BINARY(Mul, a * b)
        KS_BINARY(FDiv, a / b)
        KS_BINARY(IDiv, floor_div(a, b))
        KS_BINARY(FMod, std::fmod(a, b))
        KS_BINARY(IMod, a - b * floor_div(a, b))
        KS_BINARY(Min, std::fmin(a, b))
        KS_BINARY(Max, std::fmax(a, b))
        KS_BINARY(LogAddExp, log_add_exp(a, b))
        KS_BINARY(Lt, a < b ? 1.0 : 0.0)
        KS_BINARY(Le, a <= b ? 1.0 : 0.0)
        KS_BINARY(Gt, a > b ? 1.0 : 0.0)
        KS_BINARY(Ge, a >= b ? 1.0 : 0.0)
        KS_BINARY(Eq, a == b ? 1.0 : 0.0)
        KS_BINARY(Ne, a != b ? 1.0 : 0.0)
        KS_BINARY(And, (a != 0 && b != 0) ? 1.0 : 0.0)
        KS_BINARY(Or, (a != 0 || b != 0) ? 1.0 : 0.0)
#undef KS_BINARY
      case Op::Call: {
        sp -= in.b;
        stack[sp] = eval_builtin(static_cast<Builtin>(in.a), stack + sp);
        ++sp;
        break;
      }
      case Op::ToInt: stack[sp - 1] = std::trunc(stack[sp - 1]); break;
      case Op::ToBool: stack[sp - 1] = stack[sp - 1] != 0 ? 1.0 : 0.0; break;
      case Op::Select: {
        sp -= 2;
        stack[sp - 1] = stack[sp - 1] != 0 ? stack[sp] : stack[sp + 1];
        break;
      }
    }
  }
  return stack[0];
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

}  // namespace

TensorMap interpret(const Graph &graph, const TensorMap &inputs) {
  TensorMap tensors;
  for (const TensorDecl &t : graph.tensors) {
    if (t.role != TensorRole::Input) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) throw UserError("error: no value given for input '" + t.name + "'");
    if (it->second.shape != t.shape || static_cast<int64_t>(it->second.values.size()) != t.numel())
      throw UserError("error: input '" + t.name + "' has the wrong shape");
    tensors[t.name] = it->second;
  }
  std::vector<double> stack(256);
  for (const Stage &stage : graph.stages) {
    const TensorDecl *out_decl = graph.find_tensor(stage.output);
    if (!out_decl) throw InternalError("interpreter: stage of unknown tensor " + stage.output);
    TensorData out{out_decl->type, out_decl->shape, std::vector<double>(static_cast<size_t>(out_decl->numel()))};

    std::map<std::string, int> var_slots, tensor_slots;
    for (const IterVar &v : stage.spatial) var_slots[v.name] = static_cast<int>(var_slots.size());
    for (const IterVar &v : stage.reduce_vars) var_slots[v.name] = static_cast<int>(var_slots.size());
    std::vector<TensorSlot> slots;
    for (const auto &[name, data] : tensors) {
      tensor_slots[name] = static_cast<int>(slots.size());
      slots.push_back({&data, row_major_strides(data.shape)});
    }
    // A softmax_sum runs its score and its value apart (softmax_pair is no function).
    const bool softmax_sum = stage.reduce == ReduceOp::SoftmaxSum;
    const Call *pair = softmax_sum ? stage.body.as<Call>() : nullptr;
    Bytecode bc, value_bc;
    Compiler(var_slots, tensor_slots, slots, &bc).dispatch(pair ? pair->args[0] : stage.body);
    if (pair) Compiler(var_slots, tensor_slots, slots, &value_bc).dispatch(pair->args[1]);
    // The bytecode never needs more stack than it has instructions.
    if (stack.size() < std::max(bc.code.size(), value_bc.code.size()) + 1)
      stack.resize(std::max(bc.code.size(), value_bc.code.size()) + 1);
    int64_t score_points = 1;  // points of a softmax_sum's score's sum, innermost
    for (size_t r = stage.reduce_vars.size() - stage.score_vars; r < stage.reduce_vars.size(); ++r)
      score_points *= stage.reduce_vars[r].extent;
    std::vector<double> scores, values;

    const size_t spatial_rank = stage.spatial.size();
    const size_t reduce_rank = stage.reduce_vars.size();
    std::vector<double> vars(spatial_rank + reduce_rank, 0.0);
    int64_t reduce_points = 1;
    for (const IterVar &v : stage.reduce_vars) reduce_points *= v.extent;
    const bool arg = stage.reduce == ReduceOp::ArgMax || stage.reduce == ReduceOp::ArgMin;

    for (int64_t point = 0; point < out_decl->numel(); ++point) {
      int64_t rest = point;
      for (size_t d = spatial_rank; d-- > 0;) {
        vars[d] = static_cast<double>(rest % stage.spatial[d].extent);
        rest /= stage.spatial[d].extent;
      }
      double result;
      if (stage.reduce == ReduceOp::None) {
        result = run(bc, vars.data(), slots, stack.data());
      } else {
        double acc = reduce_identity(stage.reduce);
        double best_index = 0;
        for (size_t r = 0; r < reduce_rank; ++r) vars[spatial_rank + r] = 0;
        for (int64_t r = 0; r < reduce_points; ++r) {
          double v = run(bc, vars.data(), slots, stack.data());
          switch (stage.reduce) {
            case ReduceOp::Sum: acc += v; break;
            case ReduceOp::Prod: acc *= v; break;
            case ReduceOp::Max: acc = std::fmax(acc, v); break;
            case ReduceOp::LogSumExp: acc = log_add_exp(acc, v); break;
            case ReduceOp::Min: acc = std::fmin(acc, v); break;
            case ReduceOp::ArgMax:
              if (v > acc || r == 0) acc = v, best_index = static_cast<double>(r);
              break;
            case ReduceOp::ArgMin:
              if (v < acc || r == 0) acc = v, best_index = static_cast<double>(r);
              break;
            case ReduceOp::SoftmaxSum:
              acc += v;  // the score's sum; its last point ends it
              if ((r + 1) % score_points == 0) {
                scores.push_back(acc);
                values.push_back(run(value_bc, vars.data(), slots, stack.data()));
                acc = 0;
              }
              break;
            case ReduceOp::None: break;
          }
          // Advance the reduction odometer, innermost variable fastest.
          for (size_t d = reduce_rank; d-- > 0;) {
            double &x = vars[spatial_rank + d];
            if (++x < static_cast<double>(stage.reduce_vars[d].extent)) break;
            x = 0;
          }
        }
        result = arg ? best_index : acc;
        if (softmax_sum) {  // two passes, in f64: the maximum, then the weights
          double top = -std::numeric_limits<double>::infinity(), total = 0;
          for (double x : scores) top = std::fmax(top, x);
          result = 0;
          for (size_t p = 0; p < scores.size(); ++p) {
            const double w = std::exp(scores[p] - top);
            total += w;
            result += w * values[p];
          }
          result /= total;
          scores.clear();
          values.clear();
        }
      }
      if (is_int(out.type) && !arg) result = std::trunc(result);
      // A 16-bit output holds its values rounded, as every device's store of it must.
      // Intermediates keep f64's, as f32 tensors do: a schedule may keep them in f32
      // (a fused kernel's registers, a rewrite that drops them), and where a device
      // stores them in 16 bits, error_bound.h allows for those roundings.
      if (is_half(out.type) && out_decl->role == TensorRole::Output) result = round_to(out.type, result);
      out.values[static_cast<size_t>(point)] = result;
    }
    tensors[stage.output] = std::move(out);
  }
  return tensors;
}

}  // namespace ks
