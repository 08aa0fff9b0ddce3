// C-like printing of Loop IR. Buffers are flat arrays: a multi-dimensional index
// becomes a row-major offset in Horner form, computed in the 64-bit type when the
// buffer has more than 2^31 - 1 elements. Private buffers of one element print as
// scalars. Integer division prints as C's `/` and `%` when the numerator is proven
// non-negative and the divisor a positive constant, else through floor helpers.
// A vectorized loop prints once, at lane 0: its variable and the index lets made
// from it are scalars there, so an index gives the address of lane 0; accesses
// that vary by lane are vector loads and stores (a plain wide access where the
// offset is provably a multiple of the lanes, vloadN/vstoreN otherwise), and
// values that do not vary are widened where an operation needs a vector.
#include "codegen/c_printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "ir/affine.h"
#include "ir/group_tree.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/vector_form.h"
#include "ir/verifier.h"
#include "ir/visitor.h"

namespace ks {

std::string async_copy_refusal(const std::string &why_not) {
  return "error: the schedule's async_copy needs asynchronous global-to-local copies (PTX cp.async through "
         "NVIDIA's OpenCL, compute capability 8.0 or later), which " +
         why_not;
}

std::string matrix_refusal(const std::string &why_not) {
  return "error: the schedule's tensorize needs matrix units (mma.sync through NVIDIA's OpenCL, compute capability "
         "8.0 or later), which " +
         why_not;
}

Bf16Conversion bf16_conversion(bool to, int64_t lanes) {
  const std::string n = lanes == 1 ? "" : std::to_string(lanes);
  const std::string name = std::string(to ? "ks_to_bf16" : "ks_from_bf16") + (n.empty() ? "" : "_" + n);
  const std::string uint_t = "uint" + n, ushort_t = "ushort" + n, float_t = "float" + n;
  if (!to)
    return {name, float_t + " " + name + "(" + ushort_t + " b) { return as_" + float_t + "(convert_" + uint_t +
                      "(b) << 16); }\n"};
  return {name,
          ushort_t + " " + name + "(" + float_t + " x) {\n  const " + uint_t + " u = as_" + uint_t + "(x);\n  const " +
              uint_t +
              " nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // to nearest, ties to even\n  return convert_" +
              ushort_t +
              "(select(nearest, (u >> 16) | 0x40u, (u & 0x7fffffffu) > 0x7f800000u));  // NaN stays quiet\n}\n"};
}

namespace {

// C precedence levels (higher binds tighter).
constexpr int kTernary = 3, kOr = 4, kAnd = 5, kEquality = 9, kRelational = 10, kAdditive = 12, kMultiplicative = 13,
              kUnary = 14, kPrimary = 16;

int c_precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::Eq:
    case BinaryOp::Ne: return kEquality;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: return kRelational;
    case BinaryOp::Add:
    case BinaryOp::Sub: return kAdditive;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return kMultiplicative;
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::LogAddExp: return kPrimary;
  }
  return kPrimary;
}

std::string format_f32(double value, const CTarget &t) {
  if (std::isnan(value)) return t.nan;
  if (std::isinf(value)) return value > 0 ? t.infinity : "(-" + t.infinity + ")";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value));
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + t.f32_suffix;
}

}  // namespace

