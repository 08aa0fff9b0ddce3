#include "evolve/search/jobs.h"

#include <algorithm>

namespace ks {
namespace {

void add_settings(const JobSettings &s, std::vector<std::string> *args) {
  args->insert(args->end(), {"--target", s.target, "--precision", s.precision});
  if (!s.sizes.empty()) args->insert(args->end(), {"--size", s.sizes});
}

bool number_or_absent(const nlohmann::json &j, const char *key) { return !j.contains(key) || j[key].is_number(); }

}  // namespace

std::vector<std::string> EvaluationRequest::args() const {
  std::vector<std::string> args = {"run", spec_file, "--json"};
  if (body_file.empty())
    args.insert(args.end(), {"--schedule", schedule_file});
  else
    args.insert(args.end(), {"--kernel", body_file});
  add_settings(settings, &args);
  args.insert(args.end(), {"--trials", std::to_string(trials), "--batches", std::to_string(batches), "--min-batch-ms",
                           std::to_string(min_batch_ms)});
  if (!check_sizes.empty()) args.insert(args.end(), {"--check-size", check_sizes});
  if (give_up_ms) args.insert(args.end(), {"--give-up-ms", std::to_string(*give_up_ms)});
  return args;
}

std::vector<std::string> RetimeRequest::args() const {
  std::vector<std::string> args = {"time",
                                   spec_file,
                                   "--json",
                                   "--rounds",
                                   "3",
                                   "--batches",
                                   std::to_string(batches),
                                   "--min-batch-ms",
                                   std::to_string(min_batch_ms)};
  if (with_naive) args.push_back("--naive");
  for (const std::string &f : schedule_files) args.insert(args.end(), {"--schedule", f});
  add_settings(settings, &args);
  return args;
}

std::optional<EvaluationResult> EvaluationResult::from_json(const nlohmann::json &j) {
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) return std::nullopt;
  if (j.contains("verdict") && !j["verdict"].is_string()) return std::nullopt;
  if (j.contains("hacking_flags") && !j["hacking_flags"].is_array()) return std::nullopt;
  if (j.contains("features") && !j["features"].is_object()) return std::nullopt;
  if (j.contains("time") && !j["time"].is_object()) return std::nullopt;
  EvaluationResult r;
  r.ok = j["ok"].get<bool>();
  r.verdict = j.value("verdict", std::string());
  r.failure = j.contains("failure");
  r.flagged = j.contains("hacking_flags") && !j["hacking_flags"].empty();
  if (j.contains("features")) r.features = j["features"];
  if (j.contains("time")) {
    const nlohmann::json &t = j["time"];
    if (!number_or_absent(t, "median_ms") || !number_or_absent(t, "cv") || !number_or_absent(t, "speedup"))
      return std::nullopt;
    r.gave_up = t.contains("gave_up_ms");
    r.median_ms = t.value("median_ms", 0.0);
    r.cv = t.value("cv", 0.0);
    r.speedup = t.value("speedup", 0.0);
  }
  return r;
}

double EvaluationResult::feature(const std::string &name) const {
  if (!features.is_object() || !features.contains(name) || !features[name].is_number()) return 0;
  return features[name].get<double>();
}

CandidateStatus status_of(const ChildRun &child, const std::optional<EvaluationResult> &result) {
  if (child.timed_out) return CandidateStatus::Timeout;
  if (!result) return CandidateStatus::Failed;
  if (result->ok) return CandidateStatus::Correct;
  if (result->failure) return CandidateStatus::Failed;
  if (result->flagged) return CandidateStatus::Flagged;
  if (result->gave_up) return CandidateStatus::Slow;
  return CandidateStatus::Incorrect;
}

std::optional<std::vector<Time>> read_times(const ChildRun &child, size_t expected) {
  if (child.timed_out || child.exit_status != 0) return std::nullopt;
  const nlohmann::json out = nlohmann::json::parse(child.out, nullptr, false);
  if (!out.is_object() || !out.contains("times") || !out["times"].is_array() || out["times"].size() != expected)
    return std::nullopt;
  std::vector<Time> times;
  for (const nlohmann::json &t : out["times"]) {
    if (!t.is_object() || !t.contains("median_ms") || !t["median_ms"].is_number() || !number_or_absent(t, "cv"))
      return std::nullopt;
    times.push_back({t["median_ms"].get<double>(), t.value("cv", 0.0)});
  }
  return times;
}

}  // namespace ks
