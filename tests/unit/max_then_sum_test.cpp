// max-then-sum: an unrolled loop's logaddexp chain as a maximum and a sum of
// exponentials; what it rewrites, what it leaves, and the result on the devices here.
#include "passes/max_then_sum.h"

#include "evolve/evaluation/evaluate.h"
#include "frontend/parser.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "passes/schedule.h"
#include "test_util.h"

namespace ks {
namespace {

using test::count;

// A row's logsumexp, every other run of 8 columns -inf: a chunk of 8 that holds no
// finite value is the case the rewrite must answer with -inf, not NaN.
const char *kRowLogSumExp = R"(kernel lse(x: f32[N, C]) -> y: f32[N] where N = 8, C = 45 {
  w[n, c] = select(c % 16 < 8, -inf, x[n, c])
  row_max[n] = max(c) w[n, c]
  total[n] = sum(c) exp(w[n, c] - row_max[n])
  y[n] = log(total[n]) + row_max[n]
})";

const char *kLogSumExpChunks = "rewrite online_softmax total\ninline w\nsplit row_max_lse.c 8 -> co ci\n";

std::string chained(const std::string &schedule) {
  return print_program(
      run_pipeline(test::graph_of(kRowLogSumExp), parse_schedule(test::source(schedule, "lse.sched"))));
}

TEST(MaxThenSum, AnUnrolledChainBecomesAMaximumAndASum) {
  const std::string text = chained(std::string(kLogSumExpChunks) + "unroll row_max_lse.ci\n");
  EXPECT_EQ(count(text, "row_max_lse_acc_max[0] = max(row_max_lse_acc_max[0], "), 1) << text;
  EXPECT_EQ(count(text, "row_max_lse_acc_sum[0] = row_max_lse_acc_sum[0] + exp("), 1) << text;
  EXPECT_EQ(count(text, "- row_max_lse_acc_max[0])"), 1) << text;
  // One logaddexp a chunk, of the chunk's whole sum; m itself where it is infinite.
  EXPECT_EQ(count(text, "logaddexp("), 1) << text;
  EXPECT_EQ(count(text, "select(abs(row_max_lse_acc_max[0]) == inf, row_max_lse_acc_max[0], "), 1) << text;
  EXPECT_EQ(count(text, "for ci in 0..8 unrolled"), 1) << text;
  EXPECT_EQ(count(text, "for ci1 in 0..8 unrolled"), 1) << text;
  // A serial loop keeps its chain: its loads would be read twice from memory.
  const std::string serial = chained(kLogSumExpChunks);
  EXPECT_EQ(count(serial, "_acc_max"), 0) << serial;
  EXPECT_EQ(count(serial, "row_max_lse_acc[0] = logaddexp(row_max_lse_acc[0], "), 1) << serial;
}

// Loops that are no single accumulator's chain are left as they are.
TEST(MaxThenSum, LeavesWhatIsNoChain) {
  const std::string header =
      "program p\ninput x: f32[8]\noutput y: f32[8]\n\nkernel y {\n  block y reads(x[0 +: 8]) "
      "writes(y[0 +: 8]) {\n    allocate acc: f32[8] private\n";
  const std::string footer = "    y[0] = acc[0]\n  }\n}\n";
  for (const char *loop : {
           // each iteration its own element: no chain
           "    for j in 0..8 unrolled {\n      acc[j] = logaddexp(acc[j], x[j])\n    }\n",
           // the value reads the accumulator
           "    for j in 0..8 unrolled {\n      acc[0] = logaddexp(acc[0], x[j] + acc[1])\n    }\n",
           // another operation
           "    for j in 0..8 unrolled {\n      acc[0] = max(acc[0], x[j])\n    }\n",
       }) {
    const std::string text = header + loop + footer;
    const Program p = parse_program(test::source(text, "p.loops"));
    verify_program(p);
    EXPECT_EQ(print_program(max_then_sum(p)), print_program(p)) << loop;
  }
}

// Against the interpreter on PoCL and lavapipe: chunks of 8 (two with no finite
// value, the last overhanging C) and one work-item's strided share of a row.
TEST(MaxThenSumOnDevice, AgreesWithTheInterpreter) {
  const frontend::Spec spec = frontend::parse_spec(test::source(kRowLogSumExp, "lse.ks"));
  test::on_each_device([&](const std::string &api, runtime::Device &device) {
    for (const std::string schedule :
         {std::string(kLogSumExpChunks) + "unroll row_max_lse.ci\n",
          std::string("rewrite online_softmax total\ninline w\nbind row_max_lse.n group.x\n"
                      "cross_reduce row_max_lse.c 4 -> t\nunroll row_max_lse.cj\n")}) {
      EvalOptions options;
      options.time = false;
      options.trials = 2;
      options.schedule = parse_schedule(test::source(schedule, "lse.sched"));
      EvalRecord r = evaluate(spec, "lse.ks", device, options);
      EXPECT_TRUE(r.ok()) << api << ":\n" << schedule << r.to_json().dump(2);
    }
  });
}

}  // namespace
}  // namespace ks
