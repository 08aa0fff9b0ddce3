// ksmith runs DB [--json]: each run of a database: spec, status, evaluations,
// failures, the best speedup and its candidate.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "evolve/search/artifacts.h"
#include "tools/cli.h"

namespace ks::cli {

Command add_runs(CLI::App &app) {
  struct Options {
    std::string db;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App *command = app.add_subcommand("runs", "List the runs of an evolve database");
  command->add_option("db", o->db, "The run database")->required();
  command->add_flag("--json", o->json, "Print JSON");
  return {command, [o] {
            if (!std::filesystem::exists(o->db)) throw UserError("error: no run database '" + o->db + "'");
            RunDatabase db(o->db);
            nlohmann::json all = nlohmann::json::array();
            for (const RunRow &run : db.runs()) all.push_back(run_summary(db, run));
            if (o->json) {
              std::cout << all.dump(2) << "\n";
              return 0;
            }
            std::printf("%-4s %-20s %-9s %11s %-34s %9s  %s\n", "run", "kernel", "status", "evaluations", "failures",
                        "best", "candidate");
            for (const nlohmann::json &r : all) {
              std::string failures;
              for (const auto &[status, count] : r["candidates"].items())
                if (status != "correct" && status != "pending")
                  failures += (failures.empty() ? "" : ", ") + std::to_string(count.get<int64_t>()) + " " + status;
              char best[32] = "-";
              if (r.contains("best")) std::snprintf(best, sizeof best, "%.3gx", r["best"]["speedup"].get<double>());
              std::printf("%-4lld %-20s %-9s %11lld %-34s %9s  %s\n", static_cast<long long>(r["run"].get<int64_t>()),
                          r["kernel"].get<std::string>().c_str(), r["status"].get<std::string>().c_str(),
                          static_cast<long long>(r["evaluations"].get<int64_t>()),
                          failures.empty() ? "-" : failures.c_str(), best,
                          r.contains("best") ? r["best"]["id"].get<std::string>().c_str() : "-");
            }
            return 0;
          }};
}

}  // namespace ks::cli
