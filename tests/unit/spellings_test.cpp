// The spellings corpus made by a generator: each stage body of a computation a rule
// knows (a softmax, a log-softmax, cross entropy, attention, a masked running total, a
// stage computed twice) written again with the canonical form's laws applied backwards
// at random (passes/canonical.h: subtraction as addition of a negation, a constant
// split into like terms, a division by a power of two as a product, exp(a - b) as
// exp(a) / exp(b), x as log(exp(x)), a constant distributed over a sum, operands
// swapped). The rule fires on every spelling, and the float64 interpreter agrees
// before and after it; the sketches see each stage as the pattern it was (a softmax's
// rows, a norm's statistics, a GEMM and its epilogue). The spellings people write are
// in rewrite_test.cpp.
#include <random>

#include "evolve/evaluation/inputs.h"
#include "evolve/search/sketch.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/verifier.h"
#include "passes/graph_edit.h"
#include "passes/rewrite.h"
#include "test_util.h"

namespace ks {
namespace {

using Rng = std::mt19937_64;

bool chance(Rng &rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

bool arithmetic(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div;
}

// One law of canonical.h applied backwards at e (an f32 expression), or e as it was.
Expr law_backwards(const Expr &e, Rng &rng) {
  const Binary *b = e.as<Binary>();
  const Call *c = e.as<Call>();
  switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
    case 0:  // ordered: operands swapped
      if (b && (b->op == BinaryOp::Add || b->op == BinaryOp::Mul)) return Binary::make(b->op, b->b, b->a);
      break;
    case 1:  // sum_of_products: a - b as a + -b
      if (b && b->op == BinaryOp::Sub) return b->a + Unary::make(UnaryOp::Neg, b->b);
      break;
    case 2:  // like_terms: x as x * 0.25 + 0.75 * x
      return e * make_f32(0.25) + make_f32(0.75) * e;
    case 3:  // sum_of_products: a product by a power of two as a division by its reciprocal
      if (b && b->op == BinaryOp::Mul)
        if (std::optional<double> k = as_const_number(b->b); k && *k != 0 && std::ilogb(*k) == std::log2(std::fabs(*k)))
          return b->a / make_f32(1 / *k);
      return e * make_f32(2.0) / make_f32(2.0);
    case 4:  // exp_of_sum: exp(a - b) as exp(a) / exp(b), exp(a + b) as exp(a) * exp(b)
      if (const Binary *arg = c && c->fn == Builtin::Exp ? c->args[0].as<Binary>() : nullptr;
          arg && (arg->op == BinaryOp::Sub || arg->op == BinaryOp::Add))
        return Binary::make(arg->op == BinaryOp::Sub ? BinaryOp::Div : BinaryOp::Mul,
                            Call::make(Builtin::Exp, {arg->a}), Call::make(Builtin::Exp, {arg->b}));
      break;
    case 5:  // log_of_exp: a tensor's element x as log(exp(x)) (an expression of them may
             // overflow exp, a GEMM's sum for one)
      if (e.as<Load>()) return Call::make(Builtin::Log, {Call::make(Builtin::Exp, {e})});
      break;
    case 6:  // sum_of_products: a constant factor distributed, (a - b) * k as a * k - b * k
      if (const Binary *sum = b && b->op == BinaryOp::Mul ? b->a.as<Binary>() : nullptr;
          sum && (sum->op == BinaryOp::Add || sum->op == BinaryOp::Sub) && as_const_number(b->b))
        return Binary::make(sum->op, sum->a * b->b, sum->b * b->b);
      break;
    default:  // folded: as it was
      break;
  }
  return e;
}

// e respelled: its float operands first, then (one time in two) a law at e itself.
Expr respelled(const Expr &e, Rng &rng) {
  if (e.type() != DType::F32) return e;
  Expr x = e;
  if (const Binary *b = e.as<Binary>(); b && arithmetic(b->op))
    x = Binary::make(b->op, respelled(b->a, rng), respelled(b->b, rng));
  else if (const Unary *u = e.as<Unary>(); u && u->op == UnaryOp::Neg)
    x = Unary::make(UnaryOp::Neg, respelled(u->a, rng));
  else if (const Call *c = e.as<Call>()) {
    std::vector<Expr> args;
    for (const Expr &a : c->args) args.push_back(respelled(a, rng));
    x = Call::make(c->fn, args);
  }
  return chance(rng, 0.5) ? law_backwards(x, rng) : x;
}

Graph example_graph(const std::string &name) {
  return frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks"),
                             frontend::SizeSet::Check, {});
}

struct Case {
  std::string name;  // for messages
  Graph graph;
  RewriteKind rule;
  std::string stage;
  std::vector<std::string> respell;  // the stages written again
};

constexpr int kSpellings = 24;  // a computation

class GeneratedSpellings : public testing::TestWithParam<int> {};

TEST_P(GeneratedSpellings, TheRuleFiresOnEvery) {
  const std::vector<Case> cases = {
      {"softmax", example_graph("softmax"), RewriteKind::OnlineSoftmax, "total", {"e", "total", "y"}},
      {"log_softmax", example_graph("log_softmax"), RewriteKind::OnlineSoftmax, "total", {"total", "y"}},
      {"cross_entropy", example_graph("cross_entropy"), RewriteKind::OnlineSoftmax, "total", {"total"}},
      {"attention", example_graph("attention"), RewriteKind::OnlineAttention, "y", {"s", "e", "y"}},
      {"attention_causal", example_graph("attention_causal"), RewriteKind::OnlineAttention, "y", {"e", "y"}},
      {"masked running total",
       test::graph_of("kernel c(x: f32[B, N]) -> y: f32[B, N] where B = 2, N = 7 {\n"
                      "  y[b, i] = sum(k: N) x[b, k] * 0.5 * select(k <= i, 1.0, 0.0)\n}",
                      frontend::SizeSet::Default),
       RewriteKind::RangedReduction,
       "y",
       {"y"}},
      {"a stage computed twice",
       test::graph_of("kernel m(x: f32[N, D]) -> y: f32[N] where N = 3, D = 5 {\n"
                      "  a[n] = sum(d) (x[n, d] - 0.5) * 0.25\n  b[n] = sum(d) (x[n, d] - 0.5) * 0.25\n"
                      "  y[n] = exp(a[n]) - b[n]\n}",
                      frontend::SizeSet::Default),
       RewriteKind::MergeDuplicates,
       "b",
       {"b"}},
  };
  const Case &c = cases[static_cast<size_t>(GetParam())];
  int fired = 0;
  for (int n = 0; n < kSpellings; ++n) {
    Rng rng(1000 * static_cast<uint64_t>(GetParam()) + static_cast<uint64_t>(n));
    Graph spelled = c.graph;
    for (Stage &s : spelled.stages)
      if (std::find(c.respell.begin(), c.respell.end(), s.output) != c.respell.end()) s.body = respelled(s.body, rng);
    verify_graph(spelled);
    ASSERT_LT(test::output_error(c.graph, spelled, 5), 1e-9) << "the generator changed the computation:\n"
                                                             << print_graph(spelled);
    std::string reason;
    std::optional<Graph> out = try_rewrite(spelled, Rewrite{c.rule, c.stage, {}, {}, 0, {}}, &reason);
    EXPECT_TRUE(out) << c.name << ", spelling " << n << ": " << rewrite_name(c.rule) << " " << c.stage
                     << " refused: " << reason << "\n"
                     << print_graph(spelled);
    if (!out) continue;
    ++fired;
    EXPECT_LT(test::output_error(spelled, *out, 5), 1e-9) << c.name << ", spelling " << n << ":\n" << print_graph(*out);
  }
  EXPECT_EQ(fired, kSpellings) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, GeneratedSpellings, testing::Range(0, 7));

// The sketches' patterns (classify_stage) of every stage, on every spelling of the
// examples whose sketches have a rule of their own: the same as the spec's.
class SpelledPatterns : public testing::TestWithParam<std::string> {};

TEST_P(SpelledPatterns, AreTheSpecsPatterns) {
  const Graph graph = example_graph(GetParam());
  std::map<std::string, StagePattern> expected;
  for (const Stage &s : graph.stages) expected[s.output] = classify_stage(s);
  for (int n = 0; n < kSpellings; ++n) {
    Rng rng(77 + static_cast<uint64_t>(n));
    Graph spelled = graph;
    for (Stage &s : spelled.stages) s.body = respelled(s.body, rng);
    verify_graph(spelled);
    ASSERT_LT(test::output_error(graph, spelled, 5), 1e-9) << "the generator changed the computation:\n"
                                                           << print_graph(spelled);
    for (const Stage &s : spelled.stages)
      EXPECT_EQ(stage_pattern_name(classify_stage(s)), stage_pattern_name(expected.at(s.output)))
          << GetParam() << ", spelling " << n << ": " << s.output << " = " << print_expr(s.body);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, SpelledPatterns,
                         testing::Values("softmax", "layer_norm", "group_norm", "rms_norm", "batch_norm", "matmul",
                                         "gemm_bias_leaky", "matmul_gelu_softmax", "conv_relu_bias", "attention",
                                         "cumsum"));

}  // namespace
}  // namespace ks
