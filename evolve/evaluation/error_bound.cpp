// The rounding-error bound of every tensor of a graph, as stages of the graph
// (error_bound.h has the model). Bounds are f32 expressions over the values they
// bound; an undefined expression stands for an exact zero, so exact inputs add nothing.
#include "evolve/evaluation/error_bound.h"

#include <cmath>
#include <limits>

#include "ir/verifier.h"
#include "ir/visitor.h"
#include "passes/graph_edit.h"

namespace ks {

double unit_roundoff(DType type) {
  switch (type) {
    case DType::F64: return std::ldexp(1.0, -53);
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::BF16: return std::ldexp(1.0, -8);
    default: return std::ldexp(1.0, -24);
  }
}

namespace {

constexpr DType kBoundType = DType::F32;
const double kInfinity = std::numeric_limits<double>::infinity();
// The smallest normal f32: what a result flushed to zero loses.
const double kFlush = std::ldexp(1.0, -126);
// GLSL's log and log2 are exact to 2^-21 only (absolute) for arguments in [0.5, 2];
// the project's GLSL log1p, expm1 and softplus are made of them.
const double kLogAbsolute = std::ldexp(1.0, -21);
// The partial sums' rounding: eight standard deviations of n uniform roundings, each
// within U |s_k| (variance U^2 s_k^2 / 3), sum s_k^2 = n (2 T1^2 + T2) / 6.
const double kSigmas = 8;
// A term below this many U times the partial sum it meets (half its ulp) is lost whole.
const double kSmallTerm = 1;
// A term within this many U of itself of the term before it rounds as that one
// did: the steps' errors add up coherently.
const double kAlikeTerm = 16;

Expr num(double v) { return FloatImm::make(kBoundType, v); }
Expr as_bound(const Expr &value) { return cast_to(kBoundType, value); }
Expr call(Builtin f, const Expr &a) { return Call::make(f, {a}); }
Expr abs_of(const Expr &value) { return call(Builtin::Abs, as_bound(value)); }
Expr plus(const Expr &a, const Expr &b) { return !a.defined() ? b : !b.defined() ? a : a + b; }
Expr is_zero(const Expr &a) { return Binary::make(BinaryOp::Eq, a, FloatImm::make(a.type(), 0)); }
// a b, 0 where either is 0: an exact factor (a bound of 0, or a value of 0 beside an
// unknown bound) carries nothing, where 0 x infinity would make a NaN, which the
// comparisons of the bound's later steps read as false: 0 (a group norm over groups of
// one, its bound 3.3e-6 for an answer anything may be).
Expr product(const Expr &a, const Expr &b) {
  return Select::make(Binary::make(BinaryOp::Or, is_zero(a), is_zero(b)), num(0), a * b);
}
Expr times(const Expr &a, const Expr &b) { return a.defined() && b.defined() ? product(a, b) : Expr(); }
Expr larger(const Expr &a, const Expr &b) {
  return !a.defined() ? b : !b.defined() ? a : Binary::make(BinaryOp::Max, a, b);
}
Expr either(const Expr &a, const Expr &b) {
  return !a.defined() ? b : !b.defined() ? a : Binary::make(BinaryOp::Or, a, b);
}
Expr or_zero(const Expr &e) { return e.defined() ? e : num(0); }
// |v| where v is finite, 0 where it is infinite: an infinity (a mask's -inf, its
// exponential's 0) is exact, and rounds by nothing.
Expr magnitude(const Expr &value) {
  return Select::make(Binary::make(BinaryOp::Lt, abs_of(value), num(kInfinity)), abs_of(value), num(0));
}
// |x| E, 0 where either is 0 (an infinite x with nothing to carry, or an exact 0
// beside an unknown bound: product's).
Expr times_abs(const Expr &x, const Expr &bound) { return bound.defined() ? product(abs_of(x), bound) : Expr(); }
Expr at_most(const Expr &a, const Expr &b) { return Binary::make(BinaryOp::Le, a, b); }
Expr greater(const Expr &a, const Expr &b) { return Binary::make(BinaryOp::Gt, a, b); }

// What one expression may be off by: `error` for a float (undefined: exact), `flip`
// for an integer or a bool (undefined: never; else true where its value may differ).
struct Bounded {
  Expr error, flip;
};

class Bounder {
 public:
  Bounder(const Graph &graph, const std::map<std::string, std::string> &bound_of)
      : graph_(graph), bound_of_(bound_of) {}

  Bounded of(const Expr &e) {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    Bounded b = compute(e);
    memo_[e.get()] = b;
    return b;
  }

