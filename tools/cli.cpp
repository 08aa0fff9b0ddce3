// Helpers shared by ksmith's subcommands.
#include "tools/cli.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace ks::cli {

runtime::Device &Served::device(const std::string &selector, const std::string &api) {
  std::unique_ptr<runtime::Device> &d = devices_[api + " " + selector];
  if (!d) d = runtime::open_device(selector, api);
  return *d;
}

bool Served::failed() const {
  return std::any_of(devices_.begin(), devices_.end(), [](const auto &d) { return d.second && d.second->failed(); });
}

runtime::Device &open_device_for(Served *served, std::unique_ptr<runtime::Device> *own, const std::string &selector,
                                 const std::string &api) {
  if (served) return served->device(selector, api);
  *own = runtime::open_device(selector, api);
  return **own;
}

int run_parsed(const std::vector<Command> &commands) {
  try {
    for (const Command &command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const UserError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const runtime::DeviceError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

frontend::SizeOverrides size_overrides(const std::vector<std::string> &items, const char *flag) {
  frontend::SizeOverrides o;
  o.flag = flag;
  for (const std::string &item : items) frontend::parse_size_assignments(item, &o);
  return o;
}

void add_spec_options(CLI::App *command, std::string *spec, std::string *schedule, std::vector<std::string> *sizes) {
  command->add_option("spec", *spec, "The .ks spec")->required();
  command->add_option("--schedule", *schedule, "Apply the schedule in FILE");
  command->add_option("--size", *sizes, "Override a size: NAME=VALUE (repeatable, or comma-separated)");
}

CLI::Option *add_target_option(CLI::App *command, std::string *text) {
  return command->add_option("--target", *text, "Code for: opencl (OpenCL devices) or spirv (Vulkan devices)")
      ->check(CLI::IsMember({"opencl", "spirv"}));
}

CLI::Option *add_precision_option(CLI::App *command, std::string *text) {
  return command
      ->add_option("--precision", *text,
                   "The arithmetic of tensorize's matrix loops: fp32 (3xTF32, fp32-accurate; the default) or tf32 "
                   "(faster, less accurate: checked to KernelBench's tolerance, atol = rtol = 1e-2)")
      ->check(CLI::IsMember({"fp32", "tf32"}));
}

CLI::Option *add_dtype_option(CLI::App *command, std::string *text) {
  return command
      ->add_option("--dtype", *text,
                   "Run the spec at another precision than it says: each tensor it declares f32 is f16 or bf16 "
                   "instead (16-bit storage, f32 arithmetic; the PyTorch peer runs the same)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
}

void add_rank_timeout_option(CLI::App *command, double *seconds) {
  command
      ->add_option("--rank-timeout", *seconds,
                   "Under mpirun: seconds another rank may send nothing before the job ends as hung (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
}

std::optional<Target> parse_target(const std::string &text) {
  if (text.empty()) return std::nullopt;
  return text == "spirv" ? Target::SPIRV : Target::OpenCL;
}

Schedule schedule_from(const std::string &path) { return path.empty() ? Schedule{} : load_schedule(path); }

std::string human_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(text, sizeof text, "%.0f KiB", static_cast<double>(bytes) / (1ull << 10));
  else
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  return text;
}

std::string human_rate(double per_second, const std::string &unit) {
  static const char *prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (p < 5 && per_second >= 1000.0) {
    per_second /= 1000.0;
    ++p;
  }
  char text[48];
  std::snprintf(text, sizeof text,
                per_second >= 100  ? "%.0f %s%s"
                : per_second >= 10 ? "%.1f %s%s"
                                   : "%.2f %s%s",
                per_second, prefixes[p], unit.c_str());
  return text;
}

void write_output(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-")
    std::cout << text;
  else
    write_text_file(path, text);
}

}  // namespace ks::cli
