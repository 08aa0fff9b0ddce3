// The schedule fuzzer (evolve/fuzz/): the sizes it picks cross a schedule's
// boundaries within the interpreter's budget; a finding is minimised (steps, then
// sizes) and written out with its replay; the random specs all elaborate; and its
// runner through `ksmith worker` tells a passing case from a refused one on a device.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "evolve/fuzz/random_spec.h"
#include "evolve/fuzz/schedule_fuzz.h"
#include "frontend/parser.h"
#include "passes/pipeline.h"
#include "passes/primitive_info.h"
#include "test_util.h"

namespace ks {
namespace {

const char *kMatmul =
    "kernel mm(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] where M = 10, N = 12, K = 8 "
    "{ c[i, j] = sum(k) a[i, k] * b[k, j] }";

frontend::Spec spec_of(const std::string &text) { return frontend::parse_spec(test::source(text)); }

Schedule schedule_of(const std::string &text) { return parse_schedule(test::source(text, "s.sched")); }

// Whether v is one less, at, or one more than 1, 2 or 3 times f.
bool near_multiple(int64_t v, int64_t f) {
  for (int64_t m = 1; m <= 3; ++m)
    if (std::abs(v - m * f) <= 1) return true;
  return false;
}

TEST(FuzzSizes, CrossEveryFactorWithinTheBudget) {
  const frontend::Spec spec = spec_of(kMatmul);
  const Schedule s =
      schedule_of("rewrite rfactor c.k 5 -> c_rf ko2 ki2\nsplit c.i 8 -> io ii\nsplit c_rf.ki2 32 -> ko ki\n");
  EXPECT_EQ(schedule_factors(s), (std::vector<int64_t>{5, 8, 32}));
  Rng rng(3);
  const std::vector<Sizes> sets = boundary_sizes(spec, schedule_factors(s), rng, 40, 5e4);
  ASSERT_GE(sets.size(), 30u);
  std::set<int64_t> crossed;  // the factors some size sits at an edge of
  for (const Sizes &at : sets) {
    ASSERT_EQ(at.size(), 3u) << "every size given";
    std::optional<double> points = interpreter_points(spec, at);
    ASSERT_TRUE(points);
    EXPECT_LE(*points, 5e4);
    for (const auto &[name, v] : at)
      for (int64_t f : {5, 8, 32, 40, 64})
        if (near_multiple(v, f)) crossed.insert(f);
  }
  for (int64_t f : {5, 8, 32}) EXPECT_TRUE(crossed.count(f)) << f;
  EXPECT_TRUE(crossed.count(40) || crossed.count(64)) << "a product of two factors (nested tiles)";
  // Past the largest tile: every size past 2 x 32 where the budget takes it.
  const std::optional<Sizes> past = past_largest_tile(spec, {8, 32}, 1e6);
  ASSERT_TRUE(past);
  for (const auto &[name, v] : *past) EXPECT_EQ(v, 65) << name;
  const std::optional<Sizes> no_tile = past_largest_tile(spec, {}, 1e6);
  ASSERT_TRUE(no_tile) << "past the check sizes, as if a tile of 8";
  for (const auto &[name, v] : *no_tile) EXPECT_GE(v, 9) << name;
  // Within a tighter budget, the sizes it takes (one of them here).
  const std::optional<Sizes> tight = past_largest_tile(spec, {32}, 1e4);
  ASSERT_TRUE(tight);
  EXPECT_LE(*interpreter_points(spec, *tight), 1e4);
  EXPECT_TRUE(tight->at("M") == 65 || tight->at("N") == 65 || tight->at("K") == 65);
}

// The work of a scheduled program counts its arithmetic and its accesses of every
// memory, and the sizes drawn keep it within the budget given (a program can do
// far more than the interpreter: a serial device then takes minutes, and a case
// over its time limit is a hang).
TEST(FuzzSizes, KeepTheProgramsWorkWithinItsBudget) {
  const frontend::Spec spec = spec_of(
      "kernel bmm(a: f32[B, M, K], b: f32[B, K, N]) -> c: f32[B, M, N] where B = 3, M = 9, K = 13, N = 7 "
      "{ c[z, i, j] = sum(k) a[z, i, k] * b[z, k, j] }");
  const Schedule s = schedule_of("bind c.z group.x\nbind c.i local.x\ncache_read c.i b local -> bl\n");
  const Sizes large = {{"B", 2}, {"M", 30}, {"K", 40}, {"N", 50}};
  const std::optional<double> work = program_work(spec, s, large), plain = program_work(spec, {}, large);
  ASSERT_TRUE(work && plain);
  const double points = *interpreter_points(spec, large);
  EXPECT_GE(*plain, 2 * points) << "the naive program's two loads at each point, at least";
  EXPECT_LE(*plain, 8 * points);
  EXPECT_GE(*work, 2 * points) << "its loads, from device or local memory";
  const double budget = *program_work(spec, s, {{"B", 3}, {"M", 9}, {"K", 13}, {"N", 7}}) * 20;
  const SizeFilter fits = [&](const Sizes &at) { return program_work(spec, s, at).value_or(0) <= budget; };
  Rng rng(2);
  int turned_down = 0;
  for (const Sizes &at : boundary_sizes(spec, {16, 32}, rng, 30, 1e7)) turned_down += !fits(at);
  EXPECT_GT(turned_down, 0) << "some sets drawn without the filter are over its budget";
  const std::vector<Sizes> sets = boundary_sizes(spec, {16, 32}, rng, 30, 1e7, fits);
  ASSERT_GE(sets.size(), 10u);
  for (const Sizes &at : sets) EXPECT_LE(*program_work(spec, s, at), budget);
  if (const std::optional<Sizes> past = past_largest_tile(spec, {16, 32}, 1e7, fits)) {
    EXPECT_LE(*program_work(spec, s, *past), budget);
  }
}

// A spec whose shapes refuse some sizes (a window longer than its input): those are
// never drawn.
TEST(FuzzSizes, OnlySizesTheSpecTakes) {
  const frontend::Spec spec = spec_of(
      "kernel p(x: f32[N, H]) -> y: f32[N, H - K + 1] where N = 2, H = 9, K = 3 "
      "{ y[n, h] = sum(k: K) x[n, h + k] }");
  Rng rng(5);
  for (const Sizes &at : boundary_sizes(spec, {4, 16}, rng, 30, 1e5)) EXPECT_LE(at.at("K"), at.at("H")) << at.at("K");
}

// Minimising a finding: a fake runner whose "bug" needs a split by 4 and N over 40.
TEST(FuzzMinimise, KeepsOnlyTheStepsAndSizesTheFindingNeeds) {
  FuzzCase c;
  c.spec_label = "mm";
  c.spec_text = kMatmul;
  c.schedule = schedule_of(
      "rewrite rfactor c.k 4 -> c_rf ko ki\nsplit c.i 8 -> io ii\nsplit c.j 4 -> jo ji\nunroll c.ji\n"
      "bind c.io group.x\n");
  c.sizes = {{"M", 30}, {"N", 200}, {"K", 17}};
  c.device = "opencl:0";
  int runs = 0;
  auto buggy = [](const FuzzCase &x) {
    bool split4 = false;
    for (const Primitive &p : x.schedule.steps)
      split4 = split4 || (p.kind == PrimitiveKind::Split && p.factors[0] == 4);
    return split4 && x.sizes.at("N") > 40;
  };
  const CaseRunner run = [&](const std::vector<FuzzCase> &cases) {
    std::vector<CaseResult> out;
    for (const FuzzCase &x : cases) {
      ++runs;
      out.push_back({buggy(x) ? Outcome::Wrong : Outcome::Passed, ""});
    }
    return out;
  };
  const FuzzCase small = minimise(c, Outcome::Wrong, run, 100);
  EXPECT_TRUE(buggy(small));
  EXPECT_EQ(print_schedule(small.schedule), "split c.j 4 -> jo ji\n");
  EXPECT_EQ(small.sizes.at("M"), 1);
  EXPECT_EQ(small.sizes.at("K"), 1);
  EXPECT_GT(small.sizes.at("N"), 40);
  EXPECT_LE(small.sizes.at("N"), 47) << "halved to 50, then a few down";
  EXPECT_LE(runs, 100);
  // At most max_runs cases run.
  runs = 0;
  minimise(c, Outcome::Wrong, run, 3);
  EXPECT_LE(runs, 3);
}

// A whole run with a fake runner whose "bug" is a cache_read at M over 20: the finding
// is written (spec, schedule, sizes, what, and a replay), once however often it is met,
// and the summary counts every pair.
TEST(Fuzz, WritesEachFindingOnceWithItsReplay) {
  const std::string out = testing::TempDir() + "/fuzz_run";
  std::filesystem::remove_all(out);
  const std::string spec = testing::TempDir() + "/fuzz_mm.ks";
  std::ofstream(spec) << kMatmul;
  FuzzOptions o;
  o.spec_paths = {spec};
  o.devices = {"opencl:0", "vulkan:0"};
  o.max_schedules = 60;
  o.out = out;
  int64_t cases = 0;
  const CaseRunner run = [&](const std::vector<FuzzCase> &batch) {
    std::vector<CaseResult> results;
    for (const FuzzCase &c : batch) {
      ++cases;
      bool cached = false;
      for (const Primitive &p : c.schedule.steps) cached = cached || p.kind == PrimitiveKind::CacheRead;
      results.push_back({cached && c.sizes.at("M") > 20 ? Outcome::Wrong : Outcome::Passed, "a planted bug"});
    }
    return results;
  };
  const FuzzSummary s = fuzz(o, run);
  EXPECT_EQ(s.schedules, 60);
  int64_t outcomes = 0;
  for (const auto &[name, n] : s.outcomes) outcomes += n;
  EXPECT_EQ(outcomes, s.pairs);
  ASSERT_GE(s.outcomes.count("wrong"), 1u) << "the generator draws cache_read";
  ASSERT_FALSE(s.findings.empty());
  EXPECT_LT(s.findings.size(), static_cast<size_t>(s.outcomes.at("wrong"))) << "the same finding written once";
  for (const std::string &f : s.findings) {
    for (const char *file : {"spec.ks", "schedule.sched", "sizes", "what.txt", "repro.sh"})
      EXPECT_TRUE(std::filesystem::exists(f + "/" + file)) << f << "/" << file;
    std::ifstream sched(f + "/schedule.sched");
    const std::string text((std::istreambuf_iterator<char>(sched)), {});
    EXPECT_NE(text.find("cache_read"), std::string::npos) << text;
  }
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out + "/summary.json"));
  EXPECT_EQ(j["pairs"], s.pairs);
  EXPECT_TRUE(std::filesystem::exists(out + "/summary.md"));
  EXPECT_GT(cases, s.pairs) << "minimising ran cases of its own";
}

