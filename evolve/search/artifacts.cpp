// A run's outputs, from its database.
#include "evolve/search/artifacts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "evolve/evaluation/compile.h"
#include "evolve/search/config.h"
#include "evolve/search/cost_model.h"
#include "evolve/search/report.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

namespace ks {

namespace {

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The run's best: the candidate its state names, else the fastest correct one.
const CandidateRow *best_candidate(const std::vector<CandidateRow> &candidates, const RunRow &run) {
  nlohmann::json state = nlohmann::json::parse(run.state.empty() ? "{}" : run.state, nullptr, false);
  std::string id = state.is_object() ? state.value("best", std::string()) : "";
  const CandidateRow *best = nullptr;
  for (const CandidateRow &c : candidates) {
    if (c.id == id && c.status == CandidateStatus::Correct) return &c;
    if (c.status == CandidateStatus::Correct && (!best || speedup_of(c) > speedup_of(*best))) best = &c;
  }
  return best;
}

std::string time_text(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return text;
}

void write(const std::filesystem::path &path, const std::string &text) { write_text_file(path.string(), text); }

// What the report shows of a candidate: its schedule, or its kernel body's text.
std::string code_of(const CandidateRow &c) { return c.body.empty() ? c.schedule : c.body; }

// How well the cost model's predictions, made before each candidate it chose was
// measured (so on rows it had not trained on), ranked what the device then measured:
// Spearman's correlation with the first measured speedup (0 where not correct).
nlohmann::json cost_model_quality(const std::vector<CandidateRow> &candidates, const std::string &kind) {
  std::vector<double> predicted, measured;
  for (const CandidateRow &c : candidates)
    if (!std::isnan(c.predicted) && c.eval_seq > 0) {
      predicted.push_back(c.predicted);
      measured.push_back(c.status == CandidateStatus::Correct ? c.speedup : 0);
    }
  nlohmann::json j = {{"kind", kind}, {"predicted", predicted.size()}};
  j["rank_correlation"] = predicted.size() >= 3 ? nlohmann::json(rank_correlation(predicted, measured)) : nullptr;
  return j;
}

// The run's model calls in total (the LLM proposers'), none where it made none.
nlohmann::json model_call_summary(RunDatabase &db, int64_t run) {
  const ModelCallTotals t = db.model_call_totals(run);
  if (t.calls == 0) return nullptr;
  return {{"calls", t.calls},
          {"proposed", t.proposed},
          {"prompt_tokens", t.prompt_tokens},
          {"completion_tokens", t.completion_tokens},
          {"latency_s", t.latency_s},
          {"evaluated", t.evaluated},
          {"correct", t.correct},
          {"failed_to_compile", t.failed_to_compile},
          {"duplicates", t.duplicates},
          {"refused", t.refused}};
}

// The summary of a record a training step keeps: verdict and time, no more.
nlohmann::json record_summary(const CandidateRow &c) {
  nlohmann::json j = {{"status", status_name(c.status)}, {"verdict", c.verdict}};
  if (c.status == CandidateStatus::Correct) j.update({{"speedup", speedup_of(c)}, {"median_ms", c.median_ms}});
  nlohmann::json record = nlohmann::json::parse(c.record.empty() ? "{}" : c.record, nullptr, false);
  if (record.is_object() && record.contains("features")) j["features"] = record["features"];
  return j;
}

// The report's "run": the run's row, with its configuration's budget, proposers and seed.
nlohmann::json run_entry(const RunRow &run, const EvolveConfig &config, const std::vector<CandidateRow> &candidates) {
  int64_t evaluations = 0;
  for (const CandidateRow &c : candidates) evaluations += c.eval_seq > 0;
  return {{"id", run.id},
          {"spec", run.spec_path},
          {"kernel", run.kernel},
          {"device", run.device},
          {"target", run.target},
          {"precision", config.precision},
          {"sizes", run.sizes},
          {"status", run.status},
          {"message", run.message},
          {"started", time_text(run.started)},
          {"seconds", run.seconds},
          {"evaluations", evaluations},
          {"budget", config.budget},
          {"proposers", config.proposers},
          {"seed", config.seed},
          {"baseline_ms", run.baseline_ms}};
}

// The grid's features, with their bins' edges.
nlohmann::json feature_axes(const EvolveConfig &config) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string &f : config.features) out.push_back({{"name", f}, {"edges", config.edges(f)}});
  return out;
}

