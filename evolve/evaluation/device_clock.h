// Where an evaluation's device time goes: a Device that forwards every call to the
// device it wraps and adds the call's seconds to a tally named by the evaluation's
// current phase and the call ("check.run", "timed.read", "reference.run",
// "compare.run", "timed.time"). The record keeps the tally (EvalRecord::Phases::
// device), the report sums it over a run: the measure issue 33 asked for before any
// change to the protocol.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "runtime/device.h"

namespace ks {

class DeviceClock : public runtime::Device {
 public:
  DeviceClock(runtime::Device &device, std::map<std::string, double> *tally) : device_(device), tally_(tally) {}

  /// What the calls from here on are for: "check", "timed", "reference", "baseline", "compare".
  std::string phase = "check";
  /// The device itself: what holds buffers past this evaluation (a worker's cache).
  runtime::Device &inner() { return device_; }

  const runtime::DeviceInfo &info() const override { return device_.info(); }
  runtime::BufferId allocate(size_t bytes) override {
    return timed("allocate", [&] { return device_.allocate(bytes); });
  }
  void release(runtime::BufferId buffer) override {
    timed("allocate", [&] { device_.release(buffer); });
  }
  std::optional<int64_t> guard_breach(runtime::BufferId buffer) override {
    return timed("guards", [&] { return device_.guard_breach(buffer); });
  }
  size_t live_buffers() const override { return device_.live_buffers(); }
  bool failed() const override { return device_.failed(); }
  void write(runtime::BufferId buffer, const void *data, size_t bytes) override {
    timed("write", [&] { device_.write(buffer, data, bytes); });
  }
  void read(runtime::BufferId buffer, void *data, size_t bytes) override {
    timed("read", [&] { device_.read(buffer, data, bytes); });
  }
  void fill(runtime::BufferId buffer, uint32_t pattern) override {
    timed("write", [&] { device_.fill(buffer, pattern); });
  }
  void build(const runtime::DeviceProgram &program) override {
    timed("build", [&] { device_.build(program); });
  }
  void run(const runtime::LaunchPlan &plan) override {
    timed("run", [&] { device_.run(plan); });
  }
  runtime::Timing time(const runtime::LaunchPlan &plan, const runtime::TimingOptions &options) override {
    return timed("time", [&] { return device_.time(plan, options); });
  }

 private:
  runtime::Device &device_;
  std::map<std::string, double> *tally_;

  template <typename F>
  auto timed(const char *call, F f) -> decltype(f()) {
    struct Add {
      DeviceClock *self;
      const char *call;
      std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
      ~Add() {
        self->tally_->operator[](self->phase + "." + call) +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    } add{this, call};
    return f();
  }
};

}  // namespace ks
