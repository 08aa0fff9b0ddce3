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
  /// Consumes the given punctuation or keyword, or fails with "expected ...".
  const Token &expect(const char *text, const char *context = nullptr);
  /// Consumes an identifier, or fails with "expected <what>".
  const Token &expect_identifier(const char *what);
  /// Calls item() for each element of `item {',' item}`, stopping before close;
  /// calls it never when close comes first.
  template <typename F>
  void comma_list(const char *close, F &&item) {
    if (peek().is(close)) return;
    do item();
    while (accept(","));
  }
  [[noreturn]] void fail(const std::string &message) const { error_at(peek().loc, message); }
  static std::string describe(const Token &token);

 private:
  std::vector<Token> tokens_;
  size_t position_ = 0;
};

}  // namespace ks
