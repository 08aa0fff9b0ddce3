// Printed Graph IR and Loop IR parse back to the same IR, for every example and for
// hand-written programs with every statement form.
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "test_util.h"

namespace ks {
namespace {

class ExampleRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(ExampleRoundTrip, GraphAndLoops) {
  frontend::Spec spec = frontend::load_spec(GetParam());
  for (frontend::SizeSet sizes : {frontend::SizeSet::Default, frontend::SizeSet::Check}) {
    Graph graph = frontend::elaborate(spec, sizes, {});
    std::string printed = print_graph(graph);
    Graph reparsed = parse_graph(test::source(printed, "graph.ir"));
    EXPECT_NO_THROW(verify_graph(reparsed));
    EXPECT_EQ(print_graph(reparsed), printed);

    Program program = run_pipeline(graph);
    std::string loops = print_program(program);
    Program reparsed_program = parse_program(test::source(loops, "loops.ir"));
    EXPECT_NO_THROW(verify_program(reparsed_program));
    EXPECT_EQ(print_program(reparsed_program), loops);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleRoundTrip, testing::ValuesIn(test::example_paths()), test::example_name);

// Every statement form, lets and allocations both braced and owning the rest of
// their block, negative literals, negated literals, i64 literals and pads.
const char *kEveryForm = R"(program forms
input x: f32[8]
input t: i64[8] in 0..8
output y: f32[8]

kernel k {
  for g in 0..2 group.x {
    for l in 0..4 local.x {
      let i = g * 4 + l {
        allocate tile: f32[4] local
        tile[l] = x[i]
        barrier local
      }
      let j = g * 4 + l
      allocate acc: f32[2] private
      acc[0] = -2.5
      acc[1] = -(2.5)
      for u in 0..2 unrolled {
        acc[u] = acc[u] + (x[j - 1] else -inf) * 2.0
      }
      if j < 8 && i64(j) != 3L {
        y[j] = max(acc[0], acc[1]) + x[t[j]] + f32(-1)
      } else {
        y[j] = select(x[j] > 0.0, x[j], -x[j])
      }
    }
  }
}
)";

TEST(RoundTrip, EveryStatementForm) {
  Program p = parse_program(test::source(kEveryForm, "forms.ir"));
  EXPECT_EQ(print_program(p), kEveryForm);
}

TEST(RoundTrip, BracesOnALastLetAreOptional) {
  // A braced allocation that ends its block is the same IR as the flat one, and
  // prints flat (the canonical form).
  std::string braced = kEveryForm;
  braced.replace(braced.find("allocate tile: f32[4] local\n        tile[l] = x[i]\n        barrier local\n"),
                 std::string("allocate tile: f32[4] local\n        tile[l] = x[i]\n        barrier local\n").size(),
                 "allocate tile: f32[4] local {\n tile[l] = x[i]\n barrier local\n }\n");
  EXPECT_EQ(print_program(parse_program(test::source(braced, "braced.ir"))), kEveryForm);
}

TEST(RoundTrip, NegativeLiteralIsNotANegation) {
  Program p = parse_program(test::source(kEveryForm, "forms.ir"));
  std::string printed = print_program(p);
  // -2.5 is one literal; -(2.5) is the negation of a literal: both survive.
  EXPECT_NE(printed.find("acc[0] = -2.5\n"), std::string::npos);
  EXPECT_NE(printed.find("acc[1] = -(2.5)\n"), std::string::npos);
}

TEST(RoundTrip, ParseErrorsPointAtTheText) {
  std::string m = test::user_error([] {
    parse_program(
        test::source("program p\ninput x: f32[4]\nkernel k {\n  for i in 0..4 {\n    x[i] = z\n  }\n}\n", "p.ir"));
  });
  EXPECT_EQ(m.substr(0, m.find('\n')), "p.ir:5:12: error: unknown variable 'z'");
  m = test::user_error([] { parse_graph(test::source("graph g\ninput x: f32[4]\ny[i: 4] = x[i]\n", "g.ir")); });
  EXPECT_EQ(m.substr(0, m.find('\n')), "g.ir:3:1: error: unknown buffer 'y'");
  m = test::user_error(
      [] { parse_program(test::source("program p\noutput y: f32[4]\nkernel k {\n  y[0] = 1\n}\n", "t.ir")); });
  EXPECT_EQ(m.substr(0, m.find('\n')), "t.ir:4:3: error: store of i32 to y of f32");
}

}  // namespace
}  // namespace ks
