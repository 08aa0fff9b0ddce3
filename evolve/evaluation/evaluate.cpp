// Compile, check and time one spec.
#include "evolve/evaluation/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "evolve/evaluation/compare.h"
#include "evolve/evaluation/device_clock.h"
#include "evolve/evaluation/error_bound.h"
#include "evolve/evaluation/inputs.h"
#include "evolve/workers.h"
#include "ir/interpreter.h"
#include "runtime/statistics.h"

namespace ks {

namespace {

constexpr double kMaxCheckSteps = 2e9;

// Device buffers for every global buffer of a program, released with it (an
// evaluation leaves the device as it found it, thrown out of or not), and the
// launch plan.
struct Bound {
  runtime::Device *device = nullptr;
  std::map<std::string, runtime::BufferId> ids;
  std::set<std::string> borrowed;  // buffers of ids that others own (a fixture's inputs and reference)
  runtime::LaunchPlan plan;
  explicit Bound(runtime::Device *device) : device(device) {}
  Bound(Bound &&other) noexcept
      : device(std::exchange(other.device, nullptr)),
        ids(std::move(other.ids)),
        borrowed(std::move(other.borrowed)),
        plan(std::move(other.plan)) {}
  Bound(const Bound &) = delete;
  Bound &operator=(const Bound &) = delete;
  ~Bound() {
    if (!device) return;
    for (const auto &[name, id] : ids) {
      if (borrowed.count(name)) continue;
      try {
        device->release(id);
      } catch (const runtime::DeviceError &) {
        // A lost device has nothing left to free.
      }
    }
  }
};

}  // namespace

namespace {

Bound bind(const Compiled &c, runtime::Device &device) {
  if (c.plan)
    check_plan_limits(*c.plan, device.info());
  else
    check_device_limits(c.program, device.info());
  Bound b(&device);
  for (const TensorDecl &t : c.program.buffers) b.ids[t.name] = device.allocate(static_cast<size_t>(t.bytes()));
  b.plan = launch_plan(c, b.ids);
  return b;
}

// Seconds spent in f (a wait for the device lock, a run).
template <typename F>
double seconds_in(F f) {
  const auto before = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
}

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// A candidate's state: every buffer that is not an input (its outputs and
// intermediates). What it holds before a run must change neither the result nor the
// work done.
bool is_state(const TensorDecl &t) { return t.role != TensorRole::Input; }

std::string role_text(const TensorDecl &t) {
  return std::string(t.role == TensorRole::Input    ? "input "
                     : t.role == TensorRole::Output ? "output "
                                                    : "intermediate ") +
         t.name;
}

// Random inputs of one trial, as written to the device, and the interpreter's values
// for them, with the bounds of what the candidate computes (error_bound.h).
struct TrialInputs {
  std::map<std::string, HostBuffer> inputs;
  TensorMap reference;
  const ErrorBounds *bounds = nullptr;
};

// The outputs are the spec's graph's; their bounds, those of the graph the candidate
// computes (rewritten: after its rewrites).
TrialInputs trial_inputs(const Compiled &c, const ErrorBounds &bounds, bool rewritten, uint64_t seed) {
  TrialInputs t;
  t.bounds = &bounds;
  TensorMap values;
  uint64_t n = 0;
  for (const TensorDecl &d : c.program.buffers)
    if (d.role == TensorRole::Input) {
      t.inputs[d.name] = random_input(d, seed + 1000003 * ++n);
      values[d.name] = to_tensor_data(t.inputs[d.name]);
    }
  t.reference = interpret(bounds.graph, values);
  if (rewritten) {
    TensorMap spec = interpret(c.graph, values);
    for (const TensorDecl &d : c.graph.tensors)
      if (d.role == TensorRole::Output) t.reference[d.name] = std::move(spec.at(d.name));
  }
  return t;
}

void write_buffer(runtime::Device &device, runtime::BufferId id, const HostBuffer &data) {
  device.write(id, data.bytes.data(), data.bytes.size());
}

void write_buffer(runtime::Device &device, const Bound &b, const std::string &name, const HostBuffer &data) {
  write_buffer(device, b.ids.at(name), data);
}

HostBuffer read_back(const TensorDecl &t, runtime::Device &device, const Bound &b) {
  return read_tensor(device, b.ids.at(t.name), t);
}

// A buffer of tensor t poisoned as Poison::Unwritten does: filled on the device where
// the fill's pattern is that poison (the 32-bit types), else written from the host.
void poison(runtime::Device &device, runtime::BufferId id, const TensorDecl &t) {
  if (t.type == DType::F32 || t.type == DType::I32)
    device.fill(id, poison_pattern(t.type));
  else
    write_buffer(device, id, poisoned(t));
}

void poison_outputs(const Compiled &c, runtime::Device &device, const Bound &b) {
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Output) poison(device, b.ids.at(t.name), t);
}

void add_flag(std::vector<std::string> *flags, const std::string &flag) {
  if (std::find(flags->begin(), flags->end(), flag) == flags->end()) flags->push_back(flag);
}

// "5 elements past the end" of a buffer of `bytes`, from a guard breach's offset.
std::string breach_text(int64_t offset, int64_t bytes, int element_bytes) {
  auto elements = [](int64_t n) { return std::to_string(n) + (n == 1 ? " element" : " elements"); };
  if (offset < 0) return elements((-offset + element_bytes - 1) / element_bytes) + " before the start";
  int64_t past = (offset - bytes) / element_bytes;
  return past == 0 ? "just past the end" : elements(past) + " past the end";
}

// Flags a write outside any buffer of the program: each buffer's guards must be as
// they were allocated.
void check_guards(const Compiled &c, runtime::Device &device, const Bound &b, std::vector<std::string> *flags) {
  for (const TensorDecl &t : c.program.buffers)
    if (std::optional<int64_t> offset = device.guard_breach(b.ids.at(t.name)))
      add_flag(flags, "writes outside its " + role_text(t) + ", " +
                          breach_text(*offset, std::max<int64_t>(t.bytes(), 1), dtype_bytes(t.type)));
}

// Folds one output's comparison into a check, which keeps the worst element.
void fold_mismatch(CheckRecord *check, const std::string &tensor, const Mismatch &m) {
  if (!m.passed) check->passed = false;
  if (check->tensor.empty() || m.worst_fraction > check->worst_fraction) {
    check->worst_fraction = m.worst_fraction;
    check->tensor = tensor;
    check->index = m.index;
    check->expected = m.expected;
    check->got = m.got;
    check->allowed = m.allowed;
  }
  check->bad_elements = std::max(check->bad_elements, m.bad_elements);
}

// Folds one trial's check into the record's.
void fold_check(CheckRecord *check, const CheckRecord &trial) {
  if (trial.tensor.empty()) return;  // no outputs compared
  fold_mismatch(
      check, trial.tensor,
      {trial.passed, trial.worst_fraction, trial.index, trial.expected, trial.got, trial.allowed, trial.bad_elements});
}

// Compares every output on the device with the interpreter's, within its bound.
void check_outputs(const Compiled &c, runtime::Device &device, const Bound &b, const TrialInputs &trial,
                   Tolerance tolerance, CheckRecord *check) {
  for (const TensorDecl &t : c.program.buffers) {
    if (t.role != TensorRole::Output) continue;
    auto bound = trial.bounds->bound_of.find(t.name);
    fold_mismatch(
        check, t.name,
        compare(read_back(t, device, b), trial.reference.at(t.name),
                bound == trial.bounds->bound_of.end() ? nullptr : &trial.reference.at(bound->second), tolerance));
  }
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

Bound bind_to(const Compiled &c, runtime::Device &device, const TimedFixture &f);

// A failure where the device failed (Device::failed) is the device's, at the run stage:
// a buffer it could not fill or a build it could not make after a fault is not the
// candidate's refusal (the schedule fuzzer counts refusals apart).
EvalFailure device_failure(EvalFailure failure, const runtime::Device &device) {
  if (device.failed() && (failure.stage == "launch" || failure.stage == "build")) failure.stage = "run";
  return failure;
}

// Builds c on the device and binds its buffers, its inputs the fixture's; a failure
// stops the evaluation at the stage it happened in.
Bound build_and_bind(const char *sizes, const Compiled &c, runtime::Device &device, const TimedFixture &f) {
  at_stage(sizes, "build", [&] { device.build(c.binary); });
  return at_stage(sizes, "launch", [&] { return bind_to(c, device, f); });
}

// One run at the check sizes: the trial's inputs written, each state buffer set as
// `state` says (poisoned of a kind, or nullopt: left as the last run left it); then
// the guards and the inputs checked (flags). Returns the outputs against the
// reference.
using StateSetup = std::function<std::optional<Poison>(const TensorDecl &)>;

CheckRecord trial_run(const Compiled &c, runtime::Device &device, const Bound &b, const TrialInputs &trial,
                      const StateSetup &state, Tolerance tolerance, std::vector<std::string> *flags) {
  for (const TensorDecl &t : c.program.buffers) {
    if (t.role == TensorRole::Input)
      write_buffer(device, b, t.name, trial.inputs.at(t.name));
    else if (std::optional<Poison> kind = state(t))
      write_buffer(device, b, t.name, poisoned(t, *kind));
  }
  device.run(b.plan);
  check_guards(c, device, b, flags);
  for (const auto &[name, buffer] : trial.inputs)
    if (read_back(*c.program.find_buffer(name), device, b).bytes != buffer.bytes)
      add_flag(flags, "changes its input " + name);
  CheckRecord out;
  out.passed = true;
  check_outputs(c, device, b, trial, tolerance, &out);
  return out;
}

// "y[2, 10] was 0.5 for 0.25"
std::string was_for(const CheckRecord &r) {
  return r.tensor + "[" + index_text(r.index) + "] was " + std::to_string(r.got) + " for " + std::to_string(r.expected);
}

// The check at the check sizes. Trials with fresh inputs and every state buffer
// poisoned (NaN) are compared with the interpreter. Then three trials vary the state
// a run starts from, each on inputs other than the last run's, reusing the first
// trials' references (no interpreter run of their own):
//  1. the last outputs left in place: a kernel that keeps an answer it finds there
//     instead of computing the new one;
//  2. every state buffer holding large finite values instead of NaN: a kernel that
//     reads an output or intermediate before writing it, or takes a finite value
//     there for work already done;
//  3. the intermediates left as the last run wrote them: a kernel that reuses an
//     intermediate computed for other inputs.
// Each run's guards and inputs are checked too. The first flag ends the check.
void check_trials(const Compiled &c, bool rewritten, runtime::Device &device, const Bound &b, uint64_t base_seed,
                  int trials, EvalRecord *record) {
  std::vector<std::string> &flags = record->hacking_flags;
  const StateSetup unwritten = [](const TensorDecl &) { return Poison::Unwritten; };
  record->check.passed = true;
  const Tolerance tolerance(kExactAllowance, closeness_for(record->precision));
  record->check.closeness = tolerance.closeness;
  const ErrorBounds bounds = with_error_bounds(c.computed, record->precision);
  std::vector<TrialInputs> kept;  // the first and the last trial's
  for (int trial = 0; trial < trials; ++trial) {
    TrialInputs inputs = trial_inputs(c, bounds, rewritten, base_seed + static_cast<uint64_t>(trial));
    fold_check(&record->check, trial_run(c, device, b, inputs, unwritten, tolerance, &flags));
    ++record->check.trials;
    if (!record->check.passed || !flags.empty()) return;
    if (kept.size() == 2) kept.pop_back();
    kept.push_back(std::move(inputs));
  }
  if (kept.size() == 1)
    kept.insert(kept.begin(), trial_inputs(c, bounds, rewritten, base_seed + static_cast<uint64_t>(trials)));
  const TrialInputs &other = kept.front(), &last = kept.back();  // the last run's inputs are `last`'s

  // 1. The outputs of the last run, on other inputs.
  CheckRecord r = trial_run(
      c, device, b, other,
      [](const TensorDecl &t) {
        return t.role == TensorRole::Output ? std::nullopt : std::optional(Poison::Unwritten);
      },
      tolerance, &flags);
  if (!r.passed)
    add_flag(&flags, "keeps a previous answer: given new inputs with the last outputs left in place, " + was_for(r));
  if (!flags.empty()) return;

  // 2. Large finite values in every state buffer; on failure, one buffer at a time
  // finds the one read before it is written.
  auto large_in = [](const std::string &name) {
    return [name](const TensorDecl &t) { return name.empty() || t.name == name ? Poison::Large : Poison::Unwritten; };
  };
  r = trial_run(c, device, b, last, large_in(""), tolerance, &flags);
  if (!r.passed) {
    std::string culprit;
    for (const TensorDecl &t : c.program.buffers)
      if (is_state(t) && culprit.empty() && !trial_run(c, device, b, last, large_in(t.name), tolerance, &flags).passed)
        culprit = "its " + role_text(t);
    if (culprit.empty()) culprit = "its outputs or intermediates";
    add_flag(&flags,
             "reads " + culprit + " before writing it: starting from large finite values (±3e38) there, " + was_for(r));
  }
  if (!flags.empty()) return;

  // 3. The intermediates of the last run (on `last`), on other inputs; on failure,
  // one intermediate at a time finds the one reused.
  std::map<std::string, HostBuffer> left;
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Temp) left[t.name] = read_back(t, device, b);
  r = trial_run(
      c, device, b, other,
      [](const TensorDecl &t) { return t.role == TensorRole::Temp ? std::nullopt : std::optional(Poison::Unwritten); },
      tolerance, &flags);
  if (!r.passed) {
    std::string culprit = left.size() == 1 ? left.begin()->first : "";
    for (const auto &[name, contents] : left) {
      if (!culprit.empty()) break;
      write_buffer(device, b, name, contents);  // this one as the last run left it, the others poisoned
      const std::string &alone = name;
      auto only = [&](const TensorDecl &t) {
        return t.name == alone ? std::nullopt : std::optional(Poison::Unwritten);
      };
      if (!trial_run(c, device, b, other, only, tolerance, &flags).passed) culprit = name;
    }
    culprit = culprit.empty() ? "its intermediates" : "its intermediate " + culprit;
    add_flag(&flags, "reuses " + culprit + " from an earlier run: given new inputs with it left as the last run " +
                         "wrote it, " + was_for(r));
  }
}

// Times a kernel body from reset state (every output and intermediate poisoned
// before each run) and from carried state (the same fill aimed at a decoy buffer of
// equal size, so that both pay the same traffic outside the timed span), each run
// timed on its own, in five rounds that alternate which goes first. A kernel whose
// work depends on what its last run left behind is slower from reset state even in
// its fastest round.
TimeRecord::StateTiming time_state(const Compiled &c, runtime::Device &device, const Bound &b,
                                   const runtime::TimingOptions &base) {
  uint64_t state_bytes = 0;
  runtime::TimingOptions reset = base, carried = base;
  reset.cold_cache = carried.cold_cache = false;
  reset.warmup_runs = carried.warmup_runs = 0;  // the timing before warmed it up
  reset.batches = carried.batches = 3;
  reset.min_batch_ms = carried.min_batch_ms = std::min(base.min_batch_ms, 2.0);
  reset.max_total_seconds = carried.max_total_seconds = std::min(base.max_total_seconds, 3.0);
  for (const TensorDecl &t : c.program.buffers)
    if (is_state(t)) {
      reset.fills.push_back({b.ids.at(t.name), poison_pattern(t.type)});
      state_bytes += static_cast<uint64_t>(t.bytes());
    }
  runtime::ScopedBuffer decoy(device, std::max<uint64_t>(state_bytes, 4));
  carried.fills.push_back({decoy.id, 0});
  // The fastest batch of the fastest round of each: interference only ever adds
  // time, so the minimums compare the work itself (medians of tens of microseconds
  // differ by 30% on a busy machine; minimums by 7% at most, evolve/evaluation/README.md).
  // The batches' median, used first, let CI's load (another test beside it on 2
  // cores) time an honest 9 ms matmul body at 15.9 ms from reset state against
  // 11.7 ms carried, twice, while its launch's fastest runs were 8.7 and 9.3 ms.
  // Each launch too, where the device times them (OpenCL): a skipped pass may be a
  // small part of the plan (softmax's row maxima on a CPU: 10% of it, the plan's
  // ratio 1.10) and yet all of its kernel's time.
  TimeRecord::StateTiming out;
  out.reset_ms = out.carried_ms = std::numeric_limits<double>::infinity();
  std::vector<double> reset_launch, carried_launch;
  auto fastest = [](double *plan, std::vector<double> *launches, const runtime::Timing &t) {
    *plan = std::min(*plan, t.min_ms);
    if (launches->empty()) launches->assign(t.launch_ms.size(), std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < t.launch_ms.size() && i < launches->size(); ++i)
      (*launches)[i] = std::min((*launches)[i], t.launch_ms[i]);
  };
  for (int round = 0; round < 5; ++round) {
    if (round % 2) fastest(&out.carried_ms, &carried_launch, device.time(b.plan, carried));
    fastest(&out.reset_ms, &reset_launch, device.time(b.plan, reset));
    if (round % 2 == 0) fastest(&out.carried_ms, &carried_launch, device.time(b.plan, carried));
  }
  out.ratio = out.carried_ms > 0 ? out.reset_ms / out.carried_ms : 1;
  for (size_t i = 0; i < reset_launch.size() && i < carried_launch.size() && i < b.plan.launches.size(); ++i) {
    if (reset_launch[i] < out.reset_ms / 20 || !(carried_launch[i] > 0)) continue;
    const double ratio = reset_launch[i] / carried_launch[i];
    if (ratio <= out.kernel_ratio) continue;
    out.kernel = b.plan.launches[i].kernel;
    out.kernel_reset_ms = reset_launch[i];
    out.kernel_carried_ms = carried_launch[i];
    out.kernel_ratio = ratio;
  }
  return out;
}

}  // namespace

