// What a run leaves, read from its database: the best kernel (schedule, source,
// record), the HTML report's data, the trajectories as step-centric JSONL training
// data (Kernel-Smith's recipe: one line per step from a parent to a child, and a
// best-steps selection), and one summary line per run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "evolve/search/run_db.h"

namespace ks {

/// The data the report draws (evolve/search/README.md, "Report data").
nlohmann::json report_data(RunDatabase &db, int64_t run);

/// Writes into dir: best.sched, the best kernel's code (best.cl, or best.glsl and
/// best.spv for SPIR-V, at the run's timed sizes), best.json (its record) and
/// report.html. Returns the report's path.
std::string write_artifacts(RunDatabase &db, int64_t run, const std::string &dir);

struct ExportOptions {
  bool best_steps = false;  // only correct children that gained at least min_gain over their parent
  double min_gain = 1.05;
};

/// Every run's trajectories, one JSON object a line: the parent's schedule and the
/// summary of its record, the child's schedule and record, the gain (child's speedup
/// over the parent's), the proposer and what it changed.
std::string export_steps(RunDatabase &db, const ExportOptions &options);

/// One run: spec, status, evaluations, failures by status, the best and its speedup.
nlohmann::json run_summary(RunDatabase &db, const RunRow &run);

}  // namespace ks
