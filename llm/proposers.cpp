// The LLM proposers: prompt, one request, the answer's schedule or body taken.
#include "llm/proposers.h"

#include <cstdio>

#include "codegen/opencl_c.h"
#include "frontend/kernel_body.h"
#include "ir/cost.h"
#include "ir/diagnostic.h"
#include "ir/printer.h"
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

ShownCandidate shown(const CandidateView &c, const std::string &record) {
  return {c.body.empty() ? print_schedule(c.schedule) : "", record, c.body};
}

std::string device_line(const runtime::DeviceInfo &d) {
  return d.name + " (" + (d.api == "vulkan" ? "Vulkan" : "OpenCL") + ", " + (d.gpu ? "GPU" : "CPU") +
         "): work-groups up to " + std::to_string(d.max_work_group_size) + " work-items, " +
         std::to_string(d.local_memory_bytes / 1024) + " KiB of local memory a group" +
         (d.async_copies ? ", cp.async" : "") +
         (d.cooperative_matrices() ? ", matrix units for f16 operands (tensorize: cooperative matrices)"
          : d.matrix_units         ? ", matrix units (tensorize)"
                                   : "");
}

// The first line of the model's reasoning, short: the proposal's note.
std::string note_of(const ParsedAnswer &answer, const char *otherwise) {
  std::string reasoning = answer.reasoning.substr(0, answer.reasoning.find('\n'));
  if (reasoning.size() > 80) reasoning = reasoning.substr(0, 77) + "...";
  return "llm: " + (reasoning.empty() ? std::string(otherwise) : reasoning);
}

}  // namespace

ModelProposer::ModelProposer(const EvolveConfig &config) : settings_(config.llm) {
  ClientOptions o;
  if (settings_.ensemble.empty()) o.endpoints = {Endpoint{settings_.url, settings_.model}};
  for (const EvolveConfig::Llm::Member &m : settings_.ensemble) {
    if (m.url.empty() && settings_.url.empty())
      throw UserError("error: llm.ensemble: model '" + m.model +
                      "' has no url, and [llm] url (or --llm-url, or $OPENAI_BASE_URL) gives none");
    o.endpoints.push_back(Endpoint{m.url.empty() ? settings_.url : m.url, m.model, m.weight, m.in_flight});
  }
  o.key_variable = settings_.key_variable;
  o.request_deadline_s = settings_.deadline_s;
  o.max_attempts = settings_.attempts;
  client_ = std::make_unique<Client>(o);
}

PromptInputs ModelProposer::inputs(const ProposalContext &context) const {
  PromptInputs in;
  in.device = device_line(context.device);
  in.spec = print_graph(context.graph);
  in.parent = shown(context.parent, record_of(context.parent));
  for (const CandidateView &c : context.inspirations) in.inspirations.push_back(shown(c, record_of(c)));
  for (const CandidateView &c : context.failures) in.failures.push_back(shown(c, c.verdict));
  for (const CandidateView &c : context.tried) in.tried.push_back(shown(c, record_of(c)));
  in.answer_problems.assign(problems_.begin(), problems_.end());
  if (duplicates_in_row_ > 0)
    in.repeated = (duplicates_in_row_ == 1 ? std::string("Your last answer")
                                           : "Your last " + std::to_string(duplicates_in_row_) + " answers") +
                  " made a program already evaluated (the last: " + last_duplicate_ + "). Propose a different one.";
  return in;
}

std::optional<Proposal> ModelProposer::propose(const ProposalContext &context, Rng &rng) {
  return propose_all({&context}, {&rng}).at(0);
}

std::vector<std::optional<Proposal>> ModelProposer::propose_all(const std::vector<const ProposalContext *> &contexts,
                                                                const std::vector<Rng *> &rngs) {
  std::vector<Request> requests;
  for (size_t i = 0; i < contexts.size(); ++i) {
    Sampling sampling;
    sampling.temperature = settings_.temperature;
    sampling.top_p = settings_.top_p;
    sampling.max_tokens = settings_.max_tokens;
    sampling.seed = static_cast<int64_t>((*rngs[i])() >> 1);
    const Prompt prompt = prompt_for(*contexts[i]);
    requests.push_back(Request{prompt.system, prompt.user, sampling});
  }
  const std::vector<Answer> answers = client_->complete(requests, (*rngs.at(0))());
  std::vector<std::optional<Proposal>> out;
  double longest = 0;
  for (const Answer &a : answers) {
    longest = std::max(longest, a.latency_s);
    calls_.push_back(ModelCall{a.endpoint, a.model, a.seed, a.prompt_tokens, a.completion_tokens, a.latency_s,
                               a.attempts, false, ""});
    current_ = calls_.size() - 1;
    if (!a.ok) {
      calls_.back().result = a.error;  // the request's failure, not the model's: not shown to it
      out.push_back(std::nullopt);
      continue;
    }
    AnswerParse parsed = parse_answer(a.content, a.finish_reason == "length");
    std::optional<Proposal> proposal = parsed.answer ? take(*parsed.answer) : failed(parsed.error);
    if (proposal) {
      calls_[current_].ok = true;
      calls_[current_].result = "proposed";
      proposal->call = static_cast<int64_t>(current_);
    }
    out.push_back(std::move(proposal));
  }
  spent_s_ += longest;
  return out;
}

