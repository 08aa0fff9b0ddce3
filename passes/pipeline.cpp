// The pass list. Read top to bottom: this is the order the compiler runs.
#include "passes/pipeline.h"

#include "ir/verifier.h"
#include "passes/lower.h"

namespace ks {

Program run_pipeline(const Graph &graph, const PassObserver &observer) {
  auto after = [&](const char *name, const Program &program) {
    verify_program(program);
    if (observer) observer(name, program);
  };
  Program program = lower(graph);
  after("lower", program);
  return program;
}

}  // namespace ks
