// ksmith fuzz [SPEC|DIR]... [--random-specs N] [--tuned DIR]... [--devices SEL,...] [--seed S] [--schedules N]
//             [--minutes M] [--schedules-per-spec N] [--sizes-per-schedule N] [--max-steps N]
//             [--max-points P] [--max-work W] [--time-limit S] [--workers W[,W...]] [--out DIR]
// The schedule fuzzer (evolve/fuzz/schedule_fuzz.h): the schedules of tuned tables
// (NAME.sched for the spec NAME.ks given), then random schedules of the specs given and
// of random specs, each checked against the interpreter at sizes that cross its
// boundaries, on every device given. Exit status 0 without findings, 1 with (each
// minimised into DIR/findings/), 2 a bad command line.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "evolve/fuzz/schedule_fuzz.h"
#include "evolve/workers.h"
#include "frontend/parser.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct FuzzCommandOptions {
  std::vector<std::string> specs, tuned;
  std::string devices;
  FuzzOptions fuzz;
  double minutes = 0;
  double time_limit_s = 120;
  std::string workers = "1";  // one count for every device, or one per device
  bool dry_run = false;
  std::string dtype;
};

// The runner of --dry-run: each case written to cases.jsonl in out, none run (each
// counts as passed), so that a campaign's cases can be replayed one by one elsewhere.
CaseRunner listing_runner(const std::string &out) {
  auto file = std::make_shared<std::ofstream>(std::filesystem::path(out) / "cases.jsonl");
  if (!*file) throw UserError("error: cannot write " + out + "/cases.jsonl");
  return [file](const std::vector<FuzzCase> &cases) {
    for (const FuzzCase &c : cases)
      *file << nlohmann::json{{"spec", c.spec_label},
                              {"spec_text", c.spec_text},
                              {"schedule", print_schedule(c.schedule)},
                              {"sizes", c.sizes},
                              {"device", c.device}}
                   .dump()
            << "\n";
    file->flush();
    return std::vector<CaseResult>(cases.size(), {Outcome::Passed, "not run (--dry-run)"});
  };
}

// Spec files, a folder's .ks files in name order.
std::vector<std::string> spec_files(const std::vector<std::string> &given) {
  std::vector<std::string> out;
  for (const std::string &path : given) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::vector<std::string> here;
      for (const auto &entry : std::filesystem::directory_iterator(path))
        if (entry.path().extension() == ".ks") here.push_back(entry.path().string());
      if (here.empty()) throw UserError("error: " + path + " is a folder with no .ks spec in it");
      std::sort(here.begin(), here.end());
      out.insert(out.end(), here.begin(), here.end());
    } else if (std::filesystem::is_regular_file(path, error)) {
      out.push_back(path);
    } else {
      throw UserError("error: " + path + ": no such spec file or folder");
    }
  }
  return out;
}

// The devices to fuzz on: those named (of any API), every device for "all", else the
// first of each API there is. Unopened (a dry run), the names as given, and
// opencl:0 and vulkan:0 for none.
std::vector<std::string> fuzz_devices(const std::string &selectors, bool open) {
  std::vector<std::string> out;
  if (!open) {
    std::stringstream named(selectors.empty() ? "opencl:0,vulkan:0" : selectors);
    for (std::string d; std::getline(named, d, ',');) out.push_back(d);
  } else if (selectors == "all") {
    for (const runtime::DeviceInfo &d : runtime::list_devices()) out.push_back(d.selector());
  } else if (!selectors.empty()) {
    size_t start = 0;
    for (size_t comma = 0; comma != std::string::npos; start = comma + 1) {
      comma = selectors.find(',', start);
      const std::string selector = runtime::find_device(selectors.substr(start, comma - start)).selector();
      if (std::find(out.begin(), out.end(), selector) != out.end())
        throw UserError("error: --devices names " + selector + " twice");
      out.push_back(selector);
    }
  } else {
    for (const char *api : {"opencl", "vulkan"}) {
      std::vector<runtime::DeviceInfo> found = runtime::list_devices(nullptr, api);
      if (!found.empty()) out.push_back(found.front().selector());
    }
  }
  if (out.empty()) throw UserError("error: no OpenCL or Vulkan device to fuzz on (ksmith devices says why)");
  return out;
}

