// Vulkan backend: instance and device selection, storage buffers (device-local;
// filled and read through a staging buffer where the host cannot map them), one
// compute pipeline per SPIR-V kernel through an on-disk pipeline cache, and launch
// plans recorded into command buffers. run() records the plan once and submits it;
// time() records the plan N times into one command buffer between two timestamp
// queries and replays that command buffer for every batch (the plan's "graph").
#include "runtime/vulkan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <spirv/unified1/spirv.hpp>
#include <vulkan/vulkan_raii.hpp>

#include "runtime/program_cache.h"
#include "runtime/statistics.h"

namespace ks::runtime {

namespace {

constexpr uint32_t kApiVersion = VK_API_VERSION_1_2;               // SPIR-V 1.5, as the compiler emits
constexpr uint64_t kFenceTimeoutNs = 600ull * 1000 * 1000 * 1000;  // no plan the runtime times lasts this long
constexpr vk::DeviceSize kStagingBytes = 64ull << 20;

std::string version_text(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x10005: return "Mesa";
    default: {
      char text[16];
      std::snprintf(text, sizeof text, "0x%X", id);
      return text;
    }
  }
}

// The loader and an instance. Failures become the reason there is no device.
struct Instance {
  vk::raii::Context context;
  vk::raii::Instance instance{nullptr};
};

std::unique_ptr<Instance> create_instance(std::string *why) {
  std::unique_ptr<Instance> out;
  try {
    out = std::make_unique<Instance>();  // dlopen()s libvulkan.so.1
  } catch (const std::exception &) {
    *why = "the Vulkan loader libvulkan.so.1 is not installed (install libvulkan1)";
    return nullptr;
  }
  vk::ApplicationInfo app("kernelsmith", 1, "kernelsmith", 1, kApiVersion);
  try {
    out->instance = vk::raii::Instance(out->context, vk::InstanceCreateInfo({}, &app));
  } catch (const vk::IncompatibleDriverError &) {
    *why = "no Vulkan 1.2 driver is installed (mesa-vulkan-drivers provides lavapipe on CPUs)";
    return nullptr;
  } catch (const vk::SystemError &e) {
    *why = std::string("creating a Vulkan instance failed: ") + e.what();
    return nullptr;
  }
  return out;
}

// Physical devices of Vulkan 1.2 or newer, in the loader's order.
std::vector<vk::raii::PhysicalDevice> usable_devices(const Instance &instance) {
  std::vector<vk::raii::PhysicalDevice> out;
  for (vk::raii::PhysicalDevice &d : vk::raii::PhysicalDevices(instance.instance))
    if (d.getProperties().apiVersion >= kApiVersion) out.push_back(std::move(d));
  return out;
}

// Whether kernelsmith's cooperative matrices run on the device (codegen's
// MatrixUnits::Cooperative): VK_NV_cooperative_matrix with 16 x 8 x 16 products of f16
// operands into f32 at subgroup scope, subgroups of 32 (a warp: the lanes of a matrix
// tile are local x, 32 of them), and the features its shaders declare (the Vulkan
// memory model, f16 arithmetic for the f16 matrices).
bool has_cooperative_matrices(const vk::raii::PhysicalDevice &device, const std::string &extensions,
                              uint32_t subgroup_size) {
  if ((" " + extensions + " ").find(" VK_NV_cooperative_matrix ") == std::string::npos || subgroup_size != 32)
    return false;
  auto chain =
      device.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceCooperativeMatrixFeaturesNV,
                          vk::PhysicalDeviceVulkanMemoryModelFeatures, vk::PhysicalDeviceShaderFloat16Int8Features>();
  if (!chain.get<vk::PhysicalDeviceCooperativeMatrixFeaturesNV>().cooperativeMatrix ||
      !chain.get<vk::PhysicalDeviceVulkanMemoryModelFeatures>().vulkanMemoryModel ||
      !chain.get<vk::PhysicalDeviceShaderFloat16Int8Features>().shaderFloat16)
    return false;
  using C = vk::ComponentTypeNV;
  for (const vk::CooperativeMatrixPropertiesNV &p : device.getCooperativeMatrixPropertiesNV())
    if (p.MSize == 16 && p.NSize == 8 && p.KSize == 16 && p.AType == C::eFloat16 && p.BType == C::eFloat16 &&
        p.CType == C::eFloat32 && p.DType == C::eFloat32 && p.scope == vk::ScopeNV::eSubgroup)
      return true;
  return false;
}

DeviceInfo describe(const vk::raii::PhysicalDevice &device, int index) {
  auto chain = device.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties,
                                     vk::PhysicalDeviceMaintenance3Properties, vk::PhysicalDeviceDriverProperties>();
  const vk::PhysicalDeviceProperties &p = chain.get<vk::PhysicalDeviceProperties2>().properties;
  const vk::PhysicalDeviceDriverProperties &driver = chain.get<vk::PhysicalDeviceDriverProperties>();
  DeviceInfo info;
  info.api = "vulkan";
  info.index = index;
  info.platform = std::string(driver.driverName.data());
  info.name = std::string(p.deviceName.data());
  info.vendor = vendor_name(p.vendorID);
  info.version = "Vulkan " + version_text(p.apiVersion);
  info.driver_version = std::string(driver.driverInfo.data());
  info.gpu = p.deviceType == vk::PhysicalDeviceType::eDiscreteGpu ||
             p.deviceType == vk::PhysicalDeviceType::eIntegratedGpu ||
             p.deviceType == vk::PhysicalDeviceType::eVirtualGpu;
  vk::PhysicalDeviceMemoryProperties memory = device.getMemoryProperties();
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & vk::MemoryHeapFlagBits::eDeviceLocal)
      info.global_memory_bytes = std::max<uint64_t>(info.global_memory_bytes, memory.memoryHeaps[h].size);
  // Every buffer is bound whole as a storage buffer, so the binding range limits it.
  info.max_allocation_bytes = std::min<uint64_t>(
      chain.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize, p.limits.maxStorageBufferRange);
  info.local_memory_bytes = p.limits.maxComputeSharedMemorySize;
  info.max_work_group_size = p.limits.maxComputeWorkGroupInvocations;
  for (int d = 0; d < 3; ++d) {
    info.max_work_item_sizes[d] = p.limits.maxComputeWorkGroupSize[d];
    info.max_group_counts[d] = p.limits.maxComputeWorkGroupCount[d];
  }
  const vk::PhysicalDeviceSubgroupProperties &subgroups = chain.get<vk::PhysicalDeviceSubgroupProperties>();
  info.subgroup_size = subgroups.subgroupSize;
  info.subgroup_arithmetic = (subgroups.supportedOperations & vk::SubgroupFeatureFlagBits::eArithmetic) &&
                             (subgroups.supportedStages & vk::ShaderStageFlagBits::eCompute);
  if (driver.driverID == vk::DriverId::eMesaLlvmpipe) {
    info.max_loop_iterations = 65535;  // LP_MAX_TGSI_LOOP_ITERATIONS
    info.max_indexed_private_elements = 32;
  }
  info.fp64 = device.getFeatures().shaderFloat64;
  for (const vk::ExtensionProperties &e : device.enumerateDeviceExtensionProperties())
    info.extensions += (info.extensions.empty() ? "" : " ") + std::string(e.extensionName.data());
  info.matrix_units = has_cooperative_matrices(device, info.extensions, info.subgroup_size);
  return info;
}