// The evaluations in order; the refusals (no device time, no eval_seq) left out.
std::vector<const CandidateRow *> in_evaluation_order(const std::vector<CandidateRow> &candidates) {
  std::vector<const CandidateRow *> ordered;
  for (const CandidateRow &c : candidates)
    if (c.eval_seq > 0) ordered.push_back(&c);
  std::sort(ordered.begin(), ordered.end(),
            [](const CandidateRow *a, const CandidateRow *b) { return a->eval_seq < b->eval_seq; });
  return ordered;
}

// Where the device's time went (each record's seconds.device), summed over the run,
// and each evaluation's total without the driver's builds.
struct DeviceTime {
  std::map<std::string, double> by_phase;
  std::vector<double> each;

  void add(const nlohmann::json &record) {
    if (!record.is_object() || !record.contains("seconds") || !record["seconds"].is_object() ||
        !record["seconds"].contains("device") || !record["seconds"]["device"].is_object())
      return;
    double total = 0;
    for (const auto &[phase, seconds] : record["seconds"]["device"].items()) {
      if (!seconds.is_number()) continue;
      by_phase[phase] += seconds.get<double>();
      if (!phase.ends_with(".build")) total += seconds.get<double>();
    }
    each.push_back(total);
  }

  nlohmann::json summary() {
    std::sort(each.begin(), each.end());
    return {{"by_phase", by_phase}, {"evaluations", each.size()}, {"median_s", each[each.size() / 2]}};
  }
};

// One evaluation: who proposed it and what came of it; a correct one's speedup and
// its cell of the grid (from its record's features).
nlohmann::json evaluation_entry(const CandidateRow &c, const nlohmann::json &record, const EvolveConfig &config) {
  nlohmann::json e = {{"seq", c.eval_seq},
                      {"id", c.id},
                      {"island", c.island},
                      {"proposer", c.proposer},
                      {"iteration", c.iteration},
                      {"parent", c.parent},
                      {"status", status_name(c.status)},
                      {"verdict", c.verdict},
                      {"schedule", code_of(c)},
                      {"seconds", c.seconds},
                      {"note", c.note}};
  e["predicted"] = std::isnan(c.predicted) ? nlohmann::json() : nlohmann::json(c.predicted);
  if (c.status == CandidateStatus::Correct) {
    e["speedup"] = speedup_of(c);
    e["median_ms"] = c.median_ms;
    if (record.is_object() && record.contains("features")) {
      const nlohmann::json &f = record["features"];
      e["cell"] = {bin_of(f.value(config.features[0], 0.0), config.edges(config.features[0])),
                   bin_of(f.value(config.features[1], 0.0), config.edges(config.features[1]))};
    }
  } else {
    e["speedup"] = nullptr;
    e["median_ms"] = nullptr;
    e["cell"] = nullptr;
  }
  return e;
}

// The candidates that failed, by status: how many, and the first one's verdict.
nlohmann::json failure_summary(const std::vector<CandidateRow> &candidates) {
  std::map<std::string, std::pair<int64_t, std::string>> failures;
  for (const CandidateRow &c : candidates)
    if (c.status != CandidateStatus::Correct && c.status != CandidateStatus::Pending) {
      auto &[count, example] = failures[status_name(c.status)];
      if (count++ == 0) example = c.verdict;
    }
  nlohmann::json out = nlohmann::json::array();
  for (const auto &[category, entry] : failures)
    out.push_back({{"category", category}, {"count", entry.first}, {"example", entry.second}});
  return out;
}

