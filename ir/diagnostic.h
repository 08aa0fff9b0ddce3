// Errors of two kinds, kept apart (STYLE.md): the user's, which point at a place in
// a source text (`file:line:col: error: message`, the line, a caret), and the
// compiler's own broken invariants. Neither aborts the process: both are exceptions.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace ks {

/// A source text with its name; diagnostics quote lines from it.
struct SourceFile {
  std::string name;
  std::string text;
};

/// The text file at path, read whole (a UTF-8 byte-order mark dropped); UserError
/// "cannot open WHAT 'path'" (or read) on failure, and for a folder or a file that is
/// not text (a NUL byte).
std::shared_ptr<const SourceFile> read_source_file(const std::string &path, const std::string &what);

/// Writes text to path through a temporary file and a rename, so that a failure or a
/// kill part-way leaves any old file whole and never a truncated one; through a link,
/// to the file it names; a device or a pipe (/dev/null, a FIFO), written as it is.
/// Throws UserError.
void write_text_file(const std::string &path, const std::string &text);

/// A position in a source file (1-based line and column).
struct SourceLoc {
  std::shared_ptr<const SourceFile> file;
  int line = 0;
  int column = 0;
};

/// The user's error: a bad spec, schedule, printed IR or flag. what() is the full,
/// clang-style message, ready to print.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string &message) : std::runtime_error(message) {}
};

/// A broken invariant inside the compiler (a bug in kernelsmith, not in the input).
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string &message)
      : std::runtime_error("internal error: " + message), detail_(message) {}
  /// The message without the "internal error: " prefix.
  const std::string &detail() const { return detail_; }

 private:
  std::string detail_;
};

/// Formats `file:line:col: error: message`, the source line and a caret (severity
/// "note" for a place that explains an error).
std::string format_diagnostic(const SourceLoc &loc, const std::string &message, const char *severity = "error");

/// Throws a UserError at loc.
[[noreturn]] void error_at(const SourceLoc &loc, const std::string &message);

}  // namespace ks
