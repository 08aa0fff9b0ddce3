// The search's jobs as types (evolve/search/jobs.h): the command lines it sends its
// children, and what it reads back of their JSON, from records as the evaluator
// writes them and from ones it must not believe.
#include "evolve/search/jobs.h"

#include "evolve/evaluation/record.h"
#include "test_util.h"

namespace ks {
namespace {

EvalRecord timed_record() {
  EvalRecord r;
  r.check.passed = true;
  r.features.kind = "schedule";
  r.features.barriers = 3;
  r.features.kernels = 2;
  TimeRecord t;
  t.timing.median_ms = 2.0, t.timing.cv = 0.01, t.timing.batches = 10;
  t.baseline.median_ms = 5.0;
  r.time = t;
  return r;
}

TEST(Jobs, TheCommandLinesSayWhatTheRequestSays) {
  EvaluationRequest e;
  e.spec_file = "w/k.ks", e.schedule_file = "w/s/a.sched", e.settings = {"opencl", "N=64", "tf32"};
  e.trials = 3, e.batches = 10, e.min_batch_ms = 5, e.check_sizes = "N=9", e.give_up_ms = 20;
  EXPECT_EQ(e.args(), (std::vector<std::string>{
                          "run",    "w/k.ks",       "--json",   "--schedule",     "w/s/a.sched", "--target",
                          "opencl", "--precision",  "tf32",     "--size",         "N=64",        "--trials",
                          "3",      "--batches",    "10",       "--min-batch-ms", "5.000000",    "--check-size",
                          "N=9",    "--give-up-ms", "20.000000"}));
  e.body_file = "w/b/a.cl", e.settings.sizes = "", e.check_sizes = "", e.give_up_ms.reset();
  e.settings.precision = "fp32";
  EXPECT_EQ(e.args(), (std::vector<std::string>{"run", "w/k.ks", "--json", "--kernel", "w/b/a.cl", "--target", "opencl",
                                                "--precision", "fp32", "--trials", "3", "--batches", "10",
                                                "--min-batch-ms", "5.000000"}));
  RetimeRequest t;
  t.spec_file = "w/k.ks", t.schedule_files = {"a.sched", "b.sched"}, t.with_naive = true,
  t.settings = {"spirv", "", "tf32"};
  t.batches = 10, t.min_batch_ms = 5;
  EXPECT_EQ(t.args(), (std::vector<std::string>{"time", "w/k.ks", "--json", "--rounds", "3", "--batches", "10",
                                                "--min-batch-ms", "5.000000", "--naive", "--schedule", "a.sched",
                                                "--schedule", "b.sched", "--target", "spirv", "--precision", "tf32"}));
}

// A record as the evaluator writes it reads back as it was; each way it can end gives
// its status.
TEST(Jobs, ARecordReadsBackAndGivesItsStatus) {
  ChildRun child;
  child.exit_status = 0;
  const std::optional<EvaluationResult> ok = EvaluationResult::from_json(timed_record().to_json());
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->ok);
  EXPECT_EQ(ok->verdict, "correct");
  EXPECT_DOUBLE_EQ(ok->median_ms, 2.0);
  EXPECT_DOUBLE_EQ(ok->speedup, 2.5);
  EXPECT_DOUBLE_EQ(ok->feature("barriers"), 3);
  EXPECT_DOUBLE_EQ(ok->feature("no such feature"), 0);
  EXPECT_EQ(status_of(child, ok), CandidateStatus::Correct);

  EvalRecord slow = timed_record();
  slow.time->gave_up_ms = 1.0;
  EXPECT_EQ(status_of(child, EvaluationResult::from_json(slow.to_json())), CandidateStatus::Slow);
  EvalRecord flagged = timed_record();
  flagged.hacking_flags = {"changed an input"};
  EXPECT_EQ(status_of(child, EvaluationResult::from_json(flagged.to_json())), CandidateStatus::Flagged);
  EvalRecord failed = timed_record();
  failed.failure = EvalFailure{"check", "build", "no"};
  EXPECT_EQ(status_of(child, EvaluationResult::from_json(failed.to_json())), CandidateStatus::Failed);
  EvalRecord wrong = timed_record();
  wrong.check.passed = false;
  wrong.time.reset();
  EXPECT_EQ(status_of(child, EvaluationResult::from_json(wrong.to_json())), CandidateStatus::Incorrect);
  EXPECT_EQ(status_of(child, std::nullopt), CandidateStatus::Failed);
  child.timed_out = true;
  EXPECT_EQ(status_of(child, ok), CandidateStatus::Timeout);
}

// JSON that is not such a record is none, not an exception later where a key is read.
TEST(Jobs, WhatIsNotARecordIsNone) {
  nlohmann::json j = timed_record().to_json();
  EXPECT_TRUE(EvaluationResult::from_json(j));
  for (const auto &[key, bad] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"ok", "yes"}, {"verdict", 3}, {"features", nlohmann::json::array()}, {"time", 2.0}}) {
    nlohmann::json k = j;
    k[key] = bad;
    EXPECT_FALSE(EvaluationResult::from_json(k)) << key;
  }
  nlohmann::json t = j;
  t["time"]["median_ms"] = "fast";
  EXPECT_FALSE(EvaluationResult::from_json(t));
  EXPECT_FALSE(EvaluationResult::from_json(nlohmann::json::array()));
  EXPECT_FALSE(EvaluationResult::from_json(nlohmann::json::parse("not json", nullptr, false)));
}

TEST(Jobs, TimesReadBackOnlyAsManyAsAsked) {
  ChildRun child;
  child.exit_status = 0;
  child.out = R"({"times": [{"median_ms": 1.5, "cv": 0.02}, {"median_ms": 3}]})";
  const std::optional<std::vector<Time>> times = read_times(child, 2);
  ASSERT_TRUE(times);
  EXPECT_DOUBLE_EQ((*times)[0].median_ms, 1.5);
  EXPECT_DOUBLE_EQ((*times)[0].cv, 0.02);
  EXPECT_DOUBLE_EQ((*times)[1].cv, 0);
  EXPECT_FALSE(read_times(child, 3)) << "fewer times than schedules";
  child.out = R"({"times": [{"median_ms": "1.5"}]})";
  EXPECT_FALSE(read_times(child, 1));
  child.out = R"({"times": [{"median_ms": 1.5}]})";
  child.exit_status = 1;
  EXPECT_FALSE(read_times(child, 1)) << "a child that failed";
}

}  // namespace
}  // namespace ks