  /// One rounding of a result v of type `type`: U |v|, and the flush to zero. A
  /// 16-bit store rounds an f32 value (rounded already) once more, and the reference
  /// rounds its own value: two of the format's roundings and one of f32's, and f16's
  /// least subnormal step (2^-24) absolute.
  static Expr rounding(const Expr &v, DType type) {
    if (is_half(type))
      return num(2 * unit_roundoff(type) + unit_roundoff(DType::F32)) * magnitude(v) +
             num(type == DType::F16 ? std::ldexp(1.0, -24) : kFlush);
    Expr r = num(unit_roundoff(type)) * magnitude(v);
    return type == DType::F32 ? r + num(kFlush) : r;
  }

 private:
  const Graph &graph_;
  const std::map<std::string, std::string> &bound_of_;
  std::map<const BaseExprNode *, Bounded> memo_;

  // ulps of an f32 result: each within 2U |v|.
  static Expr ulps(double count, const Expr &v) { return num(2 * count * unit_roundoff(DType::F32)) * magnitude(v); }
  static double u32() { return unit_roundoff(DType::F32); }

  Bounded compute(const Expr &e) {
    if (const FloatImm *c = e.as<FloatImm>()) {
      const bool exact = c->type != DType::F32 || static_cast<double>(static_cast<float>(c->value)) == c->value ||
                         std::isinf(c->value);
      return {exact ? Expr() : rounding(e, c->type), Expr()};
    }
    if (e.as<IntImm>() || e.as<Var>()) return {};
    if (const Unary *u = e.as<Unary>()) return of(u->a);
    if (const Binary *b = e.as<Binary>()) return binary(*b, e);
    if (const Call *c = e.as<Call>()) return {builtin(*c, e), Expr()};
    if (const Cast *c = e.as<Cast>()) return cast(*c, e);
    if (const Select *s = e.as<Select>()) return select(*s);
    if (const Load *l = e.as<Load>()) return load(*l);
    throw InternalError("error bound: an expression of no known kind");
  }

  Bounded load(const Load &l) {
    Expr index_flip;
    for (const Expr &i : l.indices) index_flip = either(index_flip, of(i).flip);
    Bounded out;
    auto it = bound_of_.find(l.buffer);
    if (it != bound_of_.end()) {
      Expr bound = Load::make(kBoundType, it->second, l.indices, l.pad ? std::optional<double>(0.0) : std::nullopt);
      if (is_float(l.type))
        out.error = bound;
      else
        out.flip = greater(bound, num(0));
    }
    if (index_flip.defined()) {  // read at an index that may be another: anything
      if (is_float(l.type))
        out.error = Select::make(index_flip, num(kInfinity), or_zero(out.error));
      else
        out.flip = either(out.flip, index_flip);
    }
    return out;
  }

  Bounded binary(const Binary &b, const Expr &self) {
    const Bounded x = of(b.a), y = of(b.b);
    if (b.op == BinaryOp::And || b.op == BinaryOp::Or) return {Expr(), either(x.flip, y.flip)};
    if (is_comparison(b.op)) {
      if (!is_float(b.a.type())) return {Expr(), either(x.flip, y.flip)};
      const Expr margin = plus(x.error, y.error);
      if (!margin.defined()) return {};
      return {Expr(), at_most(abs_of(b.a - b.b), margin)};
    }
    if (!is_float(self.type())) return {Expr(), either(x.flip, y.flip)};
    const DType type = self.type();
    const Expr ea = x.error, eb = y.error;
    switch (b.op) {
      case BinaryOp::Add:
      case BinaryOp::Sub: return {plus(plus(ea, eb), rounding(self, type)), Expr()};
      case BinaryOp::Mul:
        return {plus(plus(plus(times_abs(b.a, eb), times_abs(b.b, ea)), times(ea, eb)), rounding(self, type)), Expr()};
      case BinaryOp::Div: {
        // Over the divisor's whole interval; unknown where it may reach zero. 2.5 ulps.
        Expr carried;
        if (eb.defined())
          carried = Select::make(greater(abs_of(b.b), eb), (or_zero(ea) + times_abs(self, eb)) / (abs_of(b.b) - eb),
                                 num(kInfinity));
        else if (ea.defined())
          carried = ea / abs_of(b.b);
        return {plus(carried, ulps(2.5, self) + num(kFlush)), Expr()};
      }
      case BinaryOp::Mod: {
        // fmod jumps by |b| where a / b crosses an integer (within the operands' bounds
        // and the quotient's rounding: GLSL's ks_fmod divides); elsewhere the operands'
        // bounds carry through.
        const Expr q = as_bound(b.a) / as_bound(b.b);
        const Expr reach = plus(or_zero(ea) / abs_of(b.b), times(abs_of(q), eb) / abs_of(b.b));
        const Expr m = plus(reach, num(8 * u32()) * call(Builtin::Abs, q));
        const Expr crosses = Binary::make(BinaryOp::Ne, call(Builtin::Floor, q - m), call(Builtin::Floor, q + m));
        const Expr inside = plus(plus(ea, times(abs_of(q), eb)), num(2 * u32()) * abs_of(b.a) + num(kFlush));
        return {Select::make(crosses, abs_of(b.b) + or_zero(eb), inside), Expr()};
      }
      case BinaryOp::Min:
      case BinaryOp::Max: return {larger(ea, eb), Expr()};
      case BinaryOp::LogAddExp:
        return {plus(larger(ea, eb), rounding(self, type) + num(8 * unit_roundoff(type))), Expr()};
      default: break;
    }
    throw InternalError(std::string("error bound: operator ") + binary_op_symbol(b.op) + " on floats");
  }

