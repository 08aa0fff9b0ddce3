// Prompt assembly: the templates' {{placeholders}} filled, then trimmed to the budget.
#include "llm/prompt.h"

#include <map>

#include "ir/diagnostic.h"
#include "llm/prompt_files.h"  // generated from llm/prompts/ (CMakeLists.txt)

namespace ks::llm {

namespace {

std::string fill(const std::string &text, const std::map<std::string, std::string> &values) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("{{", at);
    if (open == std::string::npos) return out + text.substr(at);
    const size_t close = text.find("}}", open);
    if (close == std::string::npos) throw InternalError("a prompt template has an unclosed {{");
    const std::string name = text.substr(open + 2, close - open - 2);
    auto it = values.find(name);
    if (it == values.end()) throw InternalError("a prompt template names {{" + name + "}}, which nothing fills");
    out += text.substr(at, open - at) + it->second;
    at = close + 2;
  }
}

std::string indented(const std::string &text) {
  std::string out = "    ";
  for (char c : text) out += c == '\n' ? std::string("\n    ") : std::string(1, c);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

std::string steps(const std::string &schedule) {
  return schedule.empty() ? "    (none: the naive kernel)" : indented(schedule);
}

// A candidate's schedule, or its kernel body.
std::string code(const ShownCandidate &c) { return c.body.empty() ? steps(c.schedule) : indented(c.body); }

std::string shown(const std::vector<ShownCandidate> &candidates, const std::vector<std::string> &problems,
                  const char *wanted) {
  std::string out;
  for (const ShownCandidate &c : candidates)
    out += "- " + c.record + (c.body.empty() ? ":\n" : ", a kernel body:\n") + code(c) + "\n";
  for (const std::string &p : problems) out += std::string("- your answer gave no ") + wanted + ": " + p + "\n";
  if (out.empty()) return "(none)";
  out.pop_back();
  return out;
}

enum class Kind { Schedule, Kernel };

// long_text: the parent's Loop IR (schedule) or code (kernel), as trimmed.
Prompt assemble(const PromptInputs &in, const std::string &long_text, Kind kind) {
  const bool kernel = kind == Kind::Kernel;
  const std::map<std::string, std::string> values = {
      {"device", in.device},
      {"spec", indented(in.spec)},
      {"parent_record", in.parent.record + (in.parent.body.empty() ? "" : ", a kernel body")},
      {"parent_schedule", code(in.parent)},
      {kernel ? "parent_code" : "parent_loops", indented(long_text)},
      {"inspirations", shown(in.inspirations, {}, "")},
      {"rewrites", in.rewrites.empty() ? "    (none)" : indented(in.rewrites)},
      {"parent_work", in.parent_work},
      {"failures", shown(in.failures, in.answer_problems, kernel ? "kernel body" : "schedule")},
      {"tried", in.repeated.empty() ? shown(in.tried, {}, "") : in.repeated + "\n" + shown(in.tried, {}, "")},
  };
  return kernel ? Prompt{fill(kKernelSystemPrompt, values), fill(kKernelUserPrompt, values)}
                : Prompt{fill(kScheduleSystemPrompt, values), fill(kScheduleUserPrompt, values)};
}

size_t tokens(const Prompt &p) { return approx_tokens(p.system) + approx_tokens(p.user); }

// Over the budget: the model's failed answers go first, then the failures, what was
// tried from the parent, the inspirations (the last first), then the long text's last
// lines.
Prompt trimmed(const PromptInputs &inputs, const std::string &long_text, Kind kind, size_t token_budget) {
  PromptInputs in = inputs;
  std::string loops = long_text;
  Prompt p = assemble(in, loops, kind);
  while (tokens(p) > token_budget) {
    if (!in.answer_problems.empty())
      in.answer_problems.erase(in.answer_problems.begin());
    else if (!in.failures.empty())
      in.failures.erase(in.failures.begin());
    else if (!in.tried.empty())
      in.tried.erase(in.tried.begin());
    else if (!in.inspirations.empty())
      in.inspirations.pop_back();
    else {
      // The long text's last lines go, a note saying how many.
      std::vector<std::string> lines;
      for (size_t at = 0; at < long_text.size();) {
        const size_t end = std::min(long_text.find('\n', at), long_text.size());
        lines.push_back(long_text.substr(at, end - at));
        at = end + 1;
      }
      const size_t over = (tokens(p) - token_budget) * 4 + 24;  // and the note's own length
      size_t keep = lines.size(), cut = 0;
      while (keep > 1 && cut < over) cut += lines[--keep].size() + 1;
      if (keep == lines.size()) break;  // the rest stays: the spec and the parent are the task
      loops.clear();
      for (size_t i = 0; i < keep; ++i) loops += lines[i] + "\n";
      loops += "... (" + std::to_string(lines.size() - keep) + " more lines)";
      return assemble(in, loops, kind);
    }
    p = assemble(in, loops, kind);
  }
  return p;
}

}  // namespace

Prompt schedule_prompt(const PromptInputs &inputs, size_t token_budget) {
  return trimmed(inputs, inputs.parent_loops, Kind::Schedule, token_budget);
}

Prompt kernel_prompt(const PromptInputs &inputs, size_t token_budget) {
  return trimmed(inputs, inputs.parent_code, Kind::Kernel, token_budget);
}

}  // namespace ks::llm
