// ksmith export DB [--best-steps] [--min-gain G] [--cost-rows] [-o FILE]: a database's
// trajectories as JSONL training data, one line per step from a parent to a child
// (evolve/search/artifacts.h); with --cost-rows, its measurements as a prior for the cost
// model of later runs on the device (evolve/search/cost_prior.h).
#include <filesystem>
#include <iostream>

#include "evolve/search/artifacts.h"
#include "evolve/search/cost_prior.h"
#include "tools/cli.h"

namespace ks::cli {

Command add_export(CLI::App &app) {
  struct Options {
    std::string db, output;
    ExportOptions steps;
    bool cost_rows = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App *command = app.add_subcommand("export", "Write an evolve database's steps as JSONL training data");
  command->add_option("db", o->db, "The run database")->required();
  command->add_flag("--best-steps", o->steps.best_steps,
                    "Only steps to a correct child that gains at least --min-gain over its parent");
  command->add_option("--min-gain", o->steps.min_gain, "The least gain of a best step (default 1.05)")
      ->check(CLI::Range(0.0, 1e9));
  command
      ->add_flag("--cost-rows", o->cost_rows,
                 "The evaluated schedules with their speedups and features: a prior for the cost model "
                 "(ksmith evolve --cost-prior)")
      ->excludes("--best-steps");
  command->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {command, [o] {
            if (!std::filesystem::exists(o->db)) throw UserError("error: no run database '" + o->db + "'");
            RunDatabase db(o->db);
            std::string text = o->cost_rows ? export_cost_rows(db) : export_steps(db, o->steps);
            write_output(o->output, text);
            return 0;
          }};
}

}  // namespace ks::cli