// The capabilities a SPIR-V module declares (OpCapability operands).
std::vector<spv::Capability> capabilities_of(const SpirvKernel &kernel) {
  const std::vector<uint32_t> &w = kernel.words;
  if (w.size() < 5 || w[0] != spv::MagicNumber)
    throw DeviceError("kernel '" + kernel.name + "' is not a SPIR-V module");
  std::vector<spv::Capability> out;
  for (size_t i = 5; i < w.size();) {
    uint32_t count = w[i] >> spv::WordCountShift, opcode = w[i] & spv::OpCodeMask;
    if (count == 0 || i + count > w.size())
      throw DeviceError("kernel '" + kernel.name + "': malformed SPIR-V at word " + std::to_string(i));
    if (opcode == spv::OpCapability && count == 2) out.push_back(static_cast<spv::Capability>(w[i + 1]));
    i += count;
  }
  return out;
}

class VulkanDevice : public Device {
 public:
  VulkanDevice(std::unique_ptr<Instance> instance, vk::raii::PhysicalDevice physical, DeviceInfo info)
      : instance_(std::move(instance)), physical_(std::move(physical)), info_(std::move(info)) {
    const char *stage = std::getenv("KSMITH_VULKAN_STAGING");
    always_stage_ = stage && std::string(stage) == "1";
    guard("opening the device", [&] { open(); });
  }

  ~VulkanDevice() override {
    // A device that timed out may still be running; waiting on it could hang.
    if (!lost_ && *device_) device_.waitIdle();
  }

  const DeviceInfo &info() const override { return info_; }
  bool failed() const override { return lost_; }

  // A buffer is bound as the range between two guard regions of one allocation.
  BufferId allocate(size_t bytes) override {
    if (bytes + 2 * guard_bytes_ > info_.max_allocation_bytes)
      throw DeviceError("a buffer of " + std::to_string(bytes) + " bytes (and its guards of " +
                        std::to_string(guard_bytes_) + " bytes on each side) exceeds the device's largest storage " +
                        "buffer (" + std::to_string(info_.max_allocation_bytes) + " bytes)");
    return guard("allocating a buffer", [&] {
      Buffer b = make_buffer(bytes, guard_bytes_);
      std::vector<unsigned char> canary = guard_pattern(guard_bytes_);
      transfer(b, 0, canary.data(), canary.size(), true);
      transfer(b, b.guard + b.view_bytes(), canary.data(), canary.size(), true);
      buffers_.push_back(std::move(b));
      return static_cast<BufferId>(buffers_.size() - 1);
    });
  }