// --dtype bf16: every case's spec, the examples' and the random ones', has its f32
// tensors declared bf16 (and a finding's replay would be of that spec).
TEST(Fuzz, RunsTheSpecsAtTheTypeAsked) {
  const std::string spec = testing::TempDir() + "/fuzz_bf16_mm.ks";
  std::ofstream(spec) << kMatmul;
  FuzzOptions o;
  o.spec_paths = {spec};
  o.random_specs = 3;
  o.dtype = DType::BF16;
  o.devices = {"opencl:0"};
  o.max_schedules = 12;
  o.out = testing::TempDir() + "/fuzz_bf16";
  std::set<std::string> texts;
  const CaseRunner run = [&](const std::vector<FuzzCase> &batch) {
    std::vector<CaseResult> results;
    for (const FuzzCase &c : batch) {
      texts.insert(c.spec_text);
      results.push_back({Outcome::Passed, "correct"});
    }
    return results;
  };
  const FuzzSummary s = fuzz(o, run);
  EXPECT_GE(texts.size(), 3u) << "the example and random specs";
  for (const std::string &t : texts) {
    EXPECT_NE(t.find("bf16["), std::string::npos) << t;
    EXPECT_EQ(t.find("f32["), std::string::npos) << t;
  }
  EXPECT_GT(s.pairs, 0);
}