std::nullopt_t ModelProposer::failed(const std::string &why) {
  calls_[current_].result = why;
  problems_.push_back(why);
  while (problems_.size() > kProblemsShown) problems_.pop_front();
  return std::nullopt;
}

void ModelProposer::judged(const Proposal &proposal, const std::string &verdict) {
  if (proposal.call < 0 || static_cast<size_t>(proposal.call) >= calls_.size()) return;
  calls_[static_cast<size_t>(proposal.call)].result = verdict;
  if (verdict.rfind("duplicate: ", 0) != 0) {
    duplicates_in_row_ = 0;
    return;
  }
  ++duplicates_in_row_;
  last_duplicate_ = verdict.substr(verdict.find(':') + 2);  // "the program of candidate ..., already evaluated (...)"
}

std::vector<ModelCall> ModelProposer::take_calls() { return std::exchange(calls_, {}); }

std::string ModelProposer::exhausted() const {
  if (duplicates_in_row_ >= settings_.max_duplicates)
    return "its last " + std::to_string(duplicates_in_row_) +
           " proposals made programs already evaluated, llm.max_duplicates is " +
           std::to_string(settings_.max_duplicates);
  if (settings_.run_deadline_s <= 0 || spent_s_ < settings_.run_deadline_s) return "";
  char text[160];
  std::snprintf(text, sizeof text, "its model calls took %.1f s, llm.run_deadline_s is %g", spent_s_,
                settings_.run_deadline_s);
  return text;
}

Prompt ScheduleProposer::prompt_for(const ProposalContext &context) const {
  PromptInputs in = inputs(context);
  in.parent_loops = print_program(run_pipeline(context.graph, context.parent.schedule));
  // The rewrites a model may add, each with the work it leaves (the naive kernels'
  // points times operations, ir/cost.h): the model sees what each would buy.
  const Graph parent_graph = rewritten_graph(context.graph, context.parent.schedule);
  char work[64];
  std::snprintf(work, sizeof work, "%.3g", graph_work(parent_graph));
  in.parent_work = work;
  for (const Rewrite &r : applicable_rewrites(parent_graph)) {
    std::string reason;
    std::optional<Graph> after = try_rewrite(parent_graph, r, &reason);
    std::snprintf(work, sizeof work, "  # work %.3g", after ? graph_work(*after) : 0.0);
    in.rewrites += print_rewrite(r) + work + "\n";
  }
  return schedule_prompt(in, static_cast<size_t>(settings_.token_budget));
}

std::optional<Proposal> ScheduleProposer::take(const ParsedAnswer &answer) {
  if (answer.kind != ParsedAnswer::Kind::Schedule)
    return failed("the answer is a <kernel>; this proposer takes a <schedule>");
  Schedule schedule;
  try {
    schedule = parse_schedule(std::make_shared<SourceFile>(SourceFile{"answer", answer.body + "\n"}));
  } catch (const UserError &e) {
    std::string why = e.what();
    return failed("its schedule does not parse: " + why.substr(0, why.find('\n')));
  }
  return Proposal{schedule, note_of(answer, "a schedule"), ""};
}

Prompt KernelProposer::prompt_for(const ProposalContext &context) const {
  PromptInputs in = inputs(context);
  in.parent_code = context.parent.body.empty()
                       ? generate_opencl_c(run_pipeline(context.graph, context.parent.schedule)).source
                       : context.parent.body;
  return kernel_prompt(in, static_cast<size_t>(settings_.token_budget));
}

std::optional<Proposal> KernelProposer::take(const ParsedAnswer &answer) {
  if (answer.kind != ParsedAnswer::Kind::Kernel)
    return failed("the answer is a <schedule>; this proposer takes a <kernel>");
  // The plan's syntax here, before a proposal is spent on it; the rest (the plan at
  // the sizes, Clang's rules, the runs) is the evaluator's, its verdict fed back.
  try {
    frontend::KernelBody body =
        frontend::parse_kernel_body(std::make_shared<SourceFile>(SourceFile{"answer.cl", answer.body + "\n"}));
    if (!body.plan) return failed("its kernel body has no plan: start it with /* ksmith plan ... */");
  } catch (const UserError &e) {
    std::string why = e.what();
    return failed("its plan does not parse: " + why.substr(0, why.find('\n')));
  }
  return Proposal{{}, note_of(answer, "a kernel body"), answer.body + "\n"};
}

void register_llm_proposers() {
  register_proposer("llm-schedule", [](const EvolveConfig &c) { return std::make_unique<ScheduleProposer>(c); });
  register_proposer("llm-kernel", [](const EvolveConfig &c) { return std::make_unique<KernelProposer>(c); });
}

}  // namespace ks::llm