// What every candidate of a spec shares at the timed sizes on one device: the inputs
// (drawn once, kept on the device), the reference's outputs there with their bounds,
// the allowance, and the naive kernel's time.
// An evaluation makes one for itself; a process that evaluates many (`ksmith
// worker`) keeps it in an EvalCache, so that the reference, the naive kernel and the
// inputs' upload cost once per run instead of once per candidate (at KernelBench's
// sizes the naive kernel and the f64 reference took seconds of every evaluation).
struct TimedFixture {
  std::string key;                         // the device and the reference's code: what makes two equal
  runtime::Device *device = nullptr;       // the device that holds the buffers (not an evaluation's clock)
  std::map<std::string, uint64_t> seeds;   // each input's (inputs.h's draw_input)
  std::map<std::string, uint64_t> prints;  // the inputs' fingerprints, taken when drawn
  std::map<std::string, runtime::BufferId> input_ids, reference_ids;
  std::map<std::string, runtime::BufferId> bound_ids;  // of each output that has a bound
  // The outputs' bounds of what candidates with rewrites compute, by the bound
  // program's code; the last two kept (a search tries a few sets of rewrites).
  std::vector<std::pair<std::string, std::map<std::string, runtime::BufferId>>> rewritten_bounds;
  bool referenced = false;  // reference_ids, bound_ids and the allowance are set
  std::string reference;    // TimeRecord::reference
  double allowance = kReferenceAllowance, naive_fraction = 0;
  std::optional<runtime::Timing> baseline;
  ~TimedFixture() {
    for (const auto *ids : {&input_ids, &reference_ids, &bound_ids}) release(*ids);
    for (const auto &[key, ids] : rewritten_bounds) release(ids);
  }
  void release(const std::map<std::string, runtime::BufferId> &ids) {
    for (const auto &[name, id] : ids) try {
        device->release(id);
      } catch (const runtime::DeviceError &) {
      }
  }
};

