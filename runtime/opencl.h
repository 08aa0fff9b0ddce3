// The OpenCL backend (through the ocl-icd loader: PoCL on CPUs, NVIDIA's driver on
// the GPU machine).
#pragma once

#include <memory>
#include <vector>

#include "runtime/device.h"

namespace ks::runtime {

/// OpenCL devices of every platform, numbered from 0; empty when no ICD or
/// platform is installed.
std::vector<DeviceInfo> opencl_devices();

/// Opens the OpenCL device described by info (from opencl_devices()).
std::unique_ptr<Device> open_opencl_device(const DeviceInfo &info);

}  // namespace ks::runtime
