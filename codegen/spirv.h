// GLSL compute shaders to SPIR-V, in-process: glslang (the library) compiles,
// SPIRV-Tools validates, optimises (its performance recipe) and validates again.
// Target: Vulkan 1.2, SPIR-V 1.5 (lavapipe and NVIDIA's driver both take it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ks {

/// The SPIR-V of one GLSL compute shader; `name` labels messages. A shader that
/// does not compile, or a module that does not validate, throws UserError with
/// glslang's or the validator's message.
std::vector<uint32_t> compile_glsl_to_spirv(const std::string &glsl, const std::string &name);

/// A module's disassembly (SPIRV-Tools, friendly names).
std::string disassemble_spirv(const std::vector<uint32_t> &words);

}  // namespace ks
