// Compile, check and time one spec.
#include "evolve/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <utility>

#include "codegen/glsl.h"
#include "codegen/spirv.h"
#include "evolve/compare.h"
#include "evolve/inputs.h"
#include "ir/interpreter.h"
#include "passes/pipeline.h"

namespace ks {

const char *target_name(Target target) { return target == Target::SPIRV ? "spirv" : "opencl"; }

const char *target_api(Target target) { return target == Target::SPIRV ? "vulkan" : "opencl"; }

Target target_for(const runtime::DeviceInfo &device) { return device.api == "vulkan" ? Target::SPIRV : Target::OpenCL; }

Compiled compile_spec(const frontend::Spec &spec, frontend::SizeSet sizes, const frontend::SizeOverrides &overrides,
                      const Schedule &schedule, Target target, bool subgroups) {
  Compiled c;
  c.graph = frontend::elaborate(spec, sizes, overrides);
  c.program = run_pipeline(c.graph, schedule);
  c.target = target;
  if (target == Target::OpenCL) {
    c.code = generate_opencl_c(c.program);
    c.binary.opencl_c = c.code.source;
    return c;
  }
  c.code = generate_glsl(c.program, subgroups);
  for (const GeneratedKernel &k : c.code.kernels)
    c.binary.spirv.push_back({k.name, compile_glsl_to_spirv(k.source, k.name), k.buffers.size()});
  return c;
}

std::string describe_sizes(const Graph &graph) {
  std::string out;
  for (const SizeBinding &s : graph.sizes) out += (out.empty() ? "" : ", ") + s.name + "=" + std::to_string(s.value);
  return out;
}

namespace {

constexpr double kMaxCheckSteps = 2e9;

// Device buffers for every global buffer of a program, released with it (an
// evaluation leaves the device as it found it, thrown out of or not), and the
// launch plan.
struct Bound {
  runtime::Device *device = nullptr;
  std::map<std::string, runtime::BufferId> ids;
  runtime::LaunchPlan plan;
  explicit Bound(runtime::Device *device) : device(device) {}
  Bound(Bound &&other) noexcept
      : device(std::exchange(other.device, nullptr)), ids(std::move(other.ids)), plan(std::move(other.plan)) {}
  Bound(const Bound &) = delete;
  Bound &operator=(const Bound &) = delete;
  ~Bound() {
    if (!device) return;
    for (const auto &[name, id] : ids) {
      try {
        device->release(id);
      } catch (const runtime::DeviceError &) {
        // A lost device has nothing left to free.
      }
    }
  }
};

// A kernel the device cannot launch is the schedule's error, said before launching.
void check_device_limits(const Compiled &c, const runtime::DeviceInfo &device) {
  for (const Kernel &kernel : c.program.kernels) {
    LaunchShape shape = launch_shape(kernel);
    int64_t items = shape.group_size();
    if (items > static_cast<int64_t>(device.max_work_group_size))
      throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(items) + " work-items per group; " +
                      device.name + " allows " + std::to_string(device.max_work_group_size));
    for (int d = 0; d < 3; ++d) {
      if (shape.local[d] > static_cast<int64_t>(device.max_work_item_sizes[d]))
        throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(shape.local[d]) +
                        " work-items along local." + "xyz"[d] + "; " + device.name + " allows " +
                        std::to_string(device.max_work_item_sizes[d]));
      if (static_cast<uint64_t>(shape.groups[d]) > device.max_group_counts[d])
        throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(shape.groups[d]) +
                        " work-groups along group." + "xyz"[d] + "; " + device.name + " dispatches at most " +
                        std::to_string(device.max_group_counts[d]) + " (bind a longer loop to another dimension)");
    }
    int64_t iterations = loop_iterations(kernel);
    if (device.max_loop_iterations && static_cast<uint64_t>(iterations) > device.max_loop_iterations)
      throw UserError("error: kernel '" + kernel.name + "' runs " + std::to_string(iterations) +
                      " loop iterations per work-item; " + device.name + " ends a kernel's loops after " +
                      std::to_string(device.max_loop_iterations) +
                      " in all, silently (bind more loops to work-items or groups, or use smaller sizes)");
    int64_t local = local_memory_bytes(kernel);
    if (local > static_cast<int64_t>(device.local_memory_bytes))
      throw UserError("error: kernel '" + kernel.name + "' needs " + std::to_string(local) +
                      " bytes of local memory per group; " + device.name + " has " +
                      std::to_string(device.local_memory_bytes));
  }
}