// Each island's elites, by their cell of the grid.
nlohmann::json island_grids(RunDatabase &db, int64_t run_id, const EvolveConfig &config,
                            const std::map<std::string, const CandidateRow *> &by_id) {
  nlohmann::json out = nlohmann::json::array();
  for (int i = 0; i < config.islands; ++i) {
    std::vector<std::pair<Elite, Cell>> members;
    std::map<Cell, Elite> grid;
    db.load_island(run_id, i, &members, &grid);
    nlohmann::json cells = nlohmann::json::array();
    for (const auto &[cell, elite] : grid)
      cells.push_back({{"cell", {cell.a, cell.b}},
                       {"id", elite.id},
                       {"speedup", elite.speedup},
                       {"migrant", elite.migrant},
                       {"schedule", by_id.count(elite.id) ? code_of(*by_id.at(elite.id)) : ""}});
    out.push_back({{"island", i}, {"cells", cells}});
  }
  return out;
}

nlohmann::json best_entry(const CandidateRow &best) {
  nlohmann::json j = {{"id", best.id}, {"speedup", best.speedup}, {"schedule", code_of(best)}};
  if (best.retimed_speedup > 0) j.update({{"retimed_speedup", best.retimed_speedup}, {"retimed_cv", best.retimed_cv}});
  return j;
}

// One step of the lineage: the schedule's lines it added to its parent's (before,
// none for the first step) and removed, and its gain over it.
nlohmann::json lineage_step(const CandidateRow &c, const CandidateRow *before) {
  std::vector<std::string> now = lines_of(c.schedule), was = before ? lines_of(before->schedule) : now;
  nlohmann::json added = nlohmann::json::array(), removed = nlohmann::json::array();
  if (before) {
    for (const std::string &l : now)
      if (std::find(was.begin(), was.end(), l) == was.end()) added.push_back(l);
    for (const std::string &l : was)
      if (std::find(now.begin(), now.end(), l) == now.end()) removed.push_back(l);
  }
  nlohmann::json step = {{"id", c.id},         {"speedup", speedup_of(c)}, {"schedule", code_of(c)}, {"added", added},
                         {"removed", removed}, {"proposer", c.proposer},   {"note", c.note}};
  if (before && speedup_of(*before) > 0) step["gain"] = speedup_of(c) / speedup_of(*before);
  return step;
}

// From the best back through its parents to the naive kernel, then oldest first.
nlohmann::json lineage_of(const CandidateRow &best, const std::map<std::string, const CandidateRow *> &by_id) {
  std::vector<const CandidateRow *> chain;
  std::set<std::string> seen;
  for (const CandidateRow *c = &best; c && seen.insert(c->id).second;
       c = by_id.count(c->parent) ? by_id.at(c->parent) : nullptr)
    chain.push_back(c);
  std::reverse(chain.begin(), chain.end());
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < chain.size(); ++i) out.push_back(lineage_step(*chain[i], i ? chain[i - 1] : nullptr));
  return out;
}

// The candidates timed again at the end, fastest first.
nlohmann::json retimed_list(const std::vector<CandidateRow> &candidates) {
  std::vector<const CandidateRow *> retimed;
  for (const CandidateRow &c : candidates)
    if (c.retimed_speedup > 0) retimed.push_back(&c);
  std::sort(retimed.begin(), retimed.end(),
            [](const CandidateRow *a, const CandidateRow *b) { return a->retimed_speedup > b->retimed_speedup; });
  nlohmann::json out = nlohmann::json::array();
  for (const CandidateRow *c : retimed)
    out.push_back({{"id", c->id},
                   {"speedup", c->speedup},
                   {"retimed_speedup", c->retimed_speedup},
                   {"retimed_cv", c->retimed_cv},
                   {"median_ms", c->median_ms}});
  return out;
}

}  // namespace

