// ksmith worker
// Serves evaluations: reads one job a line on standard input, {"ticket": N, "args":
// ["run", SPEC, "--json", ...]} (a `ksmith run` or `ksmith time` command line), runs
// it in this process and prints one line, {"ticket": N, "exit": STATUS, "out": what
// the command printed, "err": its error}. The devices stay open and the evaluation
// cache (the timed sizes' inputs, the reference and the naive kernel's time) is kept
// between jobs: `ksmith evolve` keeps one worker per slot (evolve/workers.h's
// WorkerQueue) instead of a process per evaluation. A crash or a hang takes the
// worker down, never the search: the queue kills it and starts another. With
// --relay SOCKET --to rank1/opencl:0 (an MPI farm's slot, evolve/farm/farm.h) it
// carries the lines to the head, which passes them to a worker on that rank.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "evolve/farm/farm.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

int serve() {
  // The answers go to the standard output this process was given; from here on file
  // descriptor 1 is standard error, so that what a driver prints cannot corrupt them.
  FILE *answers = fdopen(::dup(STDOUT_FILENO), "w");
  if (!answers || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "error: ksmith worker cannot set up its output\n";
    return 1;
  }
  Served served;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json answer = {{"ticket", 0}, {"exit", 2}, {"out", ""}, {"err", ""}};
    if (!request.is_object() || !request.contains("ticket") || !request["ticket"].is_number_unsigned() ||
        !request.contains("args") || !request["args"].is_array() ||
        !std::all_of(request["args"].begin(), request["args"].end(), [](const auto &a) { return a.is_string(); })) {
      answer["err"] = "error: a job is {\"ticket\": N, \"args\": [strings]}, not: " + line.substr(0, 200);
    } else {
      answer["ticket"] = request["ticket"];
      std::vector<std::string> args = request["args"].get<std::vector<std::string>>();
      if (args.empty() || (args[0] != "run" && args[0] != "time")) {
        answer["err"] = "error: ksmith worker serves `run` and `time` command lines, not '" +
                        (args.empty() ? std::string() : args[0]) + "'";
        std::fprintf(answers, "%s\n", answer.dump().c_str());
        std::fflush(answers);
        continue;
      }
      std::reverse(args.begin(), args.end());  // CLI11 takes them last first
      std::ostringstream out, err;
      std::streambuf *old_out = std::cout.rdbuf(out.rdbuf()), *old_err = std::cerr.rdbuf(err.rdbuf());
      CLI::App app{"ksmith worker's job", "ksmith"};
      app.require_subcommand(1);
      const std::vector<Command> commands = {add_run(app, &served), add_time(app, &served)};
      int status;
      try {
        app.parse(args);
        status = run_parsed(commands);
      } catch (const CLI::ParseError &e) {
        status = app.exit(e, out, err) == 0 ? 0 : 2;
      }
      std::cout.rdbuf(old_out);
      std::cerr.rdbuf(old_err);
      answer["exit"] = status;
      answer["out"] = out.str();
      answer["err"] = err.str();
    }
    // A device that failed is not trusted with another job (Device::failed): this
    // worker answers, says so, and ends; the queue starts a fresh one.
    const bool retire = served.failed();
    if (retire) answer["retire"] = "the device failed during this job; a fresh worker serves the next";
    std::fprintf(answers, "%s\n", answer.dump().c_str());
    std::fflush(answers);
    if (retire) return 0;
  }
  return 0;
}

}  // namespace

Command add_worker(CLI::App &app) {
  CLI::App *command = app.add_subcommand(
      "worker",
      "Serve evaluations (ksmith run and ksmith time command lines as JSON, one a line on standard input), "
      "keeping the device open and the timed sizes' reference between them: ksmith evolve starts these");
  auto relay = std::make_shared<std::pair<std::string, std::string>>();
  CLI::Option *socket =
      command->add_option("--relay", relay->first, "In an MPI farm: relay the lines to the head's socket instead");
  command->add_option("--to", relay->second, "The device of another rank the relay serves (rank1/opencl:0)")
      ->needs(socket);
  socket->needs("--to");
  return {command, [relay] { return relay->first.empty() ? serve() : relay_worker(relay->first, relay->second); }};
}

}  // namespace ks::cli
