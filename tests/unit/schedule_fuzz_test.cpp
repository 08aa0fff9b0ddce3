// Equivalence of random legal schedules: for every example, many schedules composed
// at random from the primitives compile, run on the device and agree with the
// interpreter. A failure prints the schedule so it can be replayed with
// `ksmith run SPEC --schedule FILE`.
#include <map>
#include <random>

#include "evolve/evaluate.h"
#include "passes/lower.h"
#include "random_schedule.h"
#include "runtime/device.h"
#include "test_util.h"

namespace ks {
namespace {

constexpr int kSchedulesPerExample = 50;

// The schedules the equivalence test runs for a spec: the same seed, the same list.
std::vector<Schedule> schedules_for(const frontend::Spec &spec) {
  Program lowered = lower(frontend::elaborate(spec, frontend::SizeSet::Check, {}));
  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(spec.name)));
  std::vector<Schedule> out;
  for (int n = 0; n < kSchedulesPerExample; ++n)
    out.push_back(test::random_schedule(lowered, rng, std::uniform_int_distribution<int>(1, 6)(rng)));
  return out;
}

// Together, the examples' random schedules use every primitive (so the device test
// below checks each against the interpreter).
TEST(RandomSchedules, UseEveryPrimitive) {
  std::map<PrimitiveKind, int> used;
  for (const std::string &path : test::example_paths())
    for (const Schedule &s : schedules_for(frontend::load_spec(path)))
      for (const Primitive &p : s.steps) ++used[p.kind];
  for (int k = 0; k <= static_cast<int>(PrimitiveKind::Pad); ++k)
    EXPECT_GT(used[static_cast<PrimitiveKind>(k)], 0) << primitive_name(static_cast<PrimitiveKind>(k));
}

class RandomSchedules : public testing::TestWithParam<std::string> {};

TEST_P(RandomSchedules, AgreeWithTheInterpreter) {
  if (runtime::list_devices().empty()) GTEST_SKIP() << "no OpenCL device on this machine (install pocl-opencl-icd)";
  auto device = runtime::open_device("");
  frontend::Spec spec = frontend::load_spec(GetParam());
  std::vector<Schedule> schedules = schedules_for(spec);
  int nonempty = 0;
  for (int n = 0; n < kSchedulesPerExample; ++n) {
    EvalOptions options;
    options.time = false;
    options.trials = 1;
    options.seed = static_cast<uint64_t>(n);
    options.schedule = schedules[static_cast<size_t>(n)];
    nonempty += !options.schedule.steps.empty();
    EvalRecord r;
    try {
      r = evaluate(spec, GetParam(), *device, options);
    } catch (const std::exception &e) {
      FAIL() << "schedule " << n << " failed to run: " << e.what() << "\nschedule:\n"
             << print_schedule(options.schedule);
    }
    ASSERT_TRUE(r.check.passed) << "schedule " << n << " changed the result:\n"
                                << print_schedule(options.schedule) << r.to_json().dump(2);
  }
  EXPECT_GT(nonempty, kSchedulesPerExample / 2) << "the generator should rarely come up empty";
}

INSTANTIATE_TEST_SUITE_P(Examples, RandomSchedules, testing::ValuesIn(test::example_paths()), test::example_name);

}  // namespace
}  // namespace ks
