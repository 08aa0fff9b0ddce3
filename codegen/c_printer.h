// The C-like printer shared by kernelsmith's code generators: Loop IR statements and
// expressions to C syntax, with every target difference (type names, builtin
// spellings, work-item indices, barriers, reserved words) taken from a CTarget.
// Output is deterministic: the same program prints the same text.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/bounds.h"
#include "ir/builtins.h"
#include "ir/loop_ir.h"

namespace ks {

/// How a builtin is written on a target: a function the target has (`exp`), or a
/// helper the printer defines once in the prelude (`ks_gelu`).
struct BuiltinSpelling {
  std::string function;
  std::string helper_definition;  // empty when the target has the function
};

/// What differs between C-like targets.
struct CTarget {
  std::string f32_type = "float", i32_type = "int", i64_type = "long", bool_type = "int";
  std::string f32_suffix = "f", i64_suffix = "L";
  std::string infinity = "INFINITY", nan = "NAN";
  std::string float_min = "fmin", float_max = "fmax", int_min = "min", int_max = "max", float_mod = "fmod";
  std::string group_id = "get_group_id", local_id = "get_local_id";
  std::string local_barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  std::string global_barrier = "barrier(CLK_GLOBAL_MEM_FENCE);";
  std::string local_qualifier = "__local";
  std::string global_qualifier = "__global";
  // Vectors: the type name followed by the lane count (float4), loads and stores
  // named vloadN/vstoreN; without vector_load, vectorized loops print as unrolled
  // loops (their lanes are independent, so either order is right).
  std::string vector_load = "vload", vector_store = "vstore";
  // Local arrays are aligned for the widest vector (16 x 4 bytes), so an access
  // whose offset is a multiple of its lane count can be one wide load.
  std::string local_alignment = " __attribute__((aligned(64)))";
  std::string unroll_pragma = "#pragma unroll";
  std::string helper_qualifier = "inline";
  std::map<Builtin, BuiltinSpelling> builtins;
  std::set<std::string> reserved;  // identifiers a kernel name may not take
};

/// Prints one kernel body; collects the helpers it used.
class CPrinter {
 public:
  CPrinter(const CTarget &target, const Program &program);

  /// A name that is safe on the target (reserved words get a trailing '_').
  std::string c_name(const std::string &name) const;
  std::string type_name(DType type) const;

  /// The statements of a kernel body at the given indentation. Local allocations
  /// are hoisted: see local_declarations().
  std::string kernel_body(const Stmt &body, int indent);
  /// Declarations of every local-memory buffer in the body (OpenCL C 1.2 wants
  /// them at kernel scope).
  std::string local_declarations(const Stmt &body, int indent);
  /// The helper functions used so far, in a fixed order.
  std::string helpers() const;

  std::string expr(const Expr &e);

 private:
  struct Impl;
  const CTarget &target_;
  const Program &program_;
  std::set<std::string> helpers_used_;  // by helper name, printed sorted
  std::map<std::string, std::string> helper_text_;
  friend struct Impl;
};

}  // namespace ks
