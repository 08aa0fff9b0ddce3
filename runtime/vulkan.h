// The Vulkan backend (through the Vulkan loader, opened at run time: lavapipe on
// CPUs, NVIDIA's driver on the GPU machine). Programs are SPIR-V modules, one per
// kernel; a launch plan is recorded into a command buffer, and timing replays one
// command buffer holding the plan N times between two timestamp queries.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ks::runtime {

/// Vulkan devices (1.2 or newer), numbered from 0; empty when there is no loader,
/// no driver or no such device, and then why_none says which.
std::vector<DeviceInfo> vulkan_devices(std::string *why_none = nullptr);

/// Opens the Vulkan device described by info (from vulkan_devices()).
std::unique_ptr<Device> open_vulkan_device(const DeviceInfo &info);

}  // namespace ks::runtime
