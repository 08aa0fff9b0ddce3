// ksmith interpret SPEC [--size N=V]... [--check-sizes] [--seed S] [--inputs IN.json] [-o OUT.json]
// The reference interpreter (float64) on one set of inputs: the spec's own random
// inputs (the evaluator's, drawn in float32), or the values of IN.json; the inputs
// and outputs as JSON. What `ksmith import` checks an imported spec against its
// PyTorch module with, and a way to see what a spec means on values of one's own.
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "evolve/evaluation/inputs.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct InterpretOptions {
  std::string spec, inputs, output, dtype;
  std::vector<std::string> sizes;
  bool check_sizes = false;
  uint64_t seed = 1;
};

nlohmann::json tensor_json(const TensorData &t) {
  return {{"dtype", dtype_name(t.type)}, {"shape", t.shape}, {"values", t.values}};
}

// One input from IN.json, checked against its declaration: the shape exactly, the
// values finite, integers whole and inside their declared range (the interpreter
// indexes with them).
TensorData input_from_json(const TensorDecl &d, const nlohmann::json &j, const std::string &where) {
  auto fail = [&](const std::string &why) { throw UserError("error: " + where + ": input '" + d.name + "' " + why); };
  if (!j.is_object() || !j.contains("values") || !j["values"].is_array())
    fail("needs {\"shape\": [...], \"values\": [...]}");
  TensorData t;
  t.type = d.type;
  t.shape = d.shape;
  if (j.contains("shape") && j["shape"] != nlohmann::json(d.shape))
    fail("has shape " + j["shape"].dump() + " but the spec's is " + nlohmann::json(d.shape).dump());
  const nlohmann::json &values = j["values"];
  if (static_cast<int64_t>(values.size()) != d.numel())
    fail("has " + std::to_string(values.size()) + " values but its shape holds " + std::to_string(d.numel()));
  t.values.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number()) fail("value " + std::to_string(i) + " is not a number");
    double v = values[i].get<double>();
    if (!std::isfinite(v)) fail("value " + std::to_string(i) + " is not finite");
    if (is_half(d.type)) v = round_to(d.type, v);  // what the tensor can hold
    if (is_int(d.type)) {
      if (v != std::floor(v)) fail("holds integers, but value " + std::to_string(i) + " is " + values[i].dump());
      if (d.range && (v < d.range->lo || v >= d.range->hi))
        fail("value " + std::to_string(i) + " is " + values[i].dump() + ", outside its range " +
             nlohmann::json(d.range->lo).dump() + ".." + nlohmann::json(d.range->hi).dump());
    }
    t.values.push_back(v);
  }
  return t;
}

int interpret_spec(const InterpretOptions &o) {
  frontend::Spec spec = frontend::load_spec(o.spec, frontend::parse_spec_dtype(o.dtype));
  Graph graph = frontend::elaborate(spec, o.check_sizes ? frontend::SizeSet::Check : frontend::SizeSet::Default,
                                    size_overrides(o.sizes, "--size"));
  nlohmann::json given;
  if (!o.inputs.empty()) {
    auto file = read_source_file(o.inputs, "inputs file");
    given = nlohmann::json::parse(file->text, nullptr, false);
    if (given.is_discarded() || !given.is_object())
      throw UserError("error: " + o.inputs + ": not a JSON object of inputs");
    if (given.contains("inputs")) given = given["inputs"];  // a previous output, read back
    for (const auto &[name, value] : given.items())
      if (!graph.find_tensor(name) || graph.find_tensor(name)->role != TensorRole::Input)
        throw UserError("error: " + o.inputs + ": '" + name + "' is not an input of " + graph.name);
  }
  TensorMap inputs;
  uint64_t n = 0;
  for (const TensorDecl &d : graph.tensors) {
    if (d.role != TensorRole::Input) continue;
    ++n;  // the evaluator's seeds, so that --seed S gives the inputs `ksmith run --seed S` checks with
    if (given.is_null())
      inputs[d.name] = to_tensor_data(random_input(d, o.seed + 1000003 * n));
    else if (given.contains(d.name))
      inputs[d.name] = input_from_json(d, given[d.name], o.inputs);
    else
      throw UserError("error: " + o.inputs + ": input '" + d.name + "' is missing");
  }
  TensorMap all = interpret(graph, inputs);
  nlohmann::json out = {{"kernel", graph.name}, {"sizes", nlohmann::json::object()}};
  for (const SizeBinding &s : graph.sizes) out["sizes"][s.name] = s.value;
  for (const TensorDecl &d : graph.tensors)
    if (d.role == TensorRole::Input || d.role == TensorRole::Output)
      out[d.role == TensorRole::Input ? "inputs" : "outputs"][d.name] = tensor_json(all.at(d.name));
  std::string text = out.dump() + "\n";
  write_output(o.output, text);
  return 0;
}

}  // namespace

Command add_interpret(CLI::App &app) {
  auto o = std::make_shared<InterpretOptions>();
  CLI::App *command = app.add_subcommand(
      "interpret", "Run the reference interpreter (float64) on one set of inputs; inputs and outputs as JSON");
  command->add_option("spec", o->spec, "The .ks spec")->required();
  command->add_option("--size", o->sizes, "Override a size: NAME=VALUE");
  command->add_flag("--check-sizes", o->check_sizes, "Start from the spec's check sizes rather than its defaults");
  command->add_option("--seed", o->seed, "Seed of the random inputs (as `ksmith run --seed`; default 1)");
  command->add_option("--inputs", o->inputs,
                      "Inputs as JSON: {\"NAME\": {\"shape\": [...], \"values\": [...]}, ...} (or an output of this "
                      "command); default: the spec's random inputs");
  add_dtype_option(command, &o->dtype);
  command->add_option("-o,--output", o->output, "Write the JSON to FILE instead of standard output");
  return {command, [o] { return interpret_spec(*o); }};
}

}  // namespace ks::cli