// A case past the time limit runs once more given hang_patience times it: one that
// finishes then is slow (tallied, no finding: NVIDIA's compiler took 87 s on a large
// tile), one that does not is a hang, minimised and written.
TEST(Fuzz, TellsASlowCaseFromAHang) {
  const std::string out = testing::TempDir() + "/fuzz_slow";
  std::filesystem::remove_all(out);
  const std::string spec = testing::TempDir() + "/fuzz_slow_mm.ks";
  std::ofstream(spec) << kMatmul;
  FuzzOptions o;
  o.spec_paths = {spec};
  o.devices = {"opencl:0"};
  o.max_schedules = 60;
  o.out = out;
  int64_t patient_runs = 0;
  const CaseRunner run = [&](const std::vector<FuzzCase> &batch) {
    std::vector<CaseResult> results;
    for (const FuzzCase &c : batch) {
      bool unrolled = false, across = false;
      for (const Primitive &p : c.schedule.steps) {
        unrolled = unrolled || p.kind == PrimitiveKind::Unroll;
        across = across || p.kind == PrimitiveKind::CrossReduce;
      }
      patient_runs += c.patience > 1;
      if (across)
        results.push_back({Outcome::Hang, "never done"});
      else if (unrolled && c.patience == 1)
        results.push_back({Outcome::Hang, "no answer within the limit"});
      else
        results.push_back({Outcome::Passed, "correct", c.patience > 1 ? 50.0 : 1.0});
    }
    return results;
  };
  const FuzzSummary s = fuzz(o, run);
  ASSERT_GE(s.outcomes.count("slow"), 1u) << "the generator draws unroll";
  ASSERT_GE(s.outcomes.count("hang"), 1u) << "the generator draws cross_reduce";
  EXPECT_GE(patient_runs, s.outcomes.at("slow") + s.outcomes.at("hang")) << "every hang was given its patience";
  ASSERT_FALSE(s.findings.empty());
  for (const std::string &f : s.findings) {
    EXPECT_NE(f.find("-hang"), std::string::npos) << f << ": a slow case is no finding";
    std::ifstream sched(f + "/schedule.sched");
    const std::string text((std::istreambuf_iterator<char>(sched)), {});
    EXPECT_NE(text.find("cross_reduce"), std::string::npos) << text;
  }
}

