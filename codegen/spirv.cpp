#include "codegen/spirv.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <mutex>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include "ir/diagnostic.h"

namespace ks {

namespace {

constexpr spv_target_env kTargetEnv = SPV_ENV_VULKAN_1_2;

// glslang keeps process-wide tables; they are built once and live until exit.
void initialise_glslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

// Collects SPIRV-Tools' messages ("error: line 12: ...").
class Messages {
 public:
  spvtools::MessageConsumer consumer() {
    return [this](spv_message_level_t, const char *, const spv_position_t &position, const char *message) {
      text_ += "  " + std::string(message) + " (word " + std::to_string(position.index) + ")\n";
    };
  }
  const std::string &text() const { return text_; }

 private:
  std::string text_;
};

void validate(const std::vector<uint32_t> &words, const std::string &name, const char *stage) {
  spvtools::SpirvTools tools(kTargetEnv);
  Messages messages;
  tools.SetMessageConsumer(messages.consumer());
  if (!tools.Validate(words))
    throw UserError("error: " + name + ": the SPIR-V " + stage + " does not validate:\n" + messages.text());
}

}  // namespace

std::vector<uint32_t> compile_glsl_to_spirv(const std::string &glsl, const std::string &name) {
  initialise_glslang();
  glslang::TShader shader(EShLangCompute);
  const char *text = glsl.c_str();
  const char *label = name.c_str();
  shader.setStringsWithLengthsAndNames(&text, nullptr, &label, 1);
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  // The device's limits (work-group size, shared memory) are checked before launch,
  // against the device itself; glslang's defaults (64 along z) would refuse first.
  TBuiltInResource resources = *GetDefaultResources();
  resources.maxComputeWorkGroupSizeX = resources.maxComputeWorkGroupSizeY = resources.maxComputeWorkGroupSizeZ = 65535;
  if (!shader.parse(&resources, 450, false, messages))
    throw UserError("error: " + name + ": glslang rejects the shader:\n" + shader.getInfoLog());
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages))
    throw UserError("error: " + name + ": glslang cannot link the shader:\n" + program.getInfoLog());
  std::vector<uint32_t> words;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), words, &logger, &options);
  if (!logger.getAllMessages().empty() && words.empty())
    throw UserError("error: " + name + ": glslang cannot generate SPIR-V:\n" + logger.getAllMessages());
  validate(words, name, "from glslang");

  spvtools::Optimizer optimizer(kTargetEnv);
  Messages optimizer_messages;
  optimizer.SetMessageConsumer(optimizer_messages.consumer());
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> optimised;
  if (!optimizer.Run(words.data(), words.size(), &optimised))
    throw UserError("error: " + name + ": the SPIR-V optimiser failed:\n" + optimizer_messages.text());
  validate(optimised, name, "after optimisation");
  return optimised;
}

std::string disassemble_spirv(const std::vector<uint32_t> &words) {
  spvtools::SpirvTools tools(kTargetEnv);
  std::string text;
  if (!tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    throw InternalError("SPIRV-Tools cannot disassemble a module it validated");
  return text;
}

}  // namespace ks