  std::optional<int64_t> guard_breach(BufferId id) override {
    return guard("reading a buffer's guards", [&] {
      Buffer &b = buffer_at(id, 0);
      std::vector<unsigned char> head(b.guard), tail(b.guard);
      transfer(b, 0, head.data(), head.size(), false);
      transfer(b, b.guard + b.view_bytes(), tail.data(), tail.size(), false);
      return find_breach(head, tail, b.view_bytes());
    });
  }

  void release(BufferId id) override {
    buffer_at(id, 0);
    recordings_.clear();  // they bind it
    buffers_[static_cast<size_t>(id)] = Buffer();
  }

  size_t live_buffers() const override {
    return static_cast<size_t>(
        std::count_if(buffers_.begin(), buffers_.end(), [](const Buffer &b) { return static_cast<bool>(*b.buffer); }));
  }

  void write(BufferId id, const void *data, size_t bytes) override {
    guard("writing a buffer", [&] {
      Buffer &b = buffer_at(id, bytes);
      transfer(b, b.guard, const_cast<void *>(data), bytes, true);
    });
  }

  void read(BufferId id, void *data, size_t bytes) override {
    guard("reading a buffer", [&] {
      Buffer &b = buffer_at(id, bytes);
      transfer(b, b.guard, data, bytes, false);
    });
  }

  void fill(BufferId id, uint32_t pattern) override {
    guard("filling a buffer", [&] {
      Buffer &b = buffer_at(id, 0);
      if (b.bytes < sizeof pattern) return;
      vk::raii::CommandBuffer commands = new_commands();
      commands.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
      full_barrier(commands);
      commands.fillBuffer(*b.buffer, b.guard, b.bytes / 4 * 4, pattern);
      full_barrier(commands);
      commands.end();
      submit_and_wait(commands);
    });
  }

