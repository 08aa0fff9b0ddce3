// ks_half_conversions [SELECTOR...]: the 16-bit conversions of half_conversions.h on each
// device named (default: every GPU of OpenCL and of Vulkan, else every device of each),
// "ok" or each disagreement a line. Exit 0 where all agree, 1 where one disagrees, 2 where
// a device or its compiler fails. bench/gpu.sh runs it on the GPU machine in every call.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "tests/device/half_conversions.h"

int main(int argc, char **argv) {
  using namespace ks;
  std::vector<runtime::DeviceInfo> devices;
  try {
    if (argc > 1) {
      for (int a = 1; a < argc; ++a) devices.push_back(runtime::find_device(argv[a]));
    } else {
      for (const char *api : {"opencl", "vulkan"}) {
        std::vector<runtime::DeviceInfo> found;
        try {
          found = runtime::find_devices("all", api);
        } catch (const runtime::DeviceError &e) {
          std::printf("SKIP  %s: %s\n", api, e.what());  // no device of that API here
        }
        devices.insert(devices.end(), found.begin(), found.end());
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  int status = 0;
  for (const runtime::DeviceInfo &info : devices) {
    const std::string name = info.selector() + " " + info.name;
    try {
      const std::unique_ptr<runtime::Device> device = runtime::open_device(info.selector(), info.api);
      const std::vector<std::string> failures =
          check_half_conversions(*device, info.api == "vulkan" ? Target::SPIRV : Target::OpenCL);
      for (const std::string &f : failures) std::printf("FAIL  %s: %s\n", name.c_str(), f.c_str());
      if (failures.empty())
        std::printf("ok    %s: f16 and bf16 stores, roundings and reads agree with the table\n", name.c_str());
      if (!failures.empty() && status == 0) status = 1;
    } catch (const std::exception &e) {
      std::printf("ERROR %s: %s\n", name.c_str(), e.what());
      status = 2;
    }
  }
  return status;
}
