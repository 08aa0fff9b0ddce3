// ksmith: the kernelsmith command line. One file per subcommand under tools/
// (devices, compile, inspect, run, bench, time, evolve, runs, export, interpret,
// import, rewrite, worker, tune, fuzz); this file
// parses and dispatches.
// Exit status: 0 success; 1 a bad input, a failed check or a device failure;
// 2 a bad command line.
#include <iostream>

#include "tools/cli.h"

int main(int argc, char **argv) {
  using namespace ks;
  CLI::App app{"kernelsmith: operator specs to fast OpenCL and SPIR-V kernels", "ksmith"};
  app.require_subcommand(1);
  const std::vector<cli::Command> commands = {
      cli::add_devices(app),    cli::add_compile(app),   cli::add_inspect(app), cli::add_run(app),
      cli::add_bench(app),      cli::add_time(app),      cli::add_evolve(app),  cli::add_runs(app),
      cli::add_export(app),     cli::add_interpret(app), cli::add_import(app),  cli::add_rewrite(app),
      cli::add_primitives(app), cli::add_worker(app),    cli::add_tune(app),    cli::add_fuzz(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return cli::run_parsed(commands);
}
