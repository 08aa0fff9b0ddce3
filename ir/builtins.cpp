// Float64 definitions of the builtins. Activation formulas follow PyTorch's
// definitions (gelu: the erf form; softplus: threshold 20; selu's constants).
#include "ir/builtins.h"

#include <cmath>

namespace ks {

const std::vector<BuiltinInfo> &all_builtins() {
  static const std::vector<BuiltinInfo> table = {
#define KS_BUILTIN_ROW(id, name, arity) {Builtin::id, name, arity},
      KS_FOR_EACH_BUILTIN(KS_BUILTIN_ROW)
#undef KS_BUILTIN_ROW
  };
  return table;
}

const BuiltinInfo &builtin_info(Builtin id) { return all_builtins()[static_cast<size_t>(id)]; }

std::optional<Builtin> find_builtin(const std::string &name) {
  for (const BuiltinInfo &info : all_builtins())
    if (name == info.name) return info.id;
  return std::nullopt;
}

bool is_function(Builtin id) { return id != Builtin::SoftmaxPair; }

std::optional<DType> rounded_format(Builtin id) {
  if (id == Builtin::RoundF16) return DType::F16;
  if (id == Builtin::RoundBf16) return DType::BF16;
  return std::nullopt;
}

Builtin rounding_to(DType format) { return format == DType::F16 ? Builtin::RoundF16 : Builtin::RoundBf16; }

double eval_builtin(Builtin id, const double *a) {
  const double x = a[0];
  switch (id) {
    case Builtin::Exp: return std::exp(x);
    case Builtin::Exp2: return std::exp2(x);
    case Builtin::Log: return std::log(x);
    case Builtin::Log2: return std::log2(x);
    case Builtin::Log1p: return std::log1p(x);
    case Builtin::Expm1: return std::expm1(x);
    case Builtin::Sqrt: return std::sqrt(x);
    case Builtin::Rsqrt: return 1.0 / std::sqrt(x);
    case Builtin::Tanh: return std::tanh(x);
    case Builtin::Erf: return std::erf(x);
    case Builtin::Sin: return std::sin(x);
    case Builtin::Cos: return std::cos(x);
    case Builtin::Abs: return std::fabs(x);
    case Builtin::Floor: return std::floor(x);
    case Builtin::Ceil: return std::ceil(x);
    case Builtin::Sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case Builtin::Pow: return std::pow(x, a[1]);
    case Builtin::Clamp: return std::fmin(std::fmax(x, a[1]), a[2]);
    case Builtin::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Builtin::Relu: return x > 0 ? x : 0.0;
    case Builtin::LeakyRelu: return x >= 0 ? x : x * a[1];
    case Builtin::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Builtin::GeluTanh: {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case Builtin::Softplus: return x > 20.0 ? x : std::log1p(std::exp(x));
    case Builtin::Silu: return x / (1.0 + std::exp(-x));
    case Builtin::Mish: return x * std::tanh(x > 20.0 ? x : std::log1p(std::exp(x)));
    case Builtin::Elu: return x > 0 ? x : a[1] * std::expm1(x);
    case Builtin::Selu: {
      const double alpha = 1.6732632423543772848170429916717;
      const double scale = 1.0507009873554804934193349852946;
      return scale * (x > 0 ? x : alpha * std::expm1(x));
    }
    case Builtin::Hardtanh: return std::fmin(std::fmax(x, a[1]), a[2]);
    case Builtin::Hardsigmoid: return std::fmin(std::fmax(x / 6.0 + 0.5, 0.0), 1.0);
    case Builtin::Hardswish: return x * std::fmin(std::fmax(x + 3.0, 0.0), 6.0) / 6.0;
    case Builtin::RoundF16: return round_to(DType::F16, x);
    case Builtin::RoundBf16: return round_to(DType::BF16, x);
    case Builtin::SoftmaxPair: break;
  }
  return std::nan("");
}

}  // namespace ks