  void build(const DeviceProgram &program) override {
    if (program.spirv.empty()) throw DeviceError("a Vulkan device builds SPIR-V kernels; this program has none");
    guard("building the program", [&] {
      kernels_.clear();
      recordings_.clear();
      for (const SpirvKernel &k : program.spirv) check_capabilities(k);
      // The driver checks the cache's header (vendor, device, pipelineCacheUUID)
      // and ignores data from another driver.
      std::string key = "vulkan\n" + info_.name + "\n" + info_.driver_version + "\n";
      for (const SpirvKernel &k : program.spirv)
        key += k.name + " " + std::to_string(k.buffers) + "\n" +
               std::string(reinterpret_cast<const char *>(k.words.data()), k.words.size() * 4) + "\n";
      ProgramCache disk;
      std::optional<std::vector<unsigned char>> stored = disk.load(key);
      vk::PipelineCacheCreateInfo cache_info;
      if (stored) cache_info.setInitialDataSize(stored->size()).setPInitialData(stored->data());
      vk::raii::PipelineCache cache(device_, cache_info);
      for (const SpirvKernel &k : program.spirv) {
        Kernel kernel;
        kernel.buffers = k.buffers;
        kernel.module = vk::raii::ShaderModule(device_, vk::ShaderModuleCreateInfo({}, k.words));
        std::vector<vk::DescriptorSetLayoutBinding> bindings;
        for (uint32_t b = 0; b < k.buffers; ++b)
          bindings.push_back({b, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute});
        kernel.set_layout = vk::raii::DescriptorSetLayout(device_, vk::DescriptorSetLayoutCreateInfo({}, bindings));
        kernel.layout = vk::raii::PipelineLayout(device_, vk::PipelineLayoutCreateInfo({}, *kernel.set_layout));
        vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *kernel.module, "main");
        kernel.pipeline = vk::raii::Pipeline(device_, cache, vk::ComputePipelineCreateInfo({}, stage, *kernel.layout));
        kernels_.emplace(k.name, std::move(kernel));
      }
      if (!stored) disk.store(key, cache.getData());
    });
  }

  void run(const LaunchPlan &plan) override {
    guard("running a plan", [&] {
      Recording r = record(plan, 1, false);
      submit_and_wait(r.commands);
    });
  }

  Timing time(const LaunchPlan &plan, const TimingOptions &options) override {
    if (!queries_.has_value())
      throw DeviceError(info_.name + ": the compute queue has no timestamps, so plans cannot be timed");
    return guard("timing a plan", [&] {
      recordings_.clear();
      if (options.cold_cache && !*flush_.buffer) flush_ = make_buffer(cache_flush_bytes(info_), 0);
      for (const BufferFill &fill : options.fills) buffer_at(fill.buffer, 0);
      Timing t = time_in_batches(options, [&](int runs) { return timed_batch(plan, runs, options); });
      t.method = "vulkan command buffer";
      return t;
    });
  }

 private:
  struct Buffer {
    vk::raii::Buffer buffer{nullptr};
    vk::raii::DeviceMemory memory{nullptr};
    size_t bytes = 0;
    size_t guard = 0;        // bytes of guard before and after the part kernels see
    void *mapped = nullptr;  // host-visible device memory, else null (staged)
    // What kernels see: the bytes, rounded up to whole 32-bit words.
    size_t view_bytes() const { return std::max<size_t>((bytes + 3) / 4 * 4, 4); }
  };
  struct Kernel {
    vk::raii::ShaderModule module{nullptr};
    vk::raii::DescriptorSetLayout set_layout{nullptr};
    vk::raii::PipelineLayout layout{nullptr};
    vk::raii::Pipeline pipeline{nullptr};
    size_t buffers = 0;
  };
  // A plan recorded into a command buffer, with the descriptor sets it binds.
  struct Recording {
    vk::raii::DescriptorPool pool{nullptr};
    std::vector<vk::raii::DescriptorSet> sets;
    vk::raii::CommandBuffer commands{nullptr};
  };

  // Declared in the order of creation: destroyed in reverse.
  std::unique_ptr<Instance> instance_;
  vk::raii::PhysicalDevice physical_;
  DeviceInfo info_;
  vk::PhysicalDeviceFeatures features_;
  vk::PhysicalDevice16BitStorageFeatures storage16_;
  // Enabled where the device has cooperative matrices (DeviceInfo::matrix_units).
  vk::PhysicalDeviceCooperativeMatrixFeaturesNV cooperative_;
  vk::PhysicalDeviceVulkanMemoryModelFeatures memory_model_;
  vk::PhysicalDeviceShaderFloat16Int8Features float16_;
  vk::PhysicalDeviceSubgroupProperties subgroups_;
  vk::PhysicalDeviceMemoryProperties memory_;
  vk::raii::Device device_{nullptr};
  vk::raii::Queue queue_{nullptr};
  vk::raii::CommandPool command_pool_{nullptr};
  vk::raii::Fence fence_{nullptr};
  std::optional<vk::raii::QueryPool> queries_;
  uint64_t timestamp_mask_ = 0;
  double timestamp_ns_ = 1;
  vk::raii::Buffer staging_{nullptr};
  vk::raii::DeviceMemory staging_memory_{nullptr};
  void *staging_mapped_ = nullptr;
  std::vector<Buffer> buffers_;
  std::map<std::string, Kernel> kernels_;
  std::map<int, Recording> recordings_;  // time()'s plan, by runs per batch
  Buffer flush_;                         // overwritten between cold-cache runs
  size_t guard_bytes_ = kGuardBytes;     // a multiple of the storage-buffer offset alignment
  bool always_stage_ = false;
  bool lost_ = false;

  // A device-local storage buffer with `guard` bytes before and after it, mapped where
  // the device's memory is the host's.
  Buffer make_buffer(size_t bytes, size_t guard) {
    Buffer b;
    b.bytes = bytes;
    b.guard = guard;
    vk::DeviceSize size = b.view_bytes() + 2 * guard;
    b.buffer = vk::raii::Buffer(
        device_, vk::BufferCreateInfo({}, size,
                                      vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                                          vk::BufferUsageFlagBits::eTransferDst));
    vk::MemoryRequirements needs = b.buffer.getMemoryRequirements();
    uint32_t type = memory_type(needs.memoryTypeBits, vk::MemoryPropertyFlagBits::eDeviceLocal, {});
    b.memory = vk::raii::DeviceMemory(device_, vk::MemoryAllocateInfo(needs.size, type));
    b.buffer.bindMemory(*b.memory, 0);
    // A CPU device's memory is the host's: map it rather than copy twice.
    vk::MemoryPropertyFlags flags = memory_.memoryTypes[type].propertyFlags;
    if (!always_stage_ && (flags & vk::MemoryPropertyFlagBits::eHostVisible) &&
        (flags & vk::MemoryPropertyFlagBits::eHostCoherent))
      b.mapped = b.memory.mapMemory(0, VK_WHOLE_SIZE);
    return b;
  }

  // Runs f, turning Vulkan's exceptions into DeviceErrors that say what was being done.
  template <typename F>
  auto guard(const char *what, F &&f) -> decltype(f()) {
    try {
      return f();
    } catch (const vk::DeviceLostError &e) {
      lost_ = true;
      throw DeviceError(info_.name + ": the device was lost while " + what + " (" + e.what() + ")");
    } catch (const vk::SystemError &e) {
      throw DeviceError(info_.name + ": " + what + " failed: " + e.what());
    }
  }

  void open() {
    auto chain = physical_.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties>();
    subgroups_ = chain.get<vk::PhysicalDeviceSubgroupProperties>();
    const vk::PhysicalDeviceLimits &limits = chain.get<vk::PhysicalDeviceProperties2>().properties.limits;
    memory_ = physical_.getMemoryProperties();
    vk::PhysicalDeviceFeatures supported = physical_.getFeatures();
    features_.shaderInt64 = supported.shaderInt64;
    features_.shaderFloat64 = supported.shaderFloat64;
    features_.shaderInt16 = supported.shaderInt16;
    // 16-bit tensors' buffers (GL_EXT_shader_16bit_storage): Vulkan 1.1's feature.
    storage16_.storageBuffer16BitAccess =
        physical_.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDevice16BitStorageFeatures>()
            .get<vk::PhysicalDevice16BitStorageFeatures>()
            .storageBuffer16BitAccess;
    cooperative_.cooperativeMatrix = memory_model_.vulkanMemoryModel = float16_.shaderFloat16 = info_.matrix_units;
    // KSMITH_VULKAN_WITHOUT=shaderInt16,storageBuffer16BitAccess: the device as one that
    // lacks them (to test the refusals on a device that has them).
    if (const char *without = std::getenv("KSMITH_VULKAN_WITHOUT")) {
      const std::string names = std::string(",") + without + ",";
      for (auto [name, feature] : {std::pair<const char *, vk::Bool32 *>{"shaderInt64", &features_.shaderInt64},
                                   {"shaderFloat64", &features_.shaderFloat64},
                                   {"shaderInt16", &features_.shaderInt16},
                                   {"storageBuffer16BitAccess", &storage16_.storageBuffer16BitAccess},
                                   {"cooperativeMatrix", &cooperative_.cooperativeMatrix}})
        if (names.find(std::string(",") + name + ",") != std::string::npos) *feature = VK_FALSE;
      if (!cooperative_.cooperativeMatrix) info_.matrix_units = false;
    }

    // The first queue family that computes, preferring one with timestamps.
    std::vector<vk::QueueFamilyProperties> families = physical_.getQueueFamilyProperties();
    std::optional<uint32_t> family;
    for (uint32_t f = 0; f < families.size(); ++f) {
      if (!(families[f].queueFlags & vk::QueueFlagBits::eCompute)) continue;
      if (!family || (families[*family].timestampValidBits == 0 && families[f].timestampValidBits > 0)) family = f;
    }
    if (!family) throw DeviceError(info_.name + " has no compute queue");
    float priority = 1.0f;
    const vk::DeviceSize align = std::max<vk::DeviceSize>(limits.minStorageBufferOffsetAlignment, 1);
    guard_bytes_ = static_cast<size_t>((kGuardBytes + align - 1) / align * align);
    vk::DeviceQueueCreateInfo queue_info({}, *family, 1, &priority);
    std::vector<const char *> extensions;
    if (info_.matrix_units) {
      extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
      storage16_.pNext = &memory_model_;
      memory_model_.pNext = &float16_;
      float16_.pNext = &cooperative_;
    }
    device_ =
        vk::raii::Device(physical_, vk::DeviceCreateInfo({}, queue_info, {}, extensions, &features_, &storage16_));
    queue_ = vk::raii::Queue(device_, *family, 0);
    command_pool_ = vk::raii::CommandPool(
        device_, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, *family));
    fence_ = vk::raii::Fence(device_, vk::FenceCreateInfo());
    uint32_t bits = families[*family].timestampValidBits;
    if (bits > 0 && limits.timestampPeriod > 0) {
      queries_.emplace(device_, vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, 2 * kMaxColdRunsPerBatch));
      timestamp_mask_ = bits >= 64 ? ~0ull : (1ull << bits) - 1;
      timestamp_ns_ = limits.timestampPeriod;
    }
  }

  uint32_t memory_type(uint32_t allowed, vk::MemoryPropertyFlags required, vk::MemoryPropertyFlags preferred) const {
    std::optional<uint32_t> fallback;
    for (uint32_t t = 0; t < memory_.memoryTypeCount; ++t) {
      if (!(allowed & (1u << t))) continue;
      vk::MemoryPropertyFlags flags = memory_.memoryTypes[t].propertyFlags;
      if ((flags & required) != required) continue;
      if ((flags & preferred) == preferred) return t;
      if (!fallback) fallback = t;
    }
    if (!fallback) throw DeviceError(info_.name + " has no memory type for a storage buffer");
    return *fallback;
  }

  // A SPIR-V capability the device lacks would make pipeline creation undefined:
  // refuse it by name instead.
  void check_capabilities(const SpirvKernel &kernel) const {
    using S = vk::SubgroupFeatureFlagBits;
    for (spv::Capability c : capabilities_of(kernel)) {
      const char *missing = nullptr;
      std::optional<S> subgroup;
      switch (c) {
        case spv::CapabilityInt64: missing = features_.shaderInt64 ? nullptr : "shaderInt64"; break;
        case spv::CapabilityFloat64: missing = features_.shaderFloat64 ? nullptr : "shaderFloat64"; break;
        case spv::CapabilityInt16: missing = features_.shaderInt16 ? nullptr : "shaderInt16"; break;
        case spv::CapabilityCooperativeMatrixNV:
          missing = cooperative_.cooperativeMatrix ? nullptr : "cooperativeMatrix (VK_NV_cooperative_matrix)";
          break;
        case spv::CapabilityVulkanMemoryModel:
          missing = memory_model_.vulkanMemoryModel ? nullptr : "vulkanMemoryModel";
          break;
        case spv::CapabilityFloat16: missing = float16_.shaderFloat16 ? nullptr : "shaderFloat16"; break;
        case spv::CapabilityStorageBuffer16BitAccess:
          missing = storage16_.storageBuffer16BitAccess ? nullptr : "storageBuffer16BitAccess (16-bit tensors)";
          break;
        case spv::CapabilityGroupNonUniform: subgroup = S::eBasic; break;
        case spv::CapabilityGroupNonUniformVote: subgroup = S::eVote; break;
        case spv::CapabilityGroupNonUniformArithmetic: subgroup = S::eArithmetic; break;
        case spv::CapabilityGroupNonUniformBallot: subgroup = S::eBallot; break;
        case spv::CapabilityGroupNonUniformShuffle: subgroup = S::eShuffle; break;
        case spv::CapabilityGroupNonUniformShuffleRelative: subgroup = S::eShuffleRelative; break;
        case spv::CapabilityGroupNonUniformClustered: subgroup = S::eClustered; break;
        case spv::CapabilityGroupNonUniformQuad: subgroup = S::eQuad; break;
        default: break;
      }
      if (subgroup && (!(subgroups_.supportedOperations & *subgroup) ||
                       !(subgroups_.supportedStages & vk::ShaderStageFlagBits::eCompute)))
        throw DeviceError("kernel '" + kernel.name + "' uses subgroup operations (" + vk::to_string(*subgroup) +
                          ") that " + info_.name + " does not offer in compute shaders");
      if (missing)
        throw DeviceError("kernel '" + kernel.name + "' needs the Vulkan feature " + missing + ", which " + info_.name +
                          " lacks");
    }
  }

  Buffer &buffer_at(BufferId id, size_t bytes) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size() || !*buffers_[static_cast<size_t>(id)].buffer)
      throw DeviceError("unknown or released buffer " + std::to_string(id));
    Buffer &b = buffers_[static_cast<size_t>(id)];
    if (bytes > b.bytes)
      throw DeviceError("transfer of " + std::to_string(bytes) + " bytes to a buffer of " + std::to_string(b.bytes));
    return b;
  }

  // Every earlier write (host, transfer, shader) visible to every later access.
  static void full_barrier(const vk::raii::CommandBuffer &commands) {
    vk::MemoryBarrier barrier(
        vk::AccessFlagBits::eMemoryWrite | vk::AccessFlagBits::eHostWrite,
        vk::AccessFlagBits::eMemoryRead | vk::AccessFlagBits::eMemoryWrite | vk::AccessFlagBits::eHostRead);
    commands.pipelineBarrier(vk::PipelineStageFlagBits::eAllCommands | vk::PipelineStageFlagBits::eHost,
                             vk::PipelineStageFlagBits::eAllCommands | vk::PipelineStageFlagBits::eHost, {}, barrier,
                             {}, {});
  }

  vk::raii::CommandBuffer new_commands() {
    vk::raii::CommandBuffers list(device_,
                                  vk::CommandBufferAllocateInfo(*command_pool_, vk::CommandBufferLevel::ePrimary, 1));
    return std::move(list.front());
  }

  void submit_and_wait(const vk::raii::CommandBuffer &commands) {
    queue_.submit(vk::SubmitInfo({}, {}, *commands), *fence_);
    if (device_.waitForFences(*fence_, VK_TRUE, kFenceTimeoutNs) == vk::Result::eTimeout) {
      lost_ = true;
      throw DeviceError(info_.name + ": a submission did not finish within " +
                        std::to_string(kFenceTimeoutNs / 1000000000) + " s");
    }
    device_.resetFences(*fence_);
  }

  // Host <-> the allocation of b from byte `at` on (the buffer itself starts at
  // b.guard): a memcpy where the buffer is mapped, else through the staging buffer, a
  // chunk at a time.
  void transfer(Buffer &b, size_t at, void *host, size_t bytes, bool upload) {
    if (bytes == 0) return;
    if (b.mapped) {
      unsigned char *device = static_cast<unsigned char *>(b.mapped) + at;
      upload ? std::memcpy(device, host, bytes) : std::memcpy(host, device, bytes);
      return;
    }
    if (!*staging_) {
      staging_ = vk::raii::Buffer(
          device_, vk::BufferCreateInfo({}, kStagingBytes,
                                        vk::BufferUsageFlagBits::eTransferSrc | vk::BufferUsageFlagBits::eTransferDst));
      vk::MemoryRequirements needs = staging_.getMemoryRequirements();
      uint32_t type = memory_type(needs.memoryTypeBits,
                                  vk::MemoryPropertyFlagBits::eHostVisible | vk::MemoryPropertyFlagBits::eHostCoherent,
                                  vk::MemoryPropertyFlagBits::eHostCached);
      staging_memory_ = vk::raii::DeviceMemory(device_, vk::MemoryAllocateInfo(needs.size, type));
      staging_.bindMemory(*staging_memory_, 0);
      staging_mapped_ = staging_memory_.mapMemory(0, VK_WHOLE_SIZE);
    }
    vk::raii::CommandBuffer commands = new_commands();
    auto *bytes_at = static_cast<unsigned char *>(host);
    for (size_t offset = 0; offset < bytes; offset += kStagingBytes) {
      size_t n = std::min<size_t>(kStagingBytes, bytes - offset);
      if (upload) std::memcpy(staging_mapped_, bytes_at + offset, n);
      commands.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
      full_barrier(commands);
      if (upload)
        commands.copyBuffer(*staging_, *b.buffer, vk::BufferCopy(0, at + offset, n));
      else
        commands.copyBuffer(*b.buffer, *staging_, vk::BufferCopy(at + offset, 0, n));
      full_barrier(commands);
      commands.end();
      submit_and_wait(commands);
      if (!upload) std::memcpy(bytes_at + offset, staging_mapped_, n);
    }
  }

  // Checks a launch against the built kernels and the device's limits; returns
  // the kernel and the number of work-groups per dimension.
  std::pair<const Kernel *, std::array<uint32_t, 3>> checked(const KernelLaunch &launch) const {
    auto it = kernels_.find(launch.kernel);
    if (it == kernels_.end()) throw DeviceError("no kernel named '" + launch.kernel + "' in the built program");
    const Kernel &k = it->second;
    if (launch.args.size() != k.buffers)
      throw DeviceError("kernel '" + launch.kernel + "' takes " + std::to_string(k.buffers) +
                        " buffers; the launch gives " + std::to_string(launch.args.size()));
    for (const LaunchArg &arg : launch.args) {
      if (arg.integer)
        throw DeviceError("kernel '" + launch.kernel + "' is given an integer; Vulkan launches here take buffers only");
      BufferId id = arg.buffer;
      if (id < 0 || static_cast<size_t>(id) >= buffers_.size() || !*buffers_[static_cast<size_t>(id)].buffer)
        throw DeviceError("unknown or released buffer in a launch");
    }
    size_t group = launch.local[0] * launch.local[1] * launch.local[2];
    if (group > info_.max_work_group_size)
      throw DeviceError("kernel '" + launch.kernel + "' needs " + std::to_string(group) +
                        " work-items per group; the device allows " + std::to_string(info_.max_work_group_size));
    std::array<uint32_t, 3> groups{};
    for (int d = 0; d < 3; ++d) {
      if (launch.local[d] == 0 || launch.local[d] > info_.max_work_item_sizes[d] ||
          launch.global[d] % launch.local[d] != 0)
        throw DeviceError("kernel '" + launch.kernel + "': local size " + std::to_string(launch.local[d]) + " along " +
                          "xyz"[d] + " does not fit the device or divide the global size " +
                          std::to_string(launch.global[d]));
      uint64_t count = launch.global[d] / launch.local[d];
      if (count > info_.max_group_counts[d])
        throw DeviceError("kernel '" + launch.kernel + "' needs " + std::to_string(count) + " work-groups along " +
                          "xyz"[d] + "; the device dispatches at most " + std::to_string(info_.max_group_counts[d]));
      groups[d] = static_cast<uint32_t>(count);
    }
    return {&k, groups};
  }

  // The plan recorded `runs` times into one command buffer; with timestamps around
  // the whole when timed; per run (cold caches, or fills): the options' fills and a
  // cache flush when cold before each run, and timestamps around each run.
  Recording record(const LaunchPlan &plan, int runs, bool timed, const TimingOptions *per_run = nullptr) {
    const bool cold = per_run != nullptr;
    std::vector<std::pair<const Kernel *, std::array<uint32_t, 3>>> launches;
    uint32_t descriptors = 0;
    for (const KernelLaunch &launch : plan.launches) {
      launches.push_back(checked(launch));
      descriptors += static_cast<uint32_t>(launch.args.size());
    }
    Recording r;
    if (!launches.empty()) {
      vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, std::max(descriptors, 1u));
      r.pool = vk::raii::DescriptorPool(
          device_, vk::DescriptorPoolCreateInfo(vk::DescriptorPoolCreateFlagBits::eFreeDescriptorSet,
                                                static_cast<uint32_t>(launches.size()), size));
      std::vector<vk::DescriptorSetLayout> layouts;
      for (const auto &[kernel, groups] : launches) layouts.push_back(*kernel->set_layout);
      for (vk::raii::DescriptorSet &set :
           vk::raii::DescriptorSets(device_, vk::DescriptorSetAllocateInfo(*r.pool, layouts)))
        r.sets.push_back(std::move(set));
      std::vector<vk::DescriptorBufferInfo> infos;
      infos.reserve(descriptors);
      std::vector<vk::WriteDescriptorSet> writes;
      for (size_t i = 0; i < plan.launches.size(); ++i)
        for (size_t a = 0; a < plan.launches[i].args.size(); ++a) {
          const Buffer &b = buffers_[static_cast<size_t>(plan.launches[i].args[a].buffer)];
          infos.push_back({*b.buffer, b.guard, b.view_bytes()});
          writes.push_back(vk::WriteDescriptorSet(*r.sets[i], static_cast<uint32_t>(a), 0, 1,
                                                  vk::DescriptorType::eStorageBuffer, nullptr, &infos.back()));
        }
      device_.updateDescriptorSets(writes, {});
    }
    r.commands = new_commands();
    r.commands.begin(vk::CommandBufferBeginInfo());  // replayable: no one-time flag
    full_barrier(r.commands);
    if (timed) r.commands.resetQueryPool(**queries_, 0, cold ? 2 * runs : 2);
    if (timed && !cold) r.commands.writeTimestamp(vk::PipelineStageFlagBits::eTopOfPipe, **queries_, 0);
    // Each kernel sees the writes of those before it, in this run and the last.
    vk::MemoryBarrier between(vk::AccessFlagBits::eShaderWrite,
                              vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    for (int run = 0; run < runs; ++run) {
      if (cold) {
        // The fills and the flush, finished before the start stamp: a bottom-of-pipe
        // stamp waits for every command before it.
        if (per_run->cold_cache)
          r.commands.fillBuffer(*flush_.buffer, 0, VK_WHOLE_SIZE, static_cast<uint32_t>(run + 1));
        for (const BufferFill &fill : per_run->fills) {
          const Buffer &b = buffers_[static_cast<size_t>(fill.buffer)];
          r.commands.fillBuffer(*b.buffer, b.guard, b.view_bytes(), fill.pattern);
        }
        full_barrier(r.commands);
        r.commands.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, **queries_, 2 * run);
      }
      for (size_t i = 0; i < launches.size(); ++i) {
        const auto &[kernel, groups] = launches[i];
        r.commands.bindPipeline(vk::PipelineBindPoint::eCompute, *kernel->pipeline);
        r.commands.bindDescriptorSets(vk::PipelineBindPoint::eCompute, *kernel->layout, 0, *r.sets[i], {});
        r.commands.dispatch(groups[0], groups[1], groups[2]);
        r.commands.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader,
                                   {}, between, {}, {});
      }
      if (cold) {
        r.commands.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, **queries_, 2 * run + 1);
        full_barrier(r.commands);  // the next flush starts after this run
      }
    }
    if (timed && !cold) r.commands.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, **queries_, 1);
    full_barrier(r.commands);
    r.commands.end();
    return r;
  }

  // Milliseconds between the timestamps around `runs` runs of the plan, recorded
  // once per batch size and replayed.
  // Per run (cold caches or fills): the sum of each run's time between its own stamps.
  double timed_batch(const LaunchPlan &plan, int runs, const TimingOptions &options) {
    const bool cold = options.per_run();
    auto it = recordings_.find(runs);
    if (it == recordings_.end())
      it = recordings_.emplace(runs, record(plan, runs, true, cold ? &options : nullptr)).first;
    submit_and_wait(it->second.commands);
    const uint32_t count = cold ? 2 * static_cast<uint32_t>(runs) : 2;
    auto [result, stamps] =
        queries_->getResults<uint64_t>(0, count, count * sizeof(uint64_t), sizeof(uint64_t),
                                       vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
    if (result != vk::Result::eSuccess) throw DeviceError(info_.name + ": timestamps not available");
    uint64_t ticks = 0;
    for (uint32_t q = 0; q < count; q += 2) ticks += (stamps[q + 1] - stamps[q]) & timestamp_mask_;
    return static_cast<double>(ticks) * timestamp_ns_ * 1e-6;
  }
};

}  // namespace