// The bound of an output among bounds, where it has one.
std::optional<runtime::BufferId> bound_in(const std::map<std::string, runtime::BufferId> &bounds,
                                          const std::string &output) {
  auto it = bounds.find(output);
  return it == bounds.end() ? std::nullopt : std::optional(it->second);
}

EvalCache::EvalCache() = default;
EvalCache::~EvalCache() = default;

namespace {

// c's buffers on the device, its inputs the fixture's.
Bound bind_to(const Compiled &c, runtime::Device &device, const TimedFixture &f) {
  if (c.plan)
    check_plan_limits(*c.plan, device.info());
  else
    check_device_limits(c.program, device.info());
  Bound b(&device);
  for (const TensorDecl &t : c.program.buffers) {
    if (t.role == TensorRole::Input) {
      b.ids[t.name] = f.input_ids.at(t.name);
      b.borrowed.insert(t.name);
    } else {
      b.ids[t.name] = device.allocate(static_cast<size_t>(t.bytes()));
    }
  }
  b.plan = launch_plan(c, b.ids);
  return b;
}

// The fixture's inputs drawn on the device once, with their fingerprints.
void place_inputs(const Compiled &c, DeviceClock &device, DeviceComparer &comparer, TimedFixture *f) {
  if (!f->input_ids.empty()) return;
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Input) {
      const runtime::BufferId id = f->input_ids[t.name] = device.allocate(static_cast<size_t>(t.bytes()));
      draw_input(device, id, t, f->seeds.at(t.name));
      device.phase = "compare";
      f->prints[t.name] = comparer.fingerprint(t, id);
      device.phase = "timed";
    }
}

