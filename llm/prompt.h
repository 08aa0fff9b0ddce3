// The prompts of the LLM proposers, from the files in llm/prompts/ (built into the
// binary): the system prompt (the objective, the target's limits, the primitives or
// a kernel body's form, the answer's form) and the user prompt (the spec, the parent
// with its Loop IR or code and record, other candidates, recent failures), trimmed
// to a token budget.
#pragma once

#include <string>
#include <vector>

namespace ks::llm {

/// A candidate as a prompt shows it: its schedule or kernel body and what its
/// evaluation said.
struct ShownCandidate {
  std::string schedule;  // its steps, one a line; "" for the naive kernel
  std::string record;    // "1.84x over the naive kernel", or the verdict of a failure
  std::string body;      // a kernel body's text, in place of a schedule
};

struct PromptInputs {
  std::string device;  // the target: its name and limits, one line
  std::string spec;    // the spec as the Graph IR prints it
  ShownCandidate parent;
  std::string parent_loops;  // the parent's Loop IR (the schedule prompt's)
  std::string rewrites;      // the rewrite steps that apply to the parent's graph, one a line (the schedule prompt's)
  std::string parent_work;   // the parent's graph's work (ir/cost.h's graph_work), as the rewrites' lines give theirs
  std::string parent_code;   // the parent's OpenCL C: its body, or its schedule's code (the kernel prompt's)
  std::vector<ShownCandidate> inspirations;
  std::vector<ShownCandidate> failures;      // recent, oldest first
  std::vector<std::string> answer_problems;  // why recent answers gave nothing, oldest first
  std::vector<ShownCandidate> tried;         // the parent's latest children, oldest first
  std::string repeated;  // where the last answers made programs already evaluated: a sentence saying so
};

struct Prompt {
  std::string system, user;
};

/// The schedule prompt. Over the budget (tokens counted as 4 characters each) the
/// oldest failures go first, then the oldest of what was tried from the parent, then
/// the last inspirations, then the Loop IR's last lines (a line says how many).
Prompt schedule_prompt(const PromptInputs &inputs, size_t token_budget);

/// The kernel-body prompt: the same trimming, the parent's code in place of its
/// Loop IR.
Prompt kernel_prompt(const PromptInputs &inputs, size_t token_budget);

/// Rough tokens of a text: 4 characters each (the budget's unit).
inline size_t approx_tokens(const std::string &text) { return (text.size() + 3) / 4; }

}  // namespace ks::llm
