// One evaluation in a child `ksmith run --json`, its record or its failure.
#include "evolve/isolate.h"

#include <signal.h>

#include <cstdio>
#include <cstring>

namespace ks {

namespace {

std::string first_line(const std::string &text) {
  size_t end = text.find('\n');
  return text.substr(0, end == std::string::npos ? text.size() : end);
}

}  // namespace

IsolatedRun run_isolated(const std::string &ksmith_path, const std::vector<std::string> &args, double time_limit_s) {
  std::vector<std::string> argv = {ksmith_path, "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--json");
  return isolated_outcome(run_child(argv, time_limit_s), time_limit_s);
}

IsolatedRun isolated_outcome(const ChildRun &child, double time_limit_s) {
  IsolatedRun result;
  result.seconds = child.seconds;
  if (!child.started) {
    result.failure = child.err;
    return result;
  }
  if (!child.out.empty()) {
    nlohmann::json j = nlohmann::json::parse(child.out, nullptr, false);
    if (!j.is_discarded() && j.is_object()) result.record = std::move(j);
  }
  if (child.timed_out) {
    char text[96];
    std::snprintf(text, sizeof text, "no record within the time limit of %.0f s: the evaluation was killed",
                  time_limit_s);
    result.failure = text;
  } else if (child.signal) {
    result.failure = std::string("the evaluation died of ") + ::strsignal(child.signal) +
                     (child.err.empty() ? "" : ": " + first_line(child.err));
  } else if (!result.record) {
    result.failure = child.err.empty()
                         ? "the evaluation printed no record (exit " + std::to_string(child.exit_status) + ")"
                         : first_line(child.err);
  } else {
    result.ok = result.record->value("ok", false);
    if (!result.ok) result.failure = result.record->value("verdict", std::string("the record did not pass"));
  }
  return result;
}

}  // namespace ks