// Poisons every buffer of b that is not an input.
void poison_state(const Compiled &c, runtime::Device &device, const Bound &b) {
  for (const TensorDecl &t : c.program.buffers)
    if (is_state(t)) poison(device, b.ids.at(t.name), t);
}

// The reference's outputs and their bounds on the fixture's inputs, kept on the
// device; then, beside an f64 reference, the naive float32 kernel against them: an
// honest program, so within the allowance. Where it is not, the bound's model missed
// something of this graph (the record says by how much) and the allowance grows to
// what the naive kernel needs, so that honest work is not rejected.
void make_reference(const Reference &ref, const Compiled &plain, DeviceClock &device, DeviceComparer &comparer,
                    TimedFixture *f) {
  device.phase = "reference";
  Bound rb = build_and_bind("timed", ref.compiled, device, *f);
  at_stage("timed", "run", [&] { device.run(rb.plan); });
  for (const TensorDecl &t : ref.compiled.program.buffers) {
    if (t.role != TensorRole::Output) continue;
    auto bound = std::find_if(ref.bound_of.begin(), ref.bound_of.end(),
                              [&](const auto &entry) { return entry.second == t.name; });
    if (bound != ref.bound_of.end())
      f->bound_ids[bound->first] = rb.ids.at(t.name);
    else
      f->reference_ids[t.name] = rb.ids.at(t.name);
    rb.borrowed.insert(t.name);  // the fixture's from here on
  }
  f->allowance = kReferenceAllowance;
  if (!device.info().fp64) {
    f->reference = "naive, f32 sums";
    f->referenced = true;
    return;
  }
  Bound pb = build_and_bind("timed", plain, device, *f);
  at_stage("timed", "run", [&] { device.run(pb.plan); });
  device.phase = "compare";
  f->naive_fraction = 0;
  for (const TensorDecl &t : plain.program.buffers)
    if (t.role == TensorRole::Output)
      f->naive_fraction = std::max(f->naive_fraction, at_stage("timed", "run", [&] {
                                     return comparer
                                         .compare(t, pb.ids.at(t.name), f->reference_ids.at(t.name),
                                                  bound_in(f->bound_ids, t.name), f->allowance)
                                         .worst_fraction;
                                   }));
  // A naive kernel that overflows or leaves NaN says nothing of the bound.
  if (std::isfinite(f->naive_fraction) && f->naive_fraction > 1) f->allowance *= 1.5 * f->naive_fraction;
  f->reference = "naive, f64 sums";
  f->referenced = true;
}

// The outputs' bounds of what c computes after its rewrites, on the fixture's inputs:
// the naive program of that graph with its bounds, run once per set of rewrites while
// the fixture keeps it (the last two).
const std::map<std::string, runtime::BufferId> &rewritten_bounds(const Compiled &c, DeviceClock &device,
                                                                 Precision precision, TimedFixture *f) {
  const Reference r = at_stage("timed", "compile",
                               [&] { return compile_reference(c.computed, c.target, device.info().fp64, precision); });
  for (const auto &[key, ids] : f->rewritten_bounds)
    if (key == r.compiled.code.source) return ids;
  device.phase = "reference";
  Bound rb = build_and_bind("timed", r.compiled, device, *f);
  at_stage("timed", "run", [&] { device.run(rb.plan); });
  std::map<std::string, runtime::BufferId> ids;
  for (const TensorDecl &t : c.program.buffers)
    if (t.role == TensorRole::Output && r.bound_of.count(t.name)) {
      const std::string &bound = r.bound_of.at(t.name);
      ids[t.name] = rb.ids.at(bound);
      rb.borrowed.insert(bound);  // the fixture's from here on
    }
  if (f->rewritten_bounds.size() == 2) {
    f->release(f->rewritten_bounds.front().second);
    f->rewritten_bounds.erase(f->rewritten_bounds.begin());
  }
  f->rewritten_bounds.push_back({r.compiled.code.source, std::move(ids)});
  device.phase = "timed";
  return f->rewritten_bounds.back().second;
}

// A failure of the reference's or the naive kernel's, not the candidate's, says so.
template <typename F>
auto of_reference(F f) {
  try {
    return f();
  } catch (Stopped &stopped) {
    stopped.failure.message = "the naive kernel, the reference at these sizes: " + stopped.failure.message;
    throw;
  }
}

// The reference at the timed sizes, and the naive float32 kernel.
struct NaivePrograms {
  Reference ref;
  Compiled plain;
};