std::vector<DeviceInfo> vulkan_devices(std::string *why_none) {
  std::string why;
  std::vector<DeviceInfo> out;
  if (std::unique_ptr<Instance> instance = create_instance(&why)) {
    try {
      int index = 0;
      for (const vk::raii::PhysicalDevice &d : usable_devices(*instance)) out.push_back(describe(d, index++));
      if (out.empty()) why = "no device supports Vulkan 1.2";
    } catch (const vk::SystemError &e) {
      why = std::string("listing Vulkan devices failed: ") + e.what();
    }
  }
  if (why_none) *why_none = why;
  return out;
}

std::unique_ptr<Device> open_vulkan_device(const DeviceInfo &info) {
  std::string why;
  std::unique_ptr<Instance> instance = create_instance(&why);
  if (!instance) throw DeviceError(why);
  std::vector<vk::raii::PhysicalDevice> devices;
  try {
    devices = usable_devices(*instance);
  } catch (const vk::SystemError &e) {
    throw DeviceError(std::string("listing Vulkan devices failed: ") + e.what());
  }
  // The names guard against a list that changed since info was made.
  size_t i = static_cast<size_t>(info.index);
  if (info.index >= 0 && i < devices.size()) {
    DeviceInfo current = describe(devices[i], info.index);
    if (current.name == info.name)
      return std::make_unique<VulkanDevice>(std::move(instance), std::move(devices[i]), current);
  }
  throw DeviceError("Vulkan device " + info.selector() + " (" + info.name + ") is no longer available");
}

}  // namespace ks::runtime
