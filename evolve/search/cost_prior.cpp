#include "evolve/search/cost_prior.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "evolve/search/config.h"
#include "evolve/search/cost_features.h"
#include "evolve/search/genome.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

namespace ks {

namespace {

// A run's spec at its timed sizes.
Graph graph_of(const std::string &spec_path, const std::string &spec_text, const std::string &overrides) {
  frontend::Spec spec = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{spec_path, spec_text}));
  frontend::SizeOverrides sizes;
  if (!overrides.empty()) frontend::parse_size_assignments(overrides, &sizes);
  return frontend::elaborate(spec, frontend::SizeSet::Default, sizes);
}

}  // namespace

std::optional<std::vector<float>> schedule_features(const Graph &graph, const std::string &schedule) {
  try {
    Replayed r = replay(graph, parse_schedule(std::make_shared<SourceFile>(SourceFile{"schedule", schedule})));
    if (r.program) return cost_features(*r.program);
  } catch (const UserError &) {
    // A schedule of an older build that this one parses no longer.
  }
  return std::nullopt;
}

std::string cost_device(const std::string &name, const std::string &target) { return name + " (" + target + ")"; }

float cost_label(bool timed, double speedup, double best) {
  return timed && best > 0 ? static_cast<float>(std::min(1.0, speedup / best)) : 0.0f;
}

std::string export_cost_rows(RunDatabase &db) {
  std::ostringstream out;
  for (const RunRow &run : db.runs()) {
    const EvolveConfig config = parse_config(run.config, db.path());
    Graph graph = graph_of(run.spec_path, run.spec_text, config.sizes);
    std::optional<std::vector<float>> naive = schedule_features(graph, "");
    nlohmann::json head = {{"run",
                            {{"kernel", run.kernel},
                             {"spec_path", run.spec_path},
                             {"spec", run.spec_text},
                             {"sizes", run.sizes},
                             {"size_overrides", config.sizes},
                             {"device", cost_device(run.device.substr(run.device.find(' ') + 1), run.target)},
                             {"feature_names", cost_feature_names()},
                             {"naive", *naive}}}};
    out << head.dump() << "\n";
    std::vector<CandidateRow> candidates = db.candidates(run.id);
    std::sort(candidates.begin(), candidates.end(),
              [](const CandidateRow &a, const CandidateRow &b) { return a.eval_seq < b.eval_seq; });
    for (const CandidateRow &c : candidates) {
      if (c.eval_seq <= 0 || !c.body.empty()) continue;
      std::optional<std::vector<float>> f = schedule_features(graph, c.schedule);
      if (!f) continue;
      nlohmann::json row = {{"schedule", c.schedule},
                            {"status", status_name(c.status)},
                            {"speedup", timed_status(c.status) ? c.speedup : 0.0},
                            {"features", *f}};
      out << row.dump() << "\n";
    }
  }
  return out.str();
}

CostPrior read_cost_prior(const std::string &path, const std::string &device) {
  std::ifstream in(path);
  if (!in) throw UserError("error: cannot read the cost model's prior '" + path + "'");
  CostPrior prior;
  struct Pending {
    CostRun run;
    std::optional<Graph> graph;  // where the features must be read again
    std::vector<double> speedups;
    std::vector<bool> timed;
    bool skip = false;
  };
  std::vector<Pending> runs;
  auto fail = [&](int line, const std::string &why) {
    throw UserError(path + ":" + std::to_string(line) + ": error: " + why +
                    " (a prior is what `ksmith export DB --cost-rows` writes)");
  };
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail(line, "not a JSON object");
    try {
      if (j.contains("run")) {
        const nlohmann::json &r = j.at("run");
        Pending p;
        p.run.kernel = r.at("kernel").get<std::string>();
        p.run.sizes = r.at("sizes").get<std::string>();
        p.run.device = r.at("device").get<std::string>();
        p.skip = !device.empty() && p.run.device != device;
        if (r.at("feature_names").get<std::vector<std::string>>() == cost_feature_names()) {
          p.run.naive = r.at("naive").get<std::vector<float>>();
        } else {
          prior.refeatured = true;
          try {
            p.graph = graph_of(r.at("spec_path").get<std::string>(), r.at("spec").get<std::string>(),
                               r.at("size_overrides").get<std::string>());
          } catch (const UserError &e) {
            fail(line, std::string("its run's spec does not elaborate: ") + e.what());
          }
          p.run.naive = *schedule_features(*p.graph, "");
        }
        runs.push_back(std::move(p));
        continue;
      }
      if (runs.empty()) fail(line, "a candidate before any run");
      Pending &p = runs.back();
      if (p.skip) continue;
      std::vector<float> f;
      if (p.graph) {
        std::optional<std::vector<float>> again = schedule_features(*p.graph, j.at("schedule").get<std::string>());
        if (!again) {
          ++prior.stale;
          continue;
        }
        f = *again;
      } else {
        f = j.at("features").get<std::vector<float>>();
      }
      if (f.size() != cost_feature_names().size()) fail(line, "the features are not as many as their names");
      p.run.features.push_back(std::move(f));
      const std::optional<CandidateStatus> status = parse_status(j.at("status").get<std::string>());
      if (!status) fail(line, "unknown candidate status '" + j.at("status").get<std::string>() + "'");
      p.timed.push_back(timed_status(*status));
      p.speedups.push_back(j.at("speedup").get<double>());
    } catch (const nlohmann::json::exception &e) {
      fail(line, std::string("a run or candidate line lacks a field or has one of the wrong type: ") + e.what());
    }
  }
  for (Pending &p : runs) {
    prior.skipped += p.skip;
    if (p.skip || p.run.features.empty()) continue;
    double best = 0;
    for (size_t i = 0; i < p.speedups.size(); ++i)
      if (p.timed[i]) best = std::max(best, p.speedups[i]);
    for (size_t i = 0; i < p.speedups.size(); ++i) p.run.labels.push_back(cost_label(p.timed[i], p.speedups[i], best));
    prior.rows += static_cast<int64_t>(p.run.features.size());
    prior.runs.push_back(std::move(p.run));
  }
  return prior;
}

}  // namespace ks
