// The shared tokenizer: kinds, ranges versus floats, comments, positions, errors.
#include "ir/lexer.h"

#include "test_util.h"

namespace ks {
namespace {

std::vector<Token> lex(const std::string &text) { return tokenize(test::source(text)); }

TEST(Lexer, KindsAndText) {
  auto t = lex("acc[m, n] = sum(k) 2.5 * x_1[m, k] -> 1e-5 42L");
  std::vector<std::pair<TokenKind, std::string>> expected = {{TokenKind::Identifier, "acc"},
                                                             {TokenKind::Punct, "["},
                                                             {TokenKind::Identifier, "m"},
                                                             {TokenKind::Punct, ","},
                                                             {TokenKind::Identifier, "n"},
                                                             {TokenKind::Punct, "]"},
                                                             {TokenKind::Punct, "="},
                                                             {TokenKind::Identifier, "sum"},
                                                             {TokenKind::Punct, "("},
                                                             {TokenKind::Identifier, "k"},
                                                             {TokenKind::Punct, ")"},
                                                             {TokenKind::Float, "2.5"},
                                                             {TokenKind::Punct, "*"},
                                                             {TokenKind::Identifier, "x_1"},
                                                             {TokenKind::Punct, "["},
                                                             {TokenKind::Identifier, "m"},
                                                             {TokenKind::Punct, ","},
                                                             {TokenKind::Identifier, "k"},
                                                             {TokenKind::Punct, "]"},
                                                             {TokenKind::Punct, "->"},
                                                             {TokenKind::Float, "1e-5"},
                                                             {TokenKind::Integer, "42L"},
                                                             {TokenKind::End, ""}};
  ASSERT_EQ(t.size(), expected.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].kind, expected[i].first) << "token " << i << " '" << t[i].text << "'";
    EXPECT_EQ(t[i].text, expected[i].second) << "token " << i;
  }
}

TEST(Lexer, RangeIsNotAFloat) {
  auto t = lex("0..N 0.5..2.0");
  ASSERT_GE(t.size(), 6u);
  EXPECT_EQ(t[0].kind, TokenKind::Integer);
  EXPECT_EQ(t[1].text, "..");
  EXPECT_EQ(t[2].text, "N");
  EXPECT_EQ(t[3].kind, TokenKind::Float);
  EXPECT_EQ(t[3].text, "0.5");
  EXPECT_EQ(t[4].text, "..");
  EXPECT_EQ(t[5].text, "2.0");
}

TEST(Lexer, CommentsAndPositions) {
  auto t = lex("# a comment\n  x # another\n   +:");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].text, "x");
  EXPECT_EQ(t[0].loc.line, 2);
  EXPECT_EQ(t[0].loc.column, 3);
  EXPECT_EQ(t[1].text, "+:");
  EXPECT_EQ(t[1].loc.line, 3);
  EXPECT_EQ(t[1].loc.column, 4);
}

TEST(Lexer, BadCharacterPointsAtIt) {
  std::string message = test::user_error([] { lex("x = 1\ny @ 2"); });
  EXPECT_EQ(message, "test.ks:2:3: error: unexpected character '@'\ny @ 2\n  ^");
}

TEST(Lexer, LetterAfterNumberIsAnError) {
  EXPECT_NE(test::user_error([] { lex("12abc"); }).find("unexpected character 'a' after a number"), std::string::npos);
}

TEST(Lexer, ReservedWords) {
  EXPECT_TRUE(is_reserved_word("sum"));
  EXPECT_TRUE(is_reserved_word("gelu"));
  EXPECT_TRUE(is_reserved_word("allocate"));
  EXPECT_FALSE(is_reserved_word("acc"));
}

}  // namespace
}  // namespace ks