NaivePrograms naive_programs(const frontend::Spec &spec, const Compiled &c, DeviceClock &device,
                             const EvalOptions &options) {
  const bool wide = device.info().fp64;
  return of_reference([&] {
    Reference ref =
        at_stage("timed", "compile", [&] { return compile_reference(c.graph, c.target, wide, options.precision); });
    Compiled plain = at_stage("timed", "compile", [&] {
      return compile_spec(spec, frontend::SizeSet::Default, options.sizes, {}, c.target, code_features(device.info()));
    });
    return NaivePrograms{std::move(ref), std::move(plain)};
  });
}

// The fixture a candidate is timed with: the cache's, or its own. Whatever happens to
// the candidate, a fixture it may have spoilt is not kept: the cache drops it unless
// the timing ended clean.
struct FixtureInUse {
  EvalCache *cache = nullptr;
  std::unique_ptr<TimedFixture> own;  // without a cache
  TimedFixture *f = nullptr;
  bool clean = false;
  FixtureInUse() = default;
  FixtureInUse(const FixtureInUse &) = delete;
  FixtureInUse &operator=(const FixtureInUse &) = delete;
  ~FixtureInUse() {
    if (cache && !clean) cache->fixture.reset();
  }
};

// The cache's fixture where it is this device's and this reference's, else a new one
// (the cache's, or the evaluation's own).
void take_fixture(const Compiled &c, const Reference &ref, DeviceClock &device, EvalCache *cache, uint64_t seed,
                  FixtureInUse *use) {
  const std::string key = device.info().selector() + " " + device.info().name + "\n" + ref.compiled.code.source;
  // A fixture kept holds the inputs and the reference's outputs between evaluations:
  // at most a quarter of the device's memory (two workers on an H100 at gelu's
  // KernelBench sizes keep 13 GB each), else each evaluation makes its own.
  uint64_t kept_bytes = 0;
  for (const TensorDecl &t : ref.compiled.program.buffers)
    if (t.role != TensorRole::Temp) kept_bytes += static_cast<uint64_t>(t.bytes());
  if (cache && kept_bytes > device.info().global_memory_bytes / 4) {
    cache->fixture.reset();
    cache = nullptr;
  }
  if (!cache || !cache->fixture || cache->fixture->key != key) {
    auto fresh = std::make_unique<TimedFixture>();
    fresh->key = key;
    fresh->device = &device.inner();
    uint64_t n = 0;
    for (const TensorDecl &t : c.program.buffers)
      if (t.role == TensorRole::Input) fresh->seeds[t.name] = seed + 1000003 * ++n;  // as trial_inputs numbers them
    (cache ? cache->fixture : use->own) = std::move(fresh);
  }
  use->cache = cache;
  use->f = cache ? cache->fixture.get() : use->own.get();
}

// What the steps of timing a candidate share: the candidate bound on the device
// beside its fixture, and where its findings go.
struct TimedRun {
  const Compiled &c;
  DeviceClock &device;
  const EvalOptions &options;
  TimedFixture &f;
  DeviceComparer &comparer;
  const std::map<std::string, runtime::BufferId> &bounds;  // the spec's graph's, or what its rewrites left
  const Bound &b;
  bool body, scheduled;  // a kernel body; not the naive kernel
  TimeRecord *time;
  std::vector<std::string> *flags;
};

// A comparison on the device between the candidate's runs: its kernels built again
// after (the device keeps the last few built).
template <typename F>
auto comparing(const TimedRun &r, F compare) {
  r.device.phase = "compare";
  auto result = compare();
  r.device.phase = "timed";
  r.device.build(r.c.binary);
  return result;
}

// Folds each output's comparison with the reference's into check.
void against_reference(const TimedRun &r, CheckRecord *check) {
  for (const TensorDecl &t : r.c.program.buffers)
    if (t.role == TensorRole::Output)
      fold_mismatch(check, t.name, comparing(r, [&] {
                      return r.comparer.compare(t, r.b.ids.at(t.name), r.f.reference_ids.at(t.name),
                                                bound_in(r.bounds, t.name),
                                                Tolerance(r.f.allowance, closeness_for(r.options.precision)));
                    }));
}

// Runs the candidate once; over options.give_up_ms, a second run decides (a first
// run may hold the driver's last compile: PoCL builds a kernel for its work-group
// size at its first launch). Over it again, that run is the timing: returns true.
bool gives_up(const TimedRun &r) {
  auto run_ms = [&] { return 1e3 * seconds_in([&] { r.device.run(r.b.plan); }); };
  double ms = run_ms();
  const std::optional<double> &limit = r.options.give_up_ms;
  if (!(limit && ms > *limit && (ms = run_ms()) > *limit)) return false;
  runtime::Timing &timing = r.time->timing;
  timing.median_ms = timing.min_ms = timing.max_ms = ms;
  timing.batches = timing.runs_per_batch = 1;
  timing.method = "one run, not timed further";
  r.time->gave_up_ms = *limit;
  return true;
}

// The candidate's outputs after its first run, against the reference.
CheckRecord versus_reference(const TimedRun &r) {
  CheckRecord versus;
  versus.sizes = r.time->sizes;
  versus.against = "the reference (" + r.f.reference + ")";
  versus.allowance = r.f.allowance;
  versus.closeness = closeness_for(r.options.precision);
  versus.passed = true;
  versus.trials = 1;
  against_reference(r, &versus);
  return versus;
}

// The candidate's outputs after timing, against the reference again.
void check_after_timing(const TimedRun &r) {
  CheckRecord after;
  after.passed = true;
  against_reference(r, &after);
  if (after.passed) return;
  char text[160];
  std::snprintf(text, sizeof text, "] is %.8g after timing; the naive kernel gave %.8g (%lld elements differ)",
                after.got, after.expected, static_cast<long long>(after.bad_elements));
  r.time->after_timing_correct = false;
  r.time->problem = after.tensor + "[" + index_text(after.index) + text;
}

// Every output of the naive kernel written after timing: NaN in a float output is
// never right either. A float output compared with itself on the device finds its
// first NaN (compare.h).
void check_written(const TimedRun &r) {
  for (const TensorDecl &t : r.c.program.buffers) {
    if (t.role != TensorRole::Output || !r.time->after_timing_correct) continue;
    std::optional<std::vector<int64_t>> unwritten;
    if (t.type == DType::F32) {
      Mismatch m =
          comparing(r, [&] { return r.comparer.compare(t, r.b.ids.at(t.name), r.b.ids.at(t.name), std::nullopt, 1); });
      if (!m.passed) unwritten = m.index;
    } else {
      const HostBuffer out = read_back(t, r.device, r.b);
      for (int64_t i = 0; i < out.numel() && !unwritten; ++i)
        if (is_poison(t.type, out.at(i))) unwritten = unflatten(i, t.shape);
    }
    if (unwritten) {
      r.time->after_timing_correct = false;
      r.time->problem = "after timing, " + t.name + "[" + index_text(*unwritten) + "] holds NaN or was never written";
    }
  }
}

