// ksmith compile SPEC [--target opencl|spirv] [--schedule FILE] [--size N=V]...
//                     [--emit=graph|loops|opencl|glsl|spirv] [--async-copies]
//                     [--matrix-units=ptx|emulated] [--precision=fp32|tf32] [-o FILE]
#include <filesystem>
#include <iostream>

#include "codegen/spirv.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct CompileOptions {
  std::string spec, schedule, emit, output, target;
  std::vector<std::string> sizes;
  bool async_copies = false;
  std::string matrix_units, precision = "fp32", dtype;
};

// SPIR-V: the disassembly of each kernel's module on standard output, or the
// binary with -o (FILE itself for one kernel; FILE's stem.KERNEL.ext for several).
int emit_spirv(const Compiled &c, const std::string &output) {
  const std::vector<runtime::SpirvKernel> &modules = c.binary.spirv;
  if (output.empty() || output == "-") {
    for (const runtime::SpirvKernel &k : modules)
      std::cout << "; kernel " << k.name << "\n" << disassemble_spirv(k.words);
    return 0;
  }
  for (const runtime::SpirvKernel &k : modules) {
    std::filesystem::path path(output);
    if (modules.size() > 1) path.replace_filename(path.stem().string() + "." + k.name + path.extension().string());
    write_text_file(path.string(), std::string(reinterpret_cast<const char *>(k.words.data()), k.words.size() * 4));
  }
  return 0;
}

int compile(const CompileOptions &o) {
  std::optional<Target> target = parse_target(o.target);
  // The emitted language follows the target, and must not contradict it.
  std::string emit = o.emit.empty() ? (target == Target::SPIRV ? "spirv" : "opencl") : o.emit;
  bool spirv_stage = emit == "glsl" || emit == "spirv";
  if (target && ((*target == Target::SPIRV && emit == "opencl") || (*target == Target::OpenCL && spirv_stage)))
    throw UserError("error: --emit=" + emit + " is not code of --target " + target_name(*target) +
                    " (opencl emits opencl; spirv emits glsl or spirv)");
  if (o.matrix_units == "cooperative" && !spirv_stage && emit != "loops")
    throw UserError(
        "error: --matrix-units cooperative is code of --target spirv (OpenCL C has no cooperative "
        "matrices: --matrix-units ptx)");
  frontend::Spec spec = frontend::load_spec(o.spec, frontend::parse_spec_dtype(o.dtype));
  frontend::SizeOverrides sizes = size_overrides(o.sizes, "--size");
  std::string text;
  if (emit == "graph") {
    // After the schedule's rewrites, if it has any: the graph that is lowered.
    text = print_graph(
        rewritten_graph(frontend::elaborate(spec, frontend::SizeSet::Default, sizes), schedule_from(o.schedule)));
  } else {
    CodeFeatures features;  // no device here: what the flags say
    if (o.async_copies) features.async_copies = AsyncCopies::Ptx;
    if (emit == "loops") features.async_copies = AsyncCopies::InOrder;  // the code is not printed
    if (o.matrix_units == "ptx") features.matrix_units = MatrixUnits::Ptx;
    if (o.matrix_units == "cooperative") features.matrix_units = MatrixUnits::Cooperative;
    if (o.matrix_units == "emulated" || emit == "loops") features.matrix_units = MatrixUnits::Emulated;
    features.precision = *parse_precision(o.precision);
    features.async_copies_missing = "ksmith compile writes only with --async-copies (and --matrix-units)";
    Compiled c = compile_spec(spec, frontend::SizeSet::Default, sizes, schedule_from(o.schedule),
                              spirv_stage ? Target::SPIRV : Target::OpenCL, features);
    if (emit == "spirv") return emit_spirv(c, o.output);
    text = emit == "loops" ? print_program(c.program) : c.code.source;
  }
  write_output(o.output, text);
  return 0;
}

}  // namespace

Command add_compile(CLI::App &app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App *command = app.add_subcommand("compile", "Compile a spec and print the chosen stage");
  add_spec_options(command, &o->spec, &o->schedule, &o->sizes);
  add_target_option(command, &o->target);
  command
      ->add_option("--emit", o->emit, "What to print: graph, loops, opencl, glsl or spirv (default: the target's code)")
      ->check(CLI::IsMember({"graph", "loops", "opencl", "glsl", "spirv"}));
  command->add_flag("--async-copies", o->async_copies,
                    "Write async_copy's copies as PTX cp.async (NVIDIA's OpenCL, compute capability 8.0 or later)");
  command
      ->add_option("--matrix-units", o->matrix_units,
                   "Write tensorize's matrix loops as PTX mma.sync (ptx: NVIDIA's OpenCL, compute capability 8.0 or "
                   "later), as cooperative matrices of f16 operands (cooperative: --target spirv, a Vulkan device "
                   "with VK_NV_cooperative_matrix) or emulated in portable OpenCL C or GLSL (emulated)")
      ->check(CLI::IsMember({"ptx", "cooperative", "emulated"}));
  add_precision_option(command, &o->precision);
  add_dtype_option(command, &o->dtype);
  command->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {command, [o] { return compile(*o); }};
}

}  // namespace ks::cli
