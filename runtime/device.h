// The device interface of kernelsmith's runtime. It knows nothing of the compiler:
// it takes program source, buffers and a launch plan (kernels, ranges, arguments),
// runs it, and times it. A backend (OpenCL today) is a few files behind this.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ks::runtime {

/// A device failure or an unusable device: the message says which call and why.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string &message) : std::runtime_error(message) {}
};

struct DeviceInfo {
  std::string api;       // "opencl"
  int index = 0;         // position in list_devices()
  std::string platform;  // "Portable Computing Language"
  std::string name;
  std::string vendor;
  std::string version;  // "OpenCL 3.0 PoCL ..."
  std::string driver_version;
  bool gpu = false;
  uint64_t global_memory_bytes = 0;
  uint64_t max_allocation_bytes = 0;
  uint64_t local_memory_bytes = 0;
  size_t max_work_group_size = 0;
  std::array<size_t, 3> max_work_item_sizes{0, 0, 0};
  std::string extensions;
  std::string selector() const { return api + ":" + std::to_string(index); }
};

/// Every device of every API found on this machine (empty when none).
std::vector<DeviceInfo> list_devices();

using BufferId = int;

struct KernelLaunch {
  std::string kernel;
  std::array<size_t, 3> global{1, 1, 1};  // work-items in total, per dimension
  std::array<size_t, 3> local{1, 1, 1};
  std::vector<BufferId> args;  // one buffer per kernel parameter, in order
};

/// Kernels launched in order; each sees the writes of those before it.
struct LaunchPlan {
  std::vector<KernelLaunch> launches;
};

struct TimingOptions {
  int warmup_runs = 2;
  int batches = 10;           // R
  double min_batch_ms = 5.0;  // each batch repeats the plan N times to last this long
  int max_runs_per_batch = 1000;
  double max_total_seconds = 20.0;  // fewer batches (at least 3) when a plan is slow
};

/// The time of one run of a plan, from R batches of N back-to-back runs each.
struct Timing {
  double median_ms = 0;  // median over batches of (batch time / N)
  double min_ms = 0, max_ms = 0;
  double cv = 0;  // coefficient of variation of the batch times, outliers trimmed
  int batches = 0;
  int runs_per_batch = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo &info() const = 0;
  virtual BufferId allocate(size_t bytes) = 0;
  virtual void write(BufferId buffer, const void *data, size_t bytes) = 0;
  virtual void read(BufferId buffer, void *data, size_t bytes) = 0;
  /// Compiles the kernels of source (cached on disk by source and device); a
  /// failure is a DeviceError carrying the build log.
  virtual void build(const std::string &source) = 0;
  /// Runs the plan once and waits for it to finish.
  virtual void run(const LaunchPlan &plan) = 0;
  virtual Timing time(const LaunchPlan &plan, const TimingOptions &options) = 0;
};

/// Opens a device: "" picks the default (the first GPU, else the first device);
/// "opencl:N" or "N" picks by index; any other text picks the first device whose
/// name or platform contains it (case-insensitive).
std::unique_ptr<Device> open_device(const std::string &selector);

}  // namespace ks::runtime
