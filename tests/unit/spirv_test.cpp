// The SPIR-V path: every example, naive and with its hand-written schedule, becomes
// GLSL that glslang compiles and SPIRV-Tools validates; bad shaders and buffers too
// large for Vulkan are clear errors.
#include "codegen/spirv.h"

#include <fstream>
#include <random>

#include "codegen/glsl.h"
#include "evolve/evaluate.h"
#include "passes/lower.h"
#include "random_schedule.h"
#include "test_util.h"

namespace ks {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

// Each kernel's SPIR-V; the module must validate (compile_glsl_to_spirv checks it).
void expect_valid_modules(const Program &program, const std::string &label) {
  GeneratedProgram glsl = generate_glsl(program);
  ASSERT_EQ(glsl.kernels.size(), program.kernels.size());
  for (const GeneratedKernel &k : glsl.kernels) {
    std::vector<uint32_t> words;
    try {
      words = compile_glsl_to_spirv(k.source, k.name);
    } catch (const UserError &e) {
      ADD_FAILURE() << label << ", kernel " << k.name << ": " << e.what() << "\n" << k.source;
      continue;
    }
    ASSERT_GT(words.size(), 5u) << label;
    EXPECT_EQ(words[0], kSpirvMagic) << label;
    EXPECT_NE(disassemble_spirv(words).find("OpEntryPoint GLCompute"), std::string::npos) << label;
  }
}

class ExampleToSpirv : public testing::TestWithParam<std::string> {};

TEST_P(ExampleToSpirv, ValidatesNaiveAndScheduled) {
  frontend::Spec spec = frontend::load_spec(GetParam());
  expect_valid_modules(compile_spec(spec, frontend::SizeSet::Check, {}, {}).program, GetParam());
  const std::string schedule = GetParam().substr(0, GetParam().size() - 3) + ".sched";
  if (std::ifstream(schedule))
    expect_valid_modules(compile_spec(spec, frontend::SizeSet::Check, {}, load_schedule(schedule)).program, schedule);
}

// Random schedules (every primitive) print as GLSL that validates as well.
TEST_P(ExampleToSpirv, RandomSchedulesValidate) {
  frontend::Spec spec = frontend::load_spec(GetParam());
  Program lowered = lower(frontend::elaborate(spec, frontend::SizeSet::Check, {}));
  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(spec.name)) + 1);
  for (int n = 0; n < 20; ++n) {
    Schedule schedule = test::random_schedule(lowered, rng, std::uniform_int_distribution<int>(1, 6)(rng));
    expect_valid_modules(compile_spec(spec, frontend::SizeSet::Check, {}, schedule).program,
                         GetParam() + " under\n" + print_schedule(schedule));
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleToSpirv, testing::ValuesIn(test::example_paths()), test::example_name);

TEST(Spirv, ShaderErrorsCarryGlslangsLog) {
  std::string message = test::user_error([] {
    compile_glsl_to_spirv("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nowhere = 1; }\n", "bad");
  });
  EXPECT_NE(message.find("error: bad: glslang rejects the shader"), std::string::npos) << message;
  EXPECT_NE(message.find("nowhere"), std::string::npos) << message;
}

TEST(Spirv, BuffersBeyond32BitIndicesAreRefused) {
  Program p = lower(test::graph_of("kernel big(x: f32[N]) -> y: f32[N] where N = 3000000000 { y[i] = x[i] }"));
  EXPECT_EQ(test::user_error([&] { generate_glsl(p); }),
            "error: buffer x has 3000000000 elements; a Vulkan storage buffer is indexed with 32 bits (at most "
            "2147483647)");
}

// GLSL lacks erf: the helper that defines it comes before the helper calling it.
TEST(Glsl, BaseHelpersComeFirst) {
  Program p = lower(test::graph_of("kernel g(x: f32[N]) -> y: f32[N] where N = 4 { y[i] = gelu(x[i]) + erf(x[i]) }"));
  std::string source = generate_glsl(p).source;
  size_t erf = source.find("float ks_erf(float x)"), gelu = source.find("float ks_gelu(float x)");
  ASSERT_NE(erf, std::string::npos) << source;
  ASSERT_NE(gelu, std::string::npos) << source;
  EXPECT_LT(erf, gelu);
  EXPECT_EQ(source.find("float ks_erf(float x)", erf + 1), std::string::npos) << "defined once";
}

}  // namespace
}  // namespace ks
