// Answers through tinyxml2. Code inside the elements is not XML (`i < n`, `&x`), so
// the text between each known element's tags is escaped first; tinyxml2 then checks
// the structure (an element left open, a stray closing tag) and decodes the text.
#include "llm/answer.h"

#include <tinyxml2.h>

#include <array>

namespace ks::llm {

namespace {

const std::array<std::string, 3> kElements = {"reasoning", "schedule", "kernel"};

std::string trim(const std::string &s) {
  const size_t first = s.find_first_not_of(" \t\r\n"), last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

std::string escape(const std::string &text) {
  if (text.find("<![CDATA[") != std::string::npos) return text;  // written as XML already
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// The answer from its first known opening tag to the end of the last element (prose
// after it dropped; an element left open runs to the end), each known element's
// text escaped. Prose between elements stays: tinyxml2 takes it as the root's text.
std::string xml_region(const std::string &text, size_t at) {
  std::string out;
  while (true) {
    size_t open = std::string::npos;
    std::string name;
    for (const std::string &e : kElements) {
      const size_t p = text.find("<" + e + ">", at);
      if (p < open) open = p, name = e;
    }
    if (open == std::string::npos) return out;
    out += text.substr(at, open - at);
    const size_t body = open + name.size() + 2, close = text.find("</" + name + ">", body);
    if (close == std::string::npos) return out + "<" + name + ">" + escape(text.substr(body));
    out += "<" + name + ">" + escape(text.substr(body, close - body)) + "</" + name + ">";
    at = close + name.size() + 3;
  }
}

}  // namespace

AnswerParse parse_answer(const std::string &text, bool truncated) {
  AnswerParse result;
  size_t start = std::string::npos;
  for (const std::string &e : kElements) start = std::min(start, text.find("<" + e + ">"));
  if (start == std::string::npos) {
    result.error = "the answer has no <schedule> or <kernel> element (" + std::to_string(text.size()) +
                   " characters of prose)" + (truncated ? "; it was cut off at the token limit" : "");
    return result;
  }
  const std::string region = xml_region(text, start);
  tinyxml2::XMLDocument doc(true, tinyxml2::PRESERVE_WHITESPACE);
  const std::string wrapped = "<answer>" + region + "</answer>";
  if (doc.Parse(wrapped.c_str(), wrapped.size()) != tinyxml2::XML_SUCCESS) {
    // ErrorStr repeats the name and line before what it says of the element.
    const std::string said = doc.ErrorStr() ? doc.ErrorStr() : "";
    const size_t detail = said.find(": ");
    result.error = std::string(truncated ? "the answer was cut off at the token limit: its" : "the answer's") +
                   " XML is malformed at line " + std::to_string(doc.ErrorLineNum()) + " (" + doc.ErrorName() + ")" +
                   (detail == std::string::npos ? "" : said.substr(detail));
    return result;
  }
  ParsedAnswer answer;
  int bodies = 0;
  for (const tinyxml2::XMLElement *e = doc.RootElement()->FirstChildElement(); e; e = e->NextSiblingElement()) {
    const std::string name = e->Name();
    const std::string content = trim(e->GetText() ? e->GetText() : "");
    if (name == "reasoning") {
      answer.reasoning = content;
      continue;
    }
    if (name != "schedule" && name != "kernel") {
      result.error = "the answer has an element <" + name + ">; it takes <reasoning>, then <schedule> or <kernel>";
      return result;
    }
    if (++bodies > 1) {
      result.error = "the answer has more than one <schedule> or <kernel>; give one";
      return result;
    }
    if (content.empty()) {
      result.error = "the answer's <" + name + "> is empty";
      return result;
    }
    answer.kind = name == "schedule" ? ParsedAnswer::Kind::Schedule : ParsedAnswer::Kind::Kernel;
    answer.body = content;
  }
  if (bodies == 0) {
    result.error = "the answer has no <schedule> or <kernel> element";
    return result;
  }
  result.answer = answer;
  return result;
}

}  // namespace ks::llm
