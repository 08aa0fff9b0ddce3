// ksmith rewrite SPEC [--size N=V]... [--json] [-o FILE]
// The graph rewrites that make a spec cheaper (passes/rewrite.h's simplifying_rewrites),
// as the schedule lines that apply them: a schedule to start from, or to read what
// the search's sketches will rewrite; then, commented out, those that fuse stages
// without cutting work (fusing_rewrites) with the temporaries' bytes they save.
#include "passes/rewrite.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/parser.h"
#include "ir/cost.h"
#include "ir/printer.h"
#include "tools/cli.h"

namespace ks::cli {

namespace {

struct RewriteOptions {
  std::string spec, output;
  std::vector<std::string> sizes;
  bool json = false;
};

int rewrite(const RewriteOptions &o) {
  frontend::Spec spec = frontend::load_spec(o.spec);
  Graph graph = frontend::elaborate(spec, frontend::SizeSet::Default, size_overrides(o.sizes, "--size"));
  std::vector<Rewrite> steps = simplifying_rewrites(graph);
  Schedule schedule;
  schedule.rewrites = steps;
  const Graph rewritten = rewritten_graph(graph, schedule);
  const double before = graph_work(graph), after = graph_work(rewritten);
  const std::vector<Fusion> fusions = fusing_rewrites(rewritten);
  if (o.json) {
    nlohmann::json j;
    j["spec"] = o.spec;
    j["work_before"] = before;
    j["work_after"] = after;
    j["steps"] = nlohmann::json::array();
    for (const Rewrite &r : steps) j["steps"].push_back({{"rule", rewrite_name(r.kind)}, {"stage", r.stage}});
    j["fusing"] = nlohmann::json::array();
    for (const Fusion &f : fusions)
      j["fusing"].push_back({{"rule", rewrite_name(f.step.kind)},
                             {"stage", f.step.stage},
                             {"temporary_bytes_before", f.bytes_before},
                             {"temporary_bytes_after", f.bytes_after}});
    j["graph"] = print_graph(rewritten);
    write_output(o.output, j.dump(2) + "\n");
    return 0;
  }
  char header[200];
  std::snprintf(header, sizeof header, "# %s: the naive kernels' work %.3g -> %.3g (graph_work, %.3gx less)\n",
                graph.name.c_str(), before, after, before / after);
  std::string text = header;
  if (steps.empty()) text += "# no rewrite makes it cheaper\n";
  text += print_schedule(schedule);
  // Commented out: they cut no work, and whether they pay depends on the device (the
  // search's sketches draw them on a GPU); a user uncomments the one to try.
  if (!fusions.empty())
    text += "# rewrites that fuse stages without cutting work, and the temporaries they keep out of memory:\n";
  for (const Fusion &f : fusions)
    text += "# " + print_rewrite(f.step) + "    (temporaries " + human_bytes(static_cast<uint64_t>(f.bytes_before)) +
            " -> " + human_bytes(static_cast<uint64_t>(f.bytes_after)) + " written and read)\n";
  write_output(o.output, text);
  return 0;
}

}  // namespace

Command add_rewrite(CLI::App &app) {
  auto o = std::make_shared<RewriteOptions>();
  CLI::App *command = app.add_subcommand(
      "rewrite", "Print the graph rewrites that make a spec cheaper, as schedule lines, and those that fuse stages");
  command->add_option("spec", o->spec, "The .ks spec")->required();
  command->add_option("--size", o->sizes, "Override sizes: N=64,K=32 (repeatable)");
  command->add_flag("--json", o->json,
                    "Print the steps, the work before and after, the fusing rewrites and the rewritten graph as JSON");
  command->add_option("-o,--output", o->output, "Write to FILE instead of standard output");
  return {command, [o] { return rewrite(*o); }};
}

}  // namespace ks::cli
