// A program's kernels and a kernel body's plan against the device's limits.
#include "evolve/evaluation/device_limits.h"

#include <array>
#include <string>

#include "ir/diagnostic.h"

namespace ks {

namespace {

// A work-group's shape against the device's limits: work-items in all and along each
// dimension. Kernels of programs and of kernel bodies' plans alike.
void check_group_shape(const std::string &kernel, const std::array<int64_t, 3> &local,
                       const runtime::DeviceInfo &device) {
  const int64_t items = local[0] * local[1] * local[2];
  if (items > static_cast<int64_t>(device.max_work_group_size))
    throw UserError("error: kernel '" + kernel + "' needs " + std::to_string(items) + " work-items per group; " +
                    device.name + " allows " + std::to_string(device.max_work_group_size));
  for (int d = 0; d < 3; ++d)
    if (local[d] > static_cast<int64_t>(device.max_work_item_sizes[d]))
      throw UserError("error: kernel '" + kernel + "' needs " + std::to_string(local[d]) + " work-items along local." +
                      "xyz"[d] + "; " + device.name + " allows " + std::to_string(device.max_work_item_sizes[d]));
}

}  // namespace

// A kernel the device cannot launch is the schedule's error, said before launching.
std::string async_copies_missing(const runtime::DeviceInfo &device) {
  return device.selector() + " (" + device.name + ", " + device.platform + ") does not offer";
}

void check_device_limits(const Program &program, const runtime::DeviceInfo &device) {
  for (const Kernel &kernel : program.kernels) {
    LaunchShape shape = launch_shape(kernel);
    check_group_shape(kernel.name, shape.local, device);
    for (int d = 0; d < 3; ++d) {
      if (static_cast<uint64_t>(shape.groups[d]) > device.max_group_counts[d])
        throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(shape.groups[d]) +
                        " work-groups along group." + "xyz"[d] + "; " + device.name + " dispatches at most " +
                        std::to_string(device.max_group_counts[d]) + " (bind a longer loop to another dimension)");
    }
    int64_t iterations = loop_iterations(kernel);
    if (device.max_loop_iterations && static_cast<uint64_t>(iterations) > device.max_loop_iterations)
      throw UserError("error: kernel '" + kernel.name + "' runs " + std::to_string(iterations) +
                      " loop iterations per work-item; " + device.name + " ends a kernel's loops after " +
                      std::to_string(device.max_loop_iterations) +
                      " in all, silently (bind more loops to work-items or groups, or use smaller sizes)");
    int64_t local = local_memory_bytes(kernel);
    if (local > static_cast<int64_t>(device.local_memory_bytes))
      throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(local) +
                      " bytes of local memory per group; " + device.name + " has " +
                      std::to_string(device.local_memory_bytes));
  }
}

void check_plan_limits(const frontend::ResolvedPlan &plan, const runtime::DeviceInfo &device) {
  for (const frontend::ResolvedLaunch &l : plan.launches) check_group_shape(l.kernel, l.local, device);
  for (const TensorDecl &t : plan.scratch)
    if (device.max_allocation_bytes && static_cast<uint64_t>(t.bytes()) > device.max_allocation_bytes)
      throw UserError("error: scratch buffer '" + t.name + "' takes " + std::to_string(t.bytes()) + " bytes; " +
                      device.name + " allocates at most " + std::to_string(device.max_allocation_bytes));
}

}  // namespace ks
