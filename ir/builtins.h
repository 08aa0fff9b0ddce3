// Math builtins callable from the DSL. This table is the meaning of each (its
// float64 definition, used by the reference interpreter); targets say how to spell
// them in their own tables (codegen/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"

namespace ks {

// clang-format off
#define KS_FOR_EACH_BUILTIN(X)                                                                                        \
  X(Exp, "exp", 1)                                                                                                    \
  X(Exp2, "exp2", 1) X(Log, "log", 1) X(Log2, "log2", 1) X(Log1p, "log1p", 1) X(Expm1, "expm1", 1) X(Sqrt, "sqrt", 1) \
      X(Rsqrt, "rsqrt", 1) X(Tanh, "tanh", 1) X(Erf, "erf", 1) X(Sin, "sin", 1) X(Cos, "cos", 1) X(Abs, "abs", 1)     \
          X(Floor, "floor", 1) X(Ceil, "ceil", 1) X(Sign, "sign", 1) X(Pow, "pow", 2) X(Clamp, "clamp", 3)            \
              X(Sigmoid, "sigmoid", 1) X(Relu, "relu", 1) X(LeakyRelu, "leaky_relu", 2) X(Gelu, "gelu", 1)            \
                  X(GeluTanh, "gelu_tanh", 1) X(Softplus, "softplus", 1) X(Silu, "silu", 1) X(Mish, "mish", 1)        \
                      X(Elu, "elu", 2) X(Selu, "selu", 1) X(Hardtanh, "hardtanh", 3) X(Hardsigmoid, "hardsigmoid", 1) \
                          X(Hardswish, "hardswish", 1) X(SoftmaxPair, "softmax_pair", 2) \
                              X(RoundF16, "f16", 1) X(RoundBf16, "bf16", 1)
// clang-format on

enum class Builtin {
#define KS_BUILTIN_ENUM(id, name, arity) id,
  KS_FOR_EACH_BUILTIN(KS_BUILTIN_ENUM)
#undef KS_BUILTIN_ENUM
};

struct BuiltinInfo {
  Builtin id;
  const char *name;
  int arity;
};

const BuiltinInfo &builtin_info(Builtin id);
std::optional<Builtin> find_builtin(const std::string &name);
const std::vector<BuiltinInfo> &all_builtins();

/// softmax_pair(score, value) is no function: it is the body of a softmax_sum
/// reduction (ir/graph.h), which a rewrite writes and lowering takes apart; specs
/// cannot call it, nothing evaluates it (NaN), no target spells it.
bool is_function(Builtin id);

/// f16(x) and bf16(x): an f32 value rounded to the 16-bit format, to nearest even (a
/// value of the format, computed with as f32: PyTorch's `x.to(torch.bfloat16)` meeting
/// f32 values). A 16-bit temporary a rewrite folds into its readers leaves one where it
/// was read, so the value keeps its declared type. The format a rounding builtin rounds
/// to, else nullopt; and the builtin of a 16-bit format.
std::optional<DType> rounded_format(Builtin id);
Builtin rounding_to(DType format);

/// The float64 definition of a builtin: args has builtin_info(id).arity values.
double eval_builtin(Builtin id, const double *args);

}  // namespace ks
