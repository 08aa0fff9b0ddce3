// What the head's children need of the farm: its devices, and the relay to it.
#include "evolve/farm/farm.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "ir/diagnostic.h"

namespace ks {

std::string farm_dir() {
  const char *dir = std::getenv(kFarmEnv);
  return dir ? dir : "";
}

std::string farm_socket() {
  const std::string dir = farm_dir();
  if (dir.empty())
    throw UserError("error: a device of another rank is reachable only in an MPI farm (mpirun ksmith ...)");
  return dir + "/socket";
}

nlohmann::json device_info_json(const runtime::DeviceInfo &d) {
  return {{"api", d.api},
          {"index", d.index},
          {"platform", d.platform},
          {"name", d.name},
          {"vendor", d.vendor},
          {"version", d.version},
          {"driver_version", d.driver_version},
          {"gpu", d.gpu},
          {"global_memory_bytes", d.global_memory_bytes},
          {"max_allocation_bytes", d.max_allocation_bytes},
          {"local_memory_bytes", d.local_memory_bytes},
          {"cache_bytes", d.cache_bytes},
          {"max_work_group_size", d.max_work_group_size},
          {"compute_units", d.compute_units},
          {"max_work_item_sizes", d.max_work_item_sizes},
          {"max_group_counts", d.max_group_counts},
          {"subgroup_size", d.subgroup_size},
          {"subgroup_arithmetic", d.subgroup_arithmetic},
          {"fp64", d.fp64},
          {"async_copies", d.async_copies},
          {"matrix_units", d.matrix_units},
          {"max_loop_iterations", d.max_loop_iterations},
          {"extensions", d.extensions},
          {"place", d.place}};
}

runtime::DeviceInfo device_info_from_json(const nlohmann::json &j) {
  runtime::DeviceInfo d;
  try {
    d.api = j.at("api").get<std::string>();
    d.index = j.at("index").get<int>();
    d.platform = j.at("platform").get<std::string>();
    d.name = j.at("name").get<std::string>();
    d.vendor = j.at("vendor").get<std::string>();
    d.version = j.at("version").get<std::string>();
    d.driver_version = j.at("driver_version").get<std::string>();
    d.gpu = j.at("gpu").get<bool>();
    d.global_memory_bytes = j.at("global_memory_bytes").get<uint64_t>();
    d.max_allocation_bytes = j.at("max_allocation_bytes").get<uint64_t>();
    d.local_memory_bytes = j.at("local_memory_bytes").get<uint64_t>();
    d.cache_bytes = j.at("cache_bytes").get<uint64_t>();
    d.max_work_group_size = j.at("max_work_group_size").get<size_t>();
    d.compute_units = j.at("compute_units").get<uint32_t>();
    d.max_work_item_sizes = j.at("max_work_item_sizes").get<std::array<size_t, 3>>();
    d.max_group_counts = j.at("max_group_counts").get<std::array<uint64_t, 3>>();
    d.subgroup_size = j.at("subgroup_size").get<uint32_t>();
    d.subgroup_arithmetic = j.at("subgroup_arithmetic").get<bool>();
    d.fp64 = j.at("fp64").get<bool>();
    d.async_copies = j.at("async_copies").get<bool>();
    d.matrix_units = j.value("matrix_units", false);  // absent from a worker that predates them
    d.max_loop_iterations = j.at("max_loop_iterations").get<uint64_t>();
    d.extensions = j.at("extensions").get<std::string>();
    d.place = j.at("place").get<std::string>();
  } catch (const nlohmann::json::exception &e) {
    throw UserError("error: a device's description is not one: " + std::string(e.what()));
  }
  return d;
}

void write_farm_devices(const std::string &dir, const std::vector<runtime::DeviceInfo> &devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const runtime::DeviceInfo &d : devices) list.push_back(device_info_json(d));
  write_text_file(dir + "/devices.json", list.dump(2) + "\n");
}

