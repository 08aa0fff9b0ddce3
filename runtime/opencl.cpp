// OpenCL backend: contexts, buffers, program builds with the binary cache, launch
// plans, and batched timing with profiling events.
#define CL_TARGET_OPENCL_VERSION 120
#include "runtime/opencl.h"

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <type_traits>

#include "runtime/program_cache.h"
#include "runtime/statistics.h"

namespace ks::runtime {

namespace {

const char *cl_error_name(cl_int code) {
#define KS_CL_ERROR(name) \
  { name, #name }
  static const std::pair<cl_int, const char *> names[] = {
      KS_CL_ERROR(CL_DEVICE_NOT_FOUND),
      KS_CL_ERROR(CL_DEVICE_NOT_AVAILABLE),
      KS_CL_ERROR(CL_COMPILER_NOT_AVAILABLE),
      KS_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE),
      KS_CL_ERROR(CL_OUT_OF_RESOURCES),
      KS_CL_ERROR(CL_OUT_OF_HOST_MEMORY),
      KS_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE),
      KS_CL_ERROR(CL_BUILD_PROGRAM_FAILURE),
      KS_CL_ERROR(CL_INVALID_VALUE),
      KS_CL_ERROR(CL_INVALID_DEVICE),
      KS_CL_ERROR(CL_INVALID_CONTEXT),
      KS_CL_ERROR(CL_INVALID_COMMAND_QUEUE),
      KS_CL_ERROR(CL_INVALID_MEM_OBJECT),
      KS_CL_ERROR(CL_INVALID_BINARY),
      KS_CL_ERROR(CL_INVALID_BUILD_OPTIONS),
      KS_CL_ERROR(CL_INVALID_PROGRAM),
      KS_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE),
      KS_CL_ERROR(CL_INVALID_KERNEL_NAME),
      KS_CL_ERROR(CL_INVALID_KERNEL),
      KS_CL_ERROR(CL_INVALID_ARG_INDEX),
      KS_CL_ERROR(CL_INVALID_ARG_VALUE),
      KS_CL_ERROR(CL_INVALID_ARG_SIZE),
      KS_CL_ERROR(CL_INVALID_KERNEL_ARGS),
      KS_CL_ERROR(CL_INVALID_WORK_DIMENSION),
      KS_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE),
      KS_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE),
      KS_CL_ERROR(CL_INVALID_GLOBAL_OFFSET),
      KS_CL_ERROR(CL_INVALID_EVENT),
      KS_CL_ERROR(CL_INVALID_OPERATION),
      KS_CL_ERROR(CL_INVALID_BUFFER_SIZE),
      KS_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE),
      KS_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET),
      KS_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
      KS_CL_ERROR(CL_INVALID_PLATFORM),
      KS_CL_ERROR(CL_INVALID_COMMAND_BUFFER_KHR),
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
#undef KS_CL_ERROR
  for (const auto &[value, name] : names)
    if (value == code) return name;
  return "unknown OpenCL error";
}