struct CPrinter::Impl : public IRVisitorStrict {
  CPrinter &p;
  std::ostringstream out;
  int indent = 0;
  BoundsScope scope;
  bool in_async_copy = false;             // printing an AsyncCopy's stores as cp.async
  std::map<std::string, DType> unrolled;  // the unrolled and vectorized loops' variables
  // Buffers visible in the body: globals from the program, allocations as met.
  std::map<std::string, TensorDecl> buffers;
  std::map<std::string, MemoryScope> scopes;
  // Private f32 arrays that hold bf16 values only (packed_private): two a 32-bit word.
  std::set<std::string> packed;
  // Result of the last expression visit, with its C precedence.
  std::string text;
  int precedence = kPrimary;
  // Affine forms of the integer lets in scope, for the alignment of vector accesses.
  std::map<std::string, Affine> affine_lets;
  // The power of two (up to 64) that each integer let is known to be a multiple of,
  // where more than 1: `g % 32 * 4` is a multiple of 4 though not affine.
  std::map<std::string, int64_t> let_multiples;
  int64_t let_multiple(const std::string &name) const {
    auto it = let_multiples.find(name);
    return it == let_multiples.end() ? 1 : it->second;
  }
  int64_t multiple_of(const Expr &e) const {
    if (auto c = as_const_int(e)) {
      int64_t m = 1;
      while (*c % (m * 2) == 0 && m < 64) m *= 2;  // 0 is a multiple of everything: 64
      return m;
    }
    if (const Var *v = e.as<Var>()) return let_multiple(v->name);
    const Binary *b = e.as<Binary>();
    if (!b) return 1;
    if (b->op == BinaryOp::Mul) return std::min<int64_t>(64, multiple_of(b->a) * multiple_of(b->b));
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mod)
      return std::min(multiple_of(b->a), multiple_of(b->b));
    return 1;
  }
  // The vectorized loop being printed, if any; index expressions inside it are
  // scalars (in_index counts the indices being printed).
  struct VectorLoop {
    const For *loop;
    VectorForm form;
  };
  std::optional<VectorLoop> vector_loop;
  int in_index = 0;
  std::array<int64_t, 3> local_shape{1, 1, 1};  // the kernel's work-group
  Stmt root;                                    // the kernel's body (a matrix loop's form reads around it)
  // A matrix loop whose instructions' sums run across the serial loop around it.
  struct MatrixRun {
    const For *matrix;
    std::string loop;  // the serial loop, as printed
    int64_t extent, period, count;
  };
  std::map<const For *, MatrixRun> runs;
  // A matrix loop's operand (true: A) whose fragments were loaded before a serial loop
  // around it (hoist_invariant_operands): the registers' array, step by step.
  std::map<std::pair<const For *, bool>, std::string> hoisted;

  explicit Impl(CPrinter &printer) : p(printer) {
    for (const TensorDecl &b : p.program_.buffers) {
      buffers[b.name] = b;
      scopes[b.name] = MemoryScope::Global;
      if (is_int(b.type) && b.range) scope.buffer_values[b.name] = tensor_value_interval(b);
    }
  }

  std::string line() { return std::string(static_cast<size_t>(indent) * 2, ' '); }

  std::string sub(const Expr &e, int min_precedence) {
    dispatch(e);
    return precedence < min_precedence ? "(" + text + ")" : text;
  }
  void set(std::string t, int prec) {
    text = std::move(t);
    precedence = prec;
  }

  std::string use_helper(Builtin fn) {
    const BuiltinSpelling &s = p.target_.builtins.at(fn);
    if (!s.helper_definition.empty()) p.helpers_used_[s.function] = s.helper_definition;
    for (const std::string &need : s.needs) use_function(need);
    return s.function;
  }
  // A function of the target, or one of its base helpers (then defined once).
  const std::string &use_function(const std::string &name) {
    auto base = p.target_.base_helpers.find(name);
    if (base != p.target_.base_helpers.end()) p.base_helpers_used_[name] = base->second;
    return name;
  }
  void print_cast(DType type, const Expr &value) {
    if (p.target_.constructor_casts) {
      set(p.type_name(type) + "(" + sub(value, 0) + ")", kPrimary);
    } else {
      set("(" + p.type_name(type) + ")" + sub(value, kUnary), kUnary);
    }
  }

  // log(exp(a) + exp(b)) as the larger plus log(1 + exp(smaller - larger)): no
  // overflow for large values, -inf (not NaN) where both are -inf.
  std::string log_add_exp_helper(DType type) {
    const CTarget &t = p.target_;
    const std::string &ty = p.type_name(type);
    const std::string name = std::string("ks_logaddexp_") + dtype_name(type);
    const std::string one = type == DType::F32 && !t.constructor_casts ? "1.0f" : "1.0";
    // GLSL has no exp or log of doubles: there the correction, between 0 and log 2, is
    // computed in float (the f64 reference's running value keeps its precision).
    const bool narrow = type == DType::F64 && t.constructor_casts;
    const std::string d = t.float_min + "(a, b) - m", correction = "log(" + one + " + exp(" + d + "))";
    std::string qualifier = t.helper_qualifier.empty() ? "" : t.helper_qualifier + " ";
    p.helpers_used_[name] = qualifier + ty + " " + name + "(" + ty + " a, " + ty + " b) {\n" + "  " + ty +
                            " m = " + t.float_max + "(a, b);\n" + "  if (isinf(m) && m < " +
                            (one == "1.0f" ? "0.0f" : "0.0") + ") return m;\n" + "  return m + " +
                            (narrow ? ty + "(log(1.0 + exp(float(" + d + "))))" : correction) + ";\n}\n";
    return name;
  }

  // Division rounding down, and its remainder (the divisor's sign), as the IR means
  // them. Where the target has unsigned types its signed `/` and `%` are not trusted
  // with a negative operand (CTarget::u32_type): the quotient is taken of magnitudes,
  // ~n (that is -n - 1) standing for a negative n.
  std::string floor_helper(bool mod, DType type) {
    const std::string &t = p.type_name(type);
    const std::string &u = type == DType::I64 ? p.target_.u64_type : p.target_.u32_type;
    std::string name = std::string(mod ? "ks_floormod_" : "ks_floordiv_") + dtype_name(type);
    std::string qualifier = p.target_.helper_qualifier.empty() ? "" : p.target_.helper_qualifier + " ";
    std::string def = qualifier + t + " " + name + "(" + t + " a, " + t + " b) {\n";
    if (u.empty()) {
      def += "  " + t + " q = a / b;\n  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\n";
    } else {
      auto cast = [&](const std::string &type_name, const std::string &v) {
        return p.target_.constructor_casts ? type_name + "(" + v + ")" : "(" + type_name + ")(" + v + ")";
      };
      def += "  " + t + " n = b < 0 ? -a : a, d = b < 0 ? -b : b;\n  " + t + " q = n >= 0 ? " +
             cast(t, cast(u, "n") + " / " + cast(u, "d")) + " : -" + cast(t, cast(u, "~n") + " / " + cast(u, "d")) +
             " - " + cast(t, "1") + ";\n";
    }
    def += mod ? "  return a - q * b;\n}\n" : "  return q;\n}\n";
    p.helpers_used_[name] = def;
    return name;
  }

  // The flat offset of indices into a buffer of the given shape.
  std::string offset(const std::string &buffer, const std::vector<Expr> &indices) {
    const TensorDecl &b = buffers.at(buffer);
    if (indices.empty()) return "0";
    ++in_index;
    bool wide = b.numel() > INT32_MAX;
    DType type = wide ? DType::I64 : DType::I32;
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr index = cast_to(type, indices[d]);
      if (!flat.defined()) {
        flat = index;
      } else {
        flat = Binary::make(BinaryOp::Add, Binary::make(BinaryOp::Mul, flat, make_int(b.shape[d], type)), index);
      }
    }
    std::string text = sub(flat, 0);
    --in_index;
    return text;
  }

  // ---- vectors ----
  bool lanes_vary(const Expr &e) const { return vector_loop && !in_index && mentions(e, vector_loop->form.varying); }
  bool lanes_vary(const std::vector<Expr> &es) const {
    return std::any_of(es.begin(), es.end(), [&](const Expr &e) { return lanes_vary(e); });
  }
  int64_t lanes() const { return vector_loop->loop->extent; }
  std::string vector_type(DType type) const { return p.type_name(type) + std::to_string(lanes()); }
  // e as a vector: itself when it varies by lane, else widened.
  std::string widened(const Expr &e) {
    if (lanes_vary(e)) return sub(e, 0);
    return "(" + vector_type(e.type()) + ")(" + sub(e, 0) + ")";
  }
  // Whether the access's offset at lane 0 is a multiple of the lanes, in a buffer
  // aligned for them (global buffers are; local arrays are declared so).
  bool aligned(const std::string &buffer, const std::vector<Expr> &indices) {
    return scopes.at(buffer) != MemoryScope::Private && offset_multiple_of(buffer, indices, lanes());
  }
  // Whether the access's offset at lane 0 is a multiple of m.
  bool offset_multiple_of(const std::string &buffer, const std::vector<Expr> &indices, int64_t m) {
    const TensorDecl &b = buffers.at(buffer);
    int64_t stride = 1;
    for (size_t d = indices.size(); d-- > 0;) {
      // An index the same in every lane need only be a multiple (a ring's slot, ko % 3).
      if (!lanes_vary(std::vector<Expr>{indices[d]}) && (multiple_of(indices[d]) * stride) % m == 0) {
        stride *= b.shape[d];
        continue;
      }
      auto form = affine_of(indices[d], affine_lets);
      if (!form || (form->constant * stride) % m != 0) return false;
      for (const auto &[var, c] : form->coeffs)
        if (var != vector_loop->loop->var && (c * stride * let_multiple(var)) % m != 0) return false;
      stride *= b.shape[d];
    }
    return true;
  }
  // The address space qualifier of a pointer into buffer.
  const std::string &qualifier(const std::string &buffer) const {
    return scopes.at(buffer) == MemoryScope::Local ? p.target_.local_qualifier : p.target_.global_qualifier;
  }
  // The vector of the lanes' words of 16-bit pairs (uint, uint2 ...).
  std::string word_vector() const { return lanes() == 2 ? "uint" : "uint" + std::to_string(lanes() / 2); }
  // The vector of buffer starting at lane 0's element: a wide lvalue where aligned.
  std::string wide_lvalue(const std::string &buffer, const std::vector<Expr> &indices, const std::string &vector) {
    return "*(" + qualifier(buffer) + " " + vector + " *)&" + access(buffer, indices);
  }
  // The indices of lane k's element: the last index plus k.
  static std::vector<Expr> lane_indices(std::vector<Expr> indices, int64_t k) {
    if (k) indices.back() = indices.back() + make_int(k, indices.back().type());
    return indices;
  }
  std::string lane_access(const std::string &buffer, const std::vector<Expr> &indices, int64_t k) {
    return access(buffer, lane_indices(indices, k));
  }
  std::string vector_load(const Load *n) {
    // Private arrays stay registers only while every access names one element.
    if (scopes.at(n->buffer) == MemoryScope::Private) {
      std::string elements;
      for (int64_t k = 0; k < lanes(); ++k)
        elements += (k ? ", " : "") + (packed.count(n->buffer)
                                           ? packed_read(n->buffer, offset(n->buffer, lane_indices(n->indices, k)))
                                           : lane_access(n->buffer, n->indices, k));
      return "(" + vector_type(n->type) + ")(" + elements + ")";
    }
    if (stored_in_half(n->buffer)) return half_vector_read(n->buffer, n->indices);
    if (aligned(n->buffer, n->indices)) return wide_lvalue(n->buffer, n->indices, vector_type(n->type));
    return p.target_.vector_load + std::to_string(lanes()) + "(0, &" + access(n->buffer, n->indices) + ")";
  }
  // OpenCL C's lane names: s0 ... s9, sa ... sf.
  static std::string lane(int64_t k) { return std::string(".s") + "0123456789abcdef"[k]; }

  std::string access(const std::string &buffer, const std::vector<Expr> &indices) {
    const TensorDecl &b = buffers.at(buffer);
    std::string name = p.c_name(buffer);
    if (scopes.at(buffer) == MemoryScope::Private && b.numel() == 1) return name;
    return name + "[" + offset(buffer, indices) + "]";
  }

  // A 16-bit tensor's element read as f32 (exact), and a store of an f32 value into
  // one, rounded to nearest even: f16 through vload_half/vstore_half_rte (OpenCL
  // 1.2's core, no cl_khr_fp16 needed), bf16 as the f32's top 16 bits.
  bool stored_in_half(const std::string &buffer) const { return is_half(buffers.at(buffer).type); }
  // The f16 buffer as a half pointer: a local copy is declared as its bits (ushort).
  std::string half_pointer(const std::string &buffer) const {
    if (scopes.at(buffer) != MemoryScope::Local) return p.c_name(buffer);
    return "((" + p.target_.local_qualifier + " half *)" + p.c_name(buffer) + ")";
  }
  // The element's 16 bits as a ushort lvalue (an f16 parameter read through a ushort pointer).
  std::string half_bits(const std::string &buffer, const std::vector<Expr> &indices) {
    if (buffers.at(buffer).type == DType::BF16 || scopes.at(buffer) == MemoryScope::Local ||
        !p.target_.half_bits_type.empty())
      return access(buffer, indices);
    return "((" + p.target_.global_qualifier + " ushort *)" + p.c_name(buffer) + ")[" + offset(buffer, indices) + "]";
  }
  // The conversions of a target that holds 16-bit elements as integers (GLSL).
  std::string half_helper(DType type, bool to) {
    return use_function(std::string(to ? "ks_to_" : "ks_from_") + dtype_name(type));
  }
  std::string half_read(const std::string &buffer, const std::vector<Expr> &indices) {
    if (!p.target_.half_bits_type.empty())
      return half_helper(buffers.at(buffer).type, false) + "(uint(" + access(buffer, indices) + "))";
    if (buffers.at(buffer).type == DType::F16 && ptx_conversions())
      return unpack_helper(1) + "(convert_uint(" + half_bits(buffer, indices) + ")).s0";
    if (buffers.at(buffer).type == DType::F16)
      return "vload_half(" + offset(buffer, indices) + ", " + half_pointer(buffer) + ")";
    return bf16_helper(false) + "(" + access(buffer, indices) + ")";
  }
  std::string half_store(const std::string &buffer, const std::vector<Expr> &indices, const std::string &value) {
    if (!p.target_.half_bits_type.empty())
      return access(buffer, indices) + " = " + p.target_.half_bits_type + "(" +
             half_helper(buffers.at(buffer).type, true) + "(" + value + "));";
    if (ptx_conversions())
      return half_bits(buffer, indices) + " = convert_ushort(" + pack_helper(buffers.at(buffer).type) + "(" + value +
             ", 0.0f));";
    if (buffers.at(buffer).type == DType::F16)
      return "vstore_half_rte(" + value + ", " + offset(buffer, indices) + ", " + half_pointer(buffer) + ");";
    return access(buffer, indices) + " = " + bf16_helper(true) + "(" + value + ");";
  }
  // A load of the same 16-bit format whose bits a store may copy as they are (padded
  // by zero at most: +0's bits are 0 in both formats).
  const Load *same_format_load(const std::string &buffer, const Expr &value) const {
    const Load *l = value.as<Load>();
    return l && (!l->pad || *l->pad == 0) && buffers.at(l->buffer).type == buffers.at(buffer).type ? l : nullptr;
  }
  // A 16-bit element's bits of +0 (GLSL's ?: takes one type).
  std::string half_zero() const { return p.target_.half_bits_type.empty() ? "0" : p.target_.half_bits_type + "(0)"; }
  // The lanes' 16-bit elements from lane 0's onwards as their bits, one ushortN access
  // (an lvalue where aligned, else vloadN).
  std::string half_vector_bits(const std::string &buffer, const std::vector<Expr> &indices) {
    const std::string n = std::to_string(lanes()), &q = qualifier(buffer);
    const std::string element = "&" + half_bits(buffer, indices);
    return aligned(buffer, indices) ? "*(" + q + " ushort" + n + " *)" + element
                                    : p.target_.vector_load + n + "(0, " + element + ")";
  }
  // The statement storing a ushortN of bits as the lanes' 16-bit elements.
  std::string half_vector_bits_store(const std::string &buffer, const std::vector<Expr> &indices,
                                     const std::string &bits) {
    if (aligned(buffer, indices)) return half_vector_bits(buffer, indices) + " = " + bits + ";";
    return p.target_.vector_store + std::to_string(lanes()) + "(" + bits + ", 0, &" + half_bits(buffer, indices) + ");";
  }
  // The lanes' elements from lane 0's onwards, as one vector access: vloada_halfN
  // and a ushortN lvalue where aligned (the offset a multiple of the lanes),
  // vload_halfN and vloadN (2-byte alignment) where not; where the target takes PTX,
  // both formats as their bits, converted by cvt (unpack_helper, pack_vector_helper).
  std::string half_vector_read(const std::string &buffer, const std::vector<Expr> &indices) {
    const std::string n = std::to_string(lanes());
    if (buffers.at(buffer).type == DType::F16 && ptx_conversions())
      return unpack_helper(lanes()) + "(as_" + word_vector() + "(" + half_vector_bits(buffer, indices) + "))";
    if (buffers.at(buffer).type == DType::F16)
      return std::string(aligned(buffer, indices) ? "vloada_half" : "vload_half") + n + "(0, " + half_pointer(buffer) +
             " + " + offset(buffer, indices) + ")";
    return bf16_helper(false, lanes()) + "(" + half_vector_bits(buffer, indices) + ")";
  }
  std::string half_vector_store(const std::string &buffer, const std::vector<Expr> &indices, const std::string &value) {
    const std::string n = std::to_string(lanes());
    if (ptx_conversions() && aligned(buffer, indices)) {
      return "*(" + qualifier(buffer) + " " + word_vector() + " *)&" + half_bits(buffer, indices) + " = " +
             pack_vector_helper(buffers.at(buffer).type) + "(" + value + ");";
    }
    if (ptx_conversions())  // (2-byte alignment: the bits stored by vstoreN)
      return half_vector_bits_store(
          buffer, indices, "as_ushort" + n + "(" + pack_vector_helper(buffers.at(buffer).type) + "(" + value + "))");
    if (buffers.at(buffer).type == DType::F16)
      return std::string(aligned(buffer, indices) ? "vstorea_half" : "vstore_half") + n + "_rte(" + value + ", 0, " +
             half_pointer(buffer) + " + " + offset(buffer, indices) + ");";
    return half_vector_bits_store(buffer, indices, bf16_helper(true, lanes()) + "(" + value + ")");
  }
  // A private f32 array of OpenCL C whose every store copies a bf16 element (cache_read's
  // copy into registers) holds the bf16 bits instead, two to a 32-bit word: half the
  // registers, so more work-groups fit a compute unit, and each read widens by a shift or a
  // mask (exact). A bf16 layer_norm with its rows in registers took 0.0832 ms so on the
  // H200, 0.0888 in f32 (bench/results.md, "Rows in 16-byte vectors").
  bool packed_private(const Allocate &a) const {
    if (!p.target_.half_bits_type.empty() || a.type != DType::F32 || shape_numel(a.shape) < 2) return false;
    struct Stores : IRVisitor {
      const std::string &buffer;
      const std::map<std::string, TensorDecl> &buffers;
      bool any = false, all_bf16 = true;
      Stores(const std::string &buffer, const std::map<std::string, TensorDecl> &buffers)
          : buffer(buffer), buffers(buffers) {}
      using IRVisitor::visit;
      void visit(const Store *n) override {
        IRVisitor::visit(n);
        if (n->buffer != buffer) return;
        any = true;
        const Load *l = n->value.as<Load>();
        auto b = l ? buffers.find(l->buffer) : buffers.end();
        if (b == buffers.end() || b->second.type != DType::BF16 || (l->pad && *l->pad != 0)) all_bf16 = false;
      }
    } stores(a.buffer, buffers);
    stores.dispatch(a.body);
    return stores.any && stores.all_bf16;
  }
  // The word of a packed array that holds element `flat` (a C expression).
  std::string packed_word(const std::string &buffer, const std::string &flat) {
    return p.c_name(buffer) + "[(" + flat + ") >> 1]";
  }
  // Element `flat` of a packed array, widened to f32.
  std::string packed_read(const std::string &buffer, const std::string &flat) {
    const std::string word = packed_word(buffer, flat);
    return "as_float(((" + flat + ") & 1) ? (" + word + " & 0xffff0000u) : (" + word + " << 16))";
  }
  // The statement that stores the 16 bits `bits` as element `flat` of a packed array.
  std::string packed_store(const std::string &buffer, const std::string &flat, const std::string &bits) {
    const std::string word = packed_word(buffer, flat);
    return word + " = ((" + flat + ") & 1) ? ((" + word + " & 0xffffu) | (convert_uint(" + bits + ") << 16)) : ((" +
           word + " & 0xffff0000u) | convert_uint(" + bits + "));";
  }
  // 16-bit conversions through PTX's cvt where the target takes inline PTX (NVIDIA's
  // OpenCL, as its matrix units do): stores and roundings by cvt.rn.f16x2.f32 and
  // cvt.rn.bf16x2.f32, f16 reads by cvt.f32.f16. Its vstore_half_rte is a routine, not an
  // instruction: an f16 layer_norm stored through it took 0.224 ms against 0.129 through
  // cvt on the H200; bf16's rounding in integer operations is five or six of them a value,
  // where cvt rounds two in one (bench/results.md, "Rows in 16-byte vectors" and "The
  // tables in one call each"); reads below (unpack_helper).
  bool ptx_conversions() const { return p.target_.matrix_units == MatrixUnits::Ptx; }
  // Two f32 values rounded to nearest even into one register of the 16-bit format, the
  // first in the low half.
  std::string pack_helper(DType format) {
    const std::string f = dtype_name(format), name = "ks_pack_" + f;
    p.helpers_used_[name] = "uint " + name + "(float lo, float hi) {\n  uint r;\n  asm(\"cvt.rn." + f +
                            "x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n  return r;\n}\n";
    return name;
  }
  // f16 elements widened through PTX's cvt.f32.f16 where the target takes inline PTX
  // (a vector's bits loaded as ushortN, aligned or not): NVIDIA's vloada_half8 is not one
  // 16-byte load, and an f16 layer_norm read through it ran at half the speed of the same
  // schedule at bf16 on the H200 (bench/results.md, "f16 loads through cvt").
  // ks_from_f16 widens the two elements of a word (low half first), ks_from_f16_N the N
  // elements of N / 2 words; a scalar read takes the pair's .s0.
  std::string unpack_helper(int64_t n) {
    const std::string pair = "ks_from_f16";  // (the vectors' helpers sort after it, as C wants)
    p.helpers_used_[pair] = "float2 " + pair +
                            "(uint w) {\n  float lo, hi;\n  asm(\"{.reg .b16 l, h; mov.b32 {l, h}, %2; "
                            "cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}\" : \"=f\"(lo), \"=f\"(hi) : \"r\"(w));\n  return "
                            "(float2)(lo, hi);\n}\n";
    if (n <= 2) return pair;
    const std::string name = pair + "_" + std::to_string(n), words = word_vector();
    std::string pairs;
    for (int64_t k = 0; k < n / 2; ++k) pairs += std::string(k ? ", " : "") + pair + "(w" + lane(k) + ")";
    p.helpers_used_[name] = vector_type(DType::F32) + " " + name + "(" + words + " w) {\n  return (" +
                            vector_type(DType::F32) + ")(" + pairs + ");\n}\n";
    return name;
  }
  // The lanes' f32 values as pairs of the format, lane 0 in the low half of the first word.
  std::string pack_vector_helper(DType format) {
    const std::string pack = pack_helper(format), name = pack + "_" + std::to_string(lanes());
    const std::string words = word_vector();
    std::string pairs;
    for (int64_t k = 0; k < lanes(); k += 2)
      pairs += std::string(k ? ", " : "") + pack + "(v" + lane(k) + ", v" + lane(k + 1) + ")";
    p.helpers_used_[name] =
        words + " " + name + "(" + vector_type(DType::F32) + " v) {\n  return (" + words + ")(" + pairs + ");\n}\n";
    return name;
  }
  // e's argument where e rounds to `format` (bf16(x) into a bf16 store or packing, which
  // round it themselves), else e.
  static const Expr &unrounded_to(const Expr &e, DType format) {
    const Call *round = e.as<Call>();
    return round && rounded_format(round->fn) == format ? round->args[0] : e;
  }
  // An f32 value (of lanes() lanes where wide) rounded to a 16-bit format, to nearest
  // even, as a store into a tensor of it rounds: through the same conversions.
  std::string half_round(DType format, const std::string &value, bool wide) {
    if (!p.target_.half_bits_type.empty())  // GLSL: scalars (its vector loops print unrolled)
      return half_helper(format, false) + "(" + half_helper(format, true) + "(" + value + "))";
    const int64_t n = wide ? lanes() : 1;
    if (ptx_conversions()) {  // rounded by cvt, as a store rounds, and widened again
      if (!wide) {
        const std::string bits = pack_helper(format) + "(" + value + ", 0.0f)";
        return format == DType::F16 ? unpack_helper(1) + "(" + bits + ").s0"
                                    : bf16_helper(false) + "(convert_ushort(" + bits + "))";
      }
      const std::string words = pack_vector_helper(format) + "(" + value + ")";
      return format == DType::F16 ? unpack_helper(n) + "(" + words + ")"
                                  : bf16_helper(false, n) + "(as_ushort" + std::to_string(n) + "(" + words + "))";
    }
    if (format == DType::BF16) return bf16_helper(false, n) + "(" + bf16_helper(true, n) + "(" + value + "))";
    // f16 without cl_khr_fp16: through a private element's bits.
    p.helpers_used_["ks_round_f16"] =
        "float ks_round_f16(float x) {\n  ushort h;\n  vstore_half_rte(x, 0, (half *)&h);\n"
        "  return vload_half(0, (const half *)&h);\n}\n";
    return (wide ? vector_helper("ks_round_f16", 1) : std::string("ks_round_f16")) + "(" + value + ")";
  }
  // bf16 from and to f32 (bf16_conversion), of one element or of a vector of `lanes`.
  std::string bf16_helper(bool to, int64_t lanes = 1) {
    const Bf16Conversion c = bf16_conversion(to, lanes);
    const std::string q = p.target_.helper_qualifier.empty() ? "" : p.target_.helper_qualifier + " ";
    p.helpers_used_[c.name] = q + c.definition;
    return c.name;
  }

  // ---- expressions ----
  void visit(const IntImm *n) override {
    std::string v = std::to_string(n->value);
    if (n->type == DType::I64) {
      // The most negative value has no literal: write it as an expression.
      v = n->value == INT64_MIN ? "(-9223372036854775807" + p.target_.i64_suffix + " - 1)" : v + p.target_.i64_suffix;
    } else if (n->value == INT32_MIN) {
      v = "(-2147483647 - 1)";
    }
    set(v, n->value < 0 ? kUnary : kPrimary);
  }
  void visit(const FloatImm *n) override {
    std::string v = format_f32(n->value, p.target_);
    if (n->type == DType::F64) v = p.type_name(DType::F64) + "(" + v + ")";
    set(v, v[0] == '-' ? kUnary : kPrimary);
  }
  void visit(const Var *n) override { set(p.c_name(n->name), kPrimary); }
  void visit(const Unary *n) override {
    std::string a = sub(n->a, kUnary);
    // Keep "- -x" from becoming the decrement operator.
    set(std::string(n->op == UnaryOp::Neg ? "-" : "!") + (a[0] == '-' ? " " : "") + a, kUnary);
  }
  void visit(const Binary *n) override {
    const DType type = n->a.type();
    if (n->op == BinaryOp::LogAddExp) {
      set(log_add_exp_helper(type) + "(" + sub(n->a, 0) + ", " + sub(n->b, 0) + ")", kPrimary);
      return;
    }
    if (n->op == BinaryOp::Min || n->op == BinaryOp::Max) {
      const CTarget &t = p.target_;
      std::string fn = is_float(type) ? (n->op == BinaryOp::Min ? t.float_min : t.float_max)
                                      : (n->op == BinaryOp::Min ? t.int_min : t.int_max);
      // Vector min and max take two vectors.
      bool wide = lanes_vary(n->a) || lanes_vary(n->b);
      std::string a = wide ? widened(n->a) : sub(n->a, 0), b = wide ? widened(n->b) : sub(n->b, 0);
      set(fn + "(" + a + ", " + b + ")", kPrimary);
      return;
    }
    if ((n->op == BinaryOp::Div || n->op == BinaryOp::Mod) && is_int(type)) {
      auto divisor = as_const_int(n->b);
      bool plain = divisor && *divisor > 0 && bounds_of(n->a, scope).within(0, INT64_MAX);
      if (!plain) {
        std::string fn = floor_helper(n->op == BinaryOp::Mod, type);
        std::string a = sub(n->a, 0), b = sub(n->b, 0);
        set(fn + "(" + a + ", " + b + ")", kPrimary);
        return;
      }
      if (n->op == BinaryOp::Mod)
        if (Expr residue = unrolled_residue(n->a, *divisor); residue.defined()) {
          set(sub(Binary::make(BinaryOp::Mod, residue, n->b), 0), kPrimary);
          return;
        }
      const std::string &unsigned_type = type == DType::I64 ? p.target_.u64_type : p.target_.u32_type;
      if (!unsigned_type.empty()) {
        std::string a = sub(n->a, 0), b = std::to_string(*divisor) + (type == DType::I64 ? "ul" : "u");
        set(p.type_name(type) + "(" + unsigned_type + "(" + a + ") " + binary_op_symbol(n->op) + " " + b + ")",
            kPrimary);
        return;
      }
    }
    if (n->op == BinaryOp::Mod && is_float(type)) {
      std::string a = sub(n->a, 0), b = sub(n->b, 0);
      set(use_function(p.target_.float_mod) + "(" + a + ", " + b + ")", kPrimary);
      return;
    }
    int prec = c_precedence(n->op);
    std::string a = sub(n->a, prec), b = sub(n->b, prec + 1);
    set(a + " " + binary_op_symbol(n->op) + " " + b, prec);
  }
  void visit(const Call *n) override {
    const bool wide = lanes_vary(n->args);
    if (std::optional<DType> format = rounded_format(n->fn)) {
      set(half_round(*format, wide ? widened(n->args[0]) : sub(n->args[0], 0), wide), kPrimary);
      return;
    }
    std::string fn = use_helper(n->fn);
    // Vector calls take vectors only (scalars are widened); the target's builtins
    // take them as they are, a helper through its lane-by-lane vector form.
    if (wide && !p.target_.builtins.at(n->fn).helper_definition.empty()) fn = vector_helper(fn, n->args.size());
    std::string args;
    for (size_t i = 0; i < n->args.size(); ++i)
      args += (i ? ", " : "") + (wide ? widened(n->args[i]) : sub(n->args[i], 0));
    set(fn + "(" + args + ")", kPrimary);
  }
  // fn_N(vectors...): the scalar helper fn applied lane by lane (helpers take floats).
  std::string vector_helper(const std::string &fn, size_t arity) {
    const std::string name = fn + "_" + std::to_string(lanes()), type = vector_type(DType::F32);
    std::string params, lanes_text;
    for (size_t i = 0; i < arity; ++i) params += (i ? ", " : "") + type + " a" + std::to_string(i);
    for (int64_t k = 0; k < lanes(); ++k) {
      std::string args;
      for (size_t i = 0; i < arity; ++i) args += (i ? ", " : "") + std::string("a") + std::to_string(i) + lane(k);
      lanes_text += std::string(k ? ",\n" : "\n") + "      " + fn + "(" + args + ")";
    }
    const std::string qualifier = p.target_.helper_qualifier.empty() ? "" : p.target_.helper_qualifier + " ";
    p.helpers_used_[name] =
        qualifier + type + " " + name + "(" + params + ") {\n  return (" + type + ")(" + lanes_text + ");\n}\n";
    return name;
  }
  void visit(const Cast *n) override {
    if (n->type == DType::Bool) {
      set(sub(n->value, kEquality + 1) + " != 0", kEquality);
      return;
    }
    print_cast(n->type, n->value);
  }
  void visit(const Select *n) override {
    std::string c = sub(n->condition, kTernary + 1), a = sub(n->true_value, kTernary + 1),
                b = sub(n->false_value, kTernary);
    set(c + " ? " + a + " : " + b, kTernary);
  }
  void visit(const Load *n) override {
    if (lanes_vary(n->indices)) {
      set(vector_load(n), kUnary);  // the vector form has no padded vector reads
      return;
    }
    std::string read = stored_in_half(n->buffer) ? half_read(n->buffer, n->indices)
                       : packed.count(n->buffer) ? packed_read(n->buffer, offset(n->buffer, n->indices))
                                                 : access(n->buffer, n->indices);
    std::string condition = inside_test(n);
    if (condition.empty()) {
      set(read, kPrimary);
      return;
    }
    std::string pad = is_int(n->type) ? std::to_string(static_cast<int64_t>(*n->pad)) : format_f32(*n->pad, p.target_);
    set("(" + condition + ") ? " + read + " : " + pad, kTernary);
  }
  // The test that a padded load's index is inside its buffer, over the dimensions the
  // index may leave; empty when it cannot leave (or the load is not padded).
  std::string inside_test(const Load *n) {
    if (!n->pad) return "";
    const TensorDecl &b = buffers.at(n->buffer);
    std::vector<std::string> tests;
    for (size_t d = 0; d < n->indices.size(); ++d) {
      Interval range = bounds_of(n->indices[d], scope);
      std::string index = sub(n->indices[d], kRelational + 1);
      if (!range.bounded || range.lo < 0) tests.push_back(index + " >= 0");
      if (!range.bounded || range.hi > b.shape[d] - 1) tests.push_back(index + " < " + std::to_string(b.shape[d]));
    }
    std::string condition;
    for (size_t i = 0; i < tests.size(); ++i) condition += (i ? " && " : "") + tests[i];
    return condition;
  }

  // A remainder that each copy of the unrolled loops fixes: `(oh + 1) % 2` with
  // oh = oho * 32 + oht * 4 + ohv and ohv unrolled is `(ohv + 1) % 2`, a constant in
  // each copy, which the device compiler then folds (a transposed convolution's stride
  // phase after stride_phases: which kernel offsets a row takes). The terms whose
  // coefficient is a multiple of the divisor leave; the rule applies only where what
  // stays is unrolled variables and a constant, since elsewhere the shorter form
  // measured slower on the H100 (bench/results.md, "Stride phases"). Undefined where it
  // does not apply. `a` is non-negative here, so the residue is (floor and C's % agree).
  Expr unrolled_residue(const Expr &a, int64_t divisor) const {
    std::optional<Affine> form = affine_of(a, affine_lets);
    if (!form) return Expr();
    Affine kept;
    kept.constant = ((form->constant % divisor) + divisor) % divisor;
    bool dropped = false;
    for (const auto &[var, coeff] : form->coeffs) {
      const int64_t c = ((coeff % divisor) + divisor) % divisor;
      if (c == 0) {
        dropped = true;
        continue;
      }
      if (!unrolled.count(var)) return Expr();
      kept.coeffs[var] = c;
    }
    if (!dropped || kept.coeffs.empty()) return Expr();
    return affine_expr(kept, unrolled, a.type());
  }

  // ---- statements ----
  void body(const Stmt &s) { dispatch(s); }

  void visit(const For *n) override {
    const std::string var = p.c_name(n->var);
    const std::string type = p.type_name(index_type_for(n->extent));
    scope.vars[n->var] = Interval::of(0, n->extent - 1);
    if (n->kind == ForKind::Unrolled || n->kind == ForKind::Vectorized) unrolled[n->var] = index_type_for(n->extent);
    int dim = hardware_dim(n->kind);
    if (dim >= 0) {
      const std::string &index = (is_group(n->kind) ? p.target_.group_index : p.target_.local_index)[dim];
      out << line() << "const " << type << " " << var << " = "
          << (p.target_.constructor_casts ? type + "(" + index + ")" : "(" + type + ")" + index) << ";\n";
      body(n->body);
    } else if (n->kind == ForKind::Matrix) {
      matrix_loop(n);
    } else if (n->kind == ForKind::Vectorized && !p.target_.vector_load.empty()) {
      vectorized_loop(n, var, type);
    } else {
      loop(n, var, type);
    }
    scope.vars.erase(n->var);
    unrolled.erase(n->var);
  }
  void loop(const For *n, const std::string &var, const std::string &type) {
    if (n->kind == ForKind::Serial && n->extent > 1) hoist_invariant_operands(n);
    std::optional<MatrixRun> run = n->kind == ForKind::Serial ? matrix_run_across(n) : std::nullopt;
    if (run) {
      out << line() << "{  // " << p.c_name(run->matrix->var) << "'s instructions accumulate over " << run->period
          << " iterations of " << var << "\n";
      ++indent;
      matrix_accumulator(run->count, cooperative());
      runs[run->matrix] = *run;
    }
    if (n->kind == ForKind::Unrolled || n->kind == ForKind::Vectorized)
      out << line() << p.target_.unroll_pragma << "\n";
    out << line() << "for (" << type << " " << var << " = 0; " << var << " < " << n->extent << "; ++" << var << ") {\n";
    ++indent;
    body(n->body);
    --indent;
    out << line() << "}\n";
    if (run) {
      runs.erase(run->matrix);
      --indent;
      out << line() << "}\n";
    }
  }
  // The body once at lane 0; with tail guards, only where every lane passes them,
  // and lane by lane elsewhere.
  void vectorized_loop(const For *n, const std::string &var, const std::string &type) {
    std::string reason;
    auto form = vector_form(*n, &reason);
    if (!form) throw InternalError("vectorized loop " + n->var + " escaped the verifier: " + reason);
    const std::string lanes_comment = "  // " + var + ": " + std::to_string(n->extent) + " lanes\n";
    if (form->all_lanes_pass.defined()) {
      out << line() << "if (" << sub(form->all_lanes_pass, 0) << ") {" << lanes_comment;
    } else {
      out << line() << "{" << lanes_comment;
    }
    ++indent;
    out << line() << "const " << type << " " << var << " = 0;\n";
    vector_loop = VectorLoop{n, *form};
    body(n->body);
    vector_loop.reset();
    --indent;
    if (form->all_lanes_pass.defined()) {
      out << line() << "} else {  // " << var << ": lane by lane\n";
      ++indent;
      loop(n, var, type);
      --indent;
    }
    out << line() << "}\n";
  }
  // A matrix loop (ir/matrix_tile.h) as the target writes it: per step of 8 k points,
  // each m tile's A fragment and each n tile's B fragment, then one instruction per
  // pair of tiles and product (3xTF32: the two small products first) into the
  // accumulators ks_d, which start at zero and are added (times the product's scale,
  // ir/matrix_tile.h) to the tile's in fp32 every
  // kMatrixRunPoints k points: at the loop's end, or every few iterations of the serial
  // loop around it (matrix_run_across).
  // The matrix loop's tile as printed: with 16-bit operands where they are exact.
  std::optional<MatrixTile> printed_tile(const For &loop, std::string *reason) {
    std::optional<MatrixTile> tile = matrix_tile(root, loop, reason);
    if (!tile) return std::nullopt;
    return with_half_operands(*tile, root, [&](const std::string &name) {
      auto it = buffers.find(name);
      return it == buffers.end() ? DType::F32 : it->second.type;
    });
  }
  void matrix_loop(const For *n) {
    if (p.target_.matrix_units == MatrixUnits::Refused) throw UserError(p.target_.matrix_refusal);
    std::string reason;
    auto tile = printed_tile(*n, &reason);
    if (!tile) throw InternalError("matrix loop " + n->var + " escaped the verifier: " + reason);
    if (cooperative()) return cooperative_matrix_loop(*n, *tile);
    const bool f32 = p.target_.precision == Precision::F32;
    const bool half = tile->operands != DType::F32;
    const int64_t mt = tile->m_tiles(), nt = tile->n_tiles(), count = mt * nt * 4;
    const Expr lane = Var::make(index_type_for(32), tile->lane);
    const Expr step = matrix_var("ks_step", tile->steps());
    out << line() << "{  // " << p.c_name(n->var) << ": " << mt << " x " << nt << " mma.sync.m16n8k"
        << tile->step_points() << ", " << tile->steps() << " steps of " << tile->step_points() << ", "
        << (half  ? std::string(dtype_name(tile->operands)) + " operands (exact products)"
            : f32 ? "3xTF32 (fp32-accurate)"
                  : "TF32")
        << (p.target_.matrix_units == MatrixUnits::Emulated ? ", emulated" : "") << "\n";
    ++indent;
    // A tile of 16-bit operands sums into the accumulator itself, the whole reduction
    // in the unit's f32 additions, as cuBLAS's 16-bit GEMMs do: its products are exact,
    // and a second set of registers for runs (matrix_run_across) halves the groups an
    // SM holds: 0.842 ms against 0.506 at bf16 4096^3 on an H200 (bench/results.md,
    // "Rings of 16-bit panels, ldmatrix, and the accumulators in place"). The check's
    // fp32 bound still applies.
    const bool direct = half && p.target_.matrix_units == MatrixUnits::Ptx && !tile->scale.defined();
    auto run = runs.find(n);
    if (run == runs.end() && !direct) matrix_accumulator(count);
    out << line() << p.target_.unroll_pragma << "\n"
        << line() << "for (int " << p.c_name("ks_step") << " = 0; " << p.c_name("ks_step") << " < " << tile->steps()
        << "; ++" << p.c_name("ks_step") << ") {\n";
    ++indent;
    matrix_helpers(tile->operands, direct);
    if (p.target_.matrix_units == MatrixUnits::Ptx && half)
      matrix_step_ptx_half(n, *tile, lane, step, direct);
    else if (p.target_.matrix_units == MatrixUnits::Ptx)
      matrix_step_ptx(*tile, lane, step, f32);
    else
      matrix_step_emulated(*tile, lane, step, f32, matrix_var("ks_r", 4), matrix_var("ks_k", tile->step_points()));
    --indent;
    out << line() << "}\n";
    if (!direct) matrix_add_back(*tile, run == runs.end() ? nullptr : &run->second, count);
    --indent;
    out << line() << "}\n";
    for (const char *v : {"ks_step", "ks_r", "ks_k"}) scope.vars.erase(v);
  }
  // A matrix loop's own variable (ks_step, ks_r, ks_k), its range in scope.
  Expr matrix_var(const char *name, int64_t extent) {
    scope.vars[name] = Interval::of(0, extent - 1);
    return Var::make(DType::I32, name);
  }
  bool cooperative() const { return p.target_.matrix_units == MatrixUnits::Cooperative; }
  // The instructions' sums ks_d added to the accumulator (times the product's scale):
  // after the matrix loop, or at the end of each run (then ks_d starts again at zero).
  // Cooperative matrices (cooperative_matrix_loop) are stored whole to the warp's slice
  // of ks_scratch, one at a time, and each lane reads its four elements there.
  void matrix_add_back(const MatrixTile &tile, const MatrixRun *run, int64_t count, bool cooperative = false) {
    const int64_t nt = tile.n_tiles();
    if (run) {
      out << line() << "if (";
      if (run->period < run->extent) out << "(" << run->loop << " + 1) % " << run->period << " == 0 || ";
      out << run->loop << " == " << run->extent - 1 << ") {\n";
      ++indent;
    }
    const std::string lane = p.c_name(tile.lane);
    if (cooperative)
      out << line() << "const int ks_warp = int(gl_LocalInvocationIndex / 32u) * " << kCooperativeScratchFloats
          << ", ks_at = ks_warp + " << lane << " / 4 * 8 + " << lane << " % 4 * 2;  // row g, column 2t\n";
    for (int64_t i = 0; i < tile.m_tiles(); ++i)
      for (int64_t j = 0; j < nt; ++j) {
        if (cooperative)
          out << line() << "coopMatStoreNV(ks_c[" << i * nt + j << "], ks_scratch, uint(ks_warp), 8u, false);\n"
              << line() << "subgroupMemoryBarrierShared();\n"
              << line() << "subgroupBarrier();\n";
        for (int r = 0; r < 4; ++r) {
          const std::string at = access(tile.acc, tile.acc_at(i, j, r));
          // Register r: row g + 8 (r / 2), column 2t + r % 2.
          const std::string sum = cooperative ? "ks_scratch[ks_at + " + std::to_string(r / 2 * 64 + r % 2) + "]"
                                              : "ks_d[" + std::to_string((i * nt + j) * 4 + r) + "]";
          out << line() << at << " = " << at << " + " << sum;
          if (const Expr scale = tile.scale_at(i, j, r); scale.defined()) out << " * (" << sub(scale, 0) << ")";
          out << ";\n";
        }
        if (cooperative) out << line() << "subgroupBarrier();  // (read before the next store)\n";
      }
    if (run) {
      zero_matrix_accumulator(count, cooperative);
      --indent;
      out << line() << "}\n";
    }
  }
  // A matrix loop as cooperative matrices (GL_NV_cooperative_matrix): per step of 16 k
  // points, each m tile's 16 x 16 block of A and each n tile's 16 x 8 block of B loaded
  // whole from memory, then one multiply-add per pair of tiles into the f32 matrices
  // ks_c (across the serial loop around it where matrix_run_across allows). Which lane
  // holds which element of a cooperative matrix is the driver's choice, so the sums
  // reach the accumulator through local memory (matrix_add_back). A block must be a
  // strided block of an f16 tensor (cooperative_block); VK_NV_cooperative_matrix has no
  // bf16 or TF32 types.
  void cooperative_matrix_loop(const For &n, const MatrixTile &tile) {
    const std::string where = "error: the schedule's tensorize of loop " + n.var + " as cooperative matrices: ";
    if (tile.operands != DType::F16)
      throw UserError(where + "their operands must be f16, these are " +
                      (tile.operands == DType::F32 ? "f32 (3xTF32 needs mma.sync, through NVIDIA's OpenCL)"
                                                   : std::string(dtype_name(tile.operands))) +
                      "; VK_NV_cooperative_matrix, which Debian 12's glslang writes, has no bf16 or TF32 types");
    p.uses_cooperative_matrices_ = true;
    const int64_t mt = tile.m_tiles(), nt = tile.n_tiles();
    const Expr step = matrix_var("ks_step", tile.steps());
    std::vector<CooperativeBlock> a, b;
    std::string reason;
    for (int64_t i = 0; i < mt; ++i) {
      auto block = cooperative_block([&](int64_t r, int64_t k) { return tile.a_at(i, r, k, step); }, 16, 16, &reason);
      if (!block) throw UserError(where + "A's 16 x 16 blocks " + reason);
      a.push_back(*block);
    }
    for (int64_t j = 0; j < nt; ++j) {
      auto block = cooperative_block([&](int64_t k, int64_t c) { return tile.b_at(j, k, c, step); }, 16, 8, &reason);
      if (!block) throw UserError(where + "B's 16 x 8 blocks " + reason);
      b.push_back(*block);
    }
    out << line() << "{  // " << p.c_name(n.var) << ": " << mt << " x " << nt
        << " cooperative matrices 16 x 8 x 16, f16 operands (exact products), f32 sums, " << tile.steps()
        << " steps of 16\n";
    ++indent;
    auto run = runs.find(&n);
    if (run == runs.end()) matrix_accumulator(mt * nt * 4, true);
    const std::string step_name = p.c_name("ks_step");
    out << line() << p.target_.unroll_pragma << "\n"
        << line() << "for (int " << step_name << " = 0; " << step_name << " < " << tile.steps() << "; ++" << step_name
        << ") {\n";
    ++indent;
    // A step past the reduction's edge (the guard fails at one of its points, the same in
    // every lane) runs lane by lane, as the emulated form, its sums added to the
    // accumulator at once: a whole block would read past the edge.
    Expr whole;
    for (int64_t k = 0; k < 16 && tile.guard.defined(); ++k)
      whole = whole.defined() ? Binary::make(BinaryOp::And, whole, tile.guard_at(k, step)) : tile.guard_at(k, step);
    if (whole.defined()) {
      out << line() << "if (" << sub(simplify(whole), 0) << ") {\n";
      ++indent;
    }
    auto load = [&](const std::string &name, size_t i, const CooperativeBlock &block) {
      const Load *first = block.first.as<Load>();
      out << line() << "coopMatLoadNV(" << name << "[" << i << "], " << p.c_name(first->buffer) << ", uint("
          << offset(first->buffer, first->indices) << "), " << block.stride << "u, "
          << (block.column_major ? "true" : "false") << ");\n";
    };
    out << line() << "fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ks_ca[" << mt << "];\n";
    for (size_t i = 0; i < a.size(); ++i) load("ks_ca", i, a[i]);
    out << line() << "fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> ks_cb[" << nt << "];\n";
    for (size_t j = 0; j < b.size(); ++j) load("ks_cb", j, b[j]);
    for (int64_t i = 0; i < mt; ++i)
      for (int64_t j = 0; j < nt; ++j)
        out << line() << "ks_c[" << i * nt + j << "] = coopMatMulAddNV(ks_ca[" << i << "], ks_cb[" << j << "], ks_c["
            << i * nt + j << "]);\n";
    if (whole.defined()) {
      --indent;
      out << line() << "} else {  // the reduction's edge\n";
      ++indent;
      matrix_accumulator(mt * nt * 4);
      matrix_step_emulated(tile, Var::make(index_type_for(32), tile.lane), step, true, matrix_var("ks_r", 4),
                           matrix_var("ks_k", tile.step_points()), false);
      matrix_add_back(tile, nullptr, mt * nt * 4);
      --indent;
      out << line() << "}\n";
    }
    --indent;
    out << line() << "}\n";
    matrix_add_back(tile, run == runs.end() ? nullptr : &run->second, mt * nt * 4, true);
    --indent;
    out << line() << "}\n";
    for (const char *v : {"ks_step", "ks_r", "ks_k"}) scope.vars.erase(v);
  }
  // Where a rows x columns block of an operand lies: `at(r, c)` is its element at row r
  // and column c, and every one must be a read of one f16 tensor in local or global
  // memory (no expression of loads, condition or zero padding), at first + r s + c
  // (row-major) or first + r + c s (column-major), s and first multiples of 8 (16 bytes,
  // as Vulkan asks of a cooperative matrix's pointer and stride). Checked by evaluating
  // the offsets at every element, with the variables around at zero, at one, at their
  // ends, and each alone at its end (as ldmatrix_row); else nullopt and *reason.
  struct CooperativeBlock {
    Expr first;  // the Load at row 0, column 0
    int64_t stride;
    bool column_major;
  };
  std::optional<CooperativeBlock> cooperative_block(const std::function<Expr(int64_t, int64_t)> &at, int64_t rows,
                                                    int64_t columns, std::string *reason) {
    std::vector<std::vector<Expr>> elements(static_cast<size_t>(rows));
    std::set<std::string> vars;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c) {
        const Expr e = at(r, c);
        const Load *l = e.as<Load>();
        if (!l || l->pad || buffers.at(l->buffer).type != DType::F16 || scopes.at(l->buffer) == MemoryScope::Private) {
          *reason = "must be plain reads of an f16 tensor in local or global memory; one is " + print_expr(e);
          return std::nullopt;
        }
        if (l->buffer != (r || c ? elements[0][0].as<Load>()->buffer : l->buffer)) {
          *reason = "must each read one tensor";
          return std::nullopt;
        }
        for (const std::string &v : vars_in(e)) vars.insert(v);
        elements[static_cast<size_t>(r)].push_back(e);
      }
    const Expr first = elements[0][0];
    const TensorDecl &buffer = buffers.at(first.as<Load>()->buffer);
    auto flat = [&](const Expr &e, const std::map<std::string, int64_t> &env) -> std::optional<int64_t> {
      int64_t offset = 0;
      const Load *l = e.as<Load>();
      for (size_t d = 0; d < l->indices.size(); ++d) {
        std::optional<int64_t> v = evaluate_index(l->indices[d], env);
        if (!v) return std::nullopt;
        offset = offset * buffer.shape[d] + *v;
      }
      return offset;
    };
    std::optional<CooperativeBlock> block;
    for (const std::map<std::string, int64_t> &env : sample_points(vars)) {
      std::optional<int64_t> base = flat(elements[0][0], env), down = flat(elements[1][0], env),
                             right = flat(elements[0][1], env);
      if (!base || !down || !right) {
        *reason = "must have integer indices";
        return std::nullopt;
      }
      const bool column_major = *down - *base == 1;
      const int64_t stride = column_major ? *right - *base : *down - *base;
      if (block && (block->stride != stride || block->column_major != column_major)) {
        *reason = "must be one stride apart wherever the loops around are";
        return std::nullopt;
      }
      block = CooperativeBlock{first, stride, column_major};
      if (*base % 8 != 0 || stride % 8 != 0 || stride <= 0) {
        *reason = "must start at a multiple of 8 elements with rows (or columns) a multiple of 8 apart; at " +
                  print_expr(elements[0][0]) + " they start at element " + std::to_string(*base) + ", " +
                  std::to_string(stride) + " apart";
        return std::nullopt;
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < columns; ++c) {
          std::optional<int64_t> o = flat(elements[static_cast<size_t>(r)][static_cast<size_t>(c)], env);
          if (!o || *o != *base + (column_major ? r + c * stride : r * stride + c)) {
            *reason = "must be a strided block: row " + std::to_string(r) + ", column " + std::to_string(c) +
                      " is not where rows " + std::to_string(stride) + " apart put it";
            return std::nullopt;
          }
        }
    }
    return block;
  }
  // The instructions' sums: count f32 registers ks_d, or count / 4 cooperative matrices ks_c.
  static constexpr const char *kCooperativeSum = "fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>";
  void matrix_accumulator(int64_t count, bool cooperative = false) {
    if (cooperative)
      out << line() << kCooperativeSum << " ks_c[" << count / 4 << "];\n";
    else
      out << line() << "float ks_d[" << count << "];\n";
    zero_matrix_accumulator(count, cooperative);
  }
  void zero_matrix_accumulator(int64_t count, bool cooperative = false) {
    out << line() << p.target_.unroll_pragma << "\n";
    if (cooperative)
      out << line() << "for (int ks_r = 0; ks_r < " << count / 4 << "; ++ks_r) ks_c[ks_r] = " << kCooperativeSum
          << "(0.0);\n";
    else
      out << line() << "for (int ks_r = 0; ks_r < " << count << "; ++ks_r) ks_d[ks_r] = 0.0f;\n";
  }
  // Where serial loop l runs a matrix loop once an iteration and nothing else in it
  // touches that loop's accumulator, the instructions' sums may run on across l's
  // iterations: ks_d lives around l and is added to the accumulator every `period`
  // iterations (and at l's last), so that a run is about kMatrixRunPoints k points.
  // Fewer fp32 additions and restarts, and no more error: the matrix unit's own
  // additions truncate, so a run is kept short (bench/results.md, "Matrix units").
  // In TF32 the runs stay one loop's: across the loop TF32 tiles measured 15 to 55%
  // slower (H200), where 3xTF32 ones were 5% faster.
  // Cooperative matrices of 16-bit operands (exact products) run across the whole loop,
  // their sums in the unit's f32 additions, as mma.sync's 16-bit tiles sum in place.
  std::optional<MatrixRun> matrix_run_across(const For *l) {
    const bool cooperative = this->cooperative();
    if (p.target_.precision != Precision::F32 && !cooperative) return std::nullopt;
    const For *matrix = nullptr;
    const std::vector<const For *> loops = collect<For>(l->body);
    for (const For *f : loops)
      if (f->kind == ForKind::Matrix) {
        if (matrix) return std::nullopt;
        matrix = f;
      }
    if (!matrix || l->extent < 2) return std::nullopt;
    auto inside = [&](const Stmt &s) {
      if (!s.defined()) return false;
      const std::vector<const For *> inner = collect<For>(s);
      return std::find(inner.begin(), inner.end(), matrix) != inner.end();
    };
    for (const For *f : loops)
      if (f != matrix && inside(f->body)) return std::nullopt;  // run more than once an iteration
    for (const IfThenElse *c : collect<IfThenElse>(l->body))
      if (inside(c->then_case) || inside(c->else_case)) return std::nullopt;  // its addition might be skipped
    std::string reason;
    std::optional<MatrixTile> tile = printed_tile(*matrix, &reason);
    if (!tile || (tile->operands != DType::F32) != cooperative) return std::nullopt;  // (matrix_loop says why)
    for (int64_t i = 0; i < tile->m_tiles(); ++i)
      for (int64_t j = 0; j < tile->n_tiles(); ++j)
        for (int r = 0; r < 4; ++r)
          for (const Expr &e : tile->acc_at(i, j, r))
            if (mentions(e, {l->var})) return std::nullopt;
    // A run's sum takes one scale: the scale may not change along the loop.
    if (tile->scale.defined() && mentions(tile->scale, {l->var})) return std::nullopt;
    auto uses = [&](const Stmt &s) {
      size_t count = 0;
      for (const Load *x : collect<Load>(s)) count += x->buffer == tile->acc;
      for (const Store *x : collect<Store>(s)) count += x->buffer == tile->acc;
      return count;
    };
    if (uses(l->body) != uses(matrix->body)) return std::nullopt;
    const int64_t period = cooperative ? l->extent : kMatrixRunPoints / (tile->steps() * tile->step_points());
    if (period < 2) return std::nullopt;
    return MatrixRun{matrix, p.c_name(l->var), l->extent, period, tile->m_tiles() * tile->n_tiles() * 4};
  }
  // mma.sync.m16n8k16 on two 16-bit operands of `format`, f32 sums: %0-%3 the
  // accumulators (read and written), %4-%7 A's registers, %8-%9 B's.
  static std::string mma16(const std::string &format) {
    return "mma.sync.aligned.m16n8k16.row.col.f32." + format + "." + format +
           ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};";
  }
  void matrix_helpers(DType operands, bool direct) {
    if (operands != DType::F32) {
      if (p.target_.matrix_units == MatrixUnits::Emulated) return;  // exact products, plain f32
      // Two exact values as one register of the format, the first in the low half.
      const std::string format = dtype_name(operands);
      pack_helper(operands);
      if (direct) return;  // the instructions are written in place
      p.helpers_used_["ks_mma_" + format] =
          "void ks_mma_" + format +
          "(float *d, const uint *a, const uint *b) {\n"
          "  asm volatile(\"" +
          mma16(format) +
          "\"\n"
          "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
          "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n";
      return;
    }
    // To nearest, ties away from zero, the low 13 bits of the significand cleared: what
    // cvt.rna.tf32.f32 gives for finite values, in two integer operations (the
    // conversion's unit is the slower; bench/results.md, "Matrix units").
    p.helpers_used_["ks_tf32"] = "float ks_tf32(float x) { return " + p.target_.bits_float + "((" +
                                 p.target_.float_bits + "(x) + 0x1000u) & 0xffffe000u); }\n";
    if (p.target_.matrix_units == MatrixUnits::Emulated) return;
    p.helpers_used_["ks_mma_tf32"] =
        "void ks_mma_tf32(float *d, const float *a, const float *b) {\n"
        "  asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\"\n"
        "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
        "               : \"r\"(as_uint(a[0])), \"r\"(as_uint(a[1])), \"r\"(as_uint(a[2])), \"r\"(as_uint(a[3])),\n"
        "                 \"r\"(as_uint(b[0])), \"r\"(as_uint(b[1])));\n}\n";
  }
  // One step as mma.sync: each lane loads its fragment registers, rounds them, and the
  // warp multiplies.
  void matrix_step_ptx(const MatrixTile &tile, const Expr &lane, const Expr &step, bool f32) {
    const int64_t mt = tile.m_tiles(), nt = tile.n_tiles();
    out << line() << "float ks_ahi[" << mt * 4 << "], ks_bhi[" << nt * 2 << "]"
        << (f32 ? ", ks_alo[" + std::to_string(mt * 4) + "], ks_blo[" + std::to_string(nt * 2) + "]" : "") << ";\n";
    auto split = [&](const std::string &name, int64_t index, const std::string &x) {
      const std::string hi = name + "hi[" + std::to_string(index) + "]";
      out << line() << "  " << hi << " = ks_tf32(" << x << ");\n";
      // The residual rounded too: passed unrounded, the instruction's reading of its
      // low bits (truncated, as emulated) put small reductions outside the fp32 bound
      // (bench/results.md, "The residual unrounded").
      if (f32) out << line() << "  " << name << "lo[" << index << "] = ks_tf32(" << x << " - " << hi << ");\n";
    };
    // Registers r0 and r1, one float2 where they are neighbours in memory, else one
    // load each.
    auto load = [&](const std::string &name, int64_t r0, const Expr &v0, int64_t r1, const Expr &v1) {
      out << line() << "{\n";
      if (std::optional<std::string> pair = adjacent({v0, v1})) {
        out << line() << "  const float2 x = " << *pair << ";\n";
        split(name, r0, "x.x");
        split(name, r1, "x.y");
      } else {
        out << line() << "  const float x0 = " << sub(v0, 0) << ", x1 = " << sub(v1, 0) << ";\n";
        split(name, r0, "x0");
        split(name, r1, "x1");
      }
      out << line() << "}\n";
    };
    // A's registers q and q + 2 are k slots t and t + 4, B's 0 and 1 slots t and
    // t + 4: k points 2t and 2t + 1 (ir/matrix_tile.h).
    for (int64_t i = 0; i < mt; ++i)
      for (int q = 0; q < 2; ++q)
        load("ks_a", i * 4 + q, tile.a_fragment(lane, make_int(i), make_int(q), step), i * 4 + q + 2,
             tile.a_fragment(lane, make_int(i), make_int(q + 2), step));
    for (int64_t j = 0; j < nt; ++j)
      load("ks_b", j * 2, tile.b_fragment(lane, make_int(j), make_int(0), step), j * 2 + 1,
           tile.b_fragment(lane, make_int(j), make_int(1), step));
    for (int64_t i = 0; i < mt; ++i)
      for (int64_t j = 0; j < nt; ++j) {
        const std::string d = std::to_string((i * nt + j) * 4), a = std::to_string(i * 4), b = std::to_string(j * 2);
        if (f32) {
          out << line() << "ks_mma_tf32(ks_d + " << d << ", ks_alo + " << a << ", ks_bhi + " << b << ");\n";
          out << line() << "ks_mma_tf32(ks_d + " << d << ", ks_ahi + " << a << ", ks_blo + " << b << ");\n";
        }
        out << line() << "ks_mma_tf32(ks_d + " << d << ", ks_ahi + " << a << ", ks_bhi + " << b << ");\n";
      }
  }
  // Two or four fragment values as one float2 or float4 lvalue, where they are an f32
  // buffer's neighbours (neighbours()); else none. One 8- or 16-byte load instead of
  // two or four (ld.shared.v2.f32, .v4).
  std::optional<std::string> adjacent(const std::vector<Expr> &vs) {
    const Load *a = neighbours(vs);
    if (!a || buffers.at(a->buffer).type != DType::F32) return std::nullopt;
    return wide_lvalue(a->buffer, a->indices, "const float" + std::to_string(vs.size()));
  }
  // The first of vs where they are loads of one local or global buffer's neighbours
  // (each one's last index the first's plus its place) at an offset that is a multiple
  // of their count (that index, and the last dimension's extent: every other index's
  // stride); else null.
  const Load *neighbours(const std::vector<Expr> &vs) {
    const Load *a = vs[0].as<Load>();
    if (!a || a->indices.empty() || scopes.at(a->buffer) == MemoryScope::Private) return nullptr;
    const size_t last = a->indices.size() - 1;
    for (size_t i = 1; i < vs.size(); ++i) {
      const Load *b = vs[i].as<Load>();
      if (!b || b->buffer != a->buffer || b->indices.size() != a->indices.size()) return nullptr;
      for (size_t d = 0; d < last; ++d)
        if (!equal(a->indices[d], b->indices[d])) return nullptr;
      if (offset_between(a->indices[last], b->indices[last]) != static_cast<int64_t>(i)) return nullptr;
    }
    const auto count = static_cast<int64_t>(vs.size());
    if (multiple_of(a->indices[last]) % count != 0 || buffers.at(a->buffer).shape[last] % count != 0) return nullptr;
    return a;
  }
  // b - a where b is a plus constants (`(x + 1) + 2`, `s * 16 + (x + 3)` of `s * 16 + x`),
  // else none.
  static std::optional<int64_t> offset_between(const Expr &a, const Expr &b) {
    if (equal(a, b)) return 0;
    const Binary *y = b.as<Binary>();
    if (!y || y->op != BinaryOp::Add) return std::nullopt;
    if (std::optional<int64_t> c = as_const_int(y->b))
      if (std::optional<int64_t> rest = offset_between(a, y->a)) return *rest + *c;
    const Binary *x = a.as<Binary>();
    if (!x || x->op != BinaryOp::Add) return std::nullopt;
    if (equal(x->a, y->a)) return offset_between(x->b, y->b);
    if (equal(x->b, y->b)) return offset_between(x->a, y->a);
    return std::nullopt;
  }
  // The fragments of a 16-bit matrix operand that is the same at every iteration of the
  // serial loop around it, loaded once before the loop into registers (at most
  // kMaxHoistedRegisters a lane), as flash attention keeps its block of q: attention's
  // q panel is copied to local memory once a group, then read again at every step over
  // the panels of j. Taken where every fragment value is a load of a local panel of the
  // operands' format whose indices use no variable of the loop's body, and the panel is
  // written only before the loop, a barrier between (written_before). On the H200, the
  // two-pass attention's kernels took 0.378 and 0.435 ms reading q's fragments at each
  // step, 0.347 and 0.374 so (bench/results.md, "Packed stores, q's fragments ...").
  static constexpr int64_t kMaxHoistedRegisters = 64;
  void hoist_invariant_operands(const For *loop) {
    if (p.target_.matrix_units != MatrixUnits::Ptx) return;
    const std::vector<const For *> loops = collect<For>(loop->body);
    std::set<std::string> inside{loop->var};  // the variables the loop's body defines
    for (const For *f : loops) inside.insert(f->var);
    for (const LetStmt *l : collect<LetStmt>(loop->body)) inside.insert(l->var);
    for (const For *m : loops) {
      if (m->kind != ForKind::Matrix) continue;
      std::string reason;
      const std::optional<MatrixTile> tile = printed_tile(*m, &reason);
      if (!tile || tile->operands == DType::F32) continue;
      const Expr lane = Var::make(index_type_for(32), tile->lane);
      const Expr step = matrix_var("ks_step", tile->steps());
      for (const bool a_side : {true, false}) {
        const int64_t count = a_side ? tile->m_tiles() * 4 : tile->n_tiles() * 2;
        if (hoisted.count({m, a_side}) || count * tile->steps() > kMaxHoistedRegisters) continue;
        bool invariant = true;
        std::set<std::string> panels;
        for (int64_t t = 0; t < (a_side ? tile->m_tiles() : tile->n_tiles()); ++t)
          for (int e = 0; e < (a_side ? 8 : 4); ++e) {
            const Expr v = a_side ? tile->a_fragment(lane, make_int(t), make_int(e), step)
                                  : tile->b_fragment(lane, make_int(t), make_int(e), step);
            const Load *l = v.as<Load>();
            auto scope_of = l ? scopes.find(l->buffer) : scopes.end();
            if (scope_of == scopes.end() || scope_of->second != MemoryScope::Local || l->pad ||
                buffers.at(l->buffer).type != tile->operands || mentions(v, inside)) {
              invariant = false;
              break;
            }
            panels.insert(l->buffer);
          }
        for (const std::string &panel : panels) invariant = invariant && written_before(root, loop, panel);
        if (!invariant) continue;
        const std::string name = p.c_name(std::string(a_side ? "ks_a_" : "ks_b_") + m->var);
        const std::string regs = a_side ? "ks_a" : "ks_b", k = p.c_name("ks_step");
        out << line() << "uint " << name << "[" << count * tile->steps() << "];  // " << (a_side ? "A" : "B")
            << "'s fragments of " << p.c_name(m->var) << ", the same at every " << p.c_name(loop->var) << "\n"
            << line() << p.target_.unroll_pragma << "\n"
            << line() << "for (int " << k << " = 0; " << k << " < " << tile->steps() << "; ++" << k << ") {\n";
        ++indent;
        out << line() << "uint " << regs << "[" << count << "];\n";
        operand_loads(*tile, lane, step, a_side);
        for (int64_t r = 0; r < count; ++r)
          out << line() << name << "[" << k << " * " << count << " + " << r << "] = " << regs << "[" << r << "];\n";
        --indent;
        out << line() << "}\n";
        hoisted[{m, a_side}] = name;
      }
      scope.vars.erase("ks_step");
    }
  }
  // Whether every write of `buffer` in the kernel comes before `loop`, outside the loops
  // around it and outside asynchronous copies, with a local barrier between the last and
  // the loop: what a work-item reads of it just before the loop is what each step reads.
  static bool written_before(const Stmt &root, const For *loop, const std::string &buffer) {
    struct Walk : IRVisitor {
      const For *loop;
      const std::string &buffer;
      std::vector<const For *> loops;  // the serial, unrolled and vectorized loops around
      std::set<const For *> around_loop;
      std::vector<std::vector<const For *>> writes;
      bool reached = false, unsynchronized = false, refused = false, in_copy = false;
      Walk(const For *loop, const std::string &buffer) : loop(loop), buffer(buffer) {}
      using IRVisitor::visit;
      void visit(const For *n) override {
        if (n == loop) {
          reached = true;
          around_loop.insert(loops.begin(), loops.end());
          refused = refused || unsynchronized;
        }
        const bool counts =
            n->kind == ForKind::Serial || n->kind == ForKind::Unrolled || n->kind == ForKind::Vectorized;
        if (counts) loops.push_back(n);
        IRVisitor::visit(n);
        if (counts) loops.pop_back();
      }
      void visit(const AsyncCopy *n) override {
        in_copy = true;
        IRVisitor::visit(n);
        in_copy = false;
      }
      void visit(const Barrier *n) override {  // (a global barrier's fence orders no local memory)
        if (n->scope == MemoryScope::Local) unsynchronized = false;
      }
      void visit(const Store *n) override {
        IRVisitor::visit(n);
        if (n->buffer != buffer) return;
        refused = refused || reached || in_copy;
        unsynchronized = true;
        writes.push_back(loops);
      }
    } walk(loop, buffer);
    walk.dispatch(root);
    if (!walk.reached || walk.refused || walk.writes.empty()) return false;
    for (const std::vector<const For *> &w : walk.writes)
      for (const For *f : w)
        if (walk.around_loop.count(f)) return false;
    return true;
  }
  // One operand's fragment registers at step `step` (A: ks_a, B: ks_b, declared by the
  // caller), as matrix_step_ptx_half loads them.
  void operand_loads(const MatrixTile &tile, const Expr &lane, const Expr &step, bool a_side) {
    const int64_t mt = tile.m_tiles(), nt = tile.n_tiles();
    const std::string pack = "ks_pack_" + std::string(dtype_name(tile.operands));
    // Registers r0 and r1 from four values: the first two, the last two. From a 16-bit
    // copy of the format, its bits: one 8-byte load where the four are neighbours.
    auto load = [&](const std::string &name, int64_t r0, int64_t r1, const std::vector<Expr> &vs) {
      out << line() << "{\n";
      std::vector<const Load *> bits;
      for (const Expr &v : vs)
        if (const Load *l = v.as<Load>();
            l && !l->pad && buffers.at(l->buffer).type == tile.operands && scopes.at(l->buffer) == MemoryScope::Local)
          bits.push_back(l);
      if (bits.size() == 4) {
        if (const Load *first = neighbours(vs)) {
          out << line() << "  const uint2 x = " << wide_lvalue(first->buffer, first->indices, "const uint2") << ";\n";
          out << line() << "  " << name << "[" << r0 << "] = x.x;\n";
          out << line() << "  " << name << "[" << r1 << "] = x.y;\n";
        } else {
          auto word = [&](const Load *lo, const Load *hi) {
            return "(uint)" + access(lo->buffer, lo->indices) + " | (uint)" + access(hi->buffer, hi->indices) +
                   " << 16";
          };
          out << line() << "  " << name << "[" << r0 << "] = " << word(bits[0], bits[1]) << ";\n";
          out << line() << "  " << name << "[" << r1 << "] = " << word(bits[2], bits[3]) << ";\n";
        }
        out << line() << "}\n";
        return;
      }
      if (std::optional<std::string> quad = adjacent(vs)) {
        out << line() << "  const float4 x = " << *quad << ";\n";
      } else {
        out << line() << "  const float4 x = (float4)(";
        // (a rounding to the format is the packing's own, cvt.rn)
        for (size_t i = 0; i < vs.size(); ++i) out << (i ? ", " : "") << sub(unrounded_to(vs[i], tile.operands), 0);
        out << ");\n";
      }
      out << line() << "  " << name << "[" << r0 << "] = " << pack << "(x.x, x.y);\n";
      out << line() << "  " << name << "[" << r1 << "] = " << pack << "(x.z, x.w);\n";
      out << line() << "}\n";
    };
    // Registers first, first + 1, ... of `name` by one ldmatrix.trans of `matrices`.
    auto ldmatrix = [&](const std::string &name, int64_t first, const Expr &row, int matrices) {
      const Load *l = row.as<Load>();
      out << line() << "{\n"
          << line() << "  const uint" << matrices << " x = " << ldmatrix_helper(matrices) << "(&"
          << access(l->buffer, l->indices) << ");\n";
      for (int r = 0; r < matrices; ++r)
        out << line() << "  " << name << "[" << first + r << "] = x."
            << "xyzw"[r] << ";\n";
      out << line() << "}\n";
    };
    for (int64_t i = 0; a_side && i < mt; ++i) {
      auto a = [&](const Expr &l, const Expr &e) { return tile.a_fragment(l, make_int(i), e, step); };
      if (const Expr row = ldmatrix_row(a, 4, lane, tile.operands); row.defined()) {
        ldmatrix("ks_a", i * 4, row, 4);
        continue;
      }
      for (int h = 0; h < 2; ++h) {
        std::vector<Expr> vs;
        for (int e : {2 * h, 2 * h + 1, 2 * h + 4, 2 * h + 5}) vs.push_back(a(lane, make_int(e)));
        load("ks_a", i * 4 + h, i * 4 + h + 2, vs);
      }
    }
    for (int64_t j = 0; !a_side && j < nt; ++j) {
      auto b = [&](const Expr &l, const Expr &e) { return tile.b_fragment(l, make_int(j), e, step); };
      if (const Expr row = ldmatrix_row(b, 2, lane, tile.operands); row.defined()) {
        ldmatrix("ks_b", j * 2, row, 2);
        continue;
      }
      std::vector<Expr> vs;
      for (int e = 0; e < 4; ++e) vs.push_back(tile.b_fragment(lane, make_int(j), make_int(e), step));
      load("ks_b", j * 2, j * 2 + 1, vs);
    }
  }
  // One step of 16-bit operands as mma.sync.m16n8k16: each lane reads a row's four
  // neighbouring k points of A (elements 2h, 2h + 1, 2h + 4, 2h + 5 of row half h)
  // and a column's four of B (by ldmatrix where it can: ldmatrix_row), packs each two
  // as one register, and the warp multiplies, into ks_d or (direct) the accumulators.
  void matrix_step_ptx_half(const For *loop, const MatrixTile &tile, const Expr &lane, const Expr &step, bool direct) {
    const int64_t mt = tile.m_tiles(), nt = tile.n_tiles();
    out << line() << "uint ks_a[" << mt * 4 << "], ks_b[" << nt * 2 << "];\n";
    for (const bool a_side : {true, false}) {
      auto h = hoisted.find({loop, a_side});
      if (h == hoisted.end()) {
        operand_loads(tile, lane, step, a_side);
        continue;
      }
      const int64_t count = a_side ? mt * 4 : nt * 2;
      for (int64_t r = 0; r < count; ++r)
        out << line() << (a_side ? "ks_a[" : "ks_b[") << r << "] = " << h->second << "[" << p.c_name("ks_step") << " * "
            << count << " + " << r << "];\n";
    }
    const std::string format = dtype_name(tile.operands), mma = "ks_mma_" + format;
    for (int64_t i = 0; i < mt; ++i)
      for (int64_t j = 0; j < nt; ++j) {
        if (!direct) {
          out << line() << mma << "(ks_d + " << (i * nt + j) * 4 << ", ks_a + " << i * 4 << ", ks_b + " << j * 2
              << ");\n";
          continue;
        }
        // The accumulator's registers as the instruction's operands, in place (a
        // pointer to a private array could keep it out of registers).
        out << line() << "asm volatile(\"" << mma16(format) << "\"\n" << line() << "             : ";
        for (int r = 0; r < 4; ++r)
          out << (r ? ", " : "") << "\"+f\"(" << access(tile.acc, tile.acc_at(i, j, r)) << ")";
        out << "\n" << line() << "             : ";
        for (int r = 0; r < 4; ++r) out << (r ? ", " : "") << "\"r\"(ks_a[" << i * 4 + r << "])";
        out << ", \"r\"(ks_b[" << j * 2 << "]), \"r\"(ks_b[" << j * 2 + 1 << "]));\n";
      }
  }
  // Where an index check evaluates the variables around a matrix loop: all at zero, all
  // at one, all at their ends (7 where unbounded), and each alone at its end.
  std::vector<std::map<std::string, int64_t>> sample_points(const std::set<std::string> &vars) const {
    std::vector<std::map<std::string, int64_t>> points(3);
    for (const std::string &v : vars) {
      points[1][v] = 1;
      auto it = scope.vars.find(v);
      points[2][v] = it != scope.vars.end() && it->second.bounded ? it->second.hi : 7;
      points.push_back({{v, points[2][v]}});
    }
    return points;
  }
  // Fragment registers as one ldmatrix.trans of `matrices` 8 x 8 matrices (B's two of
  // an n tile; A's four of an m tile, where A's panel runs along m), from a local panel
  // of the operands' format whose rows run along the fragment's other dimension: lane i
  // names the row of slot i % 8 of matrix i / 8 at the tile's first column or row (the
  // element 2 (i / 8) + i % 2 of lane (i % 8) / 2 holds), the transpose hands each lane
  // its column's two slots a register, and the rows' eight elements must be neighbours,
  // 16-byte aligned. That is checked by evaluating the indices at every lane and
  // column, at the variables' ends, zero and one (as the matrix tile's own check); the
  // row's load, its indices in the lane, else undefined.
  Expr ldmatrix_row(const std::function<Expr(const Expr &, const Expr &)> &fragment, int matrices, const Expr &lane,
                    DType operands) {
    const DType it = lane.type();
    auto c = [&](int64_t v) { return make_int(v, it); };
    const Expr row = fragment(lane % c(8) / c(2), lane % c(2) + lane / c(8) % c(matrices) * c(2));
    const Load *load = row.as<Load>();
    if (!load || load->pad || scopes.at(load->buffer) != MemoryScope::Local ||
        buffers.at(load->buffer).type != operands || buffers.at(load->buffer).shape.back() % 8 != 0)
      return Expr();
    std::set<std::string> vars;
    for (const Var *v : collect<Var>(row)) vars.insert(v->name);
    const std::string lane_name = lane.as<Var>()->name;
    vars.erase(lane_name);
    for (const std::map<std::string, int64_t> &at : sample_points(vars))
      for (int64_t i = 0; i < 8 * matrices; ++i) {
        std::map<std::string, int64_t> env = at;
        env[lane_name] = i;
        std::vector<int64_t> first;
        for (const Expr &x : load->indices) {
          std::optional<int64_t> v = evaluate_index(x, env);
          if (!v) return Expr();
          first.push_back(*v);
        }
        if (first.back() % 8 != 0) return Expr();
        // Column g of the same slot: lane 4 g + (i % 8) / 2, element as above.
        for (int64_t g = 1; g < 8; ++g) {
          const Expr other = fragment(c(4 * g + (i % 8) / 2), c(i % 2 + i / 8 * 2));
          const Load *o = other.as<Load>();
          if (!o || o->buffer != load->buffer || o->pad) return Expr();
          for (size_t d = 0; d < o->indices.size(); ++d) {
            std::optional<int64_t> v = evaluate_index(o->indices[d], env);
            if (!v || *v != first[d] + (d + 1 == o->indices.size() ? g : 0)) return Expr();
          }
        }
      }
    return row;
  }
  // ldmatrix.x2.trans or .x4.trans of 16-bit elements from local memory (its address in
  // the shared window, as cp.async takes it).
  std::string ldmatrix_helper(int matrices) {
    const std::string &local = p.target_.local_qualifier, n = std::to_string(matrices);
    const std::string name = "ks_ldmatrix_x" + n + "_trans";
    std::string regs, outs, values;  // "%0, %1", "\"=r\"(r0), \"=r\"(r1)", "r0, r1"
    for (int r = 0; r < matrices; ++r) {
      const std::string sep = r ? ", " : "", v = "r" + std::to_string(r);
      regs += sep + "%" + std::to_string(r);
      outs += sep + "\"=r\"(" + v + ")";
      values += sep + v;
    }
    p.helpers_used_[name] = "uint" + n + " " + name + "(" + local + " const void *row) {\n  uint " + values +
                            ";\n  asm volatile(\"ldmatrix.sync.aligned.m8n8.x" + n + ".trans.shared.b16 {" + regs +
                            "}, [%" + n + "];\"\n               : " + outs +
                            " : \"r\"((uint)(ulong)row) : \"memory\");\n  return (uint" + n + ")(" + values + ");\n}\n";
    return name;
  }
  // One step emulated: each lane computes its own four results of each instruction,
  // reading every operand where the fragment layout puts it (the lane and register
  // that would hold it), rounded as cvt.rna rounds.
  // `unrolled` false: the loops stay loops (a cooperative tile's rare step at the
  // reduction's edge, whose unrolled form took the SPIR-V compiler up to 55 s), over the
  // tiles too.
  void matrix_step_emulated(const MatrixTile &tile, const Expr &lane, const Expr &step, bool f32, const Expr &r,
                            const Expr &k, bool unrolled = true) {
    const int64_t nt = tile.n_tiles();
    const bool half = tile.operands != DType::F32;
    auto c = [](int64_t v) { return make_int(v); };
    // Row g + 8 (r / 2) of A, k slot k: lane 4g + k % 4 holds it in register r / 2 + 2 (k / 4);
    // with 16-bit operands lane 4g + (k % 8) / 2, element k % 2 + 2 (r / 2) + 4 (k / 8).
    const Expr a_lane = lane / c(4) * c(4) + (half ? k % c(8) / c(2) : k % c(4)),
               a_reg = half ? k % c(2) + r / c(2) * c(2) + k / c(8) * c(4) : r / c(2) + k / c(4) * c(2);
    // Column 2t + r % 2 of B, k slot k: lane 4 (2t + r % 2) + k % 4 holds it in register k / 4;
    // with 16-bit operands lane 4 (2t + r % 2) + (k % 8) / 2, element k % 2 + 2 (k / 8).
    const Expr b_lane = (lane % c(4) * c(2) + r % c(2)) * c(4) + (half ? k % c(8) / c(2) : k % c(4)),
               b_reg = half ? k % c(2) + k / c(8) * c(2) : k / c(4);
    const std::string rv = p.c_name("ks_r"), kv = p.c_name("ks_k");
    // The 4 x step_points() products of tiles i and j into ks_d[d + r].
    auto nest = [&](const Expr &i, const Expr &j, const std::string &d) {
      if (unrolled) out << line() << p.target_.unroll_pragma << "\n";
      out << line() << "for (int " << rv << " = 0; " << rv << " < 4; ++" << rv << ") {\n";
      if (unrolled) out << line() << "  " << p.target_.unroll_pragma << "\n";
      out << line() << "  for (int " << kv << " = 0; " << kv << " < " << tile.step_points() << "; ++" << kv << ") {\n";
      out << line() << "    const float a = " << sub(tile.a_fragment(a_lane, i, a_reg, step), 0)
          << ", b = " << sub(tile.b_fragment(b_lane, j, b_reg, step), 0) << ";\n";
      if (half) {  // exact values of the format: their product is exact in f32
        out << line() << "    ks_d[" << d << " + " << rv << "] += a * b;\n";
      } else {
        out << line() << "    const float ahi = ks_tf32(a), bhi = ks_tf32(b);\n";
        if (f32)
          out << line() << "    ks_d[" << d << " + " << rv << "] += ks_tf32(a - ahi) * bhi + ahi * ks_tf32(b - bhi);\n";
        out << line() << "    ks_d[" << d << " + " << rv << "] += ahi * bhi;\n";
      }
      out << line() << "  }\n" << line() << "}\n";
    };
    if (unrolled) {  // a nest a pair of tiles, its place in ks_d a constant (registers need them)
      for (int64_t i = 0; i < tile.m_tiles(); ++i)
        for (int64_t j = 0; j < nt; ++j) nest(make_int(i), make_int(j), std::to_string((i * nt + j) * 4));
      return;
    }
    // Else one nest, its loops numbering the tiles too: written a nest a pair, a 64 x 64 warp
    // tile's 32 nests took NVIDIA's Vulkan driver 38 s to build at a ragged K on the H200.
    const Expr i = matrix_var("ks_ti", tile.m_tiles()), j = matrix_var("ks_tj", nt);
    const std::string iv = p.c_name("ks_ti"), jv = p.c_name("ks_tj");
    out << line() << "for (int " << iv << " = 0; " << iv << " < " << tile.m_tiles() << "; ++" << iv << ") {\n";
    out << line() << "  for (int " << jv << " = 0; " << jv << " < " << nt << "; ++" << jv << ") {\n";
    indent += 2;
    nest(i, j, "(" + iv + " * " + std::to_string(nt) + " + " + jv + ") * 4");
    indent -= 2;
    out << line() << "  }\n" << line() << "}\n";
    for (const char *v : {"ks_ti", "ks_tj"}) scope.vars.erase(v);
  }
  void visit(const Block *n) override {
    out << line() << "{  // " << n->stage << "\n";
    ++indent;
    body(n->body);
    --indent;
    out << line() << "}\n";
  }
  void visit(const Allocate *n) override {
    TensorDecl decl{n->buffer, n->type, n->shape, TensorRole::Temp, std::nullopt};
    buffers[n->buffer] = decl;
    scopes[n->buffer] = n->scope;
    packed.erase(n->buffer);  // (a name another kernel used)
    if (n->scope == MemoryScope::Private && packed_private(*n)) {
      packed.insert(n->buffer);
      out << line() << "uint " << p.c_name(n->buffer) << "[" << (decl.numel() + 1) / 2 << "];  // bf16 pairs\n";
    } else if (n->scope == MemoryScope::Private) {
      out << line() << p.type_name(n->type) << " " << p.c_name(n->buffer);
      if (decl.numel() != 1) out << "[" << decl.numel() << "]";
      out << ";\n";
    }
    // Local buffers are declared at kernel scope (local_declarations()).
    body(n->body);
  }
  void visit(const Barrier *n) override {
    if (n->wait_copies >= 0 && p.target_.async_copies == AsyncCopies::Ptx)
      out << line()
          << ptx_helper("ks_copies_wait" + std::to_string(n->wait_copies),
                        "cp.async.wait_group " + std::to_string(n->wait_copies) + ";", "")
          << "();\n";
    out << line() << (n->scope == MemoryScope::Local ? p.target_.local_barrier : p.target_.global_barrier) << "\n";
  }
  void visit(const AsyncCopy *n) override {
    if (p.target_.async_copies == AsyncCopies::Refused) throw UserError(p.target_.async_copy_refusal);
    if (p.target_.async_copies == AsyncCopies::InOrder) {
      body(n->body);
      return;
    }
    in_async_copy = true;
    body(n->body);
    in_async_copy = false;
    out << line() << ptx_helper("ks_copies_commit", "cp.async.commit_group;", "") << "();\n";
  }
  // A helper function of one PTX instruction (params: its C parameters, bound to
  // %0, %1, ... in order by the operands the instruction names), defined once.
  std::string ptx_helper(const std::string &name, const std::string &instruction, const std::string &params,
                         const std::string &operands = "") {
    p.helpers_used_[name] = "void " + name + "(" + (params.empty() ? "void" : params) + ") {\n  asm volatile(\"" +
                            instruction + "\" :: " + operands + " : \"memory\");\n}\n";
    return name;
  }
  // One store of an asynchronous copy: `cp.async` of 4 or 8 bytes (a padded read
  // outside its buffer copies 0 bytes and fills with zeros), or of 16 where a
  // vector's lanes (four of 4 bytes, eight of 2) are contiguous and aligned at both ends.
  void async_store(const Store *n) {
    const Load *from = n->value.as<Load>();                        // the verifier holds the copies to this form
    const int bytes = dtype_bytes(buffers.at(from->buffer).type);  // what is stored, not its value's f32
    const bool sixteen = lanes_vary(n->indices) && lanes() * bytes == 16 && aligned(n->buffer, n->indices) &&
                         aligned(from->buffer, from->indices);
    if (bytes == 2 && !sixteen) {
      // cp.async copies no 2 bytes: where a ring of 16-bit panels cannot go in 16-byte
      // pieces (a size whose panels overhang their tensor), the copy is made in place,
      // before the barrier that precedes its slot's reads, as any copy is.
      in_async_copy = false;
      visit(n);
      in_async_copy = true;
      return;
    }
    if (bytes != 4 && bytes != 8 && !sixteen)
      throw UserError("an asynchronous copy of " + std::string(dtype_name(buffers.at(from->buffer).type)) +
                      " elements from " + from->buffer + ": cp.async copies 4, 8 or 16 bytes");
    // The local pointer as an integer is its address in the shared window, which
    // cp.async takes (checked on the H100: bench/probe_gemm_async.cl at commit 195f3f6, CVTA=0).
    const std::string operands = "\"r\"((uint)(ulong)dst), \"l\"((ulong)src)";
    const std::string pointers =
        p.target_.local_qualifier + " void *dst, " + p.target_.global_qualifier + " const void *src";
    auto copy = [&](const std::string &dst, const std::string &src, const std::string &inside) {
      const std::string size = std::to_string(bytes);
      if (inside.empty()) {
        out << line()
            << ptx_helper("ks_copy_async" + size, "cp.async.ca.shared.global [%0], [%1], " + size + ";", pointers,
                          operands)
            << "(&" << dst << ", &" << src << ");\n";
        return;
      }
      // Bytes past src_bytes are filled with zeros; at 0 nothing is read from src.
      out << line()
          << ptx_helper("ks_copy_async" + size + "_fill", "cp.async.ca.shared.global [%0], [%1], " + size + ", %2;",
                        pointers + ", uint src_bytes", operands + ", \"r\"(src_bytes)")
          << "(&" << dst << ", (" << inside << ") ? &" << src << " : " << p.c_name(from->buffer) << ", (" << inside
          << ") ? " << size << " : 0);\n";
    };
    if (!lanes_vary(n->indices)) {
      copy(access(n->buffer, n->indices), access(from->buffer, from->indices), inside_test(from));
      return;
    }
    if (sixteen) {
      // A 16-bit element's address through its bits (an f16 parameter is a half pointer).
      auto at = [&](const std::string &b, const std::vector<Expr> &i) {
        return stored_in_half(b) ? half_bits(b, i) : access(b, i);
      };
      out << line() << ptx_helper("ks_copy_async16", "cp.async.cg.shared.global [%0], [%1], 16;", pointers, operands)
          << "(&" << at(n->buffer, n->indices) << ", &" << at(from->buffer, from->indices) << ");\n";
      return;
    }
    for (int64_t k = 0; k < lanes(); ++k)
      copy(lane_access(n->buffer, n->indices, k), lane_access(from->buffer, from->indices, k), "");
  }
  void visit(const IfThenElse *n) override {
    if (lanes_vary(n->condition)) {  // a tail guard, which every lane passes here
      body(n->then_case);
      return;
    }
    out << line() << "if (" << sub(n->condition, 0) << ") {\n";
    ++indent;
    BoundsScope outside = scope;
    refine_with_condition(n->condition, &scope);
    body(n->then_case);
    scope = outside;
    --indent;
    if (n->else_case.defined()) {
      out << line() << "} else {\n";
      ++indent;
      body(n->else_case);
      --indent;
    }
    out << line() << "}\n";
  }
  void visit(const LetStmt *n) override {
    bool vector = vector_loop && vector_loop->form.vector_lets.count(n->var);
    const std::string type = vector ? vector_type(n->value.type()) : p.type_name(n->value.type());
    out << line() << "const " << type << " " << p.c_name(n->var) << " = " << sub(n->value, 0) << ";\n";
    if (is_int(n->value.type()) && !vector) {
      scope.vars[n->var] = bounds_of(n->value, scope);
      if (auto form = affine_of(n->value, affine_lets)) affine_lets[n->var] = *form;
      if (int64_t m = multiple_of(n->value); m > 1) let_multiples[n->var] = m;
    }
    body(n->body);
    scope.vars.erase(n->var);
    affine_lets.erase(n->var);
    let_multiples.erase(n->var);
  }
  void visit(const Store *n) override {
    if (in_async_copy) return async_store(n);
    // A store into a tensor of the format rounds a value already rounded to it once.
    if (const Expr &value = unrounded_to(n->value, buffers.at(n->buffer).type); !value.same_as(n->value))
      return visit(Store::make(n->buffer, n->indices, value).as<Store>());
    if (!lanes_vary(n->indices) && packed.count(n->buffer)) {
      const Load *copy = n->value.as<Load>();
      const std::string inside = inside_test(copy), bits = half_bits(copy->buffer, copy->indices);
      out << line()
          << packed_store(n->buffer, offset(n->buffer, n->indices),
                          inside.empty() ? bits : "(" + inside + ") ? " + bits + " : 0")
          << "\n";
      return;
    }
    if (!lanes_vary(n->indices)) {
      const Load *copy = stored_in_half(n->buffer) ? same_format_load(n->buffer, n->value) : nullptr;
      if (copy && !lanes_vary(copy->indices)) {  // a 16-bit copy: its bits (0 outside the source)
        const std::string inside = inside_test(copy), bits = half_bits(copy->buffer, copy->indices);
        out << line() << half_bits(n->buffer, n->indices) << " = "
            << (inside.empty() ? bits : "(" + inside + ") ? " + bits + " : " + half_zero()) << ";\n";
        return;
      }
      const std::string value = sub(n->value, 0);
      out << line()
          << (stored_in_half(n->buffer) ? half_store(n->buffer, n->indices, value)
                                        : access(n->buffer, n->indices) + " = " + value + ";")
          << "\n";
    } else if (const Load *copy = stored_in_half(n->buffer) ? same_format_load(n->buffer, n->value) : nullptr;
               copy && !copy->pad && lanes_vary(copy->indices) && p.target_.half_bits_type.empty()) {
      // A vector of 16-bit elements copied as their bits (OpenCL C: GLSL's vector loops are
      // written lane by lane).
      out << line() << half_vector_bits_store(n->buffer, n->indices, half_vector_bits(copy->buffer, copy->indices))
          << "\n";
    } else if (packed.count(n->buffer)) {
      // The lanes' bits, then two a word where lane 0's element starts one, else one by one.
      const Load *copy = n->value.as<Load>();
      const std::string words = word_vector();
      const std::string first = offset(n->buffer, n->indices), name = p.c_name(n->buffer);
      out << line() << "{\n";
      ++indent;
      if (offset_multiple_of(n->buffer, n->indices, 2)) {
        out << line() << "const " << words << " ks_words = as_" << words << "("
            << half_vector_bits(copy->buffer, copy->indices) << ");\n";
        for (int64_t k = 0; k < lanes() / 2; ++k)
          out << line() << name << "[(" << first << ") / 2 + " << k << "] = ks_words"
              << (lanes() == 2 ? std::string() : lane(k)) << ";\n";
      } else {
        out << line() << "const ushort" << lanes() << " ks_bits = " << half_vector_bits(copy->buffer, copy->indices)
            << ";\n";
        for (int64_t k = 0; k < lanes(); ++k)
          out << line() << packed_store(n->buffer, first + " + " + std::to_string(k), "ks_bits" + lane(k)) << "\n";
      }
      --indent;
      out << line() << "}\n";
    } else if (stored_in_half(n->buffer)) {
      out << line() << half_vector_store(n->buffer, n->indices, widened(n->value)) << "\n";
    } else if (scopes.at(n->buffer) == MemoryScope::Private) {
      out << line() << "{\n";
      ++indent;
      out << line() << "const " << vector_type(n->value.type()) << " ks_lanes = " << widened(n->value) << ";\n";
      for (int64_t k = 0; k < lanes(); ++k)
        out << line() << lane_access(n->buffer, n->indices, k) << " = ks_lanes" << lane(k) << ";\n";
      --indent;
      out << line() << "}\n";
    } else if (aligned(n->buffer, n->indices)) {
      out << line() << wide_lvalue(n->buffer, n->indices, vector_type(n->value.type())) << " = " << widened(n->value)
          << ";\n";
    } else {
      out << line() << p.target_.vector_store << lanes() << "(" << widened(n->value) << ", 0, &"
          << access(n->buffer, n->indices) << ");\n";
    }
  }
  void visit(const Seq *n) override {
    for (size_t i = 0; i < n->stmts.size(); ++i) {
      size_t count = 0;
      if (std::optional<GroupTree> tree = subgroup_tree(n->stmts, i, &count)) {
        print_subgroup_reduction(*tree);
        i += count - 1;
        continue;
      }
      body(n->stmts[i]);
    }
  }

  // A group tree the target can print as subgroup reductions: its operation and
  // type have one, and the group is exactly the tree's work-items, so that every
  // invocation of the group holds one partial result.
  std::optional<GroupTree> subgroup_tree(const std::vector<Stmt> &stmts, size_t i, size_t *count) {
    if (p.target_.subgroup_reduce.empty()) return std::nullopt;
    std::optional<GroupTree> tree = match_group_tree(stmts, i, count);
    if (!tree || !p.target_.subgroup_reduce.count(tree->op) ||
        !(tree->type == DType::F32 || tree->type == DType::I32) ||
        local_shape != std::array<int64_t, 3>{tree->threads, 1, 1})
      return std::nullopt;
    return tree;
  }

  // Each subgroup reduces its lanes, subgroup 0 reduces the subgroups' results,
  // and a barrier publishes part[0], as the tree leaves it. Two barriers where the
  // tree takes log2(T); no assumption on how work-items map to subgroups.
  void print_subgroup_reduction(const GroupTree &tree) {
    const CTarget &t = p.target_;
    p.uses_subgroups_ = true;
    const std::string reduce = t.subgroup_reduce.at(tree.op), part = p.c_name(tree.part), type = p.type_name(tree.type);
    const std::string other = part + "[ks_i]";
    const bool f = is_float(tree.type);
    const std::string combine = tree.op == BinaryOp::Add   ? "ks_v + " + other
                                : tree.op == BinaryOp::Mul ? "ks_v * " + other
                                : tree.op == BinaryOp::Max ? (f ? t.float_max : t.int_max) + "(ks_v, " + other + ")"
                                                           : (f ? t.float_min : t.int_min) + "(ks_v, " + other + ")";
    out << line() << "{  // " << tree.part << ": " << reduce << " across subgroups\n";
    ++indent;
    out << line() << type << " ks_v = " << reduce << "(" << sub(tree.value, 0) << ");\n";
    out << line() << "if (" << t.subgroup_elect << ") " << part << "[" << t.subgroup_id << "] = ks_v;\n";
    out << line() << t.local_barrier << "\n";
    out << line() << "if (" << t.subgroup_id << " == 0u && " << t.subgroup_lane << " < " << t.subgroup_count << ") {\n";
    ++indent;
    out << line() << "ks_v = " << part << "[" << t.subgroup_lane << "];\n";
    out << line() << "for (uint ks_i = " << t.subgroup_lane << " + " << t.subgroup_size << "; ks_i < "
        << t.subgroup_count << "; ks_i += " << t.subgroup_size << ") ks_v = " << combine << ";\n";
    out << line() << "ks_v = " << reduce << "(ks_v);\n";
    out << line() << "if (" << t.subgroup_elect << ") " << part << "[0] = ks_v;\n";
    --indent;
    out << line() << "}\n";
    out << line() << t.local_barrier << "\n";
    --indent;
    out << line() << "}\n";
  }
};

