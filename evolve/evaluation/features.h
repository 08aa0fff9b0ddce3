// Features of a candidate: what the search's archive places it by (structure,
// fusion, parallelism) and what a proposer is told about the code it wrote.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/body_check.h"
#include "frontend/kernel_body.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace ks {

struct CandidateFeatures {
  std::string kind;                // "naive", "schedule" or "kernel body"
  int schedule_steps = 0;          // primitives applied
  int stages = 0;                  // stages of the spec's graph
  int kernels = 0;                 // launches: fewer than stages where stages were fused
  int64_t max_group_size = 0;      // work-items per group, the largest over kernels
  int64_t max_work_items = 0;      // work-items of a launch, the largest over kernels
  int64_t local_memory_bytes = 0;  // per group, the largest over kernels
  int barriers = 0;                // in all kernels
  int max_loop_depth = 0;          // serial, unrolled and vectorised loops nested in a work-item
  int unrolled_loops = 0, vectorized_loops = 0;
  int vector_width = 1;    // a kernel body's widest vector type or vloadN/vstoreN (its AST)
  bool parsed = true;      // false: a kernel body Clang did not read (only its size is known)
  int64_t code_bytes = 0;  // the OpenCL C or GLSL the device builds (a kernel body: the body)
  nlohmann::json to_json() const;
};

/// Features of a program lowered from graph with a schedule of schedule_steps steps.
CandidateFeatures program_features(const Graph &graph, const Program &program, int schedule_steps, int64_t code_bytes);

/// Features of an OpenCL C kernel body: its size; with its plan, the launches'
/// geometry; with Clang's AST (ast), its kernels, loop depth, local memory, barriers
/// and vector width.
CandidateFeatures body_features(const Graph &graph, const std::string &source, const frontend::ResolvedPlan *plan,
                                const frontend::BodyFeatures *ast);

}  // namespace ks
