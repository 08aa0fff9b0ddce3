// The farm's pieces that need no MPI (evolve/farm/farm.h): a device's description
// there and back, devices of other ranks by name, and the relay that carries a
// worker's lines to the head, against a stand-in head on a Unix socket.
#include "evolve/farm/farm.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "evolve/workers.h"
#include "ir/diagnostic.h"

namespace ks {
namespace {

runtime::DeviceInfo odd_device() {
  runtime::DeviceInfo d;
  d.api = "opencl";
  d.index = 3;
  d.platform = "NVIDIA CUDA";
  d.name = "NVIDIA H100 80GB HBM3";
  d.vendor = "NVIDIA Corporation";
  d.version = "OpenCL 3.0 CUDA";
  d.driver_version = "580.1";
  d.gpu = true;
  d.global_memory_bytes = 85e9;
  d.max_allocation_bytes = 21e9;
  d.local_memory_bytes = 49152;
  d.cache_bytes = 52428800;
  d.max_work_group_size = 1024;
  d.compute_units = 132;
  d.max_work_item_sizes = {1024, 1024, 64};
  d.max_group_counts = {7, 8, 9};
  d.subgroup_size = 32;
  d.fp64 = true;
  d.async_copies = true;
  d.max_loop_iterations = 65535;
  d.extensions = "cl_khr_fp64 cl_nv_device_attribute_query";
  d.place = "rank2";
  return d;
}

// Sets $KSMITH_FARM for the test's life, restoring what was there.
struct FarmFolder {
  std::string dir;
  explicit FarmFolder(const std::vector<runtime::DeviceInfo> &devices) {
    char path[] = "/tmp/ks-farm-test-XXXXXX";
    dir = ::mkdtemp(path);
    write_farm_devices(dir, devices);
    ::setenv(kFarmEnv, dir.c_str(), 1);
  }
  ~FarmFolder() {
    ::unsetenv(kFarmEnv);
    std::filesystem::remove_all(dir);
  }
};

TEST(Farm, ADeviceDescriptionComesBackWhole) {
  const runtime::DeviceInfo d = odd_device();
  const runtime::DeviceInfo back = device_info_from_json(device_info_json(d));
  EXPECT_EQ(device_info_json(back), device_info_json(d));
  EXPECT_EQ(back.where(), "rank2/opencl:3");
  EXPECT_EQ(back.max_group_counts[2], 9u);
  nlohmann::json missing = device_info_json(d);
  missing.erase("local_memory_bytes");
  try {
    device_info_from_json(missing);
    FAIL() << "a description without local_memory_bytes was taken";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("local_memory_bytes"), std::string::npos) << e.what();
  }
}

TEST(Farm, AnotherRanksDeviceIsFoundInTheFarmAlone) {
  ::unsetenv(kFarmEnv);
  EXPECT_THROW(
      {
        try {
          find_run_devices("rank2/opencl:3", "");
        } catch (const runtime::DeviceError &e) {
          EXPECT_NE(std::string(e.what()).find("only in an MPI farm"), std::string::npos) << e.what();
          throw;
        }
      },
      runtime::DeviceError);
  FarmFolder farm({odd_device()});
  std::vector<runtime::DeviceInfo> found = find_run_devices("rank2/opencl:3", "opencl");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(found[0].async_copies);
  EXPECT_THROW(find_run_devices("rank2/opencl:3,rank2/opencl:3", ""), runtime::DeviceError);  // named twice
  EXPECT_THROW(find_run_devices("rank5/opencl:0", ""), runtime::DeviceError);                 // not in the farm
  EXPECT_THROW(find_run_devices("rank2/opencl:3", "vulkan"), runtime::DeviceError);           // of another API
  std::vector<WorkerQueue::Slot> slots = device_slots(found, 2);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].args, (std::vector<std::string>{"--device", "opencl:3"}));  // its rank adds its lock
  EXPECT_EQ(slots[0].worker, (std::vector<std::string>{"--relay", farm.dir + "/socket", "--to", "rank2/opencl:3"}));
}

// A stand-in for the head's broker: accepts one relay, checks its first line, answers
// its job with a worker's answer, and the next with the worker's end.
void stand_in_head(int listener, std::string *first, std::string *job) {
  int fd = ::accept(listener, nullptr, nullptr);
  std::string in;
  char buffer[4096];
  auto line = [&] {
    size_t end;
    while ((end = in.find('\n')) == std::string::npos) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return std::string();
      in.append(buffer, static_cast<size_t>(n));
    }
    std::string l = in.substr(0, end);
    in.erase(0, end + 1);
    return l;
  };
  *first = line();
  *job = line();
  nlohmann::json request = nlohmann::json::parse(*job);
  const std::string answer =
      nlohmann::json{{"ticket", request["ticket"]}, {"exit", 0}, {"out", "{\"record\": 1}"}, {"err", ""}}.dump() + "\n";
  (void)!::write(fd, answer.data(), answer.size());
  line();  // the second job: its worker on the rank died
  const std::string gone = nlohmann::json{{"gone", "error: the worker on rank 2 died\n"}}.dump() + "\n";
  (void)!::write(fd, gone.data(), gone.size());
  ::close(fd);
}

TEST(Farm, ARelayCarriesAJobAndItsAnswerAndTheWorkersEnd) {
  FarmFolder farm({odd_device()});
  int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = farm.dir + "/socket";
  std::strcpy(address.sun_path, socket_path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  std::string first, job;
  std::thread head(stand_in_head, listener, &first, &job);
  WorkerQueue queue(KS_KSMITH, device_slots(find_run_devices("rank2/opencl:3", ""), 1));
  queue.submit({7, {"run", "x.ks", "--json"}, 60});
  std::vector<JobResult> done;
  for (int i = 0; i < 100 && done.empty(); ++i) done = queue.wait(0.2);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].ticket, 7u);
  EXPECT_EQ(done[0].child.exit_status, 0);
  EXPECT_EQ(done[0].child.out, "{\"record\": 1}");
  EXPECT_EQ(done[0].device, "rank2/opencl:3 NVIDIA H100 80GB HBM3");
  queue.submit({8, {"run", "y.ks", "--json"}, 60});
  done.clear();
  for (int i = 0; i < 100 && done.empty(); ++i) done = queue.wait(0.2);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].ticket, 8u);
  EXPECT_TRUE(done[0].child.out.empty());  // a failed evaluation, as a worker that died gives
  EXPECT_NE(done[0].child.err.find("the worker on rank 2 died"), std::string::npos) << done[0].child.err;
  head.join();
  ::close(listener);
  EXPECT_EQ(nlohmann::json::parse(first), (nlohmann::json{{"to", "rank2/opencl:3"}}));
  EXPECT_EQ(nlohmann::json::parse(job)["args"], (nlohmann::json{"run", "x.ks", "--json", "--device", "opencl:3"}));
}

}  // namespace
}  // namespace ks
