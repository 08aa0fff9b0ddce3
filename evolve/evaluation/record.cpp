// The record of one evaluation: its verdict and its JSON.
#include "evolve/evaluation/record.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace ks {

std::string describe_sizes(const Graph &graph) {
  std::string out;
  for (const SizeBinding &s : graph.sizes) out += (out.empty() ? "" : ", ") + s.name + "=" + std::to_string(s.value);
  return out;
}

std::string index_text(const std::vector<int64_t> &index) {
  std::string out;
  for (int64_t x : index) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

nlohmann::json device_json(const runtime::DeviceInfo &d) {
  nlohmann::json j = {{"api", d.api},
                      {"selector", d.selector()},
                      {"name", d.name},
                      {"platform", d.platform},
                      {"version", d.version},
                      {"driver", d.driver_version},
                      {"gpu", d.gpu},
                      {"global_memory_bytes", d.global_memory_bytes},
                      {"local_memory_bytes", d.local_memory_bytes},
                      {"max_work_group_size", d.max_work_group_size}};
  if (d.compute_units) j["compute_units"] = d.compute_units;
  if (d.subgroup_size) j["subgroup_size"] = d.subgroup_size;
  if (d.api == "vulkan") j["subgroup_arithmetic"] = d.subgroup_arithmetic;
  if (d.async_copies) j["async_copies"] = true;
  if (d.matrix_units) j["matrix_units"] = true;
  return j;
}

std::string CheckRecord::tolerance() const {
  char text[160];
  std::snprintf(text, sizeof text, "%.3g", allowance);
  std::string out = std::string("each element within ") + text + " x its rounding bound (error_bound.h" +
                    (closeness > 0 ? ", products in TF32" : "") + ") of " + against;
  if (closeness > 0) {
    std::snprintf(text, sizeof text,
                  ", or within %.3g + %.3g |expected| of it (KernelBench's tolerance: TF32 asked for)", closeness,
                  closeness);
    out += text;
  }
  return out;
}

std::string EvalRecord::verdict() const {
  auto mismatch = [](const CheckRecord &c) {
    char text[200];
    std::snprintf(text, sizeof text, "] is %.8g, expected %.8g, within %.3g (%lld elements over what is allowed)",
                  c.got, c.expected, c.allowed, static_cast<long long>(c.bad_elements));
    return c.tensor + "[" + index_text(c.index) + text;
  };
  if (failure) {
    static const std::map<std::string, std::string> what = {{"compile", "does not compile"},
                                                            {"build", "the device's compiler refuses it"},
                                                            {"launch", "the device cannot launch it"},
                                                            {"run", "the device failed running it"}};
    // One line: a compiler log's lines joined, the whole of it kept in failure.message.
    std::string message;
    for (char ch : failure->message)
      message += ch != '\n' ? std::string(1, ch) : message.empty() || message.back() == ':' ? " " : "; ";
    if (message.size() > 400) message = message.substr(0, 400) + "...";
    return what.at(failure->stage) + " at the " + failure->sizes + " sizes: " + message;
  }
  if (!hacking_flags.empty()) {
    std::string out = "flagged: it";
    for (size_t i = 0; i < hacking_flags.size(); ++i) out += (i ? "; and it " : " ") + hacking_flags[i];
    return out;
  }
  if (!check.passed) return "incorrect at " + check.sizes + ": " + mismatch(check);
  if (time && time->versus_naive && !time->versus_naive->passed)
    return "disagrees with the naive kernel at " + time->sizes + ": " + mismatch(*time->versus_naive);
  if (time && !time->after_timing_correct) return "incorrect after timing: " + time->problem;
  if (time && time->gave_up_ms) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "slow: a run at %s took %.4g ms, over the %.4g ms allowed; not timed further nor checked there",
                  time->sizes.c_str(), time->timing.median_ms, *time->gave_up_ms);
    return text;
  }
  return "correct";
}

nlohmann::json EvalRecord::to_json() const {
  nlohmann::json j;
  j["spec"] = spec;
  j["kernel"] = kernel;
  j["ok"] = ok();
  j["verdict"] = verdict();
  j["device"] = device_json(device);
  j["precision"] = precision_name(precision);
  j["tensor_types"] = tensor_types;
  bool compiled = !failure || (failure->stage != "compile" && failure->stage != "build");
  j["compile"] = {{"ok", compiled}, {"log", compiled ? "" : failure->message}};
  if (failure) j["failure"] = {{"sizes", failure->sizes}, {"stage", failure->stage}, {"message", failure->message}};
  j["features"] = features.to_json();
  auto finite = [](double v) -> nlohmann::json {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  };
  auto check_json = [&](const CheckRecord &c) -> nlohmann::json {
    return {{"sizes", c.sizes},
            {"passed", c.passed},
            {"trials", c.trials},
            {"tolerance", c.tolerance()},
            {"worst_fraction", finite(c.worst_fraction)},
            {"tensor", c.tensor},
            {"index", c.index},
            {"expected", finite(c.expected)},
            {"got", finite(c.got)},
            {"allowed", finite(c.allowed)},
            {"bad_elements", c.bad_elements}};
  };
  j["check"] = check_json(check);
  j["hacking_flags"] = hacking_flags;
  j["seconds"] = {{"compile", phases.compile_s},
                  {"check", phases.check_s},
                  {"timed", phases.timed_s},
                  {"wait", phases.wait_s},
                  {"device", phases.device}};
  if (time) {
    nlohmann::json &tj = j["time"];
    tj["sizes"] = time->sizes;
    if (time->versus_naive) {
      tj["versus_naive"] = check_json(*time->versus_naive);
      tj["reference"] = time->reference;
      if (time->reference == "naive, f64 sums") tj["naive_fraction"] = finite(time->naive_fraction);
    }
    if (time->state_timing)
      tj["state_timing"] = {{"reset_ms", time->state_timing->reset_ms},
                            {"carried_ms", time->state_timing->carried_ms},
                            {"ratio", time->state_timing->ratio}};
    if (time->state_timing && !time->state_timing->kernel.empty())
      tj["state_timing"].update({{"kernel", time->state_timing->kernel},
                                 {"kernel_reset_ms", time->state_timing->kernel_reset_ms},
                                 {"kernel_carried_ms", time->state_timing->kernel_carried_ms},
                                 {"kernel_ratio", time->state_timing->kernel_ratio}});
    const runtime::Timing &t = time->timing;
    if (t.batches > 0) {  // not timed when it disagreed with the naive kernel
      double seconds = t.median_ms * 1e-3;
      tj.update({{"median_ms", t.median_ms},
                 {"min_ms", t.min_ms},
                 {"max_ms", t.max_ms},
                 {"cv", t.cv},
                 {"batches", t.batches},
                 {"runs_per_batch", t.runs_per_batch},
                 {"cold_cache", t.cold_cache},
                 {"method", t.method},
                 {"baseline_ms", time->baseline.median_ms},
                 {"baseline_cv", time->baseline.cv},
                 {"speedup", time->speedup()},
                 {"flops", time->cost.flops},
                 {"bytes", time->cost.bytes},
                 {"gflops_per_s", seconds > 0 ? time->cost.flops / seconds * 1e-9 : 0.0},
                 {"gbytes_per_s", seconds > 0 ? time->cost.bytes / seconds * 1e-9 : 0.0},
                 {"after_timing_correct", time->after_timing_correct}});
    }
    if (!time->problem.empty()) tj["problem"] = time->problem;
    if (time->gave_up_ms) tj["gave_up_ms"] = *time->gave_up_ms;
  }
  return j;
}

}  // namespace ks
