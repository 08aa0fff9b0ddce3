// Equivalence of random legal schedules: for every example, many schedules composed
// at random from the primitives compile, run on the device and agree with the
// interpreter, and the evaluator's hacking checks (guards, state trials) never flag
// them. A failure prints the schedule so it can be replayed with
// `ksmith run SPEC --schedule FILE`.
#include <fstream>
#include <map>
#include <random>

#include "evolve/evaluation/evaluate.h"
#include "evolve/search/space.h"
#include "passes/lower.h"
#include "passes/pipeline.h"
#include "passes/rewrite.h"
#include "runtime/device.h"
#include "test_util.h"

namespace ks {
namespace {

constexpr int kSchedulesPerExample = 50;
// The examples imported from KernelBench's level 2 (their first line says so) compose
// the hand-written examples' patterns, and each of their schedules compiles three to
// eight kernels (about two seconds a schedule for PoCL or lavapipe on a cold cache):
// they run the first sixteen of their schedules on each API.
constexpr int kImportedSchedules = 16;

bool imported(const std::string &path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return first.rfind("# Imported by `ksmith import`", 0) == 0;
}

// The seed's salt. Salt 0 draws, for gelu, a schedule that PoCL 3.1 compiles into an
// endless loop (its kernel is correct on lavapipe; evolve_test's DriverHang keeps it as
// a search's regression test): an in-process check cannot survive that, so these
// lists come from another salt.
constexpr uint64_t kSalt = 1;

// A split of a random reduction (rfactor) by a random factor, up to past its extent;
// none where the graph has no reduction it splits.
std::optional<Rewrite> random_rfactor(const Graph &graph, Rng &rng) {
  std::vector<Rewrite> options;
  for (const Stage &s : graph.stages)
    for (const IterVar &v : s.reduce_vars) {
      const int64_t factor = std::uniform_int_distribution<int64_t>(1, v.extent + 1)(rng);
      Rewrite r{RewriteKind::Rfactor, s.output, {}, v.name, factor, {s.output + "_rf", v.name + "_o", v.name + "_i"}};
      std::string reason;
      if (try_rewrite(graph, r, &reason)) options.push_back(r);
    }
  if (options.empty()) return std::nullopt;
  return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
}

// A rewrite that takes no arguments (online_softmax, online_attention) at the first
// stage where it applies; none where none.
std::optional<Rewrite> first_rewrite(const Graph &graph, RewriteKind kind) {
  for (const Stage &s : graph.stages) {
    Rewrite r{kind, s.output, {}, {}, 0, {}};
    std::string reason;
    if (try_rewrite(graph, r, &reason)) return r;
  }
  return std::nullopt;
}

// s with `async_copy` (2 or 3 slots, by n) at the first loop where s copies a local
// cache and the ring takes, or as it was. PoCL and lavapipe have no cp.async: the test
// runs the copies in order, which checks the rings' indices and slots.
Schedule with_async_copy(const Graph &graph, Schedule s, int n) {
  for (const Primitive &p : s.steps) {
    if (p.kind != PrimitiveKind::CacheRead || p.memory != MemoryScope::Local) continue;
    Schedule t = s;
    Primitive a;
    a.kind = PrimitiveKind::AsyncCopy;
    a.stage = p.stage;
    a.loops = {p.loops[0]};
    a.factors = {2 + n % 2};
    t.steps.push_back(a);
    try {
      run_pipeline(graph, t);
      return t;
    } catch (const UserError &) {
    }
  }
  return s;
}

// The schedules the equivalence test runs for a spec: the same seed, the same list.
// One in four starts by splitting a reduction (rfactor), one in four of a softmax's
// by its online form (logsumexp), one in four of a sum weighted by a softmax by its
// one pass (online_attention), then schedules the graph that leaves.
std::vector<Schedule> schedules_for(const frontend::Spec &spec) {
  Graph graph = frontend::elaborate(spec, frontend::SizeSet::Check, {});
  Program lowered = lower(graph);
  Rng rng(std::hash<std::string>{}(spec.name) + kSalt);
  std::vector<Schedule> out;
  for (int n = 0; n < kSchedulesPerExample; ++n) {
    std::optional<Rewrite> split = n % 4 == 3   ? random_rfactor(graph, rng)
                                   : n % 4 == 1 ? first_rewrite(graph, RewriteKind::OnlineSoftmax)
                                   : n % 4 == 2 ? first_rewrite(graph, RewriteKind::OnlineAttention)
                                                : std::nullopt;
    const int steps = std::uniform_int_distribution<int>(1, 6)(rng);
    if (!split) {
      out.push_back(with_async_copy(graph, random_schedule(lowered, rng, steps), n));
      continue;
    }
    Schedule s = random_schedule(lower(apply_rewrite(graph, *split)), rng, steps);
    s.rewrites = {*split};
    out.push_back(with_async_copy(graph, s, n));
  }
  return out;
}

// Together, the examples' random schedules use every primitive (so the device test
// below checks each against the interpreter), rfactor and online_softmax, but scan and reverse_inline, which
// random steps of any kind do not draw: the sketches' device tests check those.
TEST(RandomSchedules, UseEveryPrimitive) {
  std::map<PrimitiveKind, int> used;
  std::map<RewriteKind, int> rewrites;
  for (const std::string &path : test::example_paths())
    for (const Schedule &s : schedules_for(frontend::load_spec(path))) {
      for (const Primitive &p : s.steps) ++used[p.kind];
      for (const Rewrite &r : s.rewrites) ++rewrites[r.kind];
    }
  EXPECT_GT(rewrites[RewriteKind::Rfactor], 100) << "rfactor, on the examples with a reduction";
  EXPECT_GT(rewrites[RewriteKind::OnlineSoftmax], 30) << "online_softmax, on the examples with a softmax";
  for (int k = 0; k <= static_cast<int>(PrimitiveKind::Prefetch); ++k)
    EXPECT_GT(used[static_cast<PrimitiveKind>(k)], 0) << primitive_name(static_cast<PrimitiveKind>(k));
  EXPECT_GT(used[PrimitiveKind::AsyncCopy], 4) << "async_copy, where a schedule copies a local cache in a loop";
}

using ApiAndPath = std::tuple<std::string, std::string>;

class RandomSchedules : public testing::TestWithParam<ApiAndPath> {};

// Through both backends: OpenCL (PoCL without a GPU) and Vulkan (lavapipe), each
// with the same schedules.
TEST_P(RandomSchedules, AgreeWithTheInterpreter) {
  auto [api, path] = GetParam();
  if (!test::has_device(api)) GTEST_SKIP() << test::missing_device(api);
  auto device = runtime::open_device("", api);
  frontend::Spec spec = frontend::load_spec(path);
  std::vector<Schedule> schedules = schedules_for(spec);
  const int count = imported(path) ? kImportedSchedules : kSchedulesPerExample;
  int nonempty = 0, over_device_limit = 0;
  std::string over;  // the first refused schedule, for the message
  for (int n = 0; n < count; ++n) {
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    options.seed = static_cast<uint64_t>(n);
    options.schedule = schedules[static_cast<size_t>(n)];
    options.async_copies_in_order = true;
    nonempty += !options.schedule.steps.empty();
    EvalRecord r;
    try {
      r = evaluate(spec, path, *device, options);
    } catch (const std::exception &e) {
      FAIL() << "schedule " << n << " failed to run: " << e.what() << "\nschedule:\n"
             << print_schedule(options.schedule);
    }
    // A schedule may leave a work-item more loop iterations than lavapipe runs; the
    // refusal is the right answer there, and must stay rare.
    if (r.failure && r.failure->stage == "launch" &&
        r.failure->message.find("loop iterations per work-item") != std::string::npos) {
      if (!over_device_limit++) over = r.failure->message + "\n" + print_schedule(options.schedule);
      continue;
    }
    ASSERT_FALSE(r.failure) << "schedule " << n << " failed: " << r.verdict() << "\nschedule:\n"
                            << print_schedule(options.schedule);
    ASSERT_TRUE(r.check.passed) << "schedule " << n << " changed the result:\n"
                                << print_schedule(options.schedule) << r.to_json().dump(2);
    // Generated code never writes outside a buffer, never reads its state before
    // writing it, and never reuses what an earlier run left (the evaluator's guards and
    // state trials would flag it).
    ASSERT_TRUE(r.hacking_flags.empty()) << "schedule " << n << " was flagged: " << r.verdict() << "\n"
                                         << print_schedule(options.schedule);
  }
  EXPECT_GT(nonempty, count / 2) << "the generator should rarely come up empty";
  if (over_device_limit) std::printf("%d of %d schedules over the loop limit\n", over_device_limit, count);
  EXPECT_LE(over_device_limit, (count + 9) / 10)
      << "schedules refused for " << device->info().name << "'s loop limit; the first:\n"
      << over;
}

INSTANTIATE_TEST_SUITE_P(Examples, RandomSchedules,
                         testing::Combine(testing::Values("opencl", "vulkan"),
                                          testing::ValuesIn(test::example_paths())),
                         [](const testing::TestParamInfo<ApiAndPath> &info) {
                           return std::get<0>(info.param) + "_" +
                                  std::filesystem::path(std::get<1>(info.param)).stem().string();
                         });

}  // namespace
}  // namespace ks