void spell_by_name(CTarget *target, std::initializer_list<Builtin> builtins) {
  for (Builtin b : builtins) target->builtins[b] = {builtin_info(b).name, "", {}};
}

CPrinter::CPrinter(const CTarget &target, const Program &program) : target_(target), program_(program) {}

std::string CPrinter::c_name(const std::string &name) const {
  if (target_.reserved.count(name)) return name + "_";
  for (const std::string &prefix : target_.reserved_prefixes)
    if (name.rfind(prefix, 0) == 0) return name + "_";
  return name;
}

std::string CPrinter::type_name(DType type) const {
  switch (type) {
    case DType::F32: return target_.f32_type;
    case DType::I32: return target_.i32_type;
    case DType::I64: return target_.i64_type;
    case DType::Bool: return target_.bool_type;
    case DType::F64: uses_f64_ = true; return target_.f64_type;
    case DType::F16: return target_.f16_storage;
    case DType::BF16: return target_.bf16_storage;
  }
  return "?";
}

std::string CPrinter::kernel_body(const Stmt &body, int indent) {
  Impl impl(*this);
  impl.indent = indent;
  impl.local_shape = launch_shape(Kernel{"", body}).local;
  impl.root = body;
  impl.body(body);
  return impl.out.str();
}

std::string CPrinter::local_declarations(const Stmt &body, int indent) {
  struct Collect : IRVisitor {
    std::vector<const Allocate *> locals;
    using IRVisitor::visit;
    void visit(const Allocate *n) override {
      if (n->scope == MemoryScope::Local) locals.push_back(n);
      IRVisitor::visit(n);
    }
  } collect;
  collect.dispatch(body);
  std::string out;
  for (const Allocate *a : collect.locals)
    // A 16-bit copy is its bits (OpenCL C without cl_khr_fp16 has no half arrays; f16
    // is read and written through a half pointer to them).
    out += std::string(static_cast<size_t>(indent) * 2, ' ') + target_.local_qualifier + " " +
           (is_half(a->type) ? target_.half_local : type_name(a->type)) + " " + c_name(a->buffer) + "[" +
           std::to_string(shape_numel(a->shape)) + "]" + target_.local_alignment + ";\n";
  return out;
}

std::string CPrinter::helpers() const {
  std::string out;
  for (const auto *helpers : {&base_helpers_used_, &helpers_used_})
    for (const auto &[name, definition] : *helpers) out += definition + "\n";
  return out;
}

std::string CPrinter::expr(const Expr &e) {
  Impl impl(*this);
  return impl.sub(e, 0);
}

}  // namespace ks
