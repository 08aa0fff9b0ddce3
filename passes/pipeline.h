// The compiler's pipeline: one straight-line list of named passes from Graph IR to
// the Loop IR that code generators take. Every pass is followed by verification,
// and an observer may look at the IR after each.
#pragma once

#include <functional>
#include <string>

#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

/// Called after each pass with the pass's name and the program it produced.
using PassObserver = std::function<void(const std::string &pass, const Program &program)>;

/// Graph IR -> final Loop IR. The graph must pass verify_graph().
Program run_pipeline(const Graph &graph, const PassObserver &observer = nullptr);

}  // namespace ks