  Bounded cast(const Cast &c, const Expr &self) {
    const Bounded x = of(c.value);
    const DType from = c.value.type(), to = c.type;
    if (is_float(to)) {
      if (is_float(from))
        return {from == DType::F64 && to == DType::F32 ? plus(x.error, rounding(self, to)) : x.error, Expr()};
      if (from == DType::Bool) return {x.flip.defined() ? Select::make(x.flip, num(1), num(0)) : Expr(), Expr()};
      // An integer: exact below 2^24 (the rounding covers larger ones).
      Expr r = rounding(self, to);
      return {x.flip.defined() ? Select::make(x.flip, num(kInfinity), r) : r, Expr()};
    }
    if (!is_float(from)) return {Expr(), x.flip};
    if (!x.error.defined()) return {};
    if (to == DType::Bool) return {Expr(), at_most(abs_of(c.value), x.error)};
    // Truncated toward zero: another integer where the interval crosses one.
    const Expr low = as_bound(c.value) - x.error, high = as_bound(c.value) + x.error;
    return {Expr(), Binary::make(BinaryOp::Ne, Cast::make(DType::I64, low), Cast::make(DType::I64, high))};
  }

  Bounded select(const Select &s) {
    const Bounded c = of(s.condition), t = of(s.true_value), f = of(s.false_value);
    if (!is_float(s.type)) return {Expr(), either(c.flip, either(t.flip, f.flip))};
    Expr chosen;
    if (t.error.defined() || f.error.defined()) chosen = Select::make(s.condition, or_zero(t.error), or_zero(f.error));
    if (!c.flip.defined()) return {chosen, Expr()};
    // Either side, where the condition may go either way.
    const Expr either_side = or_zero(larger(t.error, f.error)) + abs_of(s.true_value - s.false_value);
    return {Select::make(c.flip, either_side, or_zero(chosen)), Expr()};
  }

