// The farm as a build without MPI has it (evolve/farm/mpi_farm.cpp compiled without
// KS_HAVE_MPI into this test alone): a ksmith that an MPI launcher started says so and
// does nothing, rather than each rank running the whole command on its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "evolve/farm/farm.h"
#include "evolve/farm/mpi_farm.h"
#include "ir/diagnostic.h"

namespace ks {
namespace {

TEST(FarmWithoutMpi, AProcessThatMpirunStartedIsRefused) {
  ::unsetenv(kFarmEnv);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("PMIX_RANK");
  ::unsetenv("PMI_SIZE");
  EXPECT_FALSE(launched_by_mpi());
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_TRUE(launched_by_mpi());
  try {
    Farm::join({"all", "", 60, nullptr, "mpirun ... ksmith tune", ""});
    FAIL() << "a build without MPI joined an MPI job";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("built without MPI"), std::string::npos) << e.what();
  }
  ::setenv(kFarmEnv, "/tmp/a-farm", 1);  // a child of a head: a search, not a rank
  EXPECT_FALSE(launched_by_mpi());
  ::unsetenv(kFarmEnv);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}

}  // namespace
}  // namespace ks
