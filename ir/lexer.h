// The one tokenizer of every kernelsmith text: the .ks DSL, printed Graph IR and
// printed Loop IR. Comments run from `#` to the end of the line; newlines are
// whitespace. Numbers with a '.', an exponent or an 'f' suffix are floats.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/diagnostic.h"

namespace ks {

enum class TokenKind { Identifier, Integer, Float, Punct, End };

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // identifier, punctuation or the number as written
  SourceLoc loc;
  bool is(const char *punct_or_word) const {
    return (kind == TokenKind::Punct || kind == TokenKind::Identifier) && text == punct_or_word;
  }
};

/// Words that cannot name a tensor, size or variable: keywords of the DSL and of the
/// printed IRs, types, builtins and reductions.
bool is_reserved_word(const std::string &word);

/// Splits a source file into tokens; throws UserError at the first bad character.
std::vector<Token> tokenize(const std::shared_ptr<const SourceFile> &file);

/// A cursor over tokens with the small helpers every recursive-descent parser here
/// needs. Errors point at the current token.
class TokenStream {
 public:
  explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  const Token &peek(int ahead = 0) const;
  const Token &next();
  bool at_end() const { return peek().kind == TokenKind::End; }
  /// Consumes the token if it is the given punctuation or keyword.
  bool accept(const char *text);
  /// Consumes the given punctuation or keyword, or fails with "expected ...". A
  /// missing ')' or ']' whose line has ended is reported at the end of that line,
  /// where it belongs, not at whatever the next line starts with.
  const Token &expect(const char *text, const char *context = nullptr);
  /// Consumes an identifier, or fails with "expected <what>".
  const Token &expect_identifier(const char *what);
  /// Calls item() for each element of `item {',' item}`, stopping before close;
  /// calls it never when close comes first. What follows the last item on its line
  /// and could start another is a missing ',' (said as such, naming what the items
  /// are), not a missing close.
  template <typename F>
  void comma_list(const char *close, F &&item, const char *items = "items") {
    if (peek().is(close)) return;
    do item();
    while (accept(","));
    if (!peek().is(close) && !on_new_line() && could_start_item(peek()))
      fail(std::string("expected ',' between ") + items + " before " + describe(peek()) + ", or '" + close + "'");
  }
  /// Whether the current token starts a later line than the one before it.
  bool on_new_line() const;
  [[noreturn]] void fail(const std::string &message) const { error_at(peek().loc, message); }
  static std::string describe(const Token &token);

 private:
  static bool could_start_item(const Token &token) {
    return token.kind == TokenKind::Identifier || token.kind == TokenKind::Integer || token.kind == TokenKind::Float ||
           token.is("(") || token.is("-");
  }

  std::vector<Token> tokens_;
  size_t position_ = 0;
};

}  // namespace ks