// Flags a kernel body that does less work when its outputs and intermediates hold
// what its last run left (time_state).
void check_state_timing(const TimedRun &r) {
  r.device.phase = "state";
  std::optional<TimeRecord::StateTiming> &timing = r.time->state_timing;
  timing = time_state(r.c, r.device, r.b, r.options.timing);
  // A flag stands only if a second measurement repeats it: on a loaded 2-core
  // machine an honest tiled matmul body once ran 0.379 ms from reset against
  // 0.245 from carried state (1.55), while a body that skips work does so each time.
  if (timing->flagged()) timing = time_state(r.c, r.device, r.b, r.options.timing);
  r.device.phase = "timed";
  const TimeRecord::StateTiming &s = *timing;
  if (!s.flagged()) return;
  char text[200];
  if (s.ratio <= kStateTimingLimit)  // the launch, not the plan
    std::snprintf(text, sizeof text,
                  "kernel %s %.4g ms a run from reset state, %.4g ms from the last run's (the whole plan "
                  "%.4g and %.4g ms)",
                  s.kernel.c_str(), s.kernel_reset_ms, s.kernel_carried_ms, s.reset_ms, s.carried_ms);
  else
    std::snprintf(text, sizeof text, "%.4g ms a run from reset state, %.4g ms from the last run's", s.reset_ms,
                  s.carried_ms);
  add_flag(r.flags,
           std::string("does less work when its outputs and intermediates hold what its last run left: ") + text);
}

// The candidate's runs from poisoned state: compared with the reference first where
// it is not the naive kernel (unless it gives up), timed, checked after timing, its
// guards checked, and a kernel body timed from reset and from carried state.
void run_and_time(const TimedRun &r) {
  poison_state(r.c, r.device, r.b);
  if (r.scheduled) {
    if (gives_up(r)) return;
    r.time->versus_naive = versus_reference(r);
    poison_outputs(r.c, r.device, r.b);  // so that timing starts from nothing written
  }
  r.time->timing = r.device.time(r.b.plan, r.options.timing);
  if (r.scheduled)
    check_after_timing(r);
  else
    check_written(r);
  check_guards(r.c, r.device, r.b, r.flags);
  if (r.body && r.options.state_timing && r.flags->empty()) check_state_timing(r);
}

// The inputs as drawn: a candidate may not change them at the timed sizes either,
// and with a cache they are the next candidate's (a changed one is drawn again).
void check_inputs_kept(const TimedRun &r) {
  r.device.phase = "compare";
  for (const TensorDecl &t : r.c.program.buffers) {
    if (t.role != TensorRole::Input) continue;
    const runtime::BufferId id = r.f.input_ids.at(t.name);
    if (at_stage("timed", "run", [&] { return r.comparer.fingerprint(t, id); }) == r.f.prints.at(t.name)) continue;
    add_flag(r.flags, "changes its input " + t.name + " at the timed sizes");
    at_stage("timed", "run", [&] { draw_input(r.device, id, t, r.f.seeds.at(t.name)); });
  }
  r.device.phase = "timed";
}

// The naive kernel's time: the options', the fixture's, or measured now on the same
// inputs, after the candidate. The naive kernel's own timing is the fixture's.
void time_baseline(const TimedRun &r, const Compiled &plain) {
  TimeRecord *time = r.time;
  if (!r.scheduled && !time->gave_up_ms) r.f.baseline = time->timing;
  if (r.options.baseline) {
    time->baseline = *r.options.baseline;
  } else if (r.f.baseline) {
    time->baseline = *r.f.baseline;
  } else if (!time->gave_up_ms) {
    r.device.phase = "baseline";
    of_reference([&] {
      Bound nb = build_and_bind("timed", plain, r.device, r.f);
      time->baseline = at_stage("timed", "run", [&] { return r.device.time(nb.plan, r.options.timing); });
      r.f.baseline = time->baseline;
    });
  }
}

// At the timed sizes: the candidate runs once from poisoned state and is compared
// with the reference, then is timed from poisoned outputs and compared again; its
// guards are checked after timing, and a kernel body is timed from reset and from
// carried state. The reference (the naive program with f64 sums where the device has
// fp64) and the inputs are the fixture's, made before the candidate's first run
// where it is new; comparisons run on the device (compare.h's DeviceComparer). The
// naive kernel's time is the baseline: given by the options, the fixture's, or
// measured here after the candidate (on NVIDIA's Vulkan driver the kernels timed
// right after the naive ones ran at half the speed or less). The inputs'
// fingerprints are checked after the candidate ("changes its input x at the timed
// sizes"); with a cache they are the next candidate's too, and a changed input is
// written again.
//
// With a lock, what needs no device to itself comes first, shared with other
// evaluations: the programs' builds (the device's disk cache makes the second build
// of each a lookup) and the random inputs. The device is owned from then to the end.
void time_candidate(const frontend::Spec &spec, DeviceClock &device, const EvalOptions &options, uint64_t seed,
                    const Compiled &c, TimeRecord *time, std::vector<std::string> *flags, double *wait_s) {
  const bool body = !options.kernel_source.empty();
  const bool scheduled = !options.schedule.naive() || body;  // not the naive kernel
  device.phase = "timed";
  time->sizes = describe_sizes(c.graph);
  time->cost = graph_cost(c.graph);
  const NaivePrograms naive = naive_programs(spec, c, device, options);
  FixtureInUse fixture;
  take_fixture(c, naive.ref, device, options.cache, seed, &fixture);
  TimedFixture &f = *fixture.f;
  const bool make_ref = scheduled && !f.referenced;
  if (options.lock && make_ref)
    of_reference([&] {
      at_stage("timed", "build", [&] { device.build(naive.ref.compiled.binary); });
      at_stage("timed", "build", [&] { device.build(naive.plain.binary); });
    });
  at_stage("timed", "build", [&] { device.build(c.binary); });  // before the lock, as the check's
  if (options.lock) *wait_s += seconds_in([&] { options.lock->own(); });
  DeviceComparer comparer(device);
  at_stage("timed", "launch", [&] { place_inputs(c, device, comparer, &f); });
  if (make_ref) of_reference([&] { make_reference(naive.ref, naive.plain, device, comparer, &f); });
  if (scheduled) {
    time->reference = f.reference;
    time->allowance = f.allowance;
    time->naive_fraction = f.naive_fraction;
  }
  // The bounds the candidate is held to: the spec's graph's, or what its rewrites left.
  const std::map<std::string, runtime::BufferId> *bounds = &f.bound_ids;
  if (!body && !options.schedule.rewrites.empty()) bounds = &rewritten_bounds(c, device, options.precision, &f);
  device.phase = "timed";
  Bound b = at_stage("timed", "launch", [&] { return bind_to(c, device, f); });
  at_stage("timed", "build",
           [&] { device.build(c.binary); });  // current again: the draws and the reference built theirs
  const TimedRun run{c, device, options, f, comparer, *bounds, b, body, scheduled, time, flags};
  at_stage("timed", "run", [&] { run_and_time(run); });
  check_inputs_kept(run);
  fixture.clean = true;
  time_baseline(run, naive.plain);
}

