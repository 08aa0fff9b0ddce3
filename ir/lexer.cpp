// Tokenizer shared by the DSL frontend and the IR parsers.
#include "ir/lexer.h"

#include <cctype>
#include <set>

#include "ir/builtins.h"

namespace ks {

bool is_reserved_word(const std::string &word) {
  static const std::set<std::string> words = {
      // the DSL
      "kernel", "where", "check", "require", "const", "in", "else", "inf", "nan", "select", "min", "max", "sum", "prod",
      "argmax", "argmin", "f32", "f16", "bf16", "i32", "i64", "bool", "true", "false",
      // printed IR
      "graph", "sizes", "constants", "input", "output", "temp", "program", "for", "let", "block", "allocate", "barrier",
      "if", "reads", "writes",
      // schedules
      "split", "tile", "reorder", "fuse", "bind", "unroll", "inline", "cross_reduce"};
  return words.count(word) > 0 || find_builtin(word).has_value();
}

std::vector<Token> tokenize(const std::shared_ptr<const SourceFile> &file) {
  static const char *const kPunct[] = {"->", "..", "+:", "==", "!=", "<=", ">=", "&&", "||", "(",
                                       ")",  "[",  "]",  "{",  "}",  ",",  ":",  ";",  "=",  "<",
                                       ">",  "+",  "-",  "*",  "/",  "%",  "!",  "?",  "."};
  const std::string &s = file->text;
  std::vector<Token> tokens;
  int line = 1, column = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    Token token;
    token.loc = SourceLoc{file, line, column};
    size_t start = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) advance(1);
      token.kind = TokenKind::Identifier;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      token.kind = TokenKind::Integer;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
      // A '.' makes a float only when a digit follows: `0..N` is a range.
      if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        token.kind = TokenKind::Float;
        advance(1);
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
          token.kind = TokenKind::Float;
          advance(j - i);
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
        }
      }
      // Suffixes: L marks an i64 literal in printed IR.
      if (i < s.size() && token.kind == TokenKind::Integer && s[i] == 'L') advance(1);
      if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        error_at(SourceLoc{file, line, column}, std::string("unexpected character '") + s[i] + "' after a number");
    } else {
      bool matched = false;
      for (const char *p : kPunct) {
        size_t n = std::char_traits<char>::length(p);
        if (s.compare(i, n, p) == 0) {
          advance(n);
          matched = true;
          break;
        }
      }
      if (!matched) {
        std::string shown = std::isprint(static_cast<unsigned char>(c))
                                ? std::string(1, c)
                                : "\\x" + std::to_string(static_cast<unsigned char>(c));
        error_at(token.loc, "unexpected character '" + shown + "'");
      }
      token.kind = TokenKind::Punct;
    }
    token.text = s.substr(start, i - start);
    tokens.push_back(std::move(token));
  }
  Token end;
  end.kind = TokenKind::End;
  // "End of input" points just past the last token, not at a blank line after it.
  end.loc = SourceLoc{file, 1, 1};
  if (!tokens.empty()) {
    end.loc = tokens.back().loc;
    end.loc.column += static_cast<int>(tokens.back().text.size());
  }
  tokens.push_back(end);
  return tokens;
}

const Token &TokenStream::peek(int ahead) const {
  size_t index = position_ + static_cast<size_t>(ahead);
  return index < tokens_.size() ? tokens_[index] : tokens_.back();
}

const Token &TokenStream::next() {
  const Token &token = peek();
  if (position_ + 1 < tokens_.size()) ++position_;
  return token;
}

bool TokenStream::accept(const char *text) {
  if (!peek().is(text)) return false;
  next();
  return true;
}

std::string TokenStream::describe(const Token &token) {
  if (token.kind == TokenKind::End) return "end of input";
  return "'" + token.text + "'";
}

bool TokenStream::on_new_line() const { return position_ > 0 && peek().loc.line > tokens_[position_ - 1].loc.line; }

const Token &TokenStream::expect(const char *text, const char *context) {
  if (!peek().is(text)) {
    std::string message = std::string("expected '") + text + "'";
    if (context) message += std::string(" ") + context;
    bool closer = std::string(text) == ")" || std::string(text) == "]";
    if (closer && on_new_line()) {
      const Token &last = tokens_[position_ - 1];
      SourceLoc end = last.loc;
      end.column += static_cast<int>(last.text.size());
      error_at(end, message + " before the end of the line");
    }
    fail(message + ", found " + describe(peek()));
  }
  return next();
}

const Token &TokenStream::expect_identifier(const char *what) {
  if (peek().kind != TokenKind::Identifier) fail(std::string("expected ") + what + ", found " + describe(peek()));
  return next();
}

}  // namespace ks
