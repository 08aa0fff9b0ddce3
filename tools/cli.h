// What the subcommands of ksmith share: how a subcommand plugs into the app, and
// small helpers for files, sizes, targets and units.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "evolve/evaluation/evaluate.h"
#include "frontend/elaborate.h"
#include "passes/schedule.h"

namespace ks::cli {

/// A subcommand, added to the app: runs it once the command line is parsed, and
/// returns the exit status (0 success, 1 a bad input, a failed check or a device
/// failure). Each lives in a file of its own under tools/.
struct Command {
  CLI::App *app = nullptr;
  std::function<int()> run;
};

/// What `ksmith worker` keeps between the jobs it serves: the devices it opened and
/// the evaluation cache (evaluate.h's EvalCache). `run` and `time` given one take
/// their device from it, and `run` its cache.
class Served {
  std::map<std::string, std::unique_ptr<runtime::Device>> devices_;  // outlive the cache's buffers

 public:
  runtime::Device &device(const std::string &selector, const std::string &api);
  bool failed() const;  // whether a device served has failed (runtime::Device::failed)
  EvalCache cache;
};

/// The device a subcommand asked for: served's when given (opened once), else opened
/// into *own.
runtime::Device &open_device_for(Served *served, std::unique_ptr<runtime::Device> *own, const std::string &selector,
                                 const std::string &api);

/// The subcommand of commands that app parsed, run as main runs it: its exit status,
/// or 1 with the message of a UserError, DeviceError or other error on std::cerr.
int run_parsed(const std::vector<Command> &commands);

Command add_devices(CLI::App &app);
Command add_compile(CLI::App &app);
Command add_inspect(CLI::App &app);
Command add_run(CLI::App &app, Served *served = nullptr);
Command add_bench(CLI::App &app);
Command add_time(CLI::App &app, Served *served = nullptr);
Command add_worker(CLI::App &app);
Command add_tune(CLI::App &app);
Command add_evolve(CLI::App &app);
Command add_runs(CLI::App &app);
Command add_export(CLI::App &app);
Command add_interpret(CLI::App &app);
Command add_import(CLI::App &app);
Command add_rewrite(CLI::App &app);
Command add_primitives(CLI::App &app);
Command add_fuzz(CLI::App &app);

/// Size assignments given with a flag (--size N=64,K=32, repeatable).
frontend::SizeOverrides size_overrides(const std::vector<std::string> &items, const char *flag);

/// A spec's options: the spec itself, --schedule FILE and --size NAME=VALUE.
void add_spec_options(CLI::App *command, std::string *spec, std::string *schedule, std::vector<std::string> *sizes);

/// --target opencl|spirv on a subcommand; the text lands in *text.
CLI::Option *add_target_option(CLI::App *command, std::string *text);
std::optional<Target> parse_target(const std::string &text);  // none for ""

/// --precision fp32|tf32 (ir/matrix_tile.h's parse_precision reads it).
CLI::Option *add_precision_option(CLI::App *command, std::string *text);

/// --dtype f32|f16|bf16: the spec's f32 tensors declared so (frontend/parser.h's with_dtype).
CLI::Option *add_dtype_option(CLI::App *command, std::string *text);

/// --rank-timeout S on a subcommand that runs under mpirun (evolve/farm/mpi_farm.h).
void add_rank_timeout_option(CLI::App *command, double *seconds);

/// The schedule in path, or none for "".
Schedule schedule_from(const std::string &path);

/// text on standard output for "" or "-", else written to path (whole or not at all).
void write_output(const std::string &path, const std::string &text);

/// "0 bytes", "12 KiB", "512 MiB", "1.5 GiB"
std::string human_bytes(uint64_t bytes);

/// A rate with its unit scaled to it: "512.3 MB/s", "2.91 TB/s" (unit "B/s"), or
/// "3.1 GFLOP/s" (unit "FLOP/s").
std::string human_rate(double per_second, const std::string &unit);

}  // namespace ks::cli
