// Device listing and selection across backends.
#include "runtime/device.h"

#include <algorithm>
#include <cctype>

#include "runtime/opencl.h"

namespace ks::runtime {

std::vector<DeviceInfo> list_devices() { return opencl_devices(0); }

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
}  // namespace

std::unique_ptr<Device> open_device(const std::string &selector) {
  std::vector<DeviceInfo> devices = list_devices();
  if (devices.empty())
    throw DeviceError(
        "no OpenCL device found: no platform is registered with the ICD loader "
        "(install pocl-opencl-icd, or a GPU driver's ICD under /etc/OpenCL/vendors)");
  const DeviceInfo *chosen = nullptr;
  if (selector.empty()) {
    for (const DeviceInfo &d : devices)
      if (d.gpu) {
        chosen = &d;
        break;
      }
    if (!chosen) chosen = &devices.front();
  } else {
    std::string s = lower(selector);
    std::string index_text = s.rfind("opencl:", 0) == 0 ? s.substr(7) : s;
    bool numeric = !index_text.empty() && std::all_of(index_text.begin(), index_text.end(), ::isdigit);
    for (const DeviceInfo &d : devices) {
      if (numeric ? std::to_string(d.index) == index_text
                  : lower(d.name).find(s) != std::string::npos || lower(d.platform).find(s) != std::string::npos) {
        chosen = &d;
        break;
      }
    }
    if (!chosen) throw DeviceError("no device matches '" + selector + "'; devices are:" + describe_all(devices));
  }
  return open_opencl_device(*chosen);
}

}  // namespace ks::runtime
