// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "evolve/evaluation/inputs.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"
#include "ir/interpreter.h"
#include "runtime/device.h"

namespace ks::test {

inline std::shared_ptr<const SourceFile> source(const std::string &text, const std::string &name = "test.ks") {
  return std::make_shared<SourceFile>(SourceFile{name, text});
}

/// Parses and elaborates a spec given as text, at its default sizes.
inline Graph graph_of(const std::string &text, frontend::SizeSet sizes = frontend::SizeSet::Default) {
  return frontend::elaborate(frontend::parse_spec(source(text)), sizes, {});
}

/// The message of the UserError that f throws ("" if it throws none).
template <typename F>
std::string user_error(F &&f) {
  try {
    f();
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

/// How often `what` occurs in text (overlaps counted).
inline int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Whether this machine has a device of api ("opencl", "vulkan").
inline bool has_device(const std::string &api) {
  for (const runtime::DeviceInfo &d : runtime::list_devices())
    if (d.api == api) return true;
  return false;
}

/// What a test without a device of api says when it skips.
inline std::string missing_device(const std::string &api) {
  return api == "vulkan" ? "no Vulkan device on this machine (install mesa-vulkan-drivers for lavapipe)"
                         : "no OpenCL device on this machine (install pocl-opencl-icd)";
}

/// f(api, device) on the first device of each API here (OpenCL, Vulkan); a SKIP line
/// for an API without one.
template <typename F>
void on_each_device(F &&f) {
  for (const std::string api : {"opencl", "vulkan"}) {
    if (!has_device(api)) {
      std::printf("SKIP %s: %s\n", api.c_str(), missing_device(api).c_str());
      continue;
    }
    std::unique_ptr<runtime::Device> device = runtime::open_device("", api);
    f(api, *device);
  }
}

/// The largest difference of b's outputs from a's (the float64 interpreter, random inputs
/// from seed), relative to each output's largest value: two graphs that compute one thing.
inline double output_error(const Graph &a, const Graph &b, uint64_t seed) {
  TensorMap inputs;
  for (const TensorDecl &t : a.tensors)
    if (t.role == TensorRole::Input) inputs[t.name] = to_tensor_data(random_input(t, seed++));
  TensorMap x = interpret(a, inputs), y = interpret(b, inputs);
  double worst = 0;
  for (const TensorDecl &t : a.tensors) {
    if (t.role != TensorRole::Output) continue;
    const std::vector<double> &u = x.at(t.name).values, &v = y.at(t.name).values;
    double scale = 1e-30;
    for (double value : u) scale = std::max(scale, std::fabs(value));
    for (size_t i = 0; i < u.size(); ++i) {
      if (u[i] == v[i]) continue;  // infinities included: a max over nothing
      const double e = std::fabs(u[i] - v[i]) / scale;
      worst = std::isnan(e) ? 1e30 : std::max(worst, e);
    }
  }
  return worst;
}

/// examples/softmax.ks written by hand as a kernel body (tests/adversarial/softmax.cl):
/// honest as it stands; each CHEAT_* macro defined before it makes a cheat of it.
inline std::string honest_softmax_body() {
  return read_source_file(std::string(KS_SOURCE_DIR) + "/tests/adversarial/softmax.cl", "kernel body")->text;
}

/// Every example spec of the repository.
inline std::vector<std::string> example_paths() {
  std::vector<std::string> paths;
  for (const auto &entry : std::filesystem::directory_iterator(std::string(KS_SOURCE_DIR) + "/examples"))
    if (entry.path().extension() == ".ks") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

inline std::string example_name(const testing::TestParamInfo<std::string> &info) {
  return std::filesystem::path(info.param).stem().string();
}

}  // namespace ks::test
