// The SPIR-V path: every example, naive and with its hand-written schedule, becomes
// GLSL that glslang compiles and SPIRV-Tools validates; bad shaders and buffers too
// large for Vulkan are clear errors.
#include "codegen/spirv.h"

#include <fstream>
#include <random>

#include "codegen/glsl.h"
#include "evolve/evaluation/evaluate.h"
#include "evolve/search/space.h"
#include "ir/group_tree.h"
#include "ir/visitor.h"
#include "passes/lower.h"
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
  Rng rng(static_cast<unsigned>(std::hash<std::string>{}(spec.name)) + 1);
  for (int n = 0; n < 20; ++n) {
    Schedule schedule = random_schedule(lowered, rng, std::uniform_int_distribution<int>(1, 6)(rng));
    expect_valid_modules(compile_spec(spec, frontend::SizeSet::Check, {}, schedule).program,
                         GetParam() + " under\n" + print_schedule(schedule));
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleToSpirv, testing::ValuesIn(test::example_paths()), test::example_name);

// GLSL's % of a negative operand is undefined (and NVIDIA's Vulkan driver gives
// OpSMod(-3, 3) as 3): the shaders divide only magnitudes, so no signed division or
// remainder reaches SPIR-V, even where the values divided are negative.
TEST(Spirv, DividesOnlyUnsignedValues) {
  frontend::Spec spec = frontend::load_spec(std::string(KS_SOURCE_DIR) + "/tests/lit/inputs/negative_floors.ks");
  const Program program = compile_spec(spec, frontend::SizeSet::Check, {}, {}).program;
  for (const GeneratedKernel &k : generate_glsl(program).kernels) {
    const std::string text = disassemble_spirv(compile_glsl_to_spirv(k.source, k.name));
    EXPECT_NE(text.find("OpUDiv"), std::string::npos) << text;
    for (const char *op : {"OpSDiv", "OpSMod", "OpSRem"})
      EXPECT_EQ(text.find(op), std::string::npos) << op << "\n" << k.source;
  }
}

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

// The tree cross_reduce writes is recognised exactly, and nothing else is.
TEST(GroupTree, MatchesExactlyWhatCrossReduceWrites) {
  frontend::Spec spec = frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/softmax.ks");
  Program p = compile_spec(spec, frontend::SizeSet::Check, {},
                           parse_schedule(test::source("bind row_max.n group.x\n"
                                                       "cross_reduce row_max.d 64 -> t\n",
                                                       "test.sched")))
                  .program;
  std::vector<std::vector<Stmt>> seqs;
  struct Collect : IRVisitor {
    std::vector<std::vector<Stmt>> *seqs;
    using IRVisitor::visit;
    void visit(const Seq *n) override {
      seqs->push_back(n->stmts);
      IRVisitor::visit(n);
    }
  } collect;
  collect.seqs = &seqs;
  for (const Kernel &k : p.kernels) collect.dispatch(k.body);
  int found = 0;
  for (const std::vector<Stmt> &stmts : seqs)
    for (size_t i = 0; i < stmts.size(); ++i) {
      size_t count = 0;
      std::optional<GroupTree> tree = match_group_tree(stmts, i, &count);
      if (!tree) continue;
      ++found;
      EXPECT_EQ(tree->op, BinaryOp::Max);
      EXPECT_EQ(tree->threads, 64);
      EXPECT_EQ(tree->thread, "t");
      EXPECT_EQ(count, 2u + 6 + 5);  // store, barrier, 6 steps with 5 barriers between
      // Any change to the shape is no longer the tree: drop the last step.
      std::vector<Stmt> shorter(stmts.begin(), stmts.begin() + static_cast<long>(i + count - 1));
      size_t ignored = 0;
      EXPECT_FALSE(match_group_tree(shorter, i, &ignored));
    }
  EXPECT_EQ(found, 1);
}

// On GLSL a group tree whose group is exactly its work-items becomes subgroup
// reductions; OpenCL C (NVIDIA's has no subgroups) keeps the tree.
TEST(Glsl, GroupTreesBecomeSubgroupReductions) {
  frontend::Spec spec = frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/softmax.ks");
  Schedule schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/examples/softmax.sched");
  Compiled spirv = compile_spec(spec, frontend::SizeSet::Check, {}, schedule, Target::SPIRV);
  EXPECT_NE(spirv.code.source.find("#extension GL_KHR_shader_subgroup_arithmetic : require"), std::string::npos);
  EXPECT_NE(spirv.code.source.find("float ks_v = subgroupMax(row_max_acc);"), std::string::npos) << spirv.code.source;
  EXPECT_NE(spirv.code.source.find("float ks_v = subgroupAdd(total_acc);"), std::string::npos) << spirv.code.source;
  EXPECT_EQ(spirv.code.source.find("row_max_part[t + 256]"), std::string::npos) << "no tree left";
  EXPECT_NE(disassemble_spirv(spirv.binary.spirv[0].words).find("OpGroupNonUniformFMax"), std::string::npos);
  // A device without subgroup arithmetic gets the tree.
  CodeFeatures no_subgroups;
  no_subgroups.subgroups = false;
  Compiled plain = compile_spec(spec, frontend::SizeSet::Check, {}, schedule, Target::SPIRV, no_subgroups);
  EXPECT_EQ(plain.code.source.find("subgroup"), std::string::npos);
  EXPECT_NE(plain.code.source.find("row_max_part[t + 256]"), std::string::npos);
  Compiled opencl = compile_spec(spec, frontend::SizeSet::Check, {}, schedule, Target::OpenCL);
  EXPECT_EQ(opencl.code.source.find("subgroup"), std::string::npos);
  EXPECT_NE(opencl.code.source.find("row_max_part[t + 256]"), std::string::npos);
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
