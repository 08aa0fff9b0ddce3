// The OpenCL C target: its spellings (data) and the assembly of a program.
#include "codegen/opencl_c.h"

#include <algorithm>
#include <sstream>

#include "codegen/c_printer.h"
#include "ir/visitor.h"

namespace ks {

namespace {

const CTarget &opencl_target() {
  static const CTarget target = [] {
    CTarget t;
    auto helper = [&](Builtin b, const char *name, const char *body) {
      t.builtins[b] = {name, std::string("float ") + name + body, {}};
    };
    spell_by_name(&t, {Builtin::Exp, Builtin::Exp2, Builtin::Log, Builtin::Log2, Builtin::Log1p, Builtin::Expm1,
                       Builtin::Sqrt, Builtin::Rsqrt, Builtin::Tanh, Builtin::Erf, Builtin::Sin, Builtin::Cos,
                       Builtin::Floor, Builtin::Ceil, Builtin::Sign, Builtin::Pow});
    t.builtins[Builtin::Abs] = {"fabs", "", {}};
    helper(Builtin::Clamp, "ks_clamp", "(float x, float lo, float hi) { return fmin(fmax(x, lo), hi); }\n");
    helper(Builtin::Sigmoid, "ks_sigmoid", "(float x) { return 1.0f / (1.0f + exp(-x)); }\n");
    helper(Builtin::Relu, "ks_relu", "(float x) { return x > 0.0f ? x : 0.0f; }\n");
    helper(Builtin::LeakyRelu, "ks_leaky_relu", "(float x, float a) { return x >= 0.0f ? x : x * a; }\n");
    helper(Builtin::Gelu, "ks_gelu", "(float x) { return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f)); }\n");
    helper(Builtin::GeluTanh, "ks_gelu_tanh",
           "(float x) {\n  return 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));\n}\n");
    helper(Builtin::Softplus, "ks_softplus", "(float x) { return x > 20.0f ? x : log1p(exp(x)); }\n");
    helper(Builtin::Silu, "ks_silu", "(float x) { return x / (1.0f + exp(-x)); }\n");
    helper(Builtin::Mish, "ks_mish", "(float x) { return x * tanh(x > 20.0f ? x : log1p(exp(x))); }\n");
    helper(Builtin::Elu, "ks_elu", "(float x, float a) { return x > 0.0f ? x : a * expm1(x); }\n");
    helper(Builtin::Selu, "ks_selu",
           "(float x) {\n  return 1.05070098735548049f * (x > 0.0f ? x : 1.67326324235437728f * expm1(x));\n}\n");
    helper(Builtin::Hardtanh, "ks_hardtanh", "(float x, float lo, float hi) { return fmin(fmax(x, lo), hi); }\n");
    helper(Builtin::Hardsigmoid, "ks_hardsigmoid", "(float x) { return fmin(fmax(x / 6.0f + 0.5f, 0.0f), 1.0f); }\n");
    helper(Builtin::Hardswish, "ks_hardswish", "(float x) { return x * fmin(fmax(x + 3.0f, 0.0f), 6.0f) / 6.0f; }\n");
    // Plain definitions: a C99 `inline` definition without `static` may leave an
    // undefined symbol on some OpenCL compilers, and every compiler inlines these.
    t.helper_qualifier = "";
    for (const BuiltinInfo &info : all_builtins())
      if (is_function(info.id) && !rounded_format(info.id) && !t.builtins.count(info.id))  // (the printer rounds)
        throw InternalError(std::string("OpenCL spelling missing for ") + info.name);
    t.reserved = {
        // C keywords
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
        "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
        "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
        // OpenCL C keywords, types and qualifiers
        "bool", "half", "uchar", "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "global",
        "local", "constant", "private", "kernel", "read_only", "write_only", "read_write", "image2d_t", "image3d_t",
        "sampler_t", "event_t", "true", "false", "NULL", "INFINITY", "NAN", "MAXFLOAT", "HUGE_VALF",
        // functions the generated code calls
        "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "fabs", "floor",
        "ceil", "sign", "pow", "fmin", "fmax", "fmod", "min", "max", "get_group_id", "get_local_id", "get_global_id",
        "barrier", "mad", "fma", "select", "clamp", "vload4", "vstore4"};
    for (const char *base :
         {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half"})
      for (int n : {2, 3, 4, 8, 16}) t.reserved.insert(std::string(base) + std::to_string(n));
    return t;
  }();
  return target;
}

// Whether work-items of a group exchange values through global memory: a global
// barrier (a statistic computed with compute_at into its consumer's kernel).
struct FindGlobalBarrier : IRVisitor {
  bool found = false;
  using IRVisitor::visit;
  void visit(const Barrier *n) override { found = found || n->scope == MemoryScope::Global; }
};

}  // namespace

GeneratedProgram generate_opencl_c(const Program &program, AsyncCopies async_copies, const std::string &why_not,
                                   MatrixUnits matrix_units, Precision precision) {
  CTarget target = opencl_target();
  target.async_copies = async_copies;
  target.async_copy_refusal = async_copy_refusal(why_not);
  // (cooperative matrices are GLSL's: OpenCL C has no such types)
  target.matrix_units = matrix_units == MatrixUnits::Cooperative ? MatrixUnits::Refused : matrix_units;
  target.matrix_refusal = matrix_refusal(why_not);
  target.precision = precision;
  CPrinter printer(target, program);
  GeneratedProgram generated;
  std::ostringstream kernels;
  for (const Kernel &kernel : program.kernels) {
    GeneratedKernel info;
    info.name = printer.c_name(kernel.name);
    info.buffers = kernel_buffers(program, kernel);
    info.shape = launch_shape(kernel);
    kernels << "\n__kernel __attribute__((reqd_work_group_size(" << info.shape.local[0] << ", " << info.shape.local[1]
            << ", " << info.shape.local[2] << ")))\nvoid " << info.name << "(";
    const std::vector<std::string> written = kernel_written_buffers(kernel);
    const std::vector<std::string> read = kernel_read_buffers(kernel);
    FindGlobalBarrier barrier;
    barrier.dispatch(kernel.body);
    for (size_t i = 0; i < info.buffers.size(); ++i) {
      const TensorDecl &b = *program.find_buffer(info.buffers[i]);
      bool writes = std::find(written.begin(), written.end(), b.name) != written.end();
      bool reads = std::find(read.begin(), read.end(), b.name) != read.end();
      // A buffer one work-item writes and others read after a global barrier is
      // volatile: NVIDIA's OpenCL compiler (driver 580) otherwise reads row_max[n]
      // in cross_entropy's fused kernel before the barrier, from the poisoned state,
      // with or without restrict and with extra fences (bench/results.md). An
      // empty asm clobbering memory after the barrier, which would keep the loads
      // cached (0.14 ms against 0.35 for that kernel on an H200), is not a cure:
      // the evaluator's poisoned run still read NaN there, on three seeds.
      const char *qualifier = !writes ? "const " : reads && barrier.found ? "volatile " : "";
      kernels << (i ? ",\n    " : "") << "__global " << qualifier << printer.type_name(b.type) << " *restrict "
              << printer.c_name(b.name);
    }
    kernels << ") {\n";
    kernels << printer.local_declarations(kernel.body, 1);
    kernels << printer.kernel_body(kernel.body, 1);
    kernels << "}\n";
    generated.kernels.push_back(info);
  }
  std::ostringstream source;
  source << "// " << program.name << ": generated by kernelsmith\n";
  if (printer.uses_f64()) source << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  std::string helpers = printer.helpers();
  if (!helpers.empty()) source << "\n" << helpers;
  source << kernels.str();
  generated.source = source.str();
  return generated;
}

}  // namespace ks
