// Evaluations in a child process: a kernel that hangs, crashes its driver or
// exhausts memory takes the child down, never the caller. The child is a fresh
// `ksmith run ... --json` (exec'd, not forked: a process that has opened a GPU
// driver must not fork), so the record crosses as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ks {

struct IsolatedRun {
  std::optional<nlohmann::json> record;  // the child's record, when it printed one
  bool ok = false;                       // a record that passed
  std::string failure;  // why there is no passing record: the child's error, its signal, or the time limit
  double seconds = 0;   // wall time of the child
};

/// Runs `ksmith` (the executable at ksmith_path) with args, plus `--json`, and waits
/// at most time_limit_s seconds; past that the child is killed.
IsolatedRun run_isolated(const std::string &ksmith_path, const std::vector<std::string> &args, double time_limit_s);

}  // namespace ks
