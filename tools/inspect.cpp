// ksmith inspect SPEC [--target opencl|spirv] [--schedule FILE] [--size N=V]...
//                     [--print-after-all | --print-after=NAME | --print-changed] [--time-passes]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "codegen/glsl.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "passes/canonical.h"
#include "passes/pipeline.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct InspectOptions {
  std::string spec, schedule, target;
  std::vector<std::string> sizes;
  bool all = false, changed = false, time_passes = false;
  std::string after;  // a pass name; "schedule" matches every schedule step
};

// The passes --print-after names, in the order they run: the front end's, the
// pipeline's (passes/pipeline.h), the code generator.
std::vector<std::string> pass_names() {
  std::vector<std::string> out{"elaborate", "canonicalize", "rewrite", "lower", "schedule"};
  for (const std::string &name : finishing_pass_names()) out.push_back(name);
  out.push_back("codegen");
  return out;
}

std::string pass_list() {
  std::string out;
  for (const std::string &p : pass_names()) out += (out.empty() ? "" : ", ") + p;
  return out;
}

int inspect(const InspectOptions &o) {
  const std::vector<std::string> passes = pass_names();
  if (!o.after.empty() && std::find(passes.begin(), passes.end(), o.after) == passes.end())
    throw UserError("error: --print-after: unknown pass '" + o.after + "'; passes are " + pass_list());
  frontend::Spec spec = frontend::load_spec(o.spec);
  Schedule schedule = schedule_from(o.schedule);
  Graph graph = frontend::elaborate(spec, frontend::SizeSet::Default, size_overrides(o.sizes, "--size"));
  bool print_all = o.all || (!o.changed && o.after.empty());
  if (print_all || o.changed || o.after == "elaborate")
    std::cout << "// ----- after elaborate (Graph IR) -----\n" << print_graph(graph) << "\n";
  std::string previous = print_graph(graph);
  std::vector<std::pair<std::string, double>> times;
  // canonicalize is a view, printed where asked: the form the rewrite rules match,
  // of the spec's graph and of each rewrite's (the program computes the spelling).
  auto canonicalized = [&](const Graph &g) {
    if (o.after != "canonicalize") return;
    std::vector<std::string> notes;
    const std::string text = print_graph(canonical_graph(g, &notes));
    std::cout << "// ----- after canonicalize (Graph IR: the form the rewrite rules match) -----\n";
    for (const std::string &note : notes) std::cout << "// note: " << note << "\n";
    std::cout << text << "\n";
  };
  canonicalized(graph);
  // A pass's IR, printed where the flags ask for it ("schedule" and "rewrite" match
  // each of their steps).
  auto show = [&](const std::string &pass, const std::string &text, const char *which) {
    bool matches = pass == o.after || (o.after == "schedule" && pass.rfind("schedule: ", 0) == 0) ||
                   (o.after == "rewrite" && pass.rfind("rewrite ", 0) == 0);
    if (print_all || matches || (o.changed && text != previous))
      std::cout << "// ----- after " << pass << which << " -----\n" << text << "\n";
    previous = text;
  };
  Program program = run_pipeline(
      graph, schedule,
      [&](const std::string &pass, const Program &p, double seconds) {
        times.push_back({pass, seconds});
        show(pass, print_program(p), "");
      },
      [&](const std::string &pass, const Graph &g, double seconds) {
        times.push_back({pass, seconds});
        show(pass, print_graph(g), " (Graph IR)");
        canonicalized(g);
      });
  // Code generation is the last stage, printed when a target is named or asked for.
  std::optional<Target> target = parse_target(o.target);
  if (target || o.after == "codegen") {
    auto start = std::chrono::steady_clock::now();
    GeneratedProgram code = target == Target::SPIRV ? generate_glsl(program) : generate_opencl_c(program);
    times.push_back({"codegen", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    if (print_all || o.changed || o.after == "codegen")
      std::cout << "// ----- after codegen (" << (target == Target::SPIRV ? "GLSL" : "OpenCL C") << ") -----\n"
                << code.source;
  }
  if (o.time_passes) {
    std::fprintf(stderr, "%-48s %10s\n", "pass", "ms");
    for (const auto &[pass, seconds] : times) std::fprintf(stderr, "%-48s %10.3f\n", pass.c_str(), seconds * 1e3);
  }
  return 0;
}

}  // namespace

Command add_inspect(CLI::App &app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App *command = app.add_subcommand("inspect", "Print the IR after each pass");
  add_spec_options(command, &o->spec, &o->schedule, &o->sizes);
  add_target_option(command, &o->target);
  auto *all = command->add_flag("--print-after-all", o->all, "Print the IR after every pass (default)");
  auto *after = command->add_option(
      "--print-after", o->after,
      "Print the IR after one pass: " + pass_list() + " (canonicalize: the form the rewrite rules match)");
  auto *changed = command->add_flag("--print-changed", o->changed, "Print the IR after passes that change it");
  all->excludes(after)->excludes(changed);
  after->excludes(changed);
  command->add_flag("--time-passes", o->time_passes, "Print each pass's time to standard error");
  return {command, [o] { return inspect(*o); }};
}

}  // namespace ks::cli
