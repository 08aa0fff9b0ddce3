// Graph IR: the operator graph of one kernel spec, with every size bound to a
// number. Tensors have a name, a type and a shape; each stage defines one tensor:
//
//   out[i: I, j: J] = reduce(k: K) body
//
// For every point (i, j) of the output, body is evaluated at every point k of the
// reduction domain and the values are combined by the reduce operator (sum, prod,
// max, min; argmax and argmin give the row-major linear index of the first best
// point). Without a reduction, out[i, j] = body. Stages run in order; a stage reads
// inputs and tensors defined by earlier stages only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/ir.h"

namespace ks {

enum class TensorRole { Input, Output, Temp };
const char *tensor_role_name(TensorRole role);  // "input", "output", "temp"

/// The values an input takes: random inputs are drawn from it, and bounds analysis
/// trusts it for indices read from integer tensors. Integers: [lo, hi); floats: [lo, hi].
struct ValueRange {
  double lo = 0, hi = 0;
};

/// A tensor of Graph IR, and a global buffer of Loop IR.
struct TensorDecl {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::Temp;
  std::optional<ValueRange> range;
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtype_bytes(type); }
};

struct IterVar {
  std::string name;
  int64_t extent = 1;
};

/// LogSumExp: log(sum exp(body)), in one pass (a running maximum and a rescaled running
/// sum, combined as one value by BinaryOp::LogAddExp).
/// SoftmaxSum: a softmax-weighted sum, sum(j) softmax(score)[j] * value[j], written by
/// the online_attention rewrite (never by a spec): the body is softmax_pair(score,
/// value), and the last Stage::score_vars reduction variables are summed inside the
/// score at each point of the others (attention's scores, q . k, in the same loop).
/// Lowered in one pass: a running maximum, a rescaled running sum and a rescaled
/// accumulator (passes/lower.cpp).
enum class ReduceOp { None, Sum, Prod, Max, Min, ArgMax, ArgMin, LogSumExp, SoftmaxSum };
const char *reduce_op_name(ReduceOp op);  // "sum", ...
std::optional<ReduceOp> parse_reduce_op(const std::string &name);
/// The value a reduction starts from (argmax and argmin: of the best value).
double reduce_identity(ReduceOp op);

struct Stage {
  std::string output;
  std::vector<IterVar> spatial;  // one per output dimension, in order
  ReduceOp reduce = ReduceOp::None;
  std::vector<IterVar> reduce_vars;
  size_t score_vars = 0;  // softmax_sum: how many of reduce_vars, the last, sum the score
  Expr body;
  SourceLoc loc;  // the statement that defines it, for messages (a rewrite's stage: its origin's)
};

struct SizeBinding {
  std::string name;
  int64_t value = 0;
};

/// A named float of the spec (`const eps = 1e-5`): stages hold its value; the graph
/// keeps the name so that the IR says which number is which.
struct ConstantBinding {
  std::string name;
  double value = 0;
};

struct Graph {
  std::string name;
  std::vector<SizeBinding> sizes;          // the size symbols the graph was elaborated with
  std::vector<ConstantBinding> constants;  // and its constants
  std::vector<TensorDecl> tensors;
  std::vector<Stage> stages;
  const TensorDecl *find_tensor(const std::string &name) const;
};

int64_t shape_numel(const std::vector<int64_t> &shape);

}  // namespace ks
