#include "ir/graph.h"

#include <limits>

namespace ks {

const char *tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::Input: return "input";
    case TensorRole::Output: return "output";
    case TensorRole::Temp: return "temp";
  }
  return "?";
}

int64_t shape_numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

int64_t TensorDecl::numel() const { return shape_numel(shape); }

const char *reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::None: return "none";
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::ArgMax: return "argmax";
    case ReduceOp::ArgMin: return "argmin";
    case ReduceOp::LogSumExp: return "logsumexp";
    case ReduceOp::SoftmaxSum: return "softmax_sum";
  }
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(const std::string &name) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin,
                      ReduceOp::LogSumExp})
    if (name == reduce_op_name(op)) return op;
  return std::nullopt;
}

double reduce_identity(ReduceOp op) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::SoftmaxSum: return 0.0;
    case ReduceOp::Prod: return 1.0;
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
    case ReduceOp::LogSumExp: return -inf;
    case ReduceOp::Min:
    case ReduceOp::ArgMin: return inf;
    case ReduceOp::None: return 0.0;
  }
  return 0.0;
}

const TensorDecl *Graph::find_tensor(const std::string &name) const {
  for (const TensorDecl &t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace ks
