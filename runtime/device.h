// The device interface of kernelsmith's runtime. It knows nothing of the compiler:
// it takes a program (OpenCL C, or SPIR-V modules), buffers and a launch plan
// (kernels, ranges, arguments), runs it, and times it. Each backend (OpenCL,
// Vulkan) is a few files behind this.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
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
  std::string api;       // "opencl" or "vulkan"
  int index = 0;         // position among list_devices()'s devices of this api
  std::string platform;  // "Portable Computing Language"; for Vulkan the driver ("llvmpipe")
  std::string name;
  std::string vendor;
  std::string version;  // "OpenCL 3.0 PoCL ...", "Vulkan 1.3.230"
  std::string driver_version;
  bool gpu = false;
  uint64_t global_memory_bytes = 0;
  uint64_t max_allocation_bytes = 0;  // Vulkan: also the largest storage-buffer binding
  uint64_t local_memory_bytes = 0;
  uint64_t cache_bytes = 0;  // the global-memory cache the device reports; 0 where the API does not say
  size_t max_work_group_size = 0;
  uint32_t compute_units = 0;  // the device's cores (an SM, a CPU core); 0 where the API does not say (Vulkan)
  std::array<size_t, 3> max_work_item_sizes{0, 0, 0};
  std::array<uint64_t, 3> max_group_counts{UINT64_MAX, UINT64_MAX, UINT64_MAX};  // Vulkan's dispatch limits
  uint32_t subgroup_size = 0;        // 0 where the API does not say (OpenCL 1.2)
  bool subgroup_arithmetic = false;  // compute shaders may reduce across a subgroup (Vulkan)
  bool fp64 = false;                 // kernels may compute in double precision
  // Asynchronous global-to-local copies (PTX cp.async) through OpenCL C's inline
  // assembly: NVIDIA's OpenCL on a device of compute capability 8.0 or later.
  bool async_copies = false;
  // Matrix units kernelsmith can write for: on OpenCL, warp-wide PTX mma.sync (TF32,
  // f16 and bf16 operands) likewise, the same devices, as the same capability gives
  // both; on Vulkan, cooperative matrices of f16 operands (VK_NV_cooperative_matrix).
  bool matrix_units = false;
  /// The matrix units as Vulkan's cooperative matrices: f16 operands alone, the sums
  /// through local memory (codegen's MatrixUnits::Cooperative).
  bool cooperative_matrices() const { return matrix_units && api == "vulkan"; }
  // Loop iterations a work-item may run, summed over all loops of a kernel; 0 for
  // no limit. lavapipe ends a shader's loops silently after 65535 (a Mesa constant).
  uint64_t max_loop_iterations = 0;
  // Elements of a private array that a loop may index (not unrolled: an index that
  // changes at run time); 0 for no limit. Mesa 22.3's lavapipe stores into a larger
  // one (which it keeps in memory, not registers) at the next element when the loop's
  // body also computes its variable plus one (`acc[i] += x[.. + (i + 1)]`, a padded
  // read): a 38-element register tile came back shifted by one; with 32, or the loop
  // unrolled or counting down, it is right. The bug's exact trigger is LLVM's, so any
  // such array is refused there.
  uint64_t max_indexed_private_elements = 0;
  // Whether a kernel with a barrier must have work-groups more than one work-item
  // wide along local.x or of at most two. PoCL's work-group function (3.1 and 5.0) never ends
  // on a group of 1 x 3 x 1 or 1 x 1 x 3 (and more) running a barrier, then a loop
  // whose body runs on a condition and holds a loop (a register tile's guard around
  // its reduction); 3 x 1 x 1 and 1 x 1 x 2 are right. Found by the schedule fuzzer;
  // such kernels are refused there.
  bool barriers_need_wide_groups = false;
  std::string extensions;
  // Where the device is when another process holds it: "rank1", an MPI rank of the
  // run's evaluation farm (evolve/farm/); empty for this host's. index is its index there.
  std::string place;
  std::string selector() const { return api + ":" + std::to_string(index); }
  /// The device as the run names it: "opencl:1", or "rank1/opencl:0" for another rank's.
  std::string where() const { return place.empty() ? selector() : place + "/" + selector(); }
};

