// The OpenCL backend (through the ocl-icd loader: PoCL on CPUs, NVIDIA's driver on
// the GPU machine).
#pragma once

#include <memory>
#include <vector>

#include "runtime/device.h"

namespace ks::runtime {

/// OpenCL devices of every platform; empty when no ICD or platform is installed.
/// first_index numbers them from there (their DeviceInfo::index).
std::vector<DeviceInfo> opencl_devices(int first_index = 0);

/// Opens the OpenCL device described by info (from opencl_devices()).
std::unique_ptr<Device> open_opencl_device(const DeviceInfo &info);

}  // namespace ks::runtime
