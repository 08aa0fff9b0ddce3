// A model's answers (XML elements in prose, through tinyxml2): either an answer or
// a reason, never an exception; the schedule or kernel body it carries goes on to
// its own parser, whose errors must name the answer's element.
#include "frontend/kernel_body.h"
#include "llm/answer.h"
#include "passes/schedule.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const bool truncated = data[0] & 1;  // the server stopped at max_tokens
  const std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
  llm::AnswerParse parsed;
  fuzz::must("parse_answer threw", [&] { parsed = llm::parse_answer(text, truncated); });
  if (parsed.answer.has_value() == !parsed.error.empty())
    fuzz::bug("an answer must come with no reason, or a reason with no answer: '" + parsed.error + "'");
  if (!parsed.answer) return 0;
  const bool schedule = parsed.answer->kind == llm::ParsedAnswer::Kind::Schedule;
  auto body =
      std::make_shared<const SourceFile>(SourceFile{schedule ? "answer.sched" : "answer.cl", parsed.answer->body});
  fuzz::guarded(body->name, true, [&] {
    if (schedule)
      parse_schedule(body);
    else
      frontend::parse_kernel_body(body);
  });
  return 0;
}
