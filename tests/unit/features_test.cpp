// Features of candidates: what the archive places them by must follow the schedule.
#include "evolve/evaluation/features.h"

#include "evolve/evaluation/evaluate.h"
#include "frontend/parser.h"
#include "test_util.h"

namespace ks {
namespace {

CandidateFeatures features_of(const std::string &example, bool scheduled) {
  const std::string base = std::string(KS_SOURCE_DIR) + "/examples/" + example;
  Schedule schedule = scheduled ? load_schedule(base + ".sched") : Schedule{};
  Compiled c = compile_spec(frontend::load_spec(base + ".ks"), frontend::SizeSet::Check, {}, schedule);
  return program_features(c.graph, c.program, static_cast<int>(schedule.steps.size()),
                          static_cast<int64_t>(c.code.source.size()));
}

// The naive softmax is one kernel per stage, one work-item per output element, no
// local memory; its hand schedule fuses the stages into one kernel of row groups
// that share partial results through local memory, with barriers between them.
TEST(Features, FollowTheSchedule) {
  CandidateFeatures naive = features_of("softmax", false);
  EXPECT_EQ(naive.kind, "naive");
  EXPECT_EQ(naive.schedule_steps, 0);
  EXPECT_EQ(naive.kernels, naive.stages);
  EXPECT_GT(naive.stages, 1);
  EXPECT_EQ(naive.local_memory_bytes, 0);
  EXPECT_EQ(naive.barriers, 0);
  EXPECT_GT(naive.code_bytes, 0);

  CandidateFeatures fused = features_of("softmax", true);
  EXPECT_EQ(fused.kind, "schedule");
  EXPECT_GT(fused.schedule_steps, 0);
  EXPECT_EQ(fused.stages, naive.stages);
  EXPECT_LT(fused.kernels, naive.kernels);
  EXPECT_GT(fused.local_memory_bytes, 0);
  EXPECT_GT(fused.barriers, 0);
  EXPECT_EQ(fused.to_json()["kernels"], fused.kernels);
}

// A reduction loop left in a work-item is a loop it runs: the naive matmul has one.
TEST(Features, CountLoopsAWorkItemRuns) {
  CandidateFeatures naive = features_of("matmul", false);
  EXPECT_EQ(naive.max_loop_depth, 1);
  EXPECT_EQ(naive.unrolled_loops, 0);
  CandidateFeatures tiled = features_of("matmul", true);
  EXPECT_GE(tiled.max_loop_depth, 2) << "a k loop over tiles around the loop within a tile";
}

}  // namespace
}  // namespace ks