  // A builtin's bound: its arguments' carried through it, and its own accuracy.
  Expr builtin(const Call &c, const Expr &v) {
    std::vector<Expr> e;
    for (const Expr &arg : c.args) e.push_back(of(arg).error);
    const Expr a = c.args[0], ea = e[0];
    const double u = u32();
    const Expr flush = num(kFlush);
    auto own = [&](double count) { return ulps(count, v) + flush; };
    auto lipschitz = [&](double constant) { return ea.defined() ? num(constant) * ea : Expr(); };
    // Where the interval of a crosses a jump of f (floor, ceil): the jump's size.
    auto jumps = [&](Builtin f) -> Expr {
      if (!ea.defined()) return Expr();
      const Expr low = call(f, a - ea), high = call(f, a + ea);
      return Select::make(Binary::make(BinaryOp::Ne, low, high), high - low, num(0));
    };
    switch (c.fn) {
      case Builtin::Abs:
      case Builtin::Relu: return ea;
      case Builtin::Floor:
      case Builtin::Ceil: return jumps(c.fn);
      case Builtin::Sign: return ea.defined() ? Select::make(at_most(abs_of(a), ea), num(2), num(0)) : Expr();
      case Builtin::Exp:
      case Builtin::Exp2: {
        // exp over the interval: at most |v| (e^E - 1) away; GLSL allows 3 + 2|a| ulps.
        const Expr growth = ea.defined() ? (c.fn == Builtin::Exp ? ea : ea * num(std::log(2.0))) : Expr();
        const Expr carried = growth.defined() ? times_abs(v, call(Builtin::Expm1, growth)) : Expr();
        return plus(carried, (num(6 * u) + num(4 * u) * magnitude(a)) * magnitude(v) + flush);
      }
      case Builtin::Log:
      case Builtin::Log2: {
        const double scale = c.fn == Builtin::Log ? 1 : std::log(2.0);
        const Expr carried =
            ea.defined() ? Select::make(greater(abs_of(a), ea), ea / ((abs_of(a) - ea) * num(scale)), num(kInfinity))
                         : Expr();
        const Expr near_one = Select::make(at_most(abs_of(a - num(1.25)), num(0.75)), num(kLogAbsolute), num(0));
        return plus(carried, own(3) + near_one);
      }
      case Builtin::Log1p: {
        const Expr one_plus = abs_of(a + num(1));
        const Expr carried =
            ea.defined() ? Select::make(greater(one_plus, ea), ea / (one_plus - ea), num(kInfinity)) : Expr();
        return plus(carried, own(8) + num(kLogAbsolute));
      }
      case Builtin::Expm1: {
        const Expr carried = ea.defined() ? (abs_of(v) + num(1)) * call(Builtin::Expm1, ea) : Expr();
        return plus(carried, own(8) + num(kLogAbsolute));
      }
      case Builtin::Sqrt: {
        // sqrt(a) - sqrt(a - E) = E / (sqrt(a) + sqrt(a - E)); near zero, sqrt(2E).
        const Expr carried = ea.defined() ? Select::make(greater(a, ea), ea / (abs_of(v) + call(Builtin::Sqrt, a - ea)),
                                                         call(Builtin::Sqrt, num(2) * ea))
                                          : Expr();
        return plus(carried, own(3));
      }
      case Builtin::Rsqrt: {
        const Expr carried =
            ea.defined() ? Select::make(greater(a, ea), call(Builtin::Rsqrt, a - ea) - abs_of(v), num(kInfinity))
                         : Expr();
        return plus(carried, own(2));
      }
      case Builtin::Tanh: return plus(lipschitz(1), own(5) + num(16 * u));
      case Builtin::Erf: return plus(lipschitz(1.13), own(16) + num(3e-7));
      case Builtin::Sin:
      case Builtin::Cos:
        // GLSL: within 2^-11 absolute on [-pi, pi]; wider arguments reduce with it.
        return plus(lipschitz(1), own(4) + num(std::ldexp(1.0, -11)) *
                                               Binary::make(BinaryOp::Max, num(1), abs_of(a) * num(1 / M_PI)));
      case Builtin::Pow: {
        // d/da = b v / a, d/db = v log|a|; GLSL's pow is exp2(b log2 a).
        const Expr b = c.args[1], eb = e[1];
        const Expr nonzero = greater(abs_of(a), num(0));
        Expr carried;
        if (ea.defined())
          carried = Select::make(greater(abs_of(a), ea), abs_of(b) * abs_of(v) * ea / (abs_of(a) - ea), num(kInfinity));
        if (eb.defined())
          carried =
              plus(carried, Select::make(nonzero, abs_of(v) * abs_of(call(Builtin::Log, abs_of(a))) * eb, num(0)));
        const Expr exponent = Select::make(nonzero, abs_of(b * call(Builtin::Log2, abs_of(a))), num(0));
        return plus(carried, (num(32 * u) + num(4 * u) * exponent + abs_of(b) * num(kLogAbsolute)) * abs_of(v) + flush);
      }
      case Builtin::Clamp:
      case Builtin::Hardtanh: return larger(ea, larger(e[1], e[2]));
      case Builtin::Sigmoid:
        return plus(lipschitz(0.25), (num(14 * u) + num(4 * u) * magnitude(a)) * magnitude(v) + flush);
      case Builtin::Silu: return plus(lipschitz(1.1), (num(14 * u) + num(4 * u) * magnitude(a)) * magnitude(v) + flush);
      case Builtin::LeakyRelu: {
        Expr carried = ea.defined() ? Binary::make(BinaryOp::Max, num(1), abs_of(c.args[1])) * ea : Expr();
        carried = plus(carried, times_abs(a, e[1]));
        return plus(carried, rounding(v, DType::F32));
      }
      case Builtin::Gelu:
        // 0.5 a (1 + erf(a / sqrt 2)): erf's absolute error times |a| / 2.
        return plus(lipschitz(1.13), own(8) + magnitude(a) * num(1.5e-7 + 16 * u));
      case Builtin::GeluTanh: {
        const Expr inner = abs_of(a * (num(1) + num(0.044715) * a * a));
        return plus(lipschitz(1.13), own(8) + magnitude(a) * (num(16 * u) + num(4 * u) * inner));
      }
      case Builtin::Softplus: return plus(lipschitz(1), own(8) + num(kLogAbsolute));
      case Builtin::Mish: return plus(lipschitz(1.2), own(16) + magnitude(a) * num(kLogAbsolute + 16 * u));
      case Builtin::Elu: {
        const Expr alpha = abs_of(c.args[1]);
        Expr carried = ea.defined() ? Binary::make(BinaryOp::Max, num(1), alpha) * ea : Expr();
        const Expr below = call(Builtin::Expm1, Binary::make(BinaryOp::Min, as_bound(a), num(0)));
        carried = plus(carried, times_abs(below, e[1]));
        return plus(carried, own(8) + alpha * num(kLogAbsolute));
      }
      case Builtin::Selu: return plus(lipschitz(1.76), own(8) + num(1.76 * kLogAbsolute));
      case Builtin::Hardsigmoid: return plus(lipschitz(1.0 / 6), num(8 * u) + flush);
      case Builtin::Hardswish: return plus(lipschitz(1.5), num(8 * u) * (magnitude(v) + magnitude(a)) + flush);
      case Builtin::RoundF16:
      case Builtin::RoundBf16: return plus(ea, rounding(v, *rounded_format(c.fn)));
      case Builtin::SoftmaxPair: break;
    }
    throw InternalError(std::string("error bound: no rule for ") + builtin_info(c.fn).name);
  }
};

// The graph being built: the stages so far, the bounds found, the names in use.
struct Building {
  ErrorBounds out;
  NameSet names;
  Precision precision = Precision::F32;
};

// A product's relative error where both factors round to TF32 first: (1 + 2^-11)^2 - 1.
const double kTf32Product = std::ldexp(1.0, -10) + std::ldexp(1.0, -22);

void add_bound(Building *b, const Stage &stage);

// The stages one stage's bound takes, added after it.
class StageBound {
 public:
  StageBound(Building *b, const Stage &stage) : b_(b), stage_(stage) {
    const TensorDecl *y = b->out.graph.find_tensor(stage.output);
    if (!y) throw InternalError("error bound: stage of unknown tensor " + stage.output);
    y_ = *y;
    for (const IterVar &v : stage.spatial) at_.push_back(iter_var(v));
    value_ = Load::make(y_.type, y_.name, at_);
    for (const IterVar &v : stage.reduce_vars) n_ *= v.extent;
  }