// What each kernel of a body receives, for Clang's check: the plan's arguments, or
// (the older form) the generated kernels' buffers.
std::vector<frontend::CheckedArg> checked_args(const Compiled &c, const std::vector<std::string> &names,
                                               const std::vector<int64_t> *sizes = nullptr) {
  std::vector<frontend::CheckedArg> out;
  for (size_t i = 0; i < names.size(); ++i) {
    frontend::CheckedArg a;
    a.name = names[i];
    if (sizes && (*sizes)[i] >= 0) {
      a.kind = frontend::CheckedArg::Kind::Size;
    } else {
      const TensorDecl *t = nullptr;
      for (const TensorDecl &b : c.program.buffers)
        if (b.name == names[i]) t = &b;
      a.type = t ? t->type : DType::F32;
      a.kind = !t || t->role == TensorRole::Temp ? frontend::CheckedArg::Kind::Scratch
               : t->role == TensorRole::Input    ? frontend::CheckedArg::Kind::Input
                                                 : frontend::CheckedArg::Kind::Output;
    }
    out.push_back(a);
  }
  return out;
}

// What Clang's check of a body needs besides its text.
struct BodyLaunches {
  std::vector<frontend::CheckedLaunch> launches;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, int64_t>> defines;  // the older form's sizes
};

// Puts the kernel body in place of c's generated code: with its plan, as written,
// over the spec's inputs and outputs and the plan's scratch buffers; without, after
// the sizes as macros. UserError for a plan that does not resolve.
BodyLaunches put_body(Compiled *c, const EvalOptions &options) {
  frontend::KernelBody body = frontend::parse_kernel_body(
      std::make_shared<SourceFile>(SourceFile{options.kernel_label, options.kernel_source}));
  BodyLaunches out;
  if (!body.plan) {
    std::string text = "// sizes, as macros\n";
    for (const SizeBinding &s : c->graph.sizes) {
      text += "#define " + s.name + " " + std::to_string(s.value) + "\n";
      out.defines.emplace_back(s.name, s.value);
    }
    for (const GeneratedKernel &k : c->code.kernels) out.launches.push_back({k.name, checked_args(*c, k.buffers)});
    c->code.source = c->binary.opencl_c = text + "#line 1\n" + options.kernel_source;
  } else {
    c->plan = frontend::resolve_plan(*body.plan, c->graph);
    c->code.source = c->binary.opencl_c = options.kernel_source;
    std::vector<TensorDecl> buffers;
    for (const TensorDecl &t : c->program.buffers)
      if (t.role != TensorRole::Temp) buffers.push_back(t);
    buffers.insert(buffers.end(), c->plan->scratch.begin(), c->plan->scratch.end());
    c->program.buffers = buffers;
    for (const frontend::ResolvedLaunch &l : c->plan->launches) {
      std::vector<std::string> names;
      std::vector<int64_t> sizes;
      for (const frontend::ResolvedArg &a : l.args) {
        names.push_back(a.name);
        sizes.push_back(a.kind == frontend::ResolvedArg::Kind::Size ? a.value : -1);
      }
      out.launches.push_back({l.kernel, checked_args(*c, names, &sizes)});
    }
  }
  for (const TensorDecl &t : c->program.buffers)
    if (t.role == TensorRole::Input) out.inputs.push_back(t.name);
  return out;
}

// The body in place (put_body), checked with Clang first (frontend/body_check.h)
// unless ast holds that check's features already (the timed sizes change no rule):
// a rule it breaks is a UserError, the compile stage's failure. Returns its features.
CandidateFeatures attach_body(Compiled *c, const EvalOptions &options, std::optional<frontend::BodyFeatures> *ast) {
  BodyLaunches b = put_body(c, options);
#ifdef KS_WITH_CLANG
  if (!*ast && options.clang_check) {
    frontend::BodyCheck check = frontend::check_body(options.kernel_source, b.launches, b.inputs, b.defines);
    if (!check.ok()) {
      std::string text = check.text(options.kernel_label);
      text.pop_back();  // the last line's newline
      throw UserError("Clang refuses the body:\n" + text);
    }
    *ast = check.features;
  }
#endif
  return body_features(c->graph, options.kernel_source, c->plan ? &*c->plan : nullptr, *ast ? &**ast : nullptr);
}

}  // namespace

