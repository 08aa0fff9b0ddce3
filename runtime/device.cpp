// Device listing and selection across backends.
#include "runtime/device.h"

#include <algorithm>
#include <cctype>

#include "runtime/opencl.h"
#include "runtime/vulkan.h"

namespace ks::runtime {

std::vector<unsigned char> guard_pattern(size_t bytes) {
  std::vector<unsigned char> out(bytes);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < bytes; ++i) {
    // splitmix64's output function: a different-looking byte at every position.
    uint64_t z = state += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    out[i] = static_cast<unsigned char>(z ^ (z >> 31));
  }
  return out;
}

std::optional<int64_t> find_breach(const std::vector<unsigned char> &head, const std::vector<unsigned char> &tail,
                                   size_t bytes) {
  const std::vector<unsigned char> head_pattern = guard_pattern(head.size());
  for (size_t i = head.size(); i-- > 0;)  // nearest the buffer first
    if (head[i] != head_pattern[i]) return static_cast<int64_t>(i) - static_cast<int64_t>(head.size());
  const std::vector<unsigned char> tail_pattern = guard_pattern(tail.size());
  for (size_t i = 0; i < tail.size(); ++i)
    if (tail[i] != tail_pattern[i]) return static_cast<int64_t>(bytes + i);
  return std::nullopt;
}

uint64_t cache_flush_bytes(const DeviceInfo &device) {
  uint64_t bytes = std::max<uint64_t>(2 * device.cache_bytes, 128ull << 20);
  if (device.max_allocation_bytes) bytes = std::min(bytes, device.max_allocation_bytes / 4);
  return bytes / 4 * 4;
}

int64_t compute_units_or_guess(const DeviceInfo &device) {
  if (device.compute_units) return device.compute_units;
  return device.gpu ? 16 : 4;
}

std::vector<DeviceInfo> list_devices(std::vector<std::string> *why_none, const std::string &api) {
  std::vector<DeviceInfo> devices;
  if (api.empty() || api == "opencl") {
    devices = opencl_devices();
    if (devices.empty() && why_none)
      why_none->push_back(
          "OpenCL: no platform is registered with the ICD loader (install pocl-opencl-icd, or a GPU driver's ICD "
          "under /etc/OpenCL/vendors)");
  }
  if (api.empty() || api == "vulkan") {
    std::string vulkan_reason;
    std::vector<DeviceInfo> vulkan = vulkan_devices(&vulkan_reason);
    if (vulkan.empty() && why_none) why_none->push_back("Vulkan: " + vulkan_reason);
    devices.insert(devices.end(), vulkan.begin(), vulkan.end());
  }
  return devices;
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string describe_all(const std::vector<DeviceInfo> &devices) {
  std::string out;
  for (const DeviceInfo &d : devices) out += "\n  " + d.selector() + "  " + d.name + " (" + d.platform + ")";
  return out;
}

bool is_number(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

DeviceInfo find_device(const std::string &selector, const std::string &api) {
  std::vector<std::string> why_none;
  // Only the API asked for is listed, by api or by the selector's prefix (in every
  // child of a search).
  std::string only = api;
  for (const char *name : {"opencl", "vulkan"})
    if (lower(selector).rfind(std::string(name) + ":", 0) == 0) only = name;
  std::vector<DeviceInfo> all = list_devices(&why_none, only), devices;
  for (const DeviceInfo &d : all)
    if (api.empty() || d.api == api) devices.push_back(d);
  if (devices.empty()) {
    std::string why;
    for (const std::string &reason : why_none)
      if (api.empty() || lower(reason).rfind(api, 0) == 0) why += "\n  " + reason;
    throw DeviceError("no " +
                      (api.empty()       ? std::string("")
                       : api == "vulkan" ? "Vulkan "
                                         : "OpenCL ") +
                      "device found:" + why);
  }
  const DeviceInfo *chosen = nullptr;
  if (selector.empty()) {
    for (const DeviceInfo &d : devices)
      if (d.gpu) {
        chosen = &d;
        break;
      }
    if (!chosen) chosen = &devices.front();
  } else {
    std::string s = lower(selector), by_api = api.empty() ? "opencl" : api, index_text;
    for (const char *prefix : {"opencl:", "vulkan:"})
      if (s.rfind(prefix, 0) == 0 && is_number(s.substr(std::string(prefix).size()))) {
        by_api = std::string(prefix, std::string(prefix).size() - 1);
        index_text = s.substr(by_api.size() + 1);
      }
    if (index_text.empty() && is_number(s)) index_text = s;
    for (const DeviceInfo &d : devices) {
      bool match = index_text.empty()
                       ? lower(d.name).find(s) != std::string::npos || lower(d.platform).find(s) != std::string::npos
                       : d.api == by_api && std::to_string(d.index) == index_text;
      if (match) {
        chosen = &d;
        break;
      }
    }
    if (!chosen) throw DeviceError("no device matches '" + selector + "'; devices are:" + describe_all(devices));
  }
  return *chosen;
}

std::vector<DeviceInfo> find_devices(const std::string &selectors, const std::string &api) {
  std::vector<DeviceInfo> out;
  if (lower(selectors) == "all") {
    std::vector<DeviceInfo> all = list_devices(nullptr, api);
    std::erase_if(all, [&](const DeviceInfo &d) { return !api.empty() && d.api != api; });
    const std::string first_api = find_device("", api).api;  // the default device's API, when api is ""
    std::erase_if(all, [&](const DeviceInfo &d) { return d.api != first_api; });
    // Every GPU, where there is one; else every device (PoCL's CPU devices).
    if (std::any_of(all.begin(), all.end(), [](const DeviceInfo &d) { return d.gpu; }))
      std::erase_if(all, [](const DeviceInfo &d) { return !d.gpu; });
    return all;
  }
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = selectors.find(',', start);
    names.push_back(selectors.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string &name : names) {
    if (names.size() > 1 && name.empty()) throw DeviceError("an empty device name in the list '" + selectors + "'");
    DeviceInfo d = find_device(name, api);
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].selector() == d.selector())
        throw DeviceError("the device " + d.selector() + " (" + d.name + ") is named twice in '" + selectors +
                          "': as '" + names[i] + "' and as '" + name + "'");
      if (out[i].api != d.api)
        throw DeviceError("'" + names[i] + "' is a" + (out[i].api == "opencl" ? "n OpenCL" : " Vulkan") +
                          " device and '" + name + "' a" + (d.api == "opencl" ? "n OpenCL" : " Vulkan") +
                          " one: the devices of a run are of one API, the target's");
    }
    out.push_back(d);
  }
  return out;
}

std::unique_ptr<Device> open_device(const std::string &selector, const std::string &api) {
  DeviceInfo chosen = find_device(selector, api);
  return chosen.api == "vulkan" ? open_vulkan_device(chosen) : open_opencl_device(chosen);
}

}  // namespace ks::runtime
