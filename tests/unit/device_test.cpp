// Tests on every OpenCL device present (PoCL on machines without a GPU). Without a
// device each says SKIPPED, visibly; none pretends to pass.
#include "runtime/device.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "evolve/compare.h"
#include "evolve/evaluate.h"
#include "passes/schedule.h"
#include "test_util.h"

namespace ks {
namespace {

std::unique_ptr<runtime::Device> device_or_skip() {
  if (runtime::list_devices().empty()) return nullptr;
  return runtime::open_device("");
}

#define KS_REQUIRE_DEVICE(var) \
  auto var = device_or_skip(); \
  if (!var) GTEST_SKIP() << "no OpenCL device on this machine (install pocl-opencl-icd)"

// The spec at path, under schedule, checked twice against the interpreter (untimed).
EvalRecord checked(runtime::Device &device, const std::string &path, Schedule schedule = {}) {
  EvalOptions options;
  options.time = false;
  options.trials = 2;
  options.schedule = std::move(schedule);
  return evaluate(frontend::load_spec(path), path, device, options);
}

class ExampleOnDevice : public testing::TestWithParam<std::string> {};

// Every example, compiled and run, agrees with the interpreter on fresh inputs.
TEST_P(ExampleOnDevice, MatchesTheInterpreter) {
  KS_REQUIRE_DEVICE(device);
  EvalRecord r = checked(*device, GetParam());
  EXPECT_TRUE(r.check.passed) << r.to_json().dump(2);
  EXPECT_EQ(r.check.trials, 2);
  EXPECT_LE(r.check.worst_error, tolerance_for(DType::F32));
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleOnDevice, testing::ValuesIn(test::example_paths()), test::example_name);

std::string schedule_path(const std::string &spec_path) { return spec_path.substr(0, spec_path.size() - 3) + ".sched"; }

std::vector<std::string> scheduled_example_paths() {
  std::vector<std::string> out;
  for (const std::string &p : test::example_paths())
    if (std::ifstream(schedule_path(p))) out.push_back(p);
  return out;
}

// Each example with a hand-written schedule beside it (examples/NAME.sched), scheduled.
class ScheduledExampleOnDevice : public testing::TestWithParam<std::string> {};

TEST_P(ScheduledExampleOnDevice, MatchesTheInterpreter) {
  KS_REQUIRE_DEVICE(device);
  EvalRecord r = checked(*device, GetParam(), load_schedule(schedule_path(GetParam())));
  EXPECT_TRUE(r.check.passed) << r.to_json().dump(2);
}

INSTANTIATE_TEST_SUITE_P(Examples, ScheduledExampleOnDevice, testing::ValuesIn(scheduled_example_paths()),
                         test::example_name);

// The runtime knows nothing of the compiler: source, buffers and a plan suffice.
TEST(Runtime, RunsAHandWrittenPlan) {
  KS_REQUIRE_DEVICE(device);
  device->build(
      "__kernel void twice(__global const float *x, __global float *y) {\n"
      "  size_t i = get_global_id(0);\n  y[i] = 2.0f * x[i];\n}\n");
  std::vector<float> x = {1, -2, 3.5f, 0, 8, 9, 10, 11}, y(8, NAN);
  runtime::BufferId bx = device->allocate(32), by = device->allocate(32);
  device->write(bx, x.data(), 32);
  runtime::LaunchPlan plan;
  plan.launches.push_back({"twice", {8, 1, 1}, {4, 1, 1}, {bx, by}});
  device->run(plan);
  device->read(by, y.data(), 32);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(y[i], 2 * x[i]) << i;

  runtime::TimingOptions timing;
  timing.batches = 5;
  timing.min_batch_ms = 0.5;
  runtime::Timing t = device->time(plan, timing);
  EXPECT_GT(t.median_ms, 0);
  EXPECT_EQ(t.batches, 5);
  EXPECT_GE(t.runs_per_batch, 1);
}

TEST(Runtime, BuildFailureCarriesTheLog) {
  KS_REQUIRE_DEVICE(device);
  try {
    device->build("__kernel void broken(__global float *y) { y[0] = undefined_name; }\n");
    FAIL() << "the build should fail";
  } catch (const runtime::DeviceError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("OpenCL build failed"), std::string::npos) << message;
    EXPECT_NE(message.find("undefined_name"), std::string::npos) << message;
  }
}

TEST(Runtime, RefusesOversizedBuffersAndGroups) {
  KS_REQUIRE_DEVICE(device);
  EXPECT_THROW(device->allocate(device->info().max_allocation_bytes + 1), runtime::DeviceError);
  device->build("__kernel void k(__global float *y) { y[get_global_id(0)] = 1.0f; }\n");
  runtime::BufferId b = device->allocate(4);
  runtime::LaunchPlan plan;
  size_t too_many = device->info().max_work_group_size * 2;
  plan.launches.push_back({"k", {too_many, 1, 1}, {too_many, 1, 1}, {b}});
  try {
    device->run(plan);
    FAIL() << "an oversized work-group should be refused";
  } catch (const runtime::DeviceError &e) {
    EXPECT_NE(std::string(e.what()).find("work-items per group"), std::string::npos) << e.what();
  }
}

TEST(Runtime, ProgramBinariesAreCached) {
  KS_REQUIRE_DEVICE(device);
  std::string dir =
      (std::filesystem::temp_directory_path() / ("ks_device_cache_" + std::to_string(::getpid()))).string();
  setenv("KSMITH_CACHE_DIR", dir.c_str(), 1);
  const std::string source = "__kernel void cached(__global float *y) { y[get_global_id(0)] = 3.0f; }\n";
  device->build(source);
  size_t entries = 0;
  for ([[maybe_unused]] const auto &e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
  device->build(source);  // from the cache; must still work
  runtime::BufferId b = device->allocate(4);
  runtime::LaunchPlan plan;
  plan.launches.push_back({"cached", {1, 1, 1}, {1, 1, 1}, {b}});
  device->run(plan);
  float y = 0;
  device->read(b, &y, 4);
  EXPECT_EQ(y, 3.0f);
  unsetenv("KSMITH_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

// The checker: a never-written output fails, element by element.
TEST(Compare, PoisonedAndPartlyWrittenOutputsFail) {
  TensorDecl t{"y", DType::F32, {4}, TensorRole::Output, std::nullopt};
  HostBuffer got = poisoned(t);
  TensorData expected{DType::F32, {4}, {1, 2, 3, 4}};
  Mismatch m = compare(got, expected);
  EXPECT_FALSE(m.passed);
  EXPECT_EQ(m.bad_elements, 4);
  float *values = reinterpret_cast<float *>(got.bytes.data());
  values[0] = 1, values[1] = 2, values[2] = 3;
  m = compare(got, expected);
  EXPECT_FALSE(m.passed);
  EXPECT_EQ(m.bad_elements, 1);
  EXPECT_EQ(m.index, (std::vector<int64_t>{3}));
  values[3] = 4.0001f;  // within 1e-4 relative
  EXPECT_TRUE(compare(got, expected).passed);
  values[3] = 4.01f;
  EXPECT_FALSE(compare(got, expected).passed);
}

TEST(Compare, IntegersMustMatchExactly) {
  TensorDecl t{"i", DType::I64, {2}, TensorRole::Output, std::nullopt};
  HostBuffer got = poisoned(t);
  int64_t *values = reinterpret_cast<int64_t *>(got.bytes.data());
  values[0] = 3;
  values[1] = 5;
  EXPECT_TRUE(compare(got, TensorData{DType::I64, {2}, {3, 5}}).passed);
  EXPECT_FALSE(compare(got, TensorData{DType::I64, {2}, {3, 4}}).passed);
}

TEST(Inputs, RandomInputsAreFreshMixedAndInRange) {
  TensorDecl x{"x", DType::F32, {1000}, TensorRole::Input, std::nullopt};
  HostBuffer a = random_input(x, 1), b = random_input(x, 2), a_again = random_input(x, 1);
  EXPECT_EQ(a.bytes, a_again.bytes);
  EXPECT_NE(a.bytes, b.bytes);
  int negative = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_GE(a.at(i), -1.0);
    EXPECT_LE(a.at(i), 1.0);
    negative += a.at(i) < 0;
  }
  EXPECT_GT(negative, 300);
  EXPECT_LT(negative, 700);
  TensorDecl t{"t", DType::I64, {1000}, TensorRole::Input, ValueRange{0, 10}};
  HostBuffer ti = random_input(t, 3);
  for (int64_t i = 0; i < ti.numel(); ++i) {
    EXPECT_GE(ti.at(i), 0);
    EXPECT_LT(ti.at(i), 10);
  }
}

}  // namespace
}  // namespace ks