Bound bind(const Compiled &c, runtime::Device &device) {
  check_device_limits(c, device.info());
  Bound b(&device);
  for (const TensorDecl &t : c.program.buffers) b.ids[t.name] = device.allocate(static_cast<size_t>(t.bytes()));
  for (const GeneratedKernel &k : c.code.kernels) {
    runtime::KernelLaunch launch;
    launch.kernel = k.name;
    for (int d = 0; d < 3; ++d) {
      launch.local[d] = static_cast<size_t>(k.shape.local[d]);
      launch.global[d] = static_cast<size_t>(k.shape.groups[d] * k.shape.local[d]);
    }
    for (const std::string &name : k.buffers) launch.args.push_back(b.ids.at(name));
    b.plan.launches.push_back(launch);
  }
  return b;
}

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Writes random inputs and, unless told not to, poisons everything else; returns
// the inputs.
std::map<std::string, HostBuffer> prepare(const Compiled &c, runtime::Device &device, const Bound &b, uint64_t seed,
                                          bool poison = true) {
  std::map<std::string, HostBuffer> inputs;
  uint64_t n = 0;
  for (const TensorDecl &t : c.program.buffers) {
    if (t.role != TensorRole::Input && !poison) continue;
    HostBuffer buffer = t.role == TensorRole::Input ? random_input(t, seed + 1000003 * ++n) : poisoned(t);
    device.write(b.ids.at(t.name), buffer.bytes.data(), buffer.bytes.size());
    if (t.role == TensorRole::Input) inputs[t.name] = std::move(buffer);
  }
  return inputs;
}

HostBuffer read_back(const TensorDecl &t, runtime::Device &device, const Bound &b) {
  HostBuffer out{t.type, t.shape, std::vector<unsigned char>(static_cast<size_t>(t.bytes()))};
  device.read(b.ids.at(t.name), out.bytes.data(), out.bytes.size());
  return out;
}

void poison_outputs(const Compiled &c, runtime::Device &device, const Bound &b) {
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Output) {
      HostBuffer p = poisoned(t);
      device.write(b.ids.at(t.name), p.bytes.data(), p.bytes.size());
    }
}

// Folds one output's comparison into a check, which keeps the worst element.
void fold_mismatch(CheckRecord *check, const std::string &tensor, const Mismatch &m) {
  if (!m.passed) check->passed = false;
  if (check->tensor.empty() || m.worst_error > check->worst_error) {
    check->worst_error = m.worst_error;
    check->tensor = tensor;
    check->index = m.index;
    check->expected = m.expected;
    check->got = m.got;
  }
  check->bad_elements = std::max(check->bad_elements, m.bad_elements);
}

// Compares every output on the device with the reference.
void check_outputs(const Compiled &c, runtime::Device &device, const Bound &b, const TensorMap &reference,
                   CheckRecord *check) {
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Output)
      fold_mismatch(check, t.name, compare(read_back(t, device, b), reference.at(t.name)));
}

