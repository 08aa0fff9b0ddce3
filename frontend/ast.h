// The syntax tree of a .ks spec, as written: names unresolved, sizes symbolic,
// every node with its source location (errors point at it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"

namespace ks::frontend {

struct AstExpr {
  enum class Kind { Int, Float, Name, Call, Access, Unary, Binary };
  Kind kind = Kind::Int;
  SourceLoc loc;
  std::string text;  // Name: the name; Call/Access: the callee or tensor; Unary/Binary: the operator
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<std::unique_ptr<AstExpr>> args;  // call arguments, indices, or operands
  std::unique_ptr<AstExpr> pad;                // Access: the value read outside the tensor
  int depth = 1;                               // 1 + the deepest child: bounds recursion later
};
using AstExprPtr = std::unique_ptr<AstExpr>;

/// `x: f32[M, K] in -1.0..1.0`
struct AstTensor {
  std::string name;
  SourceLoc loc;
  std::string dtype;
  SourceLoc dtype_loc;
  std::vector<AstExprPtr> shape;
  AstExprPtr range_lo, range_hi;
};

/// An index variable, with its extent when written (`k` or `k: K`), or, for a
/// reduction variable, its range (`k: 0..i + 1`, bounds that may name outer indices).
struct AstIndexVar {
  std::string name;
  SourceLoc loc;
  AstExprPtr extent;  // `k: K`
  AstExprPtr lo, hi;  // `k: LO..HI`
};

/// `acc[m, n] = sum(k) x[m, k] * w[n, k]`
struct AstStatement {
  std::string tensor;
  SourceLoc loc;
  std::vector<AstIndexVar> indices;
  std::string reduce;  // empty when there is no reduction
  SourceLoc reduce_loc;
  std::vector<AstIndexVar> reduce_vars;
  AstExprPtr body;
};

/// `M = 1024`
struct AstSize {
  std::string name;
  SourceLoc loc;
  AstExprPtr value;
};

/// `eps = 1e-5`: a named float, overridable like a size.
struct AstConstant {
  std::string name;
  SourceLoc loc;
  double value = 0;
};

struct Spec {
  std::shared_ptr<const SourceFile> file;
  std::string name;
  SourceLoc loc;
  std::vector<AstTensor> inputs, outputs;
  std::vector<AstSize> sizes;            // `where`: defaults, in order
  std::vector<AstSize> check_sizes;      // `check`: sizes for the correctness check
  std::vector<AstExprPtr> requirements;  // `require`: conditions every set of sizes meets (`C % G == 0`)
  std::vector<AstConstant> constants;    // `const`: named floats (eps, slopes, scales)
  std::vector<AstStatement> statements;
};

}  // namespace ks::frontend
