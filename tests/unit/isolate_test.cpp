// Evaluations in a child process: a passing record crosses as JSON; a spec error, a
// hanging kernel and a crashing one each become a failure with its reason, within
// the time limit, and the caller carries on.
#include "evolve/isolate.h"

#include <filesystem>
#include <fstream>

#include "runtime/device.h"
#include "test_util.h"

namespace ks {
namespace {

class Isolated : public testing::Test {
 protected:
  void SetUp() override {
    if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  }
  const std::string softmax = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";

  // The honest softmax body with its y kernel's body replaced.
  std::string body_file(const std::string &name, const std::string &y_body) {
    std::string text = test::honest_softmax_body();
    const std::string line = "  y[i] = e[i] / total[i / D];";
    text.replace(text.find(line), line.size(), y_body);
    std::string path = (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".cl")).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(Isolated, APassingRecordCrossesAsJson) {
  IsolatedRun r = run_isolated(KS_KSMITH, {softmax, "--no-time", "--target", "opencl"}, 120);
  ASSERT_TRUE(r.record) << r.failure;
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_TRUE((*r.record)["check"]["passed"].get<bool>());
  EXPECT_EQ((*r.record)["kernel"], "softmax");
}

TEST_F(Isolated, AnErrorBecomesTheFailure) {
  IsolatedRun r = run_isolated(KS_KSMITH, {softmax + ".missing"}, 60);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.record);
  EXPECT_NE(r.failure.find("error: cannot open"), std::string::npos) << r.failure;
}

// A record that did not pass gives its verdict as the reason.
TEST_F(Isolated, AFailedRecordGivesItsVerdict) {
  std::string path = body_file("ks_zero", "  y[i] = 0.0f;");
  IsolatedRun r = run_isolated(KS_KSMITH, {softmax, "--no-time", "--target", "opencl", "--kernel", path}, 60);
  std::filesystem::remove(path);
  ASSERT_TRUE(r.record) << r.failure;
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure.rfind("incorrect at ", 0), 0u) << r.failure;
  EXPECT_EQ(r.failure, (*r.record)["verdict"]);
}

TEST_F(Isolated, AHangingKernelIsKilledAtTheLimit) {
  std::string path = body_file("ks_hang", "  while (y[i] != 1.5f) y[i] = e[i];  // never 1.5: loops forever");
  IsolatedRun r = run_isolated(KS_KSMITH, {softmax, "--no-time", "--target", "opencl", "--kernel", path}, 5);
  std::filesystem::remove(path);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, "no record within the time limit of 5 s: the evaluation was killed");
  EXPECT_LT(r.seconds, 15);
}

TEST_F(Isolated, ACrashingKernelBecomesAFailedRecord) {
  // Past Clang's rules (y is written, nothing made from an integer), far outside any buffer.
  std::string path = body_file("ks_crash", "  y[i] = 1.0f;\n  (y - (1L << 40))[i] = 1.0f;");
  IsolatedRun r = run_isolated(KS_KSMITH, {softmax, "--no-time", "--target", "opencl", "--kernel", path}, 60);
  std::filesystem::remove(path);
  EXPECT_FALSE(r.ok);
  // `ksmith run` ran the body in a child of its own, which the signal ended: it says so.
  EXPECT_NE(r.failure.find("crashed the process that ran it (Segmentation fault, signal 11)"), std::string::npos)
      << r.failure;
}

}  // namespace
}  // namespace ks