void check(cl_int code, const char *call) {
  if (code != CL_SUCCESS)
    throw DeviceError(std::string(call) + " failed: " + cl_error_name(code) + " (" + std::to_string(code) + ")");
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(device, what, size, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  clGetDeviceInfo(device, what, sizeof value, &value, nullptr);
  return value;
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(platform, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// Every (platform, device) pair, in a stable order.
std::vector<std::pair<cl_platform_id, cl_device_id>> enumerate() {
  std::vector<std::pair<cl_platform_id, cl_device_id>> out;
  cl_uint platform_count = 0;
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0) return out;
  std::vector<cl_platform_id> platforms(platform_count);
  if (clGetPlatformIDs(platform_count, platforms.data(), nullptr) != CL_SUCCESS) return out;
  for (cl_platform_id platform : platforms) {
    cl_uint device_count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> devices(device_count);
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, devices.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devices) out.push_back({platform, d});
  }
  return out;
}

DeviceInfo describe(cl_platform_id platform, cl_device_id device, int index) {
  DeviceInfo info;
  info.api = "opencl";
  info.index = index;
  info.platform = platform_string(platform, CL_PLATFORM_NAME);
  info.name = device_string(device, CL_DEVICE_NAME);
  info.vendor = device_string(device, CL_DEVICE_VENDOR);
  info.version = device_string(device, CL_DEVICE_VERSION);
  info.driver_version = device_string(device, CL_DRIVER_VERSION);
  info.gpu = (device_value<cl_device_type>(device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
  info.global_memory_bytes = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.max_allocation_bytes = device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.local_memory_bytes = device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
  info.cache_bytes = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  info.max_work_group_size = device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  info.compute_units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  size_t sizes[3] = {0, 0, 0};
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr);
  info.max_work_item_sizes = {sizes[0], sizes[1], sizes[2]};
  info.extensions = device_string(device, CL_DEVICE_EXTENSIONS);
  info.fp64 = (" " + info.extensions + " ").find(" cl_khr_fp64 ") != std::string::npos;
  info.barriers_need_wide_groups = info.platform == "Portable Computing Language";
  // cl_nv_device_attribute_query names the compute capability; cp.async needs 8.0.
  cl_uint major = 0;
  if ((" " + info.extensions + " ").find(" cl_nv_device_attribute_query ") != std::string::npos &&
      clGetDeviceInfo(device, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof major, &major, nullptr) == CL_SUCCESS)
    info.async_copies = info.matrix_units = major >= 8;
  return info;
}

// cl_khr_command_buffer's entry points. The extension is provisional and changed
// its signatures after 0.9.4 (commands gained a properties argument); these are the
// signatures of the installed header, so only versions 0.9.0 to 0.9.4 are used.
struct CommandBufferApi {
  clCreateCommandBufferKHR_fn create = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  explicit operator bool() const { return create && ndrange && finalize && enqueue && release; }
};

CommandBufferApi command_buffer_api(cl_platform_id platform, cl_device_id device, cl_command_queue_properties queue) {
  CommandBufferApi api;
  // CL_DEVICE_EXTENSIONS_WITH_VERSION (OpenCL 3.0): name and version of each extension.
  struct NameVersion {
    cl_uint version;
    char name[64];
  };
  constexpr cl_device_info kExtensionsWithVersion = 0x1060;
  size_t size = 0;
  if (clGetDeviceInfo(device, kExtensionsWithVersion, 0, nullptr, &size) != CL_SUCCESS || size == 0) return api;
  std::vector<NameVersion> extensions(size / sizeof(NameVersion));
  if (clGetDeviceInfo(device, kExtensionsWithVersion, size, extensions.data(), nullptr) != CL_SUCCESS) return api;
  auto it = std::find_if(extensions.begin(), extensions.end(), [](const NameVersion &e) {
    return std::string(e.name, strnlen(e.name, sizeof e.name)) == "cl_khr_command_buffer";
  });
  if (it == extensions.end()) return api;
  cl_uint major = it->version >> 22, minor = (it->version >> 12) & 0x3ff, patch = it->version & 0xfff;
  if (major != 0 || minor != 9 || patch > 4) return api;
  cl_command_queue_properties required = 0;
  clGetDeviceInfo(device, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof required, &required, nullptr);
  if ((required & queue) != required) return api;
  auto load = [&](auto *fn, const char *name) {
    *fn =
        reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(clGetExtensionFunctionAddressForPlatform(platform, name));
  };
  load(&api.create, "clCreateCommandBufferKHR");
  load(&api.ndrange, "clCommandNDRangeKernelKHR");
  load(&api.finalize, "clFinalizeCommandBufferKHR");
  load(&api.enqueue, "clEnqueueCommandBufferKHR");
  load(&api.release, "clReleaseCommandBufferKHR");
  return api;
}

class OpenCLDevice : public Device {
 public:
  OpenCLDevice(const DeviceInfo &info, cl_platform_id platform, cl_device_id device) : info_(info), device_(device) {
    cl_int err;
    context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
    check(err, "clCreateCommandQueue");
    command_buffers_ = command_buffer_api(platform, device_, CL_QUEUE_PROFILING_ENABLE);
    // A sub-buffer must start at a multiple of the device's base-address alignment.
    const size_t align = device_value<cl_uint>(device_, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
    guard_bytes_ = align > 0 ? (kGuardBytes + align - 1) / align * align : kGuardBytes;
  }

  ~OpenCLDevice() override {
    release_recordings();
    if (flush_) clReleaseMemObject(flush_);
    while (!built_.empty()) drop_oldest();
    for (Buffer &b : buffers_) release_memory(b);
    if (queue_) clReleaseCommandQueue(queue_);
    if (context_) clReleaseContext(context_);
  }

  const DeviceInfo &info() const override { return info_; }
  bool failed() const override { return failed_; }

  // A buffer is a sub-buffer (what kernels see) of an allocation with a guard region
  // of guard_bytes_ before and after it.
  BufferId allocate(size_t bytes) override {
    const size_t view = std::max<size_t>(bytes, 1), guard = guard_bytes_;
    if (view + 2 * guard > info_.max_allocation_bytes)
      throw DeviceError("a buffer of " + std::to_string(bytes) + " bytes (and its guards of " + std::to_string(guard) +
                        " bytes on each side) exceeds the device's largest allocation (" +
                        std::to_string(info_.max_allocation_bytes) + " bytes)");
    Buffer b;
    b.bytes = bytes;
    cl_int err;
    b.whole = clCreateBuffer(context_, CL_MEM_READ_WRITE, view + 2 * guard, nullptr, &err);
    check(err, "clCreateBuffer");
    cl_buffer_region region{guard, view};
    b.view = clCreateSubBuffer(b.whole, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (err != CL_SUCCESS) release_memory(b);
    check(err, "clCreateSubBuffer");
    const std::vector<unsigned char> canary = guard_pattern(guard);
    err = clEnqueueWriteBuffer(queue_, b.whole, CL_TRUE, 0, guard, canary.data(), 0, nullptr, nullptr);
    if (err == CL_SUCCESS)
      err = clEnqueueWriteBuffer(queue_, b.whole, CL_TRUE, guard + view, guard, canary.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) release_memory(b);
    check(err, "clEnqueueWriteBuffer (a buffer's guards)");
    buffers_.push_back(b);
    return static_cast<BufferId>(buffers_.size() - 1);
  }

  void release(BufferId id) override { release_memory(buffer_at(id, 0)); }

  size_t live_buffers() const override {
    return static_cast<size_t>(std::count_if(buffers_.begin(), buffers_.end(), [](const Buffer &b) { return b.view; }));
  }

  std::optional<int64_t> guard_breach(BufferId id) override {
    const Buffer &b = buffer_at(id, 0);
    const size_t guard = guard_bytes_, view = std::max<size_t>(b.bytes, 1);
    std::vector<unsigned char> head(guard), tail(guard);
    check(clEnqueueReadBuffer(queue_, b.whole, CL_TRUE, 0, guard, head.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer (a buffer's guards)");
    check(clEnqueueReadBuffer(queue_, b.whole, CL_TRUE, guard + view, guard, tail.data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer (a buffer's guards)");
    return find_breach(head, tail, view);
  }

  void write(BufferId id, const void *data, size_t bytes) override {
    const Buffer &b = buffer_at(id, bytes);
    if (bytes)
      check(clEnqueueWriteBuffer(queue_, b.view, CL_TRUE, 0, bytes, data, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }

  void read(BufferId id, void *data, size_t bytes) override {
    const Buffer &b = buffer_at(id, bytes);
    if (bytes)
      check(clEnqueueReadBuffer(queue_, b.view, CL_TRUE, 0, bytes, data, 0, nullptr, nullptr), "clEnqueueReadBuffer");
  }

  void fill(BufferId id, uint32_t pattern) override {
    const Buffer &b = buffer_at(id, 0);
    if (b.bytes < sizeof pattern) return;
    check(clEnqueueFillBuffer(queue_, b.view, &pattern, sizeof pattern, 0, b.bytes / 4 * 4, 0, nullptr, nullptr),
          "clEnqueueFillBuffer");
    check(clFinish(queue_), "clFinish");
  }

  void build(const DeviceProgram &program) override {
    if (program.opencl_c.empty()) throw DeviceError("an OpenCL device builds OpenCL C; this program has none");
    const std::string &source = program.opencl_c;
    const std::string options = "-cl-std=CL1.2";
    // A program built lately is kept built: an evaluation goes back and forth between
    // the candidate's program, the reference's and the comparison's, and a persistent
    // worker (evolve/README.md) between candidates that share code.
    for (auto it = built_.begin(); it != built_.end(); ++it)
      if (it->source == source) {
        built_.splice(built_.begin(), built_, it);
        release_recordings();
        program_ = built_.front().program;
        kernels_ = built_.front().kernels;
        return;
      }
    program_ = nullptr;
    kernels_.clear();
    const std::string key =
        info_.platform + "\n" + info_.name + "\n" + info_.driver_version + "\n" + options + "\n" + source;
    ProgramCache cache;
    if (auto binary = cache.load(key)) {
      const unsigned char *bytes = binary->data();
      size_t size = binary->size();
      cl_int status, err;
      program_ = clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &status, &err);
      if (err == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(program_, 1, &device_, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        create_kernels();
        keep_built(source);
        return;
      }
      release_program();  // a stale or foreign binary: build from source instead
    }
    cl_int err;
    const char *text = source.c_str();
    size_t length = source.size();
    program_ = clCreateProgramWithSource(context_, 1, &text, &length, &err);
    check(err, "clCreateProgramWithSource");
    err = clBuildProgram(program_, 1, &device_, options.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      if (err != CL_BUILD_PROGRAM_FAILURE && !healthy()) failed_ = true;  // not the code's fault
      std::string log = build_log();
      release_program();
      throw DeviceError("OpenCL build failed (" + std::string(cl_error_name(err)) + "):\n" + log);
    }
    create_kernels();
    keep_built(source);
    size_t binary_size = 0;
    if (clGetProgramInfo(program_, CL_PROGRAM_BINARY_SIZES, sizeof binary_size, &binary_size, nullptr) == CL_SUCCESS &&
        binary_size > 0) {
      std::vector<unsigned char> binary(binary_size);
      unsigned char *pointer = binary.data();
      if (clGetProgramInfo(program_, CL_PROGRAM_BINARIES, sizeof pointer, &pointer, nullptr) == CL_SUCCESS)
        cache.store(key, binary);
    }
  }

  void run(const LaunchPlan &plan) override {
    enqueue(plan, nullptr, nullptr);
    check(clFinish(queue_), "clFinish");
  }

  Timing time(const LaunchPlan &plan, const TimingOptions &options) override {
    release_recordings();  // recorded for another plan, or for kernels since rebuilt
    if (options.per_run()) {
      if (options.cold_cache && !flush_) {
        cl_int err;
        flush_ = clCreateBuffer(context_, CL_MEM_READ_WRITE, cache_flush_bytes(info_), nullptr, &err);
        check(err, "clCreateBuffer (the cache flush)");
      }
      for (const BufferFill &fill : options.fills) buffer_at(fill.buffer, 0);
      launch_ms_.assign(plan.launches.size(), std::numeric_limits<double>::infinity());
      Timing t = time_in_batches(options, [&](int runs) { return per_run_batch(plan, runs, options); });
      t.method = "opencl enqueues";
      t.launch_ms = launch_ms_;
      return t;
    }
    if (options.command_buffers && command_buffers_) {
      try {
        Timing t = time_in_batches(options, [&](int runs) { return recorded_batch(plan, runs); });
        t.method = "opencl command buffer";
        release_recordings();
        return t;
      } catch (const DeviceError &) {
        // A provisional extension the driver may implement in part: from here on,
        // this device times with enqueues (which report a failing kernel themselves).
        release_recordings();
        command_buffers_ = {};
      }
    }
    Timing t = time_in_batches(options, [&](int runs) { return timed_batch(plan, runs); });
    t.method = "opencl enqueues";
    return t;
  }

 private:
  DeviceInfo info_;
  cl_device_id device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool failed_ = false;           // a driver call failed (Device::failed)
  cl_program program_ = nullptr;  // the current program: built_'s first
  std::map<std::string, cl_kernel> kernels_;
  struct Built {
    std::string source;
    cl_program program;
    std::map<std::string, cl_kernel> kernels;
  };
  std::list<Built> built_;  // the latest first
  static constexpr size_t kKeptPrograms = 8;
  struct Buffer {
    cl_mem whole = nullptr;  // the guards and the buffer
    cl_mem view = nullptr;   // the buffer: what kernels, reads and writes see
    size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;  // released ones stay, empty, so that ids keep their meaning
  size_t guard_bytes_ = kGuardBytes;
  CommandBufferApi command_buffers_;                 // empty where not offered
  std::map<int, cl_command_buffer_khr> recordings_;  // time()'s plan, by runs per batch
  cl_mem flush_ = nullptr;                           // overwritten between cold-cache runs
  std::vector<double> launch_ms_;                    // per_run_batch's fastest time of each launch

  void release_recordings() {
    for (auto &[runs, commands] : recordings_) command_buffers_.release(commands);
    recordings_.clear();
  }

  Buffer &buffer_at(BufferId id, size_t bytes) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size() || !buffers_[static_cast<size_t>(id)].view)
      throw DeviceError("unknown or released buffer " + std::to_string(id));
    Buffer &b = buffers_[static_cast<size_t>(id)];
    if (bytes > b.bytes)
      throw DeviceError("transfer of " + std::to_string(bytes) + " bytes to a buffer of " + std::to_string(b.bytes));
    return b;
  }

  static void release_memory(Buffer &b) {
    if (b.view) clReleaseMemObject(b.view);
    if (b.whole) clReleaseMemObject(b.whole);
    b = Buffer();
  }

  std::string build_log() const {
    size_t size = 0;
    clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    if (size) clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  void create_kernels() {
    cl_uint count = 0;
    check(clCreateKernelsInProgram(program_, 0, nullptr, &count), "clCreateKernelsInProgram");
    std::vector<cl_kernel> list(count);
    check(clCreateKernelsInProgram(program_, count, list.data(), nullptr), "clCreateKernelsInProgram");
    for (cl_kernel k : list) {
      size_t size = 0;
      clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size);
      std::string name(size, '\0');
      clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, size, name.data(), nullptr);
      while (!name.empty() && name.back() == '\0') name.pop_back();
      kernels_[name] = k;
    }
  }

  // A driver call's error, which names the call; the device has failed (Device::failed)
  // where its queue no longer finishes work.
  void check(cl_int code, const char *call) {
    if (code != CL_SUCCESS && !healthy()) failed_ = true;
    ::ks::runtime::check(code, call);
  }

  // Whether the queue still finishes work: a refusal at enqueue (a group too large for
  // the kernel's registers) leaves it so; a kernel's fault does not (NVIDIA answers
  // CL_INVALID_COMMAND_QUEUE or CL_OUT_OF_RESOURCES from then on).
  bool healthy() const { return queue_ && clFinish(queue_) == CL_SUCCESS; }

  // A program that failed to build, or a cached binary that would not load: never kept.
  void release_program() {
    for (auto &[name, k] : kernels_) clReleaseKernel(k);
    kernels_.clear();
    if (program_) clReleaseProgram(program_);
    program_ = nullptr;
  }

  // The program just built becomes the current one, first of those kept.
  void keep_built(const std::string &source) {
    release_recordings();
    built_.push_front({source, program_, kernels_});
    while (built_.size() > kKeptPrograms) drop_oldest();
  }

  void drop_oldest() {
    Built &b = built_.back();
    for (auto &[name, k] : b.kernels) clReleaseKernel(k);
    clReleaseProgram(b.program);
    if (b.program == program_) {
      program_ = nullptr;
      kernels_.clear();
    }
    built_.pop_back();
  }

  // Enqueues every launch of plan; first/last receive events of the first and last
  // kernel when given.
  // With each, every launch's event (in order) instead of first and last.
  void enqueue(const LaunchPlan &plan, cl_event *first, cl_event *last, std::vector<cl_event> *each = nullptr) {
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      const KernelLaunch &launch = plan.launches[i];
      cl_kernel kernel = prepared(launch);
      cl_event *event = nullptr;
      if (each)
        event = &each->emplace_back(nullptr);
      else if (first && i == 0)
        event = first;
      else if (last && i + 1 == plan.launches.size())
        event = last;
      check(clEnqueueNDRangeKernel(queue_, kernel, 3, nullptr, launch.global.data(), launch.local.data(), 0, nullptr,
                                   event),
            "clEnqueueNDRangeKernel");
      // A plan of one kernel has the same first and last event.
      if (first && last && plan.launches.size() == 1 && i == 0) {
        *last = *first;
        clRetainEvent(*last);
      }
    }
  }

  // Sets a launch's kernel arguments; returns its kernel.
  cl_kernel prepared(const KernelLaunch &launch) {
    auto it = kernels_.find(launch.kernel);
    if (it == kernels_.end()) throw DeviceError("no kernel named '" + launch.kernel + "' in the built program");
    size_t group = launch.local[0] * launch.local[1] * launch.local[2];
    if (group > info_.max_work_group_size)
      throw DeviceError("kernel '" + launch.kernel + "' needs " + std::to_string(group) +
                        " work-items per group; the device allows " + std::to_string(info_.max_work_group_size));
    cl_uint parameters = 0;
    check(clGetKernelInfo(it->second, CL_KERNEL_NUM_ARGS, sizeof parameters, &parameters, nullptr), "clGetKernelInfo");
    if (parameters != launch.args.size())
      throw DeviceError("kernel '" + launch.kernel + "' takes " + std::to_string(parameters) +
                        " parameters; the launch passes " + std::to_string(launch.args.size()) + " arguments");
    for (size_t a = 0; a < launch.args.size(); ++a) {
      if (launch.args[a].integer) {
        check(clSetKernelArg(it->second, static_cast<cl_uint>(a), sizeof(cl_int), &launch.args[a].value),
              "clSetKernelArg");
        continue;
      }
      BufferId id = launch.args[a].buffer;
      if (id < 0 || static_cast<size_t>(id) >= buffers_.size() || !buffers_[static_cast<size_t>(id)].view)
        throw DeviceError("unknown or released buffer in a launch");
      check(
          clSetKernelArg(it->second, static_cast<cl_uint>(a), sizeof(cl_mem), &buffers_[static_cast<size_t>(id)].view),
          "clSetKernelArg");
    }
    return it->second;
  }

  // Milliseconds of one command buffer holding `runs` runs of the plan, recorded once
  // per batch size (each command after the one before it) and replayed.
  double recorded_batch(const LaunchPlan &plan, int runs) {
    if (plan.launches.empty()) return 0;
    auto found = recordings_.find(runs);
    if (found == recordings_.end()) {
      cl_int err;
      cl_command_buffer_khr commands = command_buffers_.create(1, &queue_, nullptr, &err);
      check(err, "clCreateCommandBufferKHR");
      found = recordings_.emplace(runs, commands).first;
      cl_sync_point_khr last = 0;
      for (int r = 0; r < runs; ++r)
        for (size_t i = 0; i < plan.launches.size(); ++i) {
          const KernelLaunch &launch = plan.launches[i];
          cl_kernel kernel = prepared(launch);
          bool after = r > 0 || i > 0;
          check(command_buffers_.ndrange(commands, nullptr, nullptr, kernel, 3, nullptr, launch.global.data(),
                                         launch.local.data(), after ? 1 : 0, after ? &last : nullptr, &last, nullptr),
                "clCommandNDRangeKernelKHR");
        }
      check(command_buffers_.finalize(commands), "clFinalizeCommandBufferKHR");
    }
    // Timed between markers before and after it: PoCL 3.1 stamps the command
    // buffer's own event as starting once its commands have run.
    cl_event before = nullptr, after = nullptr;
    check(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &before), "clEnqueueMarkerWithWaitList");
    cl_int err = command_buffers_.enqueue(0, nullptr, found->second, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &after);
    if (err == CL_SUCCESS) err = clFinish(queue_);
    return elapsed_ms(err, before, after, "clEnqueueCommandBufferKHR");
  }

  // Milliseconds of `runs` runs of the plan, each after the options' fills (and a
  // flush of the device's caches, when cold) and timed on its own: the fills are left
  // out.
  double per_run_batch(const LaunchPlan &plan, int runs, const TimingOptions &options) {
    if (plan.launches.empty()) return 0;
    std::vector<std::vector<cl_event>> events;
    for (int r = 0; r < runs; ++r) {
      if (options.cold_cache) {
        const cl_uint pattern = static_cast<cl_uint>(r + 1);
        check(clEnqueueFillBuffer(queue_, flush_, &pattern, sizeof pattern, 0, cache_flush_bytes(info_), 0, nullptr,
                                  nullptr),
              "clEnqueueFillBuffer (the cache flush)");
      }
      for (const BufferFill &fill : options.fills) {
        const Buffer &b = buffers_[static_cast<size_t>(fill.buffer)];
        if (b.bytes >= sizeof fill.pattern)
          check(clEnqueueFillBuffer(queue_, b.view, &fill.pattern, sizeof fill.pattern, 0, b.bytes / 4 * 4, 0, nullptr,
                                    nullptr),
                "clEnqueueFillBuffer");
      }
      std::vector<cl_event> &run = events.emplace_back();
      run.reserve(plan.launches.size());
      enqueue(plan, nullptr, nullptr, &run);
    }
    cl_int err = clFinish(queue_);
    double total = 0;
    for (std::vector<cl_event> &run : events) {
      // The run from its first launch's start to its last's end; each launch alone.
      cl_ulong start = 0, end = 0;
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(run.front(), CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
      if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(run.back(), CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
      total += static_cast<double>(end - start) * 1e-6;
      for (size_t i = 0; i < run.size(); ++i) {
        const double ms = elapsed_ms(err, run[i], nullptr, "timing a run on its own");
        launch_ms_[i] = std::min(launch_ms_[i], ms);
      }
    }
    check(err, "timing a run on its own");
    return total;
  }

  // Milliseconds from the start of `first` to the end of `last` (of `first` when
  // null), releasing both; err is the status of the wait before.
  double elapsed_ms(cl_int err, cl_event first, cl_event last, const char *what) {
    cl_ulong start = 0, end = 0;
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(last ? last : first, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
    if (first) clReleaseEvent(first);
    if (last) clReleaseEvent(last);
    check(err, what);
    return static_cast<double>(end - start) * 1e-6;
  }

  // Milliseconds from the start of the first kernel to the end of the last, over
  // `runs` back-to-back runs of the plan.
  double timed_batch(const LaunchPlan &plan, int runs) {
    if (plan.launches.empty()) return 0;
    cl_event first = nullptr, last = nullptr;
    for (int r = 0; r < runs; ++r) enqueue(plan, r == 0 ? &first : nullptr, r == runs - 1 ? &last : nullptr);
    return elapsed_ms(clFinish(queue_), first, last, "timing a batch");
  }
};

}  // namespace

std::vector<DeviceInfo> opencl_devices() {
  std::vector<DeviceInfo> out;
  int index = 0;
  for (auto [platform, device] : enumerate()) out.push_back(describe(platform, device, index++));
  return out;
}

std::unique_ptr<Device> open_opencl_device(const DeviceInfo &info) {
  auto all = enumerate();
  // The index is the position in enumerate(); the names guard against a list that
  // changed since.
  size_t i = static_cast<size_t>(info.index);
  if (info.index >= 0 && i < all.size()) {
    DeviceInfo candidate = describe(all[i].first, all[i].second, info.index);
    if (candidate.name == info.name && candidate.platform == info.platform)
      return std::make_unique<OpenCLDevice>(candidate, all[i].first, all[i].second);
  }
  throw DeviceError("OpenCL device " + info.selector() + " (" + info.name + ") is no longer available");
}

}  // namespace ks::runtime
