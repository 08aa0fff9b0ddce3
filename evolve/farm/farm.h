// The evaluation farm: evaluations on the devices of other MPI ranks, for a search
// or a tuning that one process (the head, rank 0) runs. The search sees those devices
// as it sees its own: slots of its WorkerQueue (evolve/workers.h), each a `ksmith
// worker` that relays its lines to the head (relay_worker), which passes them to the
// rank holding the device (mpi_farm.h). This file is what a child of the head needs,
// MPI or not: the head names the farm's folder in $KSMITH_FARM (its devices.json and
// the relays' socket), and a device of another rank is named "rank1/opencl:0".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ks {

/// The environment variable that names the farm's folder for the head's children.
inline constexpr const char *kFarmEnv = "KSMITH_FARM";

/// The farm's folder, from $KSMITH_FARM; "" outside a farm.
std::string farm_dir();
/// The head's socket for relays; a UserError outside a farm.
std::string farm_socket();

/// The whole description of a device, as a rank tells the head of it, and back
/// (a UserError naming what is missing).
nlohmann::json device_info_json(const runtime::DeviceInfo &device);
runtime::DeviceInfo device_info_from_json(const nlohmann::json &j);

/// The farm's devices (every rank's) into dir/devices.json, whole or not at all.
void write_farm_devices(const std::string &dir, const std::vector<runtime::DeviceInfo> &devices);

/// The devices of a run: selectors as runtime::find_devices takes them and, in a
/// farm, other ranks' devices by their names ("rank1/opencl:0", from devices.json).
/// A DeviceError for a device named twice, devices of two APIs, or one not there.
std::vector<runtime::DeviceInfo> find_run_devices(const std::string &selectors, const std::string &api);

/// `ksmith worker --relay SOCKET --to rank1/opencl:0`: carries a worker's lines between
/// this process's standard input and output and the head, which passes them to the
/// rank that holds the device. Ends (0) with its input; when the rank's worker ended,
/// prints why on standard error and returns 1, as a worker that died would.
int relay_worker(const std::string &socket, const std::string &to);

/// Writes all of text to a socket or a pipe; false when its other end is gone.
bool write_all(int fd, const std::string &text);

/// For a child of the head: ends this process when the head ends (mpirun kills the
/// head when a rank dies; a search must not run on without its farm).
void follow_farm_head();

}  // namespace ks