nlohmann::json report_data(RunDatabase &db, int64_t run_id) {
  std::optional<RunRow> run = db.run(run_id);
  if (!run) throw UserError("error: no run " + std::to_string(run_id) + " in '" + db.path() + "'");
  std::vector<CandidateRow> candidates = db.candidates(run_id);
  EvolveConfig config = parse_config(run->config, db.path());
  std::map<std::string, const CandidateRow *> by_id;
  for (const CandidateRow &c : candidates) by_id[c.id] = &c;
  nlohmann::json data;
  data["run"] = run_entry(*run, config, candidates);
  data["cost_model"] = cost_model_quality(candidates, config.cost_model);
  data["model_calls"] = model_call_summary(db, run_id);
  data["features"] = feature_axes(config);
  data["evaluations"] = nlohmann::json::array();
  DeviceTime device_time;
  for (const CandidateRow *c : in_evaluation_order(candidates)) {
    const nlohmann::json record = nlohmann::json::parse(c->record.empty() ? "{}" : c->record, nullptr, false);
    device_time.add(record);
    data["evaluations"].push_back(evaluation_entry(*c, record, config));
  }
  if (!device_time.each.empty()) data["device_time"] = device_time.summary();
  data["failures"] = failure_summary(candidates);
  data["islands"] = island_grids(db, run_id, config, by_id);
  const CandidateRow *best = best_candidate(candidates, *run);
  data["best"] = best ? best_entry(*best) : nlohmann::json(nullptr);
  data["lineage"] = best ? lineage_of(*best, by_id) : nlohmann::json::array();
  data["retimed"] = retimed_list(candidates);
  return data;
}

namespace {

// best.sched and the code it gives the target: best.cl, or best.glsl and SPIR-V.
void write_best_schedule(const RunRow &run, const EvolveConfig &config, const CandidateRow &best,
                         const std::filesystem::path &out, const std::string &about) {
  write(out / "best.sched", "# " + about + best.schedule);
  frontend::Spec spec = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{run.spec_path, run.spec_text}));
  frontend::SizeOverrides sizes;
  if (!config.sizes.empty()) frontend::parse_size_assignments(config.sizes, &sizes);
  Schedule schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{"best.sched", best.schedule}));
  const Target target = run.target == "spirv" ? Target::SPIRV : Target::OpenCL;
  // The code for the device the best ran on: its record says whether that had cp.async
  // and matrix units.
  CodeFeatures features;
  const nlohmann::json record = nlohmann::json::parse(best.record, nullptr, false);
  const bool has_device = record.is_object() && record.contains("device") && record["device"].is_object();
  if (has_device && record["device"].value("async_copies", false)) features.async_copies = AsyncCopies::Ptx;
  if (has_device && record["device"].value("matrix_units", false)) features.matrix_units = native_matrix_units(target);
  features.async_copies_missing = run.device + " (the run's device) did not offer";
  features.precision = *parse_precision(config.precision);  // checked when the configuration was read
  Compiled c = compile_spec(spec, frontend::SizeSet::Default, sizes, schedule, target, features);
  if (target == Target::OpenCL) {
    write(out / "best.cl", c.code.source);
  } else {
    write(out / "best.glsl", c.code.source);
    for (const runtime::SpirvKernel &k : c.binary.spirv)
      write(out / ("best." + k.name + ".spv"),
            std::string(reinterpret_cast<const char *>(k.words.data()), k.words.size() * 4));
  }
}

}  // namespace

std::string write_artifacts(RunDatabase &db, int64_t run_id, const std::string &dir) {
  std::filesystem::create_directories(dir);
  std::optional<RunRow> run = db.run(run_id);
  if (!run) throw UserError("error: no run " + std::to_string(run_id) + " in '" + db.path() + "'");
  std::vector<CandidateRow> candidates = db.candidates(run_id);
  const std::filesystem::path out(dir);
  if (const CandidateRow *best = best_candidate(candidates, *run)) {
    int64_t evaluations = 0;
    std::string started;
    for (const CandidateRow &c : candidates) {
      evaluations += c.eval_seq > 0;
      if (c.proposer == "start") started += "; started from " + c.note;
    }
    char speedup[32];
    std::snprintf(speedup, sizeof speedup, "%.3gx", speedup_of(*best));
    const EvolveConfig config = parse_config(run->config, db.path());
    const nlohmann::json record = nlohmann::json::parse(best->record, nullptr, false);
    const std::string types = record.is_object() ? record.value("tensor_types", std::string()) : "";
    const std::string about = run->kernel + " at " + run->sizes + ": " + speedup + " over the naive kernel on " +
                              run->device + " (" + run->target + ", " + (types.empty() ? "" : types + " tensors, ") +
                              config.precision + "), found by ksmith evolve (run " + std::to_string(run->id) + ", " +
                              std::to_string(evaluations) + " evaluations, " + best->proposer + started + ")\n";
    write(out / "best.json", best->record);
    if (!best->body.empty())  // a kernel body is its own code (ksmith run SPEC --kernel best.cl)
      write(out / "best.cl", "// " + about + best->body);
    else
      write_best_schedule(*run, config, *best, out, about);
  }
  std::filesystem::path report = out / "report.html";
  write(report, render_report(report_data(db, run_id)));
  return report.string();
}

