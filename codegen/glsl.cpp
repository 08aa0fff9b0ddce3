// The GLSL target: its spellings (data) and the assembly of one shader per kernel.
#include "codegen/glsl.h"

#include <algorithm>
#include <sstream>

#include "codegen/c_printer.h"
#include "ir/diagnostic.h"
#include "ir/visitor.h"

namespace ks {

namespace {

constexpr const char *kInfinity = "uintBitsToFloat(0x7F800000u)", *kNaN = "uintBitsToFloat(0x7FC00000u)";

const CTarget &glsl_target() {
  static const CTarget target = [] {
    CTarget t;
    t.bool_type = "bool";
    t.i64_type = "int64_t";
    t.i64_suffix = "l";
    t.infinity = kInfinity;
    t.nan = kNaN;
    t.float_min = "min";
    t.float_max = "max";
    t.float_mod = "ks_fmod";
    t.group_index = {"gl_WorkGroupID.x", "gl_WorkGroupID.y", "gl_WorkGroupID.z"};
    t.local_index = {"gl_LocalInvocationID.x", "gl_LocalInvocationID.y", "gl_LocalInvocationID.z"};
    t.constructor_casts = true;
    t.u32_type = "uint";
    t.u64_type = "uint64_t";
    t.local_barrier = "memoryBarrierShared(); barrier();";
    t.global_barrier = "memoryBarrierBuffer(); barrier();";
    t.local_qualifier = "shared";
    t.global_qualifier = "";
    t.vector_load = t.vector_store = "";  // vectorized loops print unrolled
    t.local_alignment = "";
    t.unroll_pragma = "[[unroll]]";
    t.subgroup_reduce = {{BinaryOp::Add, "subgroupAdd"},
                         {BinaryOp::Mul, "subgroupMul"},
                         {BinaryOp::Max, "subgroupMax"},
                         {BinaryOp::Min, "subgroupMin"}};
    t.subgroup_id = "gl_SubgroupID";
    t.subgroup_lane = "gl_SubgroupInvocationID";
    t.subgroup_count = "gl_NumSubgroups";
    t.subgroup_size = "gl_SubgroupSize";
    t.subgroup_elect = "subgroupElect()";
    t.helper_qualifier = "";
    // 16-bit tensors as 16-bit integers (GL_EXT_shader_16bit_storage; local copies
    // GL_EXT_shader_explicit_arithmetic_types_int16), converted by the helpers below:
    // exact widening, rounding to nearest even in integer operations, as a Vulkan
    // driver's own conversion to 16 bits may round otherwise.
    t.f16_storage = t.bf16_storage = t.half_local = t.half_bits_type = "uint16_t";
    t.float_bits = "floatBitsToUint";
    t.bits_float = "uintBitsToFloat";
    t.reserved_prefixes = {"ks_", "__", "gl_"};
    // GLSL lacks these functions (or, for pow, C's meaning for negative bases).
    t.base_helpers = {
        {"ks_fmod", "float ks_fmod(float a, float b) { return a - b * trunc(a / b); }\n"},
        {"ks_erf",
         "// Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7.\n"
         "float ks_erf(float x) {\n"
         "  float t = 1.0f / (1.0f + 0.3275911f * abs(x));\n"
         "  float p = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + "
         "0.254829592f) * t;\n"
         "  return sign(x) * (1.0f - p * exp(-x * x));\n"
         "}\n"},
        {"ks_log1p",
         "// log(1 + x) without the rounding of 1 + x (Goldberg's correction).\n"
         "float ks_log1p(float x) {\n"
         "  float u = 1.0f + x;\n"
         "  return u == 1.0f ? x : log(u) * x / (u - 1.0f);\n"
         "}\n"},
        {"ks_expm1",
         "// exp(x) - 1 without the cancellation near 0 (Kahan's correction).\n"
         "float ks_expm1(float x) {\n"
         "  float u = exp(x);\n"
         "  if (u == 1.0f) return x;\n"
         "  if (u - 1.0f == -1.0f) return -1.0f;\n"
         "  return (u - 1.0f) * x / log(u);\n"
         "}\n"},
        {"ks_from_f16", "float ks_from_f16(uint b) { return unpackHalf2x16(b).x; }\n"},
        {"ks_from_bf16", "float ks_from_bf16(uint b) { return uintBitsToFloat(b << 16); }\n"},
        {"ks_to_bf16",
         "// To nearest, ties to even; a NaN stays quiet.\n"
         "uint ks_to_bf16(float x) {\n"
         "  uint u = floatBitsToUint(x);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;\n"
         "  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n"
         "}\n"},
        {"ks_to_f16",
         "// To nearest, ties to even: overflow to infinity from 65520, subnormals below\n"
         "// 2^-14 (the significand shifted, its dropped bits rounded), a NaN quiet.\n"
         "uint ks_to_f16(float x) {\n"
         "  uint u = floatBitsToUint(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
         "  if (a > 0x7f800000u) return sign | 0x7e00u;\n"
         "  if (a >= 0x477ff000u) return sign | 0x7c00u;\n"
         "  if (a >= 0x38800000u) {\n"
         "    uint r = a - 0x38000000u;\n"
         "    return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);\n"
         "  }\n"
         "  if (a < 0x33000000u) return sign;  // below half the least subnormal (2^-25)\n"
         "  uint m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);\n"
         "  uint h = m >> shift, rest = m & ((1u << shift) - 1u), half_way = 1u << (shift - 1u);\n"
         "  if (rest > half_way || (rest == half_way && (h & 1u) != 0u)) h += 1u;\n"
         "  return sign | h;\n"
         "}\n"},
        {"ks_pow",
         "// C's pow: GLSL leaves x < 0 (and x = 0, y <= 0) undefined.\n"
         "float ks_pow(float x, float y) {\n"
         "  if (x == 0.0f) return y > 0.0f ? 0.0f : (y == 0.0f ? 1.0f : " +
             std::string(kInfinity) +
             ");\n"
             "  float r = pow(abs(x), y);\n"
             "  if (x > 0.0f || y == 0.0f) return r;\n"
             "  if (fract(y) != 0.0f) return " +
             kNaN +
             ";\n"
             "  return mod(y, 2.0f) == 1.0f ? -r : r;\n"
             "}\n"},
    };
    auto base = [&](Builtin b, const char *name) { t.builtins[b] = {name, "", {name}}; };
    auto helper = [&](Builtin b, const char *name, const char *body, std::vector<std::string> needs = {}) {
      t.builtins[b] = {name, std::string("float ") + name + body, std::move(needs)};
    };
    spell_by_name(&t, {Builtin::Exp, Builtin::Exp2, Builtin::Log, Builtin::Log2, Builtin::Sqrt, Builtin::Tanh,
                       Builtin::Sin, Builtin::Cos, Builtin::Abs, Builtin::Floor, Builtin::Ceil, Builtin::Sign});
    base(Builtin::Log1p, "ks_log1p");
    base(Builtin::Expm1, "ks_expm1");
    base(Builtin::Erf, "ks_erf");
    base(Builtin::Pow, "ks_pow");
    t.builtins[Builtin::Rsqrt] = {"inversesqrt", "", {}};
    helper(Builtin::Clamp, "ks_clamp", "(float x, float lo, float hi) { return min(max(x, lo), hi); }\n");
    helper(Builtin::Sigmoid, "ks_sigmoid", "(float x) { return 1.0f / (1.0f + exp(-x)); }\n");
    helper(Builtin::Relu, "ks_relu", "(float x) { return x > 0.0f ? x : 0.0f; }\n");
    helper(Builtin::LeakyRelu, "ks_leaky_relu", "(float x, float a) { return x >= 0.0f ? x : x * a; }\n");
    helper(Builtin::Gelu, "ks_gelu", "(float x) { return 0.5f * x * (1.0f + ks_erf(x * 0.70710678118654752f)); }\n",
           {"ks_erf"});
    helper(Builtin::GeluTanh, "ks_gelu_tanh",
           "(float x) {\n  return 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));\n}\n");
    helper(Builtin::Softplus, "ks_softplus", "(float x) { return x > 20.0f ? x : ks_log1p(exp(x)); }\n", {"ks_log1p"});
    helper(Builtin::Silu, "ks_silu", "(float x) { return x / (1.0f + exp(-x)); }\n");
    helper(Builtin::Mish, "ks_mish", "(float x) { return x * tanh(x > 20.0f ? x : ks_log1p(exp(x))); }\n",
           {"ks_log1p"});
    helper(Builtin::Elu, "ks_elu", "(float x, float a) { return x > 0.0f ? x : a * ks_expm1(x); }\n", {"ks_expm1"});
    helper(Builtin::Selu, "ks_selu",
           "(float x) {\n  return 1.05070098735548049f * (x > 0.0f ? x : 1.67326324235437728f * ks_expm1(x));\n}\n",
           {"ks_expm1"});
    helper(Builtin::Hardtanh, "ks_hardtanh", "(float x, float lo, float hi) { return min(max(x, lo), hi); }\n");
    helper(Builtin::Hardsigmoid, "ks_hardsigmoid", "(float x) { return min(max(x / 6.0f + 0.5f, 0.0f), 1.0f); }\n");
    helper(Builtin::Hardswish, "ks_hardswish", "(float x) { return x * min(max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }\n");
    for (const BuiltinInfo &info : all_builtins())
      if (is_function(info.id) && !rounded_format(info.id) && !t.builtins.count(info.id))  // (the printer rounds)
        throw InternalError(std::string("GLSL spelling missing for ") + info.name);
    t.reserved = {
        // GLSL 4.50 keywords and reserved words
        "attribute", "const", "uniform", "varying", "buffer", "shared", "coherent", "volatile", "restrict", "readonly",
        "writeonly", "atomic_uint", "layout", "centroid", "flat", "smooth", "noperspective", "patch", "sample", "break",
        "continue", "do", "for", "while", "switch", "case", "default", "if", "else", "subroutine", "in", "out", "inout",
        "float", "double", "int", "void", "bool", "true", "false", "invariant", "precise", "discard", "return", "uint",
        "lowp", "mediump", "highp", "precision", "struct", "common", "partition", "active", "asm", "class", "union",
        "enum", "typedef", "template", "this", "resource", "goto", "inline", "noinline", "public", "static", "extern",
        "external", "interface", "long", "short", "half", "fixed", "unsigned", "superp", "input", "output", "filter",
        "sizeof", "cast", "namespace", "using", "main", "int64_t", "uint64_t",
        // functions the generated code calls
        "exp", "exp2", "log", "log2", "sqrt", "inversesqrt", "tanh", "sin", "cos", "abs", "floor", "ceil", "sign",
        "pow", "min", "max", "mod", "trunc", "fract", "clamp", "barrier", "memoryBarrierShared", "memoryBarrierBuffer",
        "uintBitsToFloat", "floatBitsToUint", "subgroupAdd", "subgroupMul", "subgroupMax", "subgroupMin",
        "subgroupElect"};
    for (const char *base_type : {"vec", "ivec", "uvec", "bvec", "dvec", "mat", "dmat", "hvec", "fvec"})
      for (int n : {2, 3, 4}) t.reserved.insert(std::string(base_type) + std::to_string(n));
    return t;
  }();
  return target;
}

}  // namespace

GeneratedProgram generate_glsl(const Program &program, bool subgroups, AsyncCopies async_copies,
                               MatrixUnits matrix_units, Precision precision) {
  CTarget target = glsl_target();
  if (!subgroups) target.subgroup_reduce.clear();
  // No cp.async in SPIR-V: the copies run in order where asked, else are refused.
  if (async_copies == AsyncCopies::InOrder) target.async_copies = async_copies;
  target.async_copy_refusal = async_copy_refusal("kernelsmith's SPIR-V target (Vulkan) does not offer");
  target.matrix_refusal = matrix_refusal(
      "kernelsmith's SPIR-V target (Vulkan) does not offer (it writes cooperative matrices of f16 "
      "operands, where the device has VK_NV_cooperative_matrix)");
  if (matrix_units == MatrixUnits::Emulated || matrix_units == MatrixUnits::Cooperative)
    target.matrix_units = matrix_units;
  target.precision = precision;
  for (const TensorDecl &b : program.buffers)
    if (b.numel() > INT32_MAX)
      throw UserError("error: buffer " + b.name + " has " + std::to_string(b.numel()) +
                      " elements; a Vulkan storage buffer is indexed with 32 bits (at most 2147483647)");
  GeneratedProgram generated;
  for (const Kernel &kernel : program.kernels) {
    CPrinter printer(target, program);  // per shader: each carries its own helpers
    GeneratedKernel info;
    info.name = printer.c_name(kernel.name);
    info.buffers = kernel_buffers(program, kernel);
    info.shape = launch_shape(kernel);
    std::string body = printer.kernel_body(kernel.body, 1);
    std::ostringstream shader;
    shader << "#version 450\n"
           << "#extension GL_EXT_control_flow_attributes : require\n"
           << "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    bool half_buffers = false, half_locals = false;
    for (const std::string &name : info.buffers)
      half_buffers = half_buffers || is_half(program.find_buffer(name)->type);
    for (const Allocate *a : collect<Allocate>(kernel.body)) half_locals = half_locals || is_half(a->type);
    if (half_buffers) shader << "#extension GL_EXT_shader_16bit_storage : require\n";
    if (half_locals) shader << "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    if (printer.uses_subgroups())
      shader << "#extension GL_KHR_shader_subgroup_basic : require\n"
             << "#extension GL_KHR_shader_subgroup_arithmetic : require\n";
    // (the memory-scope extension puts the whole shader on the Vulkan memory model)
    if (printer.uses_cooperative_matrices())
      shader << (printer.uses_subgroups() ? "" : "#extension GL_KHR_shader_subgroup_basic : require\n")
             << "#extension GL_NV_cooperative_matrix : require\n"
             << "#extension GL_KHR_memory_scope_semantics : require\n"
             << "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
    shader << "// " << program.name << ", kernel " << kernel.name << ": generated by kernelsmith\n\n"
           << "layout(local_size_x = " << info.shape.local[0] << ", local_size_y = " << info.shape.local[1]
           << ", local_size_z = " << info.shape.local[2] << ") in;\n\n";
    const std::vector<std::string> written = kernel_written_buffers(kernel);
    for (size_t i = 0; i < info.buffers.size(); ++i) {
      const TensorDecl &b = *program.find_buffer(info.buffers[i]);
      bool writes = std::find(written.begin(), written.end(), b.name) != written.end();
      shader << "layout(std430, set = 0, binding = " << i << ") restrict " << (writes ? "" : "readonly ")
             << "buffer ks_buffer" << i << " { " << printer.type_name(b.type) << " " << printer.c_name(b.name)
             << "[]; };\n";
    }
    std::string helpers = printer.helpers();
    std::string locals = printer.local_declarations(kernel.body, 0);
    if (printer.uses_cooperative_matrices())
      locals +=
          "shared float ks_scratch[" + std::to_string(cooperative_scratch_floats(info.shape.group_size())) + "];\n";
    if (!helpers.empty()) shader << "\n" << helpers;
    if (!locals.empty()) shader << (helpers.empty() ? "\n" : "") << locals;
    shader << "\nvoid main() {\n" << body << "}\n";
    info.source = shader.str();
    generated.source += (generated.kernels.empty() ? "" : "\n") + info.source;
    generated.kernels.push_back(info);
  }
  return generated;
}

}  // namespace ks
