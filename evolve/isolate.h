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

/// A child process's outcome: what it printed, how it ended.
struct ChildRun {
  std::string out, err;
  bool started = false;    // false: `err` says why it could not start
  bool timed_out = false;  // killed at the time limit
  int exit_status = -1;    // when it exited
  int signal = 0;          // when a signal ended it
  double seconds = 0;
};

/// Runs argv[0] (looked up in PATH when it has no '/') with argv in a process group of
/// its own, and waits at most time_limit_s seconds; past that the group is killed
/// (evolve/workers.h's Child).
ChildRun run_child(const std::vector<std::string> &argv, double time_limit_s);

struct IsolatedRun {
  std::optional<nlohmann::json> record;  // the child's record, when it printed one
  bool ok = false;                       // a record that passed
  std::string failure;  // why there is no passing record: the child's error, its signal, or the time limit
  double seconds = 0;   // wall time of the child
};

/// Runs `ksmith` (the executable at ksmith_path) with args, plus `--json`, and waits
/// at most time_limit_s seconds; past that the child is killed.
IsolatedRun run_isolated(const std::string &ksmith_path, const std::vector<std::string> &args, double time_limit_s);

/// What a finished `ksmith run --json` child gave: its record, or why there is none.
IsolatedRun isolated_outcome(const ChildRun &child, double time_limit_s);

}  // namespace ks
