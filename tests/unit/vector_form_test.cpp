// The vector form: which loops may run as vector lanes, and why the others may not.
#include "ir/vector_form.h"

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"
#include "test_util.h"

namespace ks {
namespace {

const std::string kDecls = "input x: f32[8, 8]\ninput n: i32[8, 8]\noutput y: f32[8, 8]\noutput z: i32[8, 8]\n";

Program program_of(const std::string &kernel_body) {
  return parse_program(test::source("program p\n" + kDecls + "kernel k {\n" + kernel_body + "}\n"));
}

// The loop named v in the kernel body.
const For *loop_v(const Program &p) {
  struct Find : IRVisitor {
    const For *found = nullptr;
    using IRVisitor::visit;
    void visit(const For *n) override {
      if (n->var == "v") found = n;
      IRVisitor::visit(n);
    }
  } find;
  find.dispatch(p.kernels[0].body);
  return find.found;
}

// "" when loop v has the vector form, else the reason.
std::string problem(const std::string &kernel_body) {
  Program p = program_of(kernel_body);
  std::string reason;
  return vector_form(*loop_v(p), &reason) ? "" : reason;
}

std::string in_row(const std::string &body) {
  return "for i in 0..8 {\nfor jo in 0..2 {\nfor v in 0..4 {\n" + body + "}\n}\n}\n";
}

TEST(VectorForm, ClassifiesIndicesAndVectorValues) {
  Program p = program_of(in_row("let j = jo * 4 + v\nlet t = x[i, j] * 2.0 + x[i, 0]\ny[i, j] = exp(t)\n"));
  std::string reason;
  auto form = vector_form(*loop_v(p), &reason);
  ASSERT_TRUE(form) << reason;
  EXPECT_EQ(form->varying, (std::set<std::string>{"v", "j", "t"}));
  EXPECT_EQ(form->vector_lets, (std::set<std::string>{"t"}));
  EXPECT_FALSE(form->all_lanes_pass.defined());
}

TEST(VectorForm, TailGuardsNeedTheLastLane) {
  Program p = program_of(
      "for i in 0..8 {\nfor jo in 0..3 {\nfor v in 0..4 {\nlet j = jo * 4 + v\nif j < 8 {\ny[i, j] = x[i, "
      "j]\n}\n}\n}\n}\n");
  std::string reason;
  auto form = vector_form(*loop_v(p), &reason);
  ASSERT_TRUE(form) << reason;
  ASSERT_TRUE(form->all_lanes_pass.defined());
  EXPECT_EQ(print_expr(form->all_lanes_pass), "jo * 4 + 3 < 8");
}

TEST(VectorForm, Refusals) {
  EXPECT_EQ(problem("for i in 0..8 {\nfor v in 0..3 {\ny[i, v] = x[i, v]\n}\n}\n"),
            "loop v has 3 iterations; vectors have 2, 4, 8 or 16 lanes (split it first)");
  EXPECT_EQ(problem(in_row("for w in 0..2 {\ny[i, v] = x[i, w]\n}\n")), "loop v is not innermost: it holds loop w");
  EXPECT_EQ(problem(in_row("barrier local\n")), "loop v holds a barrier");
  EXPECT_EQ(problem(in_row("y[v, i] = x[v, i]\n")),
            "index 0 of the read of x (v) depends on v; only the last index may");
  EXPECT_EQ(problem(in_row("y[i, v] = x[i, v * 2]\n")),
            "the read of x steps by 2 elements per iteration of v; a vector access needs stride 1 in the last "
            "dimension");
  EXPECT_EQ(problem(in_row("y[i, v] = x[i, (v + 1) / 2]\n")),
            "the last index of the read of x ((v + 1) / 2) is not affine");
  EXPECT_EQ(problem(in_row("y[i, v] = x[i, v - 1] else 0.0\n")),
            "the read of x is padded (it may leave the buffer); vector reads may not");
  EXPECT_EQ(problem(in_row("y[i, v] = x[i, v] * f32(v)\n")),
            "v differs by lane and is used as a value; v and the lets computed from it may appear only in indices");
  EXPECT_EQ(problem(in_row("y[i, v] = select(x[i, v] > 0.0, x[i, v], 0.0)\n")),
            "the condition x[i, v] > 0.0 differs by lane");
  EXPECT_EQ(problem(in_row("z[i, v] = n[i, v] / 2\n")),
            "n[i, v] / 2 divides integers that differ by lane (floor division has no vector form)");
  EXPECT_EQ(problem(in_row("y[i, 0] = x[i, v]\n")), "the store to y writes the same element in every lane");
  EXPECT_EQ(problem(in_row("y[i, v] = x[i, v]\ny[i, v + 4] = y[i, v]\n")),
            "y is stored and also accessed at other indices in loop v; one lane would see another's element");
  EXPECT_EQ(problem(in_row("if v > 1 {\ny[i, v] = x[i, v]\n}\n")),
            "the guard v > 1 differs by lane and is not a tail guard (a < b, a stepping by 1)");
}

// The verifier holds every vectorized loop to the vector form, so no pass can break it unnoticed.
TEST(VectorForm, TheVerifierChecksVectorizedLoops) {
  Program p = program_of("for i in 0..8 {\nfor v in 0..4 vectorized {\ny[i, 0] = x[i, v]\n}\n}\n");
  try {
    verify_program(p);
    ADD_FAILURE() << "the verifier accepted a vectorized reduction";
  } catch (const InternalError &e) {
    EXPECT_NE(std::string(e.what()).find("vectorized loop: the store to y writes the same element in every lane"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ks
