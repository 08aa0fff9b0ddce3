// A model's answer: prose, then `<reasoning>...</reasoning>` and one `<schedule>` or
// `<kernel>` element (the form the system prompts ask for). The prose around the
// elements is ignored; everything else wrong with the answer is a reason, fed back
// to the model with its next prompt.
#pragma once

#include <optional>
#include <string>

namespace ks::llm {

struct ParsedAnswer {
  enum class Kind { Schedule, Kernel };
  Kind kind = Kind::Schedule;
  std::string reasoning;  // empty where the answer gave none
  std::string body;       // the schedule's text or the kernel's source, trimmed
};

struct AnswerParse {
  std::optional<ParsedAnswer> answer;
  std::string error;  // why there is none: names the element or the XML error and its line
};

/// Parses an answer's text; truncated: the server stopped it at max_tokens
/// (finish_reason "length"), which a malformed answer's reason then says. The
/// elements' text may hold <, > and & as written (code does) or a CDATA section.
AnswerParse parse_answer(const std::string &text, bool truncated = false);

}  // namespace ks::llm
