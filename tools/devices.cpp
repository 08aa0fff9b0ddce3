// ksmith devices [--json]: every OpenCL and Vulkan device, and why an API has none.
#include <iostream>

#include "tools/cli.h"

namespace ks::cli {

Command add_devices(CLI::App &app) {
  auto json = std::make_shared<bool>(false);
  CLI::App *command = app.add_subcommand("devices", "List the devices of every API");
  command->add_flag("--json", *json, "Print JSON");
  return {command, [json] {
            std::vector<std::string> why_none;
            std::vector<runtime::DeviceInfo> devices = runtime::list_devices(&why_none);
            if (*json) {
              nlohmann::json list = nlohmann::json::array();
              for (const auto &d : devices) list.push_back(device_json(d));
              std::cout << list.dump(2) << "\n";
              return 0;
            }
            for (const auto &d : devices) {
              std::cout << d.selector() << "  " << d.name << "  [" << d.platform << ", " << d.version << ", driver "
                        << d.driver_version << "]  " << (d.gpu ? "GPU" : "CPU") << ", "
                        << human_bytes(d.global_memory_bytes) << " global, " << d.local_memory_bytes / 1024
                        << " KiB local, work-groups up to " << d.max_work_group_size;
              if (d.compute_units) std::cout << ", " << d.compute_units << " compute units";
              if (d.subgroup_size) std::cout << ", subgroups of " << d.subgroup_size;
              std::cout << "\n";
            }
            for (const std::string &reason : why_none) std::cout << "no devices: " << reason << "\n";
            return 0;
          }};
}

}  // namespace ks::cli