  void add() {
    if (stage_.reduce == ReduceOp::SoftmaxSum) return softmax_sum();  // its body is a pair, no value
    Bounder bounder(b_->out.graph, b_->out.bound_of);
    const Bounded term = bounder.of(stage_.body);
    const bool is_float_value = is_float(value_type(y_.type));
    const Expr t = as_bound(stage_.body);
    const double u = unit_roundoff(value_type(y_.type));  // the accumulation's, in f32
    const Expr rounding = is_float_value ? Bounder::rounding(value_, y_.type) : Expr();
    auto flips = [&](ReduceOp over) {  // an integer that may differ: unknown (infinity)
      if (term.flip.defined()) finish(new_stage("_bound", over, Select::make(term.flip, num(kInfinity), num(0))));
    };
    switch (stage_.reduce) {
      case ReduceOp::None:
        if (is_float_value)
          finish(new_stage("_bound", ReduceOp::None, plus(term.error, rounding)));
        else
          flips(ReduceOp::None);
        return;
      case ReduceOp::Sum: {
        if (!is_float_value) return flips(ReduceOp::Max);
        // Round to nearest is unbiased only where the terms' low bits vary against the
        // partial sum's: a term below half the ulp of the partial sum it meets (taken
        // as y (k + 1) / n) is dropped whole, every time; a term equal to the one
        // before it (a bias over a padded region, a broadcast value; not 0, which
        // adds exactly) rounds as that one did, by up to U |s_k| each time, and
        // |s_k| is at most the sum of the terms' magnitudes (the partial sums of
        // structured terms run far past y: a padded convolution's large terms first,
        // then thousands of one bias that bring it back to near zero).
        const Expr partial = (position() + num(1)) * abs_of(value_) * num(1 / static_cast<double>(n_));
        const Expr small = at_most(abs_of(t), num(kSmallTerm * u) * partial);
        const Expr magnitudes = load(new_stage("_magnitudes", ReduceOp::Sum, abs_of(t)));
        const Expr alike = Binary::make(BinaryOp::And, greater(abs_of(t), num(0)),
                                        at_most(abs_of(t - previous_term()), num(kAlikeTerm * u) * abs_of(t)));
        const Expr biased = Select::make(
            small, abs_of(t), Select::make(alike, Binary::make(BinaryOp::Min, num(u) * magnitudes, abs_of(t)), num(0)));
        const Binary *product = stage_.body.as<Binary>();
        const Expr rounded = b_->precision == Precision::TF32 && product && product->op == BinaryOp::Mul
                                 ? biased + num(kTf32Product) * abs_of(t)
                                 : biased;
        const Expr carried = load(new_stage("_terms", ReduceOp::Sum, plus(term.error, rounded)));
        const Expr squares = load(new_stage("_squares", ReduceOp::Sum, t * t));
        return finish(new_stage("_bound", ReduceOp::None, carried + partial_sums(value_, squares, u) + rounding));
      }
      case ReduceOp::Prod: {
        if (!is_float_value) return flips(ReduceOp::Max);
        const Expr relative = num(kSigmas * u * std::sqrt(static_cast<double>(n_) / 3));
        if (!term.error.defined())
          return finish(new_stage("_bound", ReduceOp::None, abs_of(value_) * relative + rounding));
        // The factors' relative bounds; unknown where one may be zero.
        const Expr ratios = load(new_stage(
            "_terms", ReduceOp::Sum,
            Select::make(greater(abs_of(t), term.error), term.error / (abs_of(t) - term.error), num(kInfinity))));
        const Expr scaled = Select::make(greater(abs_of(value_), num(0)), abs_of(value_) * (ratios + relative),
                                         Select::make(greater(ratios, num(0)), num(kInfinity), num(0)));
        return finish(new_stage("_bound", ReduceOp::None, scaled + rounding));
      }
      case ReduceOp::Max:
      case ReduceOp::Min:
        if (!is_float_value) return flips(ReduceOp::Max);
        if (is_half(y_.type))  // the largest of f32 values, stored in 16 bits
          finish(new_stage(
              "_bound", ReduceOp::None,
              plus(term.error.defined() ? load(new_stage("_terms", ReduceOp::Max, term.error)) : Expr(), rounding)));
        else if (term.error.defined())
          finish(new_stage("_bound", ReduceOp::Max, term.error));
        return;
      case ReduceOp::LogSumExp: {
        // log S: S's relative rounding as a sum of the weights exp(t - y) (they sum to
        // 1); and computed online (a logaddexp a step), each step's result rounds too,
        // at the magnitude of the partial log-sum (at most max(|y|, max |t|)), and its
        // log1p(exp(.)) within 4U: eight sigma of n such roundings, except that a step
        // whose term equals the one before (zeros of a relu) rounds as that one did,
        // and counts its whole U max(|y|, max |t|) (a logsumexp of 495 terms, most of
        // them 0, was off by 144U so).
        const Expr weight = call(Builtin::Exp, t - as_bound(value_));
        const Expr largest =
            Binary::make(BinaryOp::Max, magnitude(value_), load(new_stage("_largest", ReduceOp::Max, magnitude(t))));
        const Expr small = at_most(weight, num(kSmallTerm * u / static_cast<double>(n_)) * (position() + num(1)));
        const Expr alike = at_most(abs_of(t - previous_term()), num(kAlikeTerm * u) * magnitude(t));
        const Expr lost = load(new_stage("_small", ReduceOp::Sum, Select::make(small, weight, num(0))));
        const Expr coherent = load(new_stage("_alike", ReduceOp::Sum, Select::make(alike, num(u), num(0)))) * largest;
        const Expr squares = load(new_stage("_squares", ReduceOp::Sum, weight * weight));
        const Expr online = num(kSigmas * u * std::sqrt(static_cast<double>(n_) / 3)) * (largest + num(4));
        Expr bound = lost + coherent + partial_sums(num(1), squares, u) + online + num(8 * u) + rounding;
        if (term.error.defined()) bound = load(new_stage("_terms", ReduceOp::Max, term.error)) + bound;
        return finish(new_stage("_bound", ReduceOp::None, bound));
      }
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: {
        // A device's terms may be off by their bounds, so where another term is within
        // both bounds of the extreme one the device may pick either: the index is then
        // unknown (PoCL's exp(tanh(x)) picked the second of two terms 1 ulp apart).
        // Terms without a bound (inputs as they are) are exact, and so is their tie:
        // the first index, checked.
        if (!term.error.defined()) return flips(ReduceOp::Max);
        const ReduceOp extreme = stage_.reduce == ReduceOp::ArgMax ? ReduceOp::Max : ReduceOp::Min;
        const Expr best = load(new_stage("_extreme", extreme, t));
        const Expr slack = num(2) * load(new_stage("_terms", ReduceOp::Max, term.error));
        const Expr near = Binary::make(BinaryOp::And, greater(slack, num(0)), at_most(abs_of(t - best), slack));
        const Expr count = load(new_stage("_near", ReduceOp::Sum, Select::make(near, num(1), num(0))));
        return finish(
            new_stage("_bound", ReduceOp::None, Select::make(greater(count, num(1)), num(kInfinity), num(0))));
      }
      case ReduceOp::SoftmaxSum: break;
    }
    throw InternalError(std::string("error bound: no rule for a ") + reduce_op_name(stage_.reduce) + " stage");
  }

