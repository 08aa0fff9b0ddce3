// The compiler's pipeline: one straight-line list of named passes from Graph IR to
// the Loop IR that code generators take. Every pass is followed by verification,
// and an observer may look at the IR after each.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "passes/schedule.h"

namespace ks {

/// Called after each pass with its name ("lower", "schedule: split y.m 64 -> mo mi",
/// "bind-unbound-kernels"), the program it produced and the seconds it took.
using PassObserver = std::function<void(const std::string &pass, const Program &program, double seconds)>;

/// Called after each of the schedule's rewrites with its name ("rewrite push_sum
/// total"), the graph it produced and the seconds it took.
using GraphObserver = std::function<void(const std::string &pass, const Graph &graph, double seconds)>;

/// Graph IR -> final Loop IR: the schedule's rewrites, lower, then each step of the
/// schedule, then the default binding of what the schedule left unbound. The graph
/// must pass verify_graph(); a refused rewrite or schedule step throws UserError at
/// its line.
Program run_pipeline(const Graph &graph, const Schedule &schedule = {}, const PassObserver &observer = nullptr,
                     const GraphObserver &graph_observer = nullptr);

/// The passes after the schedule's steps, by name, in the order run_pipeline runs them
/// ("bind-unbound-kernels", ..., "skip-masked-steps"): what `ksmith inspect
/// --print-after` names besides the front end's and the code generator's.
std::vector<std::string> finishing_pass_names();

/// The reference at the timed sizes: the naive program, every kernel given the default
/// binding, its sums and products accumulated in f64 where wide (lower's wide
/// accumulators; a device without fp64 sums in f32). Long float32 sums drift (a million
/// terms: up to 3e-3); in f64 they are exact to the check. Its 16-bit temporaries are
/// f32, as the interpreter keeps intermediates exact (only 16-bit outputs round).
Program reference_program(const Graph &graph, bool wide = true);

}  // namespace ks