/// Every device of every API found on this machine (empty when none): OpenCL's,
/// then Vulkan's; with api ("opencl" or "vulkan"), that API's alone (the other is not
/// opened: a Vulkan instance costs an OpenCL evaluation a tenth of a second on
/// NVIDIA's driver). why_none, when given, receives for each API that contributed no
/// device the reason ("the Vulkan loader libvulkan.so.1 is not installed").
std::vector<DeviceInfo> list_devices(std::vector<std::string> *why_none = nullptr, const std::string &api = "");

/// One compute shader of a Vulkan program: SPIR-V whose entry point is "main",
/// with storage buffers at set 0, bindings 0..buffers-1 in launch-argument order.
struct SpirvKernel {
  std::string name;
  std::vector<uint32_t> words;
  size_t buffers = 0;
};

/// What a device builds: OpenCL C source for an OpenCL device, one SPIR-V module
/// per kernel for a Vulkan device (DeviceInfo::api says which it takes).
struct DeviceProgram {
  std::string opencl_c;
  std::vector<SpirvKernel> spirv;
};

using BufferId = int;

/// Every buffer sits between two guard regions of kGuardBytes (at least; a device may
/// need more for alignment), filled with a canary pattern when it is allocated. A
/// kernel that writes outside its buffer changes a guard; guard_breach() finds it.
constexpr size_t kGuardBytes = 4096;

/// The canary bytes of a guard region: a pattern that varies with the position, so
/// that no single value a kernel might store matches it by chance.
std::vector<unsigned char> guard_pattern(size_t bytes);

/// Where a guard was overwritten: the byte offset from the buffer's start of the
/// changed guard byte nearest the buffer, negative before its start, at or past
/// `bytes` after its end; none when both guards are intact.
std::optional<int64_t> find_breach(const std::vector<unsigned char> &head, const std::vector<unsigned char> &tail,
                                   size_t bytes);

/// A device-side fill of a whole buffer with a repeated 32-bit pattern.
struct BufferFill {
  BufferId buffer = -1;
  uint32_t pattern = 0;
};

/// A kernel parameter's value: a buffer, or a 32-bit integer (a kernel body's sizes;
/// OpenCL only).
struct LaunchArg {
  BufferId buffer = -1;
  bool integer = false;
  int32_t value = 0;
  LaunchArg(BufferId id) : buffer(id) {}  // NOLINT: most arguments are buffers
  static LaunchArg of_int(int32_t v) {
    LaunchArg a(-1);
    a.integer = true;
    a.value = v;
    return a;
  }
};

struct KernelLaunch {
  std::string kernel;
  std::array<size_t, 3> global{1, 1, 1};  // work-items in total, per dimension
  std::array<size_t, 3> local{1, 1, 1};
  std::vector<LaunchArg> args;  // one per kernel parameter, in order
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
  // Cold caches: before each run the device overwrites a buffer larger than its
  // caches (cache_flush_bytes), and each run is timed on its own, the flush left
  // out. Warm (false): runs follow each other, timed as one batch.
  bool cold_cache = false;
  // Warm batches through OpenCL's cl_khr_command_buffer where the device offers it
  // (one recorded command buffer per batch); else back-to-back enqueues.
  bool command_buffers = true;
  // Buffers filled before each run, outside the timed span (each run is then timed
  // on its own, as with cold caches): the evaluator resets a candidate's state with
  // them, to see whether its work depends on what the last run left behind.
  std::vector<BufferFill> fills;
  bool per_run() const { return cold_cache || !fills.empty(); }
};

/// Runs per batch in cold-cache mode (or with fills), at most: each run pays a flush
/// or fills besides, and is timed on its own.
constexpr int kMaxColdRunsPerBatch = 16;

