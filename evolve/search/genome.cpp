// Replaying schedules, repairing them, and the identity of a candidate.
#include "evolve/search/genome.h"

#include <cmath>
#include <cstdio>

#include "codegen/c_printer.h"
#include "evolve/evaluation/device_limits.h"
#include "ir/cost.h"
#include "ir/diagnostic.h"
#include "ir/matrix_tile.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "passes/lower.h"
#include "passes/pipeline.h"
#include "passes/primitives.h"

namespace ks {

namespace {

// A refusal's text without the schedule file's location prefix.
std::string refusal_text(const std::string &message) {
  size_t at = message.find("error: ");
  std::string text = at == std::string::npos ? message : message.substr(at + 7);
  return text.substr(0, text.find('\n'));
}

}  // namespace

int64_t unroll_budget(const runtime::DeviceInfo &device) { return device.gpu ? kMaxUnrollCopies : kCpuUnrollCopies; }

namespace {

// The work-items the device runs at once: its compute units, each kGpuItemsAtOnce
// (a GPU) or kCpuItemsAtOnce (a CPU).
double items_at_once(const runtime::DeviceInfo &device) {
  return static_cast<double>(runtime::compute_units_or_guess(device) *
                             (device.gpu ? kGpuItemsAtOnce : kCpuItemsAtOnce));
}

}  // namespace

double serial_estimate(const Program &program, const runtime::DeviceInfo &device) {
  const double at_once = items_at_once(device);
  double total = 0;
  for (const Kernel &k : program.kernels) {
    const double items = static_cast<double>(launch_shape(k).work_items());
    total += static_cast<double>(std::max<int64_t>(1, loop_iterations(k))) * std::ceil(items / at_once);
  }
  return total;
}

namespace {

// The graph's points (each stage's spatial and reduction extents) spread evenly
// over what the device runs at once: serial_estimate's ideal.
double spread_points(const Graph &graph, const runtime::DeviceInfo &device) {
  double points = 0;
  for (const Stage &s : graph.stages) points += stage_points(s);
  return points / items_at_once(device);
}

}  // namespace

Replayed replay(const Graph &graph, const Schedule &schedule, const runtime::DeviceInfo *device) {
  Replayed out;
  try {
    Program program = run_pipeline(graph, schedule);
    if (device) {
      check_device_limits(program, *device);
      // Before any device time: a ring of asynchronous copies needs cp.async.
      if (!device->async_copies)
        for (const Kernel &k : program.kernels)
          if (!collect<AsyncCopy>(k.body).empty()) throw UserError(async_copy_refusal(async_copies_missing(*device)));
      // And a matrix loop (tensorize) matrix units.
      if (!device->matrix_units)
        for (const Kernel &k : program.kernels)
          if (has_matrix_loop(k.body)) throw UserError(matrix_refusal(async_copies_missing(*device)));
      for (const Kernel &k : program.kernels)
        if (const int64_t copies = nested_iterations(k.body, true); copies > unroll_budget(*device))
          throw UserError("error: kernel '" + k.name + "' unrolls " + std::to_string(copies) +
                          " copies of its innermost body; the search keeps to " +
                          std::to_string(unroll_budget(*device)) + " on " + device->name +
                          (device->gpu ? "" : " (a CPU: the compile time)"));
      const double serial = serial_estimate(program, *device), spread = spread_points(graph, *device);
      if (!schedule.naive() && serial > kSerialFloor && serial > kMostSerialExcess * spread) {  // the baseline runs
        char text[240];
        std::snprintf(text, sizeof text,
                      "error: the kernels leave the device mostly idle: %.3g loop iterations run one after another "
                      "where the graph's work spread over %s's cores is %.3g (the search tries at most %.0f times it)",
                      serial, device->name.c_str(), spread, kMostSerialExcess);
        throw UserError(text);
      }
    }
    out.program = std::move(program);
  } catch (const UserError &e) {
    out.refusal = refusal_text(e.what());
  }
  return out;
}

Schedule repaired(const Graph &graph, const Schedule &schedule) {
  Schedule kept;
  Graph rewritten = graph;
  for (const Rewrite &step : schedule.rewrites) {
    std::string reason;
    if (std::optional<Graph> next = try_rewrite(rewritten, step, &reason)) {
      rewritten = std::move(*next);
      kept.rewrites.push_back(step);
    }
  }
  Program program = lower(rewritten);
  for (const Primitive &step : schedule.steps) {
    try {
      program = apply_primitive(program, step);
      kept.steps.push_back(step);
    } catch (const UserError &) {
      // Refused here: left out, and the steps after it replay without it.
    }
  }
  return kept;
}

std::string hash_text(const std::string &text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string candidate_identity(const Program &scheduled) { return hash_text(print_program(scheduled)); }

}  // namespace ks
