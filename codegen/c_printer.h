// The C-like printer shared by kernelsmith's code generators: Loop IR statements and
// expressions to C syntax, with every target difference (type names, builtin
// spellings, work-item indices, barriers, reserved words) taken from a CTarget.
// Output is deterministic: the same program prints the same text.
#pragma once

#include <array>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/bounds.h"
#include "ir/builtins.h"
#include "ir/loop_ir.h"
#include "ir/matrix_tile.h"

namespace ks {

/// How a builtin is written on a target: a function the target has (`exp`), or a
/// helper the printer defines once in the prelude (`ks_gelu`).
struct BuiltinSpelling {
  std::string function;
  std::string helper_definition;   // empty when the target has the function
  std::vector<std::string> needs;  // the target's base helpers the definition calls
};

/// How a target writes an AsyncCopy (passes/async_copy.cpp): as NVIDIA's PTX cp.async
/// (sm_80 and later, through OpenCL C's inline assembly); in order, as plain stores
/// (the same results without the overlap: how the tests check a ring of copies on a
/// device that has no asynchronous copies); or not at all, the code generator then
/// refusing with CTarget::async_copy_refusal.
enum class AsyncCopies { Refused, InOrder, Ptx };

/// How a target writes a matrix loop (tensorize): as NVIDIA's mma.sync (sm_80 and
/// later, through OpenCL C's inline assembly); as cooperative matrices (GLSL's
/// GL_NV_cooperative_matrix, on a Vulkan device with VK_NV_cooperative_matrix: f16
/// operands in blocks loaded whole from memory, f32 sums); emulated, in portable code
/// that reads each operand from the lane and register where the instruction's fragment
/// layout puts it, with the same TF32 rounding (how the tests check the layout on
/// a device without matrix units); or not at all, the code generator then refusing
/// with CTarget::matrix_refusal.
enum class MatrixUnits { Refused, Emulated, Ptx, Cooperative };

/// The local memory a warp's cooperative matrices pass their sums through: one 16 x 8
/// f32 matrix (CPrinter::uses_cooperative_matrices).
constexpr int64_t kCooperativeScratchFloats = 16 * 8;
/// Those of a work-group of `items` work-items (the lanes are local x, 32 of them).
constexpr int64_t cooperative_scratch_floats(int64_t items) { return items / 32 * kCooperativeScratchFloats; }

/// What differs between C-like targets.
struct CTarget {
  std::string f32_type = "float", i32_type = "int", i64_type = "long", bool_type = "int", f64_type = "double";
  // How a 16-bit tensor's buffer is declared (its elements read and written through
  // vload_half/vstore_half_rte, and bf16 by bit shifts: c_printer.cpp), and a local
  // copy of one (its bits).
  std::string f16_storage = "half", bf16_storage = "ushort", half_local = "ushort";
  // Where set, every 16-bit element (f16 too) is a 16-bit integer lvalue of this type,
  // read and written through the base helpers ks_from_f16, ks_to_f16, ks_from_bf16 and
  // ks_to_bf16 (GLSL's uint16_t: no vload_half there); else OpenCL C's half pointers.
  std::string half_bits_type;
  std::string f32_suffix = "f", i64_suffix = "L";
  std::string infinity = "INFINITY", nan = "NAN";
  std::string float_min = "fmin", float_max = "fmax", int_min = "min", int_max = "max", float_mod = "fmod";
  // Functions the target lacks, defined by the printer where used (before the
  // builtin helpers, which may call them): name -> definition.
  std::map<std::string, std::string> base_helpers;
  // The work-group and work-item indices along x, y, z.
  std::array<std::string, 3> group_index{"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"};
  std::array<std::string, 3> local_index{"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"};
  bool constructor_casts = false;  // int(x) rather than (int)x
  // Unsigned types of the same width (uint, uint64_t): every integer division and
  // remainder prints through them, since the target's signed `/` and `%` are not
  // trusted with negative operands (GLSL leaves `%` there undefined; NVIDIA's Vulkan
  // driver gives OpSMod(-3, 3) as 3), and they cost less; empty: signed, as C
  // defines them.
  std::string u32_type, u64_type;
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
  // Subgroup reductions by operation (GLSL's subgroupAdd, ...), with the subgroup
  // index, the lane, the count of subgroups, their size and the election; empty
  // where the target has none, and the group trees of cross_reduce then print as
  // trees in local memory.
  std::map<BinaryOp, std::string> subgroup_reduce;
  std::string subgroup_id, subgroup_lane, subgroup_count, subgroup_size, subgroup_elect;
  AsyncCopies async_copies = AsyncCopies::Refused;
  std::string async_copy_refusal;  // why, where async_copies is Refused
  MatrixUnits matrix_units = MatrixUnits::Refused;
  std::string matrix_refusal;  // why, where matrix_units is Refused
  Precision precision = Precision::F32;
  std::string unroll_pragma = "#pragma unroll";
  // A float's bits as a u32, and back (tensorize's TF32 rounding).
  std::string float_bits = "as_uint", bits_float = "as_float";
  std::string helper_qualifier = "inline";
  std::map<Builtin, BuiltinSpelling> builtins;
  std::set<std::string> reserved;  // identifiers a kernel name may not take
  // Prefixes a name may not start with: the printer's own (ks_) and the target's.
  std::vector<std::string> reserved_prefixes{"ks_", "__"};
};

/// The refusal of an AsyncCopy on a target without asynchronous copies: what it needs,
/// then ", which " + why_not ("opencl:0 (PoCL) does not offer").
std::string async_copy_refusal(const std::string &why_not);
/// Likewise for a matrix loop on a target without matrix units.
std::string matrix_refusal(const std::string &why_not);

/// OpenCL C's conversion between f32 and bf16 (a ushort: an f32's top 16 bits), of one
/// value or of vectors of `lanes` (the same operations lane by lane: OpenCL C's integer
/// operators and select are component-wise): `ks_to_bf16[_N]` rounds to nearest, ties
/// to even, NaN staying quiet; `ks_from_bf16[_N]` is exact. Its name and definition:
/// the printer's helper, the evaluator's input draws and comparisons.
struct Bf16Conversion {
  std::string name, definition;
};
Bf16Conversion bf16_conversion(bool to, int64_t lanes = 1);

/// Spells each builtin as the target's function of the builtin's own name (exp,
/// tanh, ...), which C and GLSL share.
void spell_by_name(CTarget *target, std::initializer_list<Builtin> builtins);

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
  /// Whether a body printed so far uses subgroup operations.
  bool uses_subgroups() const { return uses_subgroups_; }
  /// Whether a body printed so far uses f64.
  bool uses_f64() const { return uses_f64_; }
  /// Whether a body printed so far uses cooperative matrices: the kernel then declares
  /// `shared float ks_scratch[kCooperativeScratchFloats * warps]`, through
  /// which their sums reach the lanes (CPrinter's cooperative_matrix_loop).
  bool uses_cooperative_matrices() const { return uses_cooperative_matrices_; }

  std::string expr(const Expr &e);

 private:
  struct Impl;
  const CTarget &target_;
  const Program &program_;
  // Helpers used so far, by name, printed sorted: base helpers, then the others.
  std::map<std::string, std::string> base_helpers_used_, helpers_used_;
  bool uses_subgroups_ = false;
  mutable bool uses_f64_ = false;
  bool uses_cooperative_matrices_ = false;
  friend struct Impl;
};

}  // namespace ks