/// The time of one run of a plan, from R batches of N back-to-back runs each.
struct Timing {
  double median_ms = 0;  // median over batches of (batch time / N)
  double min_ms = 0, max_ms = 0;
  double cv = 0;  // coefficient of variation of the batch times, outliers trimmed
  int batches = 0;
  int runs_per_batch = 0;
  bool cold_cache = false;
  // How a batch was timed: "vulkan command buffer", "opencl command buffer" or
  // "opencl enqueues"; with fills, each run timed on its own after them.
  std::string method;
  // OpenCL, each run timed on its own (fills or cold caches): each launch's fastest
  // time over the runs, in the plan's order (empty otherwise). A kernel body that
  // skips one pass when its state looks computed shows there, where the pass may be
  // a small part of the plan.
  std::vector<double> launch_ms;
};

/// Bytes a cold-cache flush overwrites: twice the cache the device reports, at least
/// 128 MiB (Vulkan does not report caches; an H100's L2 holds 50 MiB), at most a
/// quarter of the largest allocation.
uint64_t cache_flush_bytes(const DeviceInfo &device);

/// The device's compute units; where the API does not say (Vulkan), a small GPU's
/// count (16) or a CPU's (4).
int64_t compute_units_or_guess(const DeviceInfo &device);

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo &info() const = 0;
  virtual BufferId allocate(size_t bytes) = 0;
  /// Frees a buffer; its id is never valid again.
  virtual void release(BufferId buffer) = 0;
  /// Whether a kernel wrote outside the buffer: reads both guards back (see
  /// find_breach for the offset).
  virtual std::optional<int64_t> guard_breach(BufferId buffer) = 0;
  /// Buffers allocated and not released.
  virtual size_t live_buffers() const = 0;
  virtual void write(BufferId buffer, const void *data, size_t bytes) = 0;
  virtual void read(BufferId buffer, void *data, size_t bytes) = 0;
  /// Fills the first bytes / 4 * 4 bytes of a buffer with a 32-bit pattern, on the
  /// device (an evaluation's poison: gigabytes at KernelBench's sizes, written from
  /// the host a second each).
  virtual void fill(BufferId buffer, uint32_t pattern) = 0;
  /// Builds the program's kernels (cached on disk by code and device), replacing
  /// those built before; a failure is a DeviceError carrying the driver's log.
  virtual void build(const DeviceProgram &program) = 0;
  /// Runs the plan once and waits for it to finish.
  virtual void run(const LaunchPlan &plan) = 0;
  virtual Timing time(const LaunchPlan &plan, const TimingOptions &options) = 0;
  /// Whether the device failed (a driver call's error after which its queue no longer
  /// finishes work, or the device lost): what it holds can no longer be trusted, nor
  /// what it does next (NVIDIA's OpenCL context is dead after a kernel's fault: every
  /// later build fails), so a process serving many evaluations starts afresh (ksmith
  /// worker). A refusal (a buffer or group too large, at our check or the driver's
  /// enqueue) is not a failure.
  virtual bool failed() const = 0;
};

/// A buffer of the device, released with it (a lost device has nothing left to free).
struct ScopedBuffer {
  Device &device;
  BufferId id;
  ScopedBuffer(Device &device, size_t bytes) : device(device), id(device.allocate(bytes)) {}
  ScopedBuffer(const ScopedBuffer &) = delete;
  ScopedBuffer &operator=(const ScopedBuffer &) = delete;
  ~ScopedBuffer() {
    try {
      device.release(id);
    } catch (const DeviceError &) {
    }
  }
};

/// Opens a device of api ("opencl", "vulkan", or "" for any): selector "" picks
/// the default (the first GPU, else the first device); "opencl:N" or "vulkan:N"
/// picks by index, and "N" the Nth device of api (OpenCL's when api is ""); any
/// other text picks the first device whose name or platform contains it
/// (case-insensitive).
std::unique_ptr<Device> open_device(const std::string &selector, const std::string &api = "");

/// The devices of a comma-separated list of selectors (each as open_device takes
/// it), or "all": every GPU of api (of the default device's API when api is ""), else
/// every device of it. A DeviceError for a device named twice, devices of two APIs,
/// or one that is not there.
std::vector<DeviceInfo> find_devices(const std::string &selectors, const std::string &api = "");

/// The device open_device would open, described without opening it (no context is
/// created: a process that then starts children evaluating on it holds no driver).
DeviceInfo find_device(const std::string &selector, const std::string &api = "");

}  // namespace ks::runtime
