// The verifier catches each broken invariant with a message naming it.
#include "ir/verifier.h"

#include "ir/parser.h"
#include "test_util.h"

namespace ks {
namespace {

std::string program_problem(const std::string &kernel_body,
                            const std::string &decls = "input x: f32[8]\noutput y: f32[8]\n") {
  Program p = parse_program(test::source("program p\n" + decls + "kernel k {\n" + kernel_body + "}\n"));
  try {
    verify_program(p);
  } catch (const InternalError &e) {
    return e.what();
  }
  return "";
}

std::string graph_problem(const std::string &text) {
  Graph g = parse_graph(test::source(text));
  try {
    verify_graph(g);
  } catch (const InternalError &e) {
    return e.what();
  }
  return "";
}

void expect_problem(const std::string &found, const std::string &expected) {
  EXPECT_NE(found.find(expected), std::string::npos) << "expected '" << expected << "' in:\n" << found;
}

TEST(Verifier, AcceptsAWellFormedKernel) {
  EXPECT_EQ(program_problem("for g in 0..2 group.x {\n for l in 0..4 local.x {\n y[g * 4 + l] = x[g * 4 + l]\n }\n}\n"),
            "");
}

TEST(Verifier, ReadOutOfBounds) {
  expect_problem(program_problem("for i in 0..8 {\n y[i] = x[i + 1]\n}\n"), "index i + 1 of x may leave [0, 8)");
}

TEST(Verifier, GuardedReadIsInBounds) {
  EXPECT_EQ(program_problem("for i in 0..9 {\n if i < 8 {\n y[i] = x[i]\n }\n}\n"), "");
  expect_problem(program_problem("for i in 0..9 {\n if i < 9 {\n y[i] = x[i]\n }\n}\n"), "may leave [0, 8)");
}

TEST(Verifier, StoreOutOfBounds) {
  expect_problem(program_problem("for i in 0..9 {\n y[i] = 1.0\n}\n"), "of a store to y may leave [0, 8)");
}

// An asynchronous copy moves bits: a 16-bit tensor into a local copy of its format,
// never into one of another type (a conversion the hardware's copy cannot make).
TEST(Verifier, AsynchronousCopiesKeepTheFormat) {
  const std::string decls = "input x: bf16[8]\noutput y: bf16[8]\n";
  auto body = [](const std::string &type) {
    return "for l in 0..8 local.x {\n allocate s: " + type +
           "[8] local\n async_copy {\n s[l] = x[l]\n }\n barrier local after_copies 0\n y[l] = s[l]\n}\n";
  };
  EXPECT_EQ(program_problem(body("bf16"), decls), "");
  expect_problem(program_problem(body("f32"), decls),
                 "asynchronous copy of bf16 x into f32 s: the copy converts nothing");
}

TEST(Verifier, StoreToInput) {
  expect_problem(program_problem("for i in 0..8 {\n x[i] = 1.0\n}\n"), "store to input x");
}

TEST(Verifier, BindingRules) {
  expect_problem(program_problem("for i in 0..8 {\n for g in 0..1 group.x {\n y[i] = 1.0\n }\n}\n"),
                 "loop g is bound inside a serial loop");
  expect_problem(program_problem("for l in 0..8 local.x {\n for g in 0..1 group.y {\n y[l] = 1.0\n }\n}\n"),
                 "group loop g is inside a local loop");
  expect_problem(program_problem("for a in 0..2 group.x {\n for b in 0..4 group.x {\n y[a * 4 + b] = 1.0\n }\n}\n"),
                 "loop kind group.x is bound twice");
}

TEST(Verifier, RedefinedVariable) {
  expect_problem(program_problem("for i in 0..8 {\n let i = 0\n y[i] = 1.0\n}\n"), "variable 'i' is defined twice");
}

// A schedule names a loop; two loops of one name (even one after the other) would be
// either, so a primitive could rewrite the wrong one.
TEST(Verifier, LoopNamedTwice) {
  expect_problem(program_problem("for i in 0..8 {\n y[i] = 1.0\n}\nfor i in 0..8 {\n y[i] = 2.0\n}\n"),
                 "loop i appears twice in one kernel");
}

// OpenCL C declares local memory at the top of the kernel: two allocations of one name
// would be one array declared twice.
TEST(Verifier, LocalAllocationNamedTwice) {
  const std::string twice = "allocate s: f32[8] local {\n s[0] = 1.0\n}\n";
  expect_problem(program_problem("for g in 0..2 group.x {\n" + twice + twice + " y[g] = 1.0\n}\n"),
                 "local allocation 's' appears twice in one kernel");
}

TEST(Verifier, GraphStageReadsALaterTensor) {
  expect_problem(
      graph_problem("graph g\ninput x: f32[4]\ntemp t: f32[4]\noutput y: f32[4]\ny[i: 4] = t[i]\nt[i: 4] = x[i]\n"),
      "load of unknown buffer 't'");
}

TEST(Verifier, GraphOutputNeverDefined) {
  expect_problem(graph_problem("graph g\ninput x: f32[4]\noutput y: f32[4]\n"), "output 'y' is never defined");
}

TEST(Verifier, GraphExtentMismatch) {
  expect_problem(graph_problem("graph g\ninput x: f32[4]\noutput y: f32[4]\ny[i: 3] = x[i]\n"),
                 "variable i does not span its dimension");
}

TEST(Verifier, GraphUnpaddedReadOutOfBounds) {
  expect_problem(graph_problem("graph g\ninput x: f32[4]\noutput y: f32[4]\ny[i: 4] = x[i + 1]\n"), "may leave [0, 4)");
  EXPECT_EQ(graph_problem("graph g\ninput x: f32[4]\noutput y: f32[4]\ny[i: 4] = x[i + 1] else 0.0\n"), "");
}

TEST(Verifier, FailurePrintsTheIR) {
  expect_problem(program_problem("for i in 0..8 {\n x[i] = 1.0\n}\n"), "kernel k {");
}

}  // namespace
}  // namespace ks
