// A model's answers (llm/answer.h): what is taken from them, and the reason for each
// one that gives nothing, as the proposer feeds it back.
#include <gtest/gtest.h>

#include "llm/answer.h"

namespace ks::llm {
namespace {

TEST(ModelAnswers, TakeTheScheduleFromProse) {
  AnswerParse p = parse_answer(
      "Here is my proposal.\n<reasoning>Tile the output 64x64.</reasoning>\n<schedule>\nsplit c.i 64 -> io ii\n"
      "split c.j 64 -> jo ji\n</schedule>\nThat should be faster, for i < n & j < m.");
  ASSERT_TRUE(p.answer) << p.error;
  EXPECT_EQ(p.answer->kind, ParsedAnswer::Kind::Schedule);
  EXPECT_EQ(p.answer->reasoning, "Tile the output 64x64.");
  EXPECT_EQ(p.answer->body, "split c.i 64 -> io ii\nsplit c.j 64 -> jo ji");
}

TEST(ModelAnswers, KeepCodeAsWritten) {
  const std::string code =
      "__kernel void k(__global const float *x, __global float *y, int n) {\n"
      "  for (int i = get_global_id(0); i < n && i >= 0; i += 4) y[i] = x[i] > 0 ? x[i] : 0;\n}";
  AnswerParse p = parse_answer("<reasoning>if a < b</reasoning><kernel>\n" + code + "\n</kernel>");
  ASSERT_TRUE(p.answer) << p.error;
  EXPECT_EQ(p.answer->kind, ParsedAnswer::Kind::Kernel);
  EXPECT_EQ(p.answer->body, code);
  EXPECT_EQ(p.answer->reasoning, "if a < b");
  AnswerParse cdata = parse_answer("<kernel><![CDATA[" + code + "]]></kernel>");
  ASSERT_TRUE(cdata.answer) << cdata.error;
  EXPECT_EQ(cdata.answer->body, code);
}

TEST(ModelAnswers, SayWhatIsWrong) {
  struct Case {
    std::string text;
    bool truncated;
    std::string error;  // the start of the reason
  };
  const Case cases[] = {
      {"I think you should tile the loops and use local memory.", false,
       "the answer has no <schedule> or <kernel> element (55 characters of prose)"},
      {"<reasoning>unclosed <schedule>split c.i 4 -> a b</reasoning>", false,
       "the answer has no <schedule> or <kernel> element"},
      {"<reasoning>Tile the loops</reasoning>\n<schedule>\nsplit c.i 6", true,
       "the answer was cut off at the token limit: its XML is malformed at line 2 (XML_ERROR_MISMATCHED_ELEMENT): "
       "XMLElement name=schedule"},
      {"<schedule>split c.i 4 -> a b", false,
       "the answer's XML is malformed at line 1 (XML_ERROR_MISMATCHED_ELEMENT): XMLElement name=schedule"},
      {"<schedule>split c.i 4 -> a b</schedule><kernel>x</kernel>", false,
       "the answer has more than one <schedule> or <kernel>; give one"},
      {"<reasoning>r</reasoning><schedule>  \n </schedule>", false, "the answer's <schedule> is empty"},
      {"<reasoning>r</reasoning><plan>p</plan><schedule>s</schedule>", false,
       "the answer has an element <plan>; it takes <reasoning>, then <schedule> or <kernel>"},
  };
  for (const Case &c : cases) {
    AnswerParse p = parse_answer(c.text, c.truncated);
    EXPECT_FALSE(p.answer) << c.text;
    EXPECT_EQ(p.error.substr(0, c.error.size()), c.error) << c.text << "\n" << p.error;
  }
}

}  // namespace
}  // namespace ks::llm