EvalRecord evaluate(const frontend::Spec &spec, const std::string &spec_label, runtime::Device &device,
                    const EvalOptions &options) {
  EvalRecord record;
  record.spec = spec_label;
  record.kernel = spec.name;
  record.device = device.info();
  record.precision = options.precision;
  std::set<std::string> types;
  for (const std::vector<frontend::AstTensor> *tensors : {&spec.inputs, &spec.outputs})
    for (const frontend::AstTensor &t : *tensors)
      if (std::optional<DType> type = parse_dtype(t.dtype); type && is_float(value_type(*type))) types.insert(t.dtype);
  for (const std::string &t : types) record.tensor_types += (record.tensor_types.empty() ? "" : ", ") + t;
  DeviceClock clock(device, &record.phases.device);
  const uint64_t base_seed = options.seed ? *options.seed : fresh_seed();
  const Target target = target_for(device.info());
  CodeFeatures features = code_features(device.info());
  if (options.async_copies_in_order && features.async_copies == AsyncCopies::Refused)
    features.async_copies = AsyncCopies::InOrder;
  if (options.emulate_matrix_units && features.matrix_units == MatrixUnits::Refused)
    features.matrix_units = MatrixUnits::Emulated;
  features.precision = options.precision;
  const bool body = !options.kernel_source.empty();
  // Generated code computes the graph its rewrites left; a body, the spec's graph.
  const bool rewritten = !body && !options.schedule.rewrites.empty();
  if (body && target != Target::OpenCL)
    throw UserError("error: a kernel body is OpenCL C; run it on an OpenCL device (--target opencl)");
  // Other evaluations on the device: checks share it, timing owns it. On a CPU
  // device the compiler shares its cores too, so the whole evaluation holds the lock.
  struct Held {
    DeviceLock *lock;
    ~Held() {
      if (lock) lock->release();
    }
  } held{options.lock};
  if (options.lock && !device.info().gpu) options.lock->share();
  // The candidate's code at some sizes: generated, or the kernel body in its place
  // (read by Clang once: ast).
  std::optional<frontend::BodyFeatures> ast;
  auto candidate = [&](const char *phase, frontend::SizeSet set, const frontend::SizeOverrides &sizes) {
    Compiled c =
        at_stage(phase, "compile", [&] { return compile_spec(spec, set, sizes, options.schedule, target, features); });
    if (body) {
      c.computed = c.graph;
      if (!ast) record.features = body_features(c.graph, options.kernel_source, nullptr, nullptr);  // if refused
      record.features = at_stage(phase, "compile", [&] { return attach_body(&c, options, &ast); });
    } else {
      record.features = program_features(
          c.graph, c.program, static_cast<int>(options.schedule.steps.size() + options.schedule.rewrites.size()),
          static_cast<int64_t>(c.code.source.size()));
    }
    return c;
  };

  auto since = [last = std::chrono::steady_clock::now()]() mutable {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - last).count();
    last = now;
    return s;
  };
  try {
    // Correctness at the check sizes, against the interpreter.
    Compiled c = candidate("check", frontend::SizeSet::Check, options.check_sizes);
    record.phases.compile_s += since();
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
    // The driver's compile is the host's work: made before the lock. An unrolled
    // register tile at the odd check sizes, every access guarded, took NVIDIA's
    // compiler 30 s on the H100; under the lock it kept every other evaluation from
    // timing for as long (bench/results.md).
    at_stage("check", "build", [&] { clock.build(c.binary); });
    if (options.lock) record.phases.wait_s += seconds_in([&] { options.lock->share(); });
    Bound b = at_stage("check", "launch", [&] { return bind(c, clock); });
    at_stage("check", "run", [&] { check_trials(c, rewritten, clock, b, base_seed, options.trials, &record); });
    record.phases.check_s += since();
  } catch (Stopped &stopped) {
    record.check.passed = false;
    record.failure = device_failure(std::move(stopped.failure), device);
    record.phases.check_s += since();
    return record;
  }
  if (!record.hacking_flags.empty() || !options.time || !record.check.passed) return record;
  // On a GPU the timed sizes' builds, too, are made holding no lock (time_candidate).
  if (options.lock && device.info().gpu) options.lock->release();

  TimeRecord time;
  try {
    Compiled c = candidate("timed", frontend::SizeSet::Default, options.sizes);
    record.phases.compile_s += since();
    time_candidate(spec, clock, options, base_seed + 7777, c, &time, &record.hacking_flags, &record.phases.wait_s);
    record.phases.timed_s += since();
  } catch (Stopped &stopped) {
    record.failure = device_failure(std::move(stopped.failure), device);
    record.phases.timed_s += since();
    if (time.timing.batches == 0) return record;  // nothing measured at the timed sizes
  }
  record.time = time;
  return record;
}

bool have_body_check() {
#ifdef KS_WITH_CLANG
  return true;
#else
  return false;
#endif
}

frontend::BodyCheck check_kernel_body(const frontend::Spec &spec, const EvalOptions &options) {
  Compiled c = compile_spec(spec, frontend::SizeSet::Check, options.check_sizes, options.schedule);
  BodyLaunches b = put_body(&c, options);
#ifdef KS_WITH_CLANG
  return frontend::check_body(options.kernel_source, b.launches, b.inputs, b.defines);
#else
  throw UserError("error: this build of ksmith has no Clang (libclang-cpp15-dev) to check kernel bodies with");
#endif
}

std::vector<runtime::Timing> time_side_by_side(const frontend::Spec &spec, const frontend::SizeOverrides &sizes,
                                               const std::vector<Schedule> &schedules, runtime::Device &device,
                                               const runtime::TimingOptions &timing, int rounds, DeviceLock *lock,
                                               Precision precision) {
  struct Held {
    DeviceLock *lock;
    ~Held() {
      if (lock) lock->release();
    }
  } held{lock};
  if (lock) lock->own();
  const Target target = target_for(device.info());
  CodeFeatures features = code_features(device.info());
  features.precision = precision;
  std::vector<Compiled> compiled;
  for (const Schedule &s : schedules)
    compiled.push_back(compile_spec(spec, frontend::SizeSet::Default, sizes, s, target, features));
  std::vector<std::vector<double>> medians(schedules.size());
  // The inputs drawn once for every candidate and round: at KernelBench's sizes a
  // draw is gigabytes (sum_dim's 8.6 GB took a minute a retime when each candidate
  // drew its own each round).
  const uint64_t seed = fresh_seed();
  std::map<std::string, uint64_t> seeds;
  auto time_one = [&](size_t i, int) {
    const Compiled &c = compiled[i];
    Bound b = bind(c, device);
    for (const TensorDecl &t : c.program.buffers) {
      if (t.role != TensorRole::Input) {
        poison(device, b.ids.at(t.name), t);
        continue;
      }
      if (!seeds.count(t.name)) seeds[t.name] = seed + 1000003 * (seeds.size() + 1);
      draw_input(device, b.ids.at(t.name), t, seeds.at(t.name));
    }
    device.build(c.binary);  // after the draws, which build a program of their own
    medians[i].push_back(device.time(b.plan, timing).median_ms);
  };
  // The naive kernels' rounds come after every other's: on NVIDIA's Vulkan driver a
  // kernel timed right after a slow naive kernel ran at a third to a half of its
  // speed (bench/results.md), and in rotation the same candidate would follow it in
  // most rounds.
  std::vector<size_t> scheduled, naive;
  for (size_t i = 0; i < schedules.size(); ++i) (schedules[i].naive() ? naive : scheduled).push_back(i);
  for (const std::vector<size_t> &group : {scheduled, naive})
    for (int round = 0; round < rounds; ++round)
      for (size_t k = 0; k < group.size(); ++k) time_one(group[(k + static_cast<size_t>(round)) % group.size()], round);
  std::vector<runtime::Timing> out;
  for (const std::vector<double> &m : medians) {
    runtime::Summary s = runtime::summarize(m);
    runtime::Timing t;
    t.median_ms = s.median, t.min_ms = s.min, t.max_ms = s.max, t.cv = s.cv;
    t.batches = static_cast<int>(m.size());
    t.method = "side by side";
    out.push_back(t);
  }
  return out;
}

}  // namespace ks
