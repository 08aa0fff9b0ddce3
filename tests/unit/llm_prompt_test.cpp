// The LLM proposers' prompts (llm/prompt.h): assembled from the files in llm/prompts/
// against a golden copy, and trimmed to a budget in the documented order.
// KS_UPDATE_GOLDEN=1 rewrites the golden file (review its diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "llm/prompt.h"

namespace ks::llm {
namespace {

PromptInputs inputs() {
  PromptInputs in;
  in.device = "NVIDIA H100 80GB HBM3 (OpenCL): work-groups up to 1024 work-items, 48 KiB of local memory";
  in.spec = "kernel mm(a: f32[64, 32], b: f32[32, 48]) -> c: f32[64, 48]\n  c[i, j] = sum(k) a[i, k] * b[k, j]";
  in.parent = {"split c.i 16 -> io ii\nbind c.io group.x\nbind c.ii local.x", "1.84x over the naive kernel"};
  in.parent_loops = "kernel c {\n  for io in 0..4 group.x {\n    for ii in 0..16 local.x {\n      ...\n    }\n  }\n}";
  in.inspirations = {{"", "1.00x over the naive kernel"},
                     {"split c.j 4 -> jo jv\nvectorize c.jv", "1.20x over the naive kernel"}};
  in.failures = {{"unroll c.k", "compile failed: unrolling loop k would make 512 copies"}};
  in.answer_problems = {"the answer has no <schedule> or <kernel> element (55 characters of prose)"};
  in.rewrites = "rewrite merge_duplicates c  # work 1.02e+05";
  in.parent_work = "1.97e+05";
  in.tried = {{"split c.i 32 -> io ii\nbind c.io group.x", "1.10x over the naive kernel"}};
  in.repeated =
      "Your last answer made a program already evaluated (the last: the program of candidate 3f2a9c, "
      "already evaluated (correct, 1.10x over the naive kernel)). Propose a different one.";
  return in;
}

std::string read(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ModelPrompts, ScheduleMatchesItsGoldenCopy) {
  const Prompt p = schedule_prompt(inputs(), 100000);
  const std::string text = "=== system\n" + p.system + "=== user\n" + p.user;
  const std::string path = std::string(KS_SOURCE_DIR) + "/tests/llm/golden/schedule_prompt.txt";
  if (std::getenv("KS_UPDATE_GOLDEN")) std::ofstream(path) << text;
  EXPECT_EQ(text, read(path)) << "KS_UPDATE_GOLDEN=1 rewrites " << path;
  // Every placeholder filled, every input shown.
  EXPECT_EQ(text.find("{{"), std::string::npos);
  for (const std::string &shown :
       {"48 KiB of local memory", "c[i, j] = sum(k)", "1.84x over the naive kernel", "bind c.ii local.x",
        "for io in 0..4 group.x", "vectorize c.jv", "(none: the naive kernel)", "512 copies", "55 characters of prose",
        "rewrite merge_duplicates c  # work 1.02e+05", "before: 1.97e+05", "split c.i 32 -> io ii",
        "Your last answer made a program already evaluated"})
    EXPECT_NE(text.find(shown), std::string::npos) << shown;
}

// The kernel-body prompt: the parent's code in place of its Loop IR; bodies among
// the candidates shown as bodies.
TEST(ModelPrompts, KernelMatchesItsGoldenCopy) {
  PromptInputs in = inputs();
  in.parent_code = "__kernel void c_k0(__global const float *restrict a, ...) {\n  ...\n}";
  in.inspirations.push_back({"", "2.50x over the naive kernel",
                             "/* ksmith plan\n   launch mm global [48, 64] local [16, 16] (a, b, c)\n*/\n..."});
  in.failures.push_back(
      {"", "does not compile: Clang refuses the body: b.cl:4:3: [input-written] kernel k stores to input a",
       "/* ksmith plan ... */"});
  in.answer_problems = {"its kernel body has no plan: start it with /* ksmith plan ... */"};
  const Prompt p = kernel_prompt(in, 100000);
  const std::string text = "=== system\n" + p.system + "=== user\n" + p.user;
  const std::string path = std::string(KS_SOURCE_DIR) + "/tests/llm/golden/kernel_prompt.txt";
  if (std::getenv("KS_UPDATE_GOLDEN")) std::ofstream(path) << text;
  EXPECT_EQ(text, read(path)) << "KS_UPDATE_GOLDEN=1 rewrites " << path;
  EXPECT_EQ(text.find("{{"), std::string::npos);
  for (const std::string &shown : {"48 KiB of local memory", "/* ksmith plan", "c_k0(__global const float",
                                   "2.50x over the naive kernel, a kernel body:", "[input-written]",
                                   "your answer gave no kernel body: its kernel body has no plan"})
    EXPECT_NE(text.find(shown), std::string::npos) << shown;
  EXPECT_EQ(text.find("for io in 0..4 group.x"), std::string::npos) << "the Loop IR is the schedule prompt's";
  // Over the budget, the code's last lines go last of all, a note saying how many.
  in.failures.clear();
  in.inspirations.clear();
  in.answer_problems.clear();
  for (int i = 0; i < 200; ++i) in.parent_code += "\n  y[" + std::to_string(i) + "] = 0.0f;";
  const Prompt small = kernel_prompt(in, 1200);
  EXPECT_LE(approx_tokens(small.system) + approx_tokens(small.user), 1200u);
  EXPECT_NE(small.user.find("more lines)"), std::string::npos);
  EXPECT_NE(small.user.find("c_k0(__global"), std::string::npos);
}

size_t tokens_of(const PromptInputs &in) {
  const Prompt p = schedule_prompt(in, 100000);
  return approx_tokens(p.system) + approx_tokens(p.user);
}

TEST(ModelPrompts, TrimFailuresThenTriedThenInspirationsThenTheLoopIr) {
  const PromptInputs in = inputs();
  PromptInputs no_failures = in, no_tried, one_inspiration, bare;
  no_failures.answer_problems.clear();
  no_failures.failures.clear();
  no_tried = no_failures;
  no_tried.tried.clear();
  one_inspiration = no_tried;
  one_inspiration.inspirations.pop_back();
  bare = one_inspiration;
  bare.inspirations.clear();
  // A little under: the model's own failed answer goes first.
  Prompt p = schedule_prompt(in, tokens_of(in) - 1);
  EXPECT_EQ(p.user.find("55 characters of prose"), std::string::npos) << p.user;
  EXPECT_NE(p.user.find("512 copies"), std::string::npos) << p.user;
  // Then the failures, then what was tried from the parent, then the inspirations,
  // the last first.
  p = schedule_prompt(in, tokens_of(no_failures));
  EXPECT_EQ(p.user.find("512 copies"), std::string::npos) << p.user;
  EXPECT_NE(p.user.find("split c.i 32 -> io ii"), std::string::npos) << p.user;
  p = schedule_prompt(in, tokens_of(no_tried));
  EXPECT_EQ(p.user.find("split c.i 32 -> io ii"), std::string::npos) << p.user;
  EXPECT_NE(p.user.find("vectorize c.jv"), std::string::npos) << p.user;
  p = schedule_prompt(in, tokens_of(one_inspiration));
  EXPECT_EQ(p.user.find("vectorize c.jv"), std::string::npos) << p.user;
  EXPECT_NE(p.user.find("(none: the naive kernel)\n\nWhat failed"), std::string::npos) << p.user;
  // Then the Loop IR's last lines, with a note; the spec and the parent stay.
  const size_t budget = tokens_of(bare) - 8;
  p = schedule_prompt(in, budget);
  EXPECT_NE(p.user.find("    kernel c {\n    ... (6 more lines)\n"), std::string::npos) << p.user;
  EXPECT_NE(p.user.find("c[i, j] = sum(k)"), std::string::npos);
  EXPECT_NE(p.user.find("bind c.ii local.x"), std::string::npos);
  EXPECT_LE(approx_tokens(p.system) + approx_tokens(p.user), budget);
}

}  // namespace
}  // namespace ks::llm
