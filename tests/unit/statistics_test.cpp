// Timing statistics and the program cache.
#include "runtime/statistics.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "runtime/program_cache.h"
#include "test_util.h"

namespace ks::runtime {
namespace {

TEST(Statistics, MedianAndSpread) {
  Summary s = summarize({4, 2, 3, 1, 5});
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.kept, 5);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
}

TEST(Statistics, OutliersAreTrimmed) {
  Summary s = summarize({10, 10.1, 9.9, 10.05, 9.95, 50});
  EXPECT_EQ(s.kept, 5);
  EXPECT_DOUBLE_EQ(s.max, 10.1);
  EXPECT_LT(s.cv, 0.01);
}

TEST(Statistics, EvenCountAndEmpty) {
  EXPECT_EQ(summarize({1, 2, 3, 4}).median, 2.5);
  EXPECT_EQ(summarize({}).kept, 0);
}

class CacheTest : public testing::Test {
 protected:
  std::string dir = (std::filesystem::temp_directory_path() / ("ks_cache_test_" + std::to_string(::getpid()))).string();
  void TearDown() override { std::filesystem::remove_all(dir); }
};

TEST_F(CacheTest, StoreLoadAndKeyCheck) {
  ProgramCache cache(dir);
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", {1, 2, 3});
  ASSERT_TRUE(cache.load("key").has_value());
  EXPECT_EQ(*cache.load("key"), (std::vector<unsigned char>{1, 2, 3}));
  EXPECT_FALSE(cache.load("other key").has_value());
}

TEST_F(CacheTest, TornEntryIsIgnored) {
  ProgramCache cache(dir);
  cache.store("key", std::vector<unsigned char>(100, 7));
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    std::filesystem::resize_file(entry.path(), std::filesystem::file_size(entry.path()) - 10);
  EXPECT_FALSE(cache.load("key").has_value());
}

}  // namespace
}  // namespace ks::runtime