// The random specs parse and elaborate: the fuzzer and the rewrites' property test
// never meet a bad one.
TEST(RandomSpecs, AllElaborate) {
  std::mt19937 rng(11);
  for (int i = 0; i < 400; ++i) {
    const std::string text = random_spec(rng);
    EXPECT_EQ(test::user_error([&] { test::graph_of(text); }), "") << text;
  }
}

// Schedules drawn for the fuzzer replay on their graph, and over the examples and
// random specs use every primitive and every rewrite.
TEST(FuzzSchedules, ReplayAndUseEveryKind) {
  std::map<std::string, int> used;
  Rng rng(2);
  std::mt19937 spec_rng(2);
  std::vector<Graph> graphs;
  for (const std::string &path : test::example_paths())
    graphs.push_back(frontend::elaborate(frontend::load_spec(path), frontend::SizeSet::Check, {}));
  for (int i = 0; i < 150; ++i) graphs.push_back(test::graph_of(random_spec(spec_rng)));
  for (const Graph &g : graphs)
    for (int n = 0; n < 6; ++n) {
      const Schedule s = fuzz_schedule(g, rng, 8);
      EXPECT_EQ(test::user_error([&] { run_pipeline(g, s); }), "") << g.name << "\n" << print_schedule(s);
      for (const Primitive &p : s.steps) ++used[primitive_name(p.kind)];
      for (const Rewrite &r : s.rewrites) ++used[rewrite_name(r.kind)];
    }
  for (PrimitiveKind k : all_primitive_kinds())  // tensorize: from the matrix sketch
    EXPECT_GT(used[primitive_name(k)], 0) << primitive_name(k);
  for (RewriteKind k : all_rewrite_kinds()) EXPECT_GT(used[rewrite_name(k)], 0) << rewrite_name(k);
}

// Through `ksmith worker` on PoCL: a schedule that fits passes, one that does not fit
// the sizes (an unroll past its limit) is refused, each with what it gave.
TEST(FuzzOnDevice, TheWorkerRunnerTellsPassedFromRefused) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  const std::string device = runtime::find_devices("", "opencl").front().selector();
  const CaseRunner run = worker_runner(KS_KSMITH, {device}, {1}, testing::TempDir() + "/fuzz_work", 120);
  FuzzCase fits{
      "mm", kMatmul, schedule_of("split c.i 4 -> io ii\nbind c.io group.x\n"), {{"M", 9}, {"N", 5}, {"K", 3}}, device};
  FuzzCase over = fits;
  over.schedule = schedule_of("unroll c.k\n");
  over.sizes["K"] = 5000;
  const std::vector<CaseResult> r = run({fits, over});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].outcome, Outcome::Passed) << r[0].why;
  EXPECT_EQ(r[1].outcome, Outcome::Refused) << r[1].why;
  EXPECT_NE(r[1].why.find("unroll"), std::string::npos) << r[1].why;
}

// The fuzzer's matrix-unit schedules (a warp tile of the search's sketch, random
// steps on top) run emulated on PoCL at sizes that cross their tiles' edges: each
// agrees with the interpreter or is refused with a reason, none is a finding.
TEST(FuzzOnDevice, MatrixTilesAgreeWhereverTheirEdgesFall) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  const std::string device = runtime::find_devices("", "opencl").front().selector();
  const frontend::Spec spec = spec_of(kMatmul);
  const Graph g = frontend::elaborate(spec, frontend::SizeSet::Check, {});
  Rng rng(5);
  std::vector<FuzzCase> cases;
  for (int draws = 0; draws < 200 && cases.size() < 6; ++draws) {
    const Schedule s = fuzz_schedule(g, rng, 4);
    if (std::none_of(s.steps.begin(), s.steps.end(),
                     [](const Primitive &p) { return p.kind == PrimitiveKind::Tensorize; }))
      continue;
    for (const Sizes &at : boundary_sizes(spec, schedule_factors(s), rng, 2, 2e5))
      cases.push_back({"mm", kMatmul, s, at, device});
  }
  ASSERT_GE(cases.size(), 4u) << "the fuzzer draws matrix tiles";
  const CaseRunner run = worker_runner(KS_KSMITH, {device}, {1}, testing::TempDir() + "/fuzz_matrix", 300);
  const std::vector<CaseResult> r = run(cases);
  int passed = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_FALSE(is_finding(r[i].outcome)) << outcome_name(r[i].outcome) << ": " << r[i].why << "\n"
                                           << print_schedule(cases[i].schedule);
    passed += r[i].outcome == Outcome::Passed;
  }
  EXPECT_GE(passed, 2);
}

}  // namespace
}  // namespace ks