int fuzz_command(FuzzCommandOptions &o) {
  FuzzOptions &f = o.fuzz;
  f.dtype = frontend::parse_spec_dtype(o.dtype);
  f.spec_paths = spec_files(o.specs);
  for (const std::string &dir : o.tuned) {
    if (!std::filesystem::is_directory(dir)) throw UserError("error: --tuned " + dir + ": no such folder");
    for (const std::string &spec : f.spec_paths) {
      const std::filesystem::path schedule =
          std::filesystem::path(dir) / (std::filesystem::path(spec).stem().string() + ".sched");
      if (std::filesystem::exists(schedule)) f.given.push_back({spec, schedule.string()});
    }
  }
  if (f.spec_paths.empty() && f.random_specs == 0)
    throw UserError("error: nothing to fuzz: give specs or folders of them, or --random-specs N");
  if (f.max_schedules == 0 && o.minutes == 0 && (!f.spec_paths.empty() || f.random_specs == 0))
    throw UserError("error: give --schedules N or --minutes M: with specs the fuzzer would run for ever");
  f.max_seconds = 60 * o.minutes;
  if (f.out.empty()) f.out = "fuzz_out";
  f.devices = fuzz_devices(o.devices, !o.dry_run);
  if (o.dry_run) {
    std::filesystem::create_directories(f.out);
    const FuzzSummary s = fuzz(f, listing_runner(f.out));
    std::printf("%lld schedules, %lld cases listed in %s/cases.jsonl\n", static_cast<long long>(s.schedules),
                static_cast<long long>(s.pairs), f.out.c_str());
    return 0;
  }
  f.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const std::string ksmith = std::filesystem::read_symlink("/proc/self/exe").string();
  // --workers: one count for every device, or one per device in --devices' order (a
  // device whose pairs take longer, PoCL compiling on the CPU, gets more).
  std::vector<int> workers;
  std::stringstream counts(o.workers);
  for (std::string n; std::getline(counts, n, ',');) {
    size_t end = 0;
    int count = 0;
    try {
      count = std::stoi(n, &end);
    } catch (const std::exception &) {
      end = 0;
    }
    if (end == 0 || end != n.size() || count < 1 || count > 1024)
      throw UserError("error: --workers " + o.workers + ": each count is a whole number from 1 to 1024, not '" + n +
                      "'");
    workers.push_back(count);
  }
  if (workers.size() == 1) workers.assign(f.devices.size(), workers.front());
  if (workers.size() != f.devices.size())
    throw UserError("error: --workers " + o.workers + " gives " + std::to_string(workers.size()) + " counts for " +
                    std::to_string(f.devices.size()) + " devices: give one, or one per device");
  int total = 0;
  for (int w : workers) total += w;
  // A batch waits for its slowest case (up to --time-limit): many cases a worker keep each busy.
  f.batch_cases = 16 * total;
  // The cases' spec and schedule files: scratch, in the temporary directory.
  const std::filesystem::path work =
      std::filesystem::temp_directory_path() / ("ksmith-fuzz-" + std::to_string(getpid()));
  struct Scratch {
    std::filesystem::path path;
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } scratch{work};
  const FuzzSummary s = fuzz(f, worker_runner(ksmith, f.devices, workers, work.string(), o.time_limit_s));
  std::printf("%lld schedules, %lld pairs of a schedule and its sizes on a device in %.0f s:",
              static_cast<long long>(s.schedules), static_cast<long long>(s.pairs), s.seconds);
  for (const auto &[outcome, n] : s.outcomes) std::printf(" %s %lld", outcome.c_str(), static_cast<long long>(n));
  std::printf("\n%zu findings%s\n", s.findings.size(), s.findings.empty() ? "" : ":");
  for (const std::string &finding : s.findings) std::printf("  %s\n", finding.c_str());
  std::printf("summary: %s/summary.md\n", f.out.c_str());
  return s.findings.empty() ? 0 : 1;
}

}  // namespace

Command add_fuzz(CLI::App &app) {
  auto o = std::make_shared<FuzzCommandOptions>();
  CLI::App *command = app.add_subcommand(
      "fuzz", "Random schedules checked against the interpreter at sizes that cross their boundaries");
  command->add_option("specs", o->specs, "Spec files or folders of them");
  command->add_flag("--dry-run", o->dry_run,
                    "Run no case: write each to OUT/cases.jsonl (the devices as named), to replay a campaign's cases");
  command->add_option("--random-specs", o->fuzz.random_specs, "Random specs to fuzz besides (one a round)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--tuned", o->tuned,
                      "A tuned table (bench/tuned/DEVICE): its schedules of the specs given, checked first");
  command->add_option("--devices,--device", o->devices,
                      "Devices to check on: selectors of any API, comma-separated, or all (default: the first of "
                      "each API)");
  add_dtype_option(command, &o->dtype);
  command->add_option("--seed", o->fuzz.seed, "The draws' seed: the same seed draws the same cases");
  command->add_option("--schedules", o->fuzz.max_schedules, "Stop after this many schedules")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--minutes", o->minutes, "Stop after this long")->check(CLI::NonNegativeNumber);
  command->add_option("--schedules-per-spec", o->fuzz.schedules_per_spec, "Schedules drawn for each spec")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--sizes-per-schedule", o->fuzz.sizes_per_schedule,
                   "Sets of sizes each schedule is checked at (and one past its largest tile)")
      ->check(CLI::PositiveNumber);
  command->add_option("--max-steps", o->fuzz.max_steps, "Primitives per schedule at most")->check(CLI::PositiveNumber);
  command->add_option("--max-points", o->fuzz.max_points, "The interpreter's work per case at most")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--max-work", o->fuzz.max_work,
                   "The scheduled program's work per case at most (operations and memory accesses executed)")
      ->check(CLI::PositiveNumber);
  command->add_option("--time-limit", o->time_limit_s, "Seconds a case may take before it is a hang")
      ->check(CLI::PositiveNumber);
  command->add_option("--workers", o->workers,
                      "Worker processes per device (cases checked at once on it): one count, or one per device "
                      "in --devices' order (e.g. 10,3,3)");
  command->add_option("--out", o->fuzz.out, "Where findings and the summary go (default fuzz_out)");
  return {command, [o] { return fuzz_command(*o); }};
}

}  // namespace ks::cli