 private:
  Building *b_;
  const Stage &stage_;
  TensorDecl y_;
  std::vector<Expr> at_;  // the element's indices
  Expr value_;            // y at the element
  int64_t n_ = 1;         // the reduction's points

  // The partial sums' rounding of a sum whose value is `sum` and sum of squared terms
  // `squares` (error_bound.h).
  Expr partial_sums(const Expr &sum, const Expr &squares, double u) const {
    return num(kSigmas / std::sqrt(18.0) * u) *
           call(Builtin::Sqrt, num(static_cast<double>(n_)) * (num(2) * as_bound(sum) * as_bound(sum) + squares));
  }

  // A softmax_sum, y = sum_j softmax(s)_j v_j with s_j a sum over the score's variables,
  // is bounded as the two passes it stands for (its scores, their maximum, the
  // exponentials, their sum, the weighted sum), each a stage with its own bound, plus
  // the online rescaling's roundings: each time the running maximum grows, the sum
  // and the accumulator are multiplied by the same factor, rounding each product once
  // (random signs: 8 sigma over at most n rescalings, relative to sum_j p_j |v_j|).
  void softmax_sum() {
    const Call *pair = stage_.body.as<Call>();
    if (!pair || pair->fn != Builtin::SoftmaxPair) throw InternalError("error bound: a softmax_sum without its pair");
    const size_t outer = stage_.reduce_vars.size() - stage_.score_vars;
    const std::vector<IterVar> &rows = stage_.spatial;
    std::vector<IterVar> over(stage_.reduce_vars.begin(), stage_.reduce_vars.begin() + static_cast<long>(outer));
    // The scores, their maximum, exponentials and sum over the spatial variables the
    // scores use alone (attention's rows, not the value's columns d: over those as well
    // they were a tensor of B H T T D elements, 64 GiB at KernelBench's sizes).
    const std::set<std::string> score_uses = vars_in(pair->args[0]);
    std::vector<IterVar> score_rows;
    for (const IterVar &v : stage_.spatial)
      if (score_uses.count(v.name)) score_rows.push_back(v);
    std::vector<IterVar> score_points = score_rows;
    score_points.insert(score_points.end(), over.begin(), over.end());
    auto at_vars = [](const std::vector<IterVar> &vars) {
      std::vector<Expr> index;
      for (const IterVar &v : vars) index.push_back(iter_var(v));
      return index;
    };
    const std::vector<Expr> at_score_row = at_vars(score_rows), at_score_point = at_vars(score_points);
    const DType type = value_type(y_.type);
    auto value_stage = [&](const std::string &suffix, const std::vector<IterVar> &spatial, ReduceOp op,
                           std::vector<IterVar> reduce, const Expr &body) {
      Stage s;
      s.output = b_->names.fresh(stage_.output + suffix);
      s.spatial = spatial;
      s.reduce = op;
      s.reduce_vars = std::move(reduce);
      s.body = body;
      s.loc = stage_.loc;
      b_->out.graph.tensors.push_back(temp_tensor(s.output, type, spatial));
      b_->out.graph.stages.push_back(s);
      add_bound(b_, s);
      return s.output;
    };
    auto at = [&](const std::string &name, const std::vector<Expr> &index) { return Load::make(type, name, index); };
    const std::vector<IterVar> score_vars(stage_.reduce_vars.begin() + static_cast<long>(outer),
                                          stage_.reduce_vars.end());
    const std::string scores = value_stage("_scores", score_points, score_vars.empty() ? ReduceOp::None : ReduceOp::Sum,
                                           score_vars, pair->args[0]);
    const std::string top = value_stage("_max", score_rows, ReduceOp::Max, over, at(scores, at_score_point));
    const std::string weights =
        value_stage("_weights", score_points, ReduceOp::None, {},
                    Call::make(Builtin::Exp, {at(scores, at_score_point) - at(top, at_score_row)}));
    const std::string total = value_stage("_total", score_rows, ReduceOp::Sum, over, at(weights, at_score_point));
    const std::string two_pass = value_stage("_two_pass", rows, ReduceOp::Sum, over,
                                             at(weights, at_score_point) * pair->args[1] / at(total, at_score_row));
    const std::string magnitude =
        value_stage("_magnitude", rows, ReduceOp::Sum, over,
                    at(weights, at_score_point) * Call::make(Builtin::Abs, {pair->args[1]}) / at(total, at_score_row));
    const Expr rescaling =
        num(kSigmas * unit_roundoff(type) * std::sqrt(static_cast<double>(n_))) * as_bound(at(magnitude, at_));
    finish(new_stage("_bound", ReduceOp::None,
                     plus(load(b_->out.bound_of.at(two_pass)), rescaling + Bounder::rounding(value_, y_.type))));
  }

