// The llm-schedule proposer: prompt, one request, the answer's schedule parsed.
#include "llm/schedule_proposer.h"

#include "ir/diagnostic.h"
#include "ir/printer.h"
#include "llm/answer.h"
#include "llm/prompt.h"
#include "passes/pipeline.h"

namespace ks::llm {

namespace {

constexpr size_t kProblemsShown = 3;  // the model's own recent failed answers in a prompt

std::string record_of(const CandidateView &c) {
  if (c.speedup <= 0) return c.verdict;
  char text[64];
  std::snprintf(text, sizeof text, "%.2fx over the naive kernel", c.speedup);
  return text;
}

std::string device_line(const runtime::DeviceInfo &d) {
  return d.name + " (" + (d.api == "vulkan" ? "Vulkan" : "OpenCL") + ", " + (d.gpu ? "GPU" : "CPU") +
         "): work-groups up to " + std::to_string(d.max_work_group_size) + " work-items, " +
         std::to_string(d.local_memory_bytes / 1024) + " KiB of local memory a group";
}

}  // namespace

ScheduleProposer::ScheduleProposer(const EvolveConfig &config) : settings_(config.llm) {
  ClientOptions o;
  o.endpoints = {Endpoint{settings_.url, settings_.model}};
  o.key_variable = settings_.key_variable;
  o.request_deadline_s = settings_.deadline_s;
  o.max_attempts = settings_.attempts;
  client_ = std::make_unique<Client>(o);
}

std::optional<Proposal> ScheduleProposer::propose(const ProposalContext &context, Rng &rng) {
  PromptInputs in;
  in.device = device_line(context.device);
  in.spec = print_graph(context.graph);
  in.parent = {print_schedule(context.parent.schedule), record_of(context.parent)};
  in.parent_loops = print_program(run_pipeline(context.graph, context.parent.schedule));
  for (const CandidateView &c : context.inspirations)
    in.inspirations.push_back({print_schedule(c.schedule), record_of(c)});
  for (const CandidateView &c : context.failures) in.failures.push_back({print_schedule(c.schedule), c.verdict});
  in.answer_problems.assign(problems_.begin(), problems_.end());
  const Prompt prompt = schedule_prompt(in, static_cast<size_t>(settings_.token_budget));
  Sampling sampling;
  sampling.temperature = settings_.temperature;
  sampling.top_p = settings_.top_p;
  sampling.max_tokens = settings_.max_tokens;
  sampling.seed = static_cast<int64_t>(rng() >> 1);
  const Answer a = client_->complete({Request{prompt.system, prompt.user, sampling}}, rng()).at(0);
  ModelCall call{a.endpoint, a.model, a.seed, a.prompt_tokens, a.completion_tokens, a.latency_s, a.attempts, false, ""};
  auto failed = [&](const std::string &why) -> std::optional<Proposal> {
    call.result = why;
    calls_.push_back(call);
    problems_.push_back(why);
    while (problems_.size() > kProblemsShown) problems_.pop_front();
    return std::nullopt;
  };
  if (!a.ok) {
    call.result = a.error;  // the request's failure, not the model's: not shown to it
    calls_.push_back(call);
    return std::nullopt;
  }
  const AnswerParse parsed = parse_answer(a.content, a.finish_reason == "length");
  if (!parsed.answer) return failed(parsed.error);
  if (parsed.answer->kind != ParsedAnswer::Kind::Schedule)
    return failed("the answer is a <kernel>; this proposer takes a <schedule>");
  Schedule schedule;
  try {
    schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{"answer", parsed.answer->body + "\n"}));
  } catch (const UserError &e) {
    std::string why = e.what();
    return failed("its schedule does not parse: " + why.substr(0, why.find('\n')));
  }
  call.ok = true;
  call.result = "proposed";
  calls_.push_back(call);
  std::string reasoning = parsed.answer->reasoning.substr(0, parsed.answer->reasoning.find('\n'));
  if (reasoning.size() > 80) reasoning = reasoning.substr(0, 77) + "...";
  return Proposal{schedule, "llm: " + (reasoning.empty() ? std::string("a schedule") : reasoning)};
}

std::vector<ModelCall> ScheduleProposer::take_calls() { return std::exchange(calls_, {}); }

void register_llm_proposers() {
  register_proposer("llm-schedule", [](const EvolveConfig &c) { return std::make_unique<ScheduleProposer>(c); });
}

}  // namespace ks::llm