std::string index_text(const std::vector<int64_t> &index) {
  std::string out;
  for (int64_t x : index) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// Thrown inside evaluate() to end it with a failed record.
struct Stopped {
  EvalFailure failure;
};

// Runs step, turning the errors it throws into the record's failure at a stage.
template <typename Step>
auto at_stage(const char *sizes, const char *stage, Step &&step) -> decltype(step()) {
  auto stop = [&](std::string message) {
    if (message.rfind("error: ", 0) == 0) message.erase(0, 7);
    return Stopped{{sizes, stage, std::move(message)}};
  };
  try {
    return step();
  } catch (const UserError &e) {
    throw stop(e.what());
  } catch (const runtime::DeviceError &e) {
    throw stop(e.what());
  }
}

// Builds c on the device and binds its buffers; a failure stops the evaluation at
// the stage it happened in.
Bound build_and_bind(const char *sizes, const Compiled &c, runtime::Device &device) {
  at_stage(sizes, "build", [&] { device.build(c.binary); });
  return at_stage(sizes, "launch", [&] { return bind(c, device); });
}

// The check trials at the check sizes. Each: fresh inputs, outputs poisoned; the
// inputs must come back as written. One more trial leaves the last outputs in
// place: a kernel that keeps an answer it finds there, instead of computing the
// new one, is caught by it.
void check_trials(const Compiled &c, runtime::Device &device, const Bound &b, uint64_t base_seed, int trials,
                  EvalRecord *record) {
  record->check.passed = true;
  for (int trial = 0; trial <= trials; ++trial) {
    const bool stale_trial = trial == trials;
    std::map<std::string, HostBuffer> inputs =
        prepare(c, device, b, base_seed + static_cast<uint64_t>(trial), !stale_trial);
    device.run(b.plan);
    TensorMap reference_inputs;
    for (const auto &[name, buffer] : inputs) {
      reference_inputs[name] = to_tensor_data(buffer);
      const TensorDecl &t = *c.program.find_buffer(name);
      if (read_back(t, device, b).bytes != buffer.bytes) {
        std::string flag = "changes its input " + name;
        std::vector<std::string> &flags = record->hacking_flags;
        if (std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
      }
    }
    if (!stale_trial) {
      check_outputs(c, device, b, interpret(c.graph, reference_inputs), &record->check);
      ++record->check.trials;
      if (!record->check.passed) return;
      continue;
    }
    CheckRecord fresh;
    fresh.passed = true;
    check_outputs(c, device, b, interpret(c.graph, reference_inputs), &fresh);
    if (!fresh.passed)
      record->hacking_flags.push_back(
          "keeps a previous answer: given new inputs with the last outputs left in place, " + fresh.tensor + "[" +
          index_text(fresh.index) + "] was " + std::to_string(fresh.got) + " for " + std::to_string(fresh.expected));
  }
}

// At the timed sizes: the candidate runs once from poisoned outputs, is timed from
// poisoned outputs, and its outputs are kept from both. Then, for a candidate other
// than the naive kernel, the naive kernel runs on the same inputs: its outputs are
// the reference for both, its time the baseline. The candidate goes first so that
// nothing heavy runs on the device just before it is timed (on NVIDIA's Vulkan
// driver the kernels timed right after the naive ones ran at half the speed or less).
void time_candidate(const frontend::Spec &spec, runtime::Device &device, const EvalOptions &options, uint64_t seed,
                    const Compiled &c, TimeRecord *time) {
  const bool scheduled = !options.schedule.steps.empty() || !options.kernel_source.empty();  // not the naive kernel
  time->sizes = describe_sizes(c.graph);
  time->cost = graph_cost(c.graph);
  std::map<std::string, HostBuffer> first, after;  // the candidate's outputs: one run, and after timing
  {
    Bound b = build_and_bind("timed", c, device);
    at_stage("timed", "run", [&] {
      prepare(c, device, b, seed);
      if (scheduled) {
        device.run(b.plan);
        for (const TensorDecl &t : c.program.buffers)
          if (t.role == TensorRole::Output) first[t.name] = read_back(t, device, b);
        poison_outputs(c, device, b);  // so that timing starts from nothing written
      }
      time->timing = device.time(b.plan, options.timing);
      for (const TensorDecl &t : c.program.buffers)
        if (t.role == TensorRole::Output) after[t.name] = read_back(t, device, b);
    });
  }
  if (!scheduled) {
    time->baseline = time->timing;
    // Every output written: NaN in a float output is never right either.
    for (const TensorDecl &t : c.program.buffers) {
      if (t.role != TensorRole::Output || !time->after_timing_correct) continue;
      const HostBuffer &out = after.at(t.name);
      for (int64_t i = 0; i < out.numel(); ++i)
        if (is_poison(t.type, out.at(i))) {
          time->after_timing_correct = false;
          time->problem =
              "after timing, " + t.name + "[" + index_text(unflatten(i, t.shape)) + "] holds NaN or was never written";
          break;
        }
    }
    return;
  }
  TensorMap reference;
  try {
    Compiled naive = at_stage("timed", "compile", [&] {
      return compile_spec(spec, frontend::SizeSet::Default, options.sizes, {}, c.target,
                          device.info().subgroup_arithmetic);
    });
    Bound nb = build_and_bind("timed", naive, device);
    at_stage("timed", "run", [&] {
      prepare(naive, device, nb, seed);
      device.run(nb.plan);
      for (const TensorDecl &t : naive.program.buffers)
        if (t.role == TensorRole::Output) reference[t.name] = to_tensor_data(read_back(t, device, nb));
      time->baseline = device.time(nb.plan, options.timing);
    });
  } catch (Stopped &stopped) {
    stopped.failure.message = "the naive kernel, the reference at these sizes: " + stopped.failure.message;
    throw;
  }
  CheckRecord versus;
  versus.sizes = time->sizes;
  versus.passed = true;
  versus.trials = 1;
  for (const TensorDecl &t : c.program.buffers) {
    if (t.role != TensorRole::Output) continue;
    fold_mismatch(&versus, t.name, compare(first.at(t.name), reference.at(t.name)));
    Mismatch m = compare(after.at(t.name), reference.at(t.name));
    if (!m.passed && time->after_timing_correct) {
      char text[160];
      std::snprintf(text, sizeof text, "] is %.8g after timing; the naive kernel gave %.8g (%lld elements differ)",
                    m.got, m.expected, static_cast<long long>(m.bad_elements));
      time->after_timing_correct = false;
      time->problem = t.name + "[" + index_text(m.index) + text;
    }
  }
  time->versus_naive = versus;
}

}  // namespace

EvalRecord evaluate(const frontend::Spec &spec, const std::string &spec_label, runtime::Device &device,
                    const EvalOptions &options) {
  EvalRecord record;
  record.spec = spec_label;
  record.kernel = spec.name;
  record.device = device.info();
  const uint64_t base_seed = options.seed ? *options.seed : fresh_seed();
  const Target target = target_for(device.info());
  const bool subgroups = device.info().subgroup_arithmetic;
  const bool body = !options.kernel_source.empty();
  if (body && target != Target::OpenCL)
    throw UserError("error: a kernel body is OpenCL C; run it on an OpenCL device (--target opencl)");
  if (body && !options.schedule.steps.empty())
    throw UserError("error: a kernel body replaces the generated code; it takes no schedule");
  // The candidate's code at some sizes: generated, or the kernel body in its place.
  auto candidate = [&](const char *phase, frontend::SizeSet set, const frontend::SizeOverrides &sizes) {
    Compiled c =
        at_stage(phase, "compile", [&] { return compile_spec(spec, set, sizes, options.schedule, target, subgroups); });
    if (body) {
      std::string defines = "// sizes, as macros\n";
      for (const SizeBinding &s : c.graph.sizes) defines += "#define " + s.name + " " + std::to_string(s.value) + "\n";
      c.code.source = c.binary.opencl_c = defines + "#line 1\n" + options.kernel_source;
      record.features = body_features(c.graph, options.kernel_source);
    } else {
      record.features = program_features(c.graph, c.program, static_cast<int>(options.schedule.steps.size()),
                                         static_cast<int64_t>(c.code.source.size()));
    }
    return c;
  };

  try {
    // Correctness at the check sizes, against the interpreter.
    Compiled c = candidate("check", frontend::SizeSet::Check, options.check_sizes);
    record.check.sizes = describe_sizes(c.graph);
    // The interpreter does some 10^8 steps a second: refuse a check that would take minutes.
    double steps = 0;
    for (const Stage &stage : c.graph.stages) {
      double points = static_cast<double>(c.graph.find_tensor(stage.output)->numel());
      for (const IterVar &v : stage.reduce_vars) points *= static_cast<double>(v.extent);
      steps += points;
    }
    if (steps > kMaxCheckSteps) {
      char text[64];
      std::snprintf(text, sizeof text, "%.2g", steps);
      throw Stopped{{"check", "compile",
                     "the correctness check at " + record.check.sizes + " needs about " + text +
                         " interpreter steps per trial (the limit is 2e9); give " + spec.name +
                         " a 'check' clause with smaller sizes, or pass --check-size"}};
    }
    Bound b = build_and_bind("check", c, device);
    at_stage("check", "run", [&] { check_trials(c, device, b, base_seed, options.trials, &record); });
  } catch (Stopped &stopped) {
    record.check.passed = false;
    record.failure = std::move(stopped.failure);
    return record;
  }
  if (!record.hacking_flags.empty() || !options.time || !record.check.passed) return record;

  TimeRecord time;
  try {
    Compiled c = candidate("timed", frontend::SizeSet::Default, options.sizes);
    time_candidate(spec, device, options, base_seed + 7777, c, &time);
  } catch (Stopped &stopped) {
    record.failure = std::move(stopped.failure);
    if (time.timing.batches == 0) return record;  // nothing measured at the timed sizes
  }
  record.time = time;
  return record;
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
  if (d.subgroup_size) j["subgroup_size"] = d.subgroup_size;
  if (d.api == "vulkan") j["subgroup_arithmetic"] = d.subgroup_arithmetic;
  return j;
}

std::string EvalRecord::verdict() const {
  auto mismatch = [](const CheckRecord &c) {
    char text[160];
    std::snprintf(text, sizeof text, "] is %.8g, expected %.8g (%lld elements over the tolerance)", c.got, c.expected,
                  static_cast<long long>(c.bad_elements));
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
  return "correct";
}

nlohmann::json EvalRecord::to_json() const {
  nlohmann::json j;
  j["spec"] = spec;
  j["kernel"] = kernel;
  j["ok"] = ok();
  j["verdict"] = verdict();
  j["device"] = device_json(device);
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
            {"worst_error", finite(c.worst_error)},
            {"tensor", c.tensor},
            {"index", c.index},
            {"expected", finite(c.expected)},
            {"got", finite(c.got)},
            {"bad_elements", c.bad_elements}};
  };
  j["check"] = check_json(check);
  j["hacking_flags"] = hacking_flags;
  if (time) {
    nlohmann::json &tj = j["time"];
    tj["sizes"] = time->sizes;
    if (time->versus_naive) tj["versus_naive"] = check_json(*time->versus_naive);
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
  }
  return j;
}

}  // namespace ks