std::string export_steps(RunDatabase &db, const ExportOptions &options) {
  std::ostringstream out;
  for (const RunRow &run : db.runs()) {
    std::vector<CandidateRow> candidates = db.candidates(run.id);
    std::map<std::string, const CandidateRow *> by_id;
    for (const CandidateRow &c : candidates) by_id[c.id] = &c;
    std::vector<const CandidateRow *> steps;
    for (const CandidateRow &c : candidates)
      if (!c.parent.empty() && by_id.count(c.parent) && c.status != CandidateStatus::Pending) steps.push_back(&c);
    std::sort(steps.begin(), steps.end(), [](const CandidateRow *a, const CandidateRow *b) { return a->seq < b->seq; });
    for (const CandidateRow *child : steps) {
      const CandidateRow &parent = *by_id.at(child->parent);
      std::optional<double> gain;
      if (child->status == CandidateStatus::Correct && speedup_of(parent) > 0)
        gain = speedup_of(*child) / speedup_of(parent);
      if (options.best_steps && (!gain || *gain < options.min_gain)) continue;
      nlohmann::json line = {{"run", run.id},
                             {"spec", run.spec_path},
                             {"kernel", run.kernel},
                             {"sizes", run.sizes},
                             {"device", run.device},
                             {"proposer", child->proposer},
                             {"change", child->note},
                             {"parent",
                              {{"id", parent.id},
                               {"schedule", parent.schedule},
                               {"body", parent.body},
                               {"record", record_summary(parent)}}},
                             {"child",
                              {{"id", child->id},
                               {"schedule", child->schedule},
                               {"body", child->body},
                               {"record", record_summary(*child)}}},
                             {"gain", gain ? nlohmann::json(*gain) : nlohmann::json()}};
      out << line.dump() << "\n";
    }
  }
  return out.str();
}

nlohmann::json run_summary(RunDatabase &db, const RunRow &run) {
  std::vector<CandidateRow> candidates = db.candidates(run.id);
  std::map<std::string, int64_t> by_status;
  int64_t evaluated = 0;
  for (const CandidateRow &c : candidates) {
    ++by_status[status_name(c.status)];
    evaluated += c.eval_seq > 0;
  }
  nlohmann::json j = {{"run", run.id},           {"spec", run.spec_path},  {"kernel", run.kernel},
                      {"device", run.device},    {"target", run.target},   {"sizes", run.sizes},
                      {"status", run.status},    {"message", run.message}, {"evaluations", evaluated},
                      {"candidates", by_status}, {"seconds", run.seconds}, {"started", time_text(run.started)}};
  const EvolveConfig config = parse_config(run.config, db.path());
  j["precision"] = config.precision;
  j["cost_model"] = cost_model_quality(candidates, config.cost_model);
  j["model_calls"] = model_call_summary(db, run.id);
  if (const CandidateRow *best = best_candidate(candidates, run)) {
    j["best"] = {{"id", best->id},
                 {"speedup", speedup_of(*best)},
                 {"retimed", best->retimed_speedup > 0},
                 {"schedule", best->schedule}};
  }
  return j;
}

}  // namespace ks
