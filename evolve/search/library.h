// A library of tuned schedules: the bests that earlier runs found on this device for
// other problems, a folder of NAME.sched files (as bench/tuned/DEVICE keeps them).
// The mutator's transfer edit takes one stage's steps from one of them: a GEMM stage
// tuned for one chain is tried in another chain's GEMM. Whether the steps fit is the
// IR's to say (they replay or are dropped) and whether they pay, the device's.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/schedule.h"

namespace ks {

struct LibrarySchedule {
  std::string name;  // the file's name, for the proposal's note
  Schedule schedule;
};

/// Every DIR/*.sched but KERNEL.sched (a run's own problem starts with --start, not
/// from here), in the order of their names. Throws UserError when DIR is not a
/// folder, or a file cannot be read or parsed (at its line).
std::vector<LibrarySchedule> read_library(const std::string &dir, const std::string &kernel);

/// One stage's steps from a library schedule: what a transfer puts in.
struct LibraryStage {
  std::string name;  // the file's
  std::string stage;
  std::vector<Primitive> steps;  // those that replay on the graph on their own
  size_t of = 0;                 // the stage's steps in the file
};

/// What of library fits graph, worked out once a run: for each schedule and each
/// stage of it that graph has (by name), the stage's steps that the IR takes on
/// graph on their own, where there is at least one; a list of steps that an earlier
/// entry already has is left out. A draw then lands on a stage that can replay
/// (most `y` stages of other specs cannot), and each distinct one as often.
std::vector<LibraryStage> fitting_stages(const Graph &graph, const std::vector<LibrarySchedule> &library);

}  // namespace ks