std::vector<runtime::DeviceInfo> find_run_devices(const std::string &selectors, const std::string &api) {
  std::vector<std::string> names;
  for (size_t start = 0; start <= selectors.size();) {
    size_t end = selectors.find(',', start);
    if (end == std::string::npos) end = selectors.size();
    names.push_back(selectors.substr(start, end - start));
    start = end + 1;
  }
  const bool farm = std::any_of(names.begin(), names.end(),
                                [](const std::string &n) { return n.rfind("rank", 0) == 0 && n.find('/') != n.npos; });
  if (!farm) return runtime::find_devices(selectors, api);
  const std::string dir = farm_dir();
  if (dir.empty())
    throw runtime::DeviceError("error: '" + selectors +
                               "' names a device of another rank, reachable only in an MPI farm (mpirun ksmith ...)");
  nlohmann::json list =
      nlohmann::json::parse(read_source_file(dir + "/devices.json", "farm's devices")->text, nullptr, false);
  if (!list.is_array()) throw runtime::DeviceError("error: " + dir + "/devices.json is not the farm's devices");
  std::vector<runtime::DeviceInfo> farm_devices;
  for (const nlohmann::json &j : list) farm_devices.push_back(device_info_from_json(j));
  std::vector<runtime::DeviceInfo> out;
  std::set<std::string> seen;
  for (const std::string &name : names) {
    auto it = std::find_if(farm_devices.begin(), farm_devices.end(),
                           [&](const runtime::DeviceInfo &d) { return d.where() == name; });
    std::vector<runtime::DeviceInfo> found;
    if (it != farm_devices.end())
      found.push_back(*it);
    else if (name.rfind("rank", 0) == 0 && name.find('/') != name.npos)
      throw runtime::DeviceError("error: the farm has no device '" + name + "'");
    else
      found = runtime::find_devices(name, api);
    for (const runtime::DeviceInfo &d : found) {
      if (!seen.insert(d.where()).second)
        throw runtime::DeviceError("error: the device " + d.where() + " is named twice");
      if (!out.empty() && out.front().api != d.api)
        throw runtime::DeviceError("error: a run's devices are of one API: " + out.front().where() + " is " +
                                   out.front().api + ", " + d.where() + " is " + d.api);
      if (!api.empty() && d.api != api)
        throw runtime::DeviceError("error: " + d.where() + " is a device of " + d.api + ", not of " + api);
      out.push_back(d);
    }
  }
  return out;
}

bool write_all(int fd, const std::string &text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int relay_worker(const std::string &socket_path, const std::string &to) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof address.sun_path) {
    std::fprintf(stderr, "error: the farm's socket path '%s' is too long\n", socket_path.c_str());
    return 1;
  }
  std::strcpy(address.sun_path, socket_path.c_str());
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "error: cannot reach the farm's head at '%s': %s\n", socket_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (!write_all(fd, nlohmann::json{{"to", to}}.dump() + "\n")) {
    std::fprintf(stderr, "error: the farm's head closed the relay to %s\n", to.c_str());
    return 1;
  }
  std::string from_head;
  char buffer[1 << 16];
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {fd, POLLIN, 0}};
  while (true) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[0].revents) {
      ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;  // the search is done with this slot; the head closes the rank's worker
      if (!write_all(fd, std::string(buffer, static_cast<size_t>(n)))) {
        std::fprintf(stderr, "error: the farm's head closed the relay to %s\n", to.c_str());
        return 1;
      }
    }
    if (fds[1].revents) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::fprintf(stderr, "error: the farm's head closed the relay to %s\n", to.c_str());
        return 1;
      }
      from_head.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = from_head.find('\n')) != std::string::npos;) {
        std::string line = from_head.substr(0, end + 1);
        from_head.erase(0, end + 1);
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.contains("gone") && j["gone"].is_string()) {
          std::fprintf(stderr, "%s", j["gone"].get<std::string>().c_str());
          return 1;
        }
        if (!write_all(STDOUT_FILENO, line)) return 1;
      }
    }
  }
}

void follow_farm_head() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) std::_Exit(1);  // the head ended before this line
}

}  // namespace ks