  // A new f32 stage over the stage's element (and its reduction, unless `over` is
  // None) holding `body`; returns its name.
  std::string new_stage(const std::string &suffix, ReduceOp over, const Expr &body) {
    const std::string name = b_->names.fresh(stage_.output + suffix);
    b_->out.graph.tensors.push_back(temp_tensor(name, kBoundType, stage_.spatial));
    Stage s;
    s.output = name;
    s.spatial = stage_.spatial;
    s.reduce = over;
    if (over != ReduceOp::None) s.reduce_vars = stage_.reduce_vars;
    s.body = body;
    s.loc = stage_.loc;
    b_->out.graph.stages.push_back(s);
    return name;
  }
  // A new stage's tensor at the element.
  Expr load(const std::string &name) const { return Load::make(kBoundType, name, at_); }
  // `name` is the stage's bound: an output where the stage's tensor is one.
  void finish(std::string name) {
    // A 16-bit value that may reach the format's edge: the device may store the largest
    // finite value where the reference stored an infinity, or the other way (a variance
    // of large activations at f16: 65504 against inf, its rsqrt 0.0039 against 0), and
    // what reads it may differ by anything. Unknown there (infinity), as a flipped
    // comparison is; but not where the value is exact (a mask's -inf: its bound is its
    // rounding alone).
    if (is_half(y_.type)) {
      const Expr bound = load(name);
      const Expr computed = greater(bound, Bounder::rounding(value_, y_.type));
      const Expr edge = Binary::make(BinaryOp::Ge, abs_of(value_) + bound, num(largest_finite(y_.type)));
      name = new_stage("_edge", ReduceOp::None,
                       Select::make(Binary::make(BinaryOp::And, computed, edge), num(kInfinity), bound));
    }
    b_->out.bound_of[stage_.output] = name;
    if (y_.role == TensorRole::Output)
      for (TensorDecl &t : b_->out.graph.tensors)
        if (t.name == name) t.role = TensorRole::Output;
  }
  // The term at the point before this one along the innermost reduction variable (the
  // first point's own: it has none before it), as f32.
  Expr previous_term() const {
    const IterVar &v = stage_.reduce_vars.back();
    const Expr k = iter_var(v);
    const Expr before = Binary::make(BinaryOp::Max, k - make_int(1, k.type()), make_int(0, k.type()));
    return as_bound(substitute(stage_.body, {{v.name, before}}));
  }
  // The reduction point's number in order (innermost fastest), as f32.
  Expr position() const {
    Expr p;
    for (const IterVar &v : stage_.reduce_vars) {
      const Expr k = cast_to(DType::I64, iter_var(v));
      p = p.defined() ? p * make_int(v.extent, DType::I64) + k : k;
    }
    return p.defined() ? as_bound(p) : num(0);
  }
};

void add_bound(Building *b, const Stage &stage) { StageBound(b, stage).add(); }

}  // namespace

ErrorBounds with_error_bounds(const Graph &graph, Precision precision) {
  Building b;
  b.precision = precision;
  b.out.graph = graph;
  b.out.graph.stages.clear();
  b.names = graph_names(graph);
  for (const Stage &stage : graph.stages) {
    b.out.graph.stages.push_back(stage);
    add_bound(&b, stage);
  }
  verify_graph(b.out.graph);
  return std::move(b.out);
}

}  // namespace ks
