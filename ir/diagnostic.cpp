// Clang-style diagnostics: the location, the message, the quoted line and a caret.
#include "ir/diagnostic.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ks {

std::shared_ptr<const SourceFile> read_source_file(const std::string &path, const std::string &what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError("error: '" + path + "' is a folder, not a " + what + " file" +
                    (what == "spec" ? " (a folder of specs is for `ksmith tune` and `ksmith bench`)" : ""));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("error: cannot open " + what + " '" + path + "'");
  std::ostringstream read;
  read << in.rdbuf();
  if (in.bad()) throw UserError("error: cannot read " + what + " '" + path + "'");
  std::string text = read.str();
  // Every file the tool reads is text: a NUL byte means another kind of file (a
  // database, a binary) given in the wrong place.
  if (size_t nul = text.find('\0'); nul != std::string::npos)
    throw UserError("error: " + what + " '" + path + "' is not a text file (a NUL byte at offset " +
                    std::to_string(nul) + ")");
  // A UTF-8 byte-order mark, which some editors write, is no part of the text.
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return std::make_shared<SourceFile>(SourceFile{path, std::move(text)});
}

void write_text_file(const std::string &given, const std::string &text) {
  // Through a link, the file it names (a rename would replace the link itself).
  std::error_code ec;
  std::string path = given;
  if (std::filesystem::is_symlink(given, ec))
    if (std::filesystem::path target = std::filesystem::canonical(given, ec); !ec) path = target.string();
  // A device or a pipe (-o /dev/null, a FIFO) is written as it is: a rename would put a
  // file in its place (as root, /dev/null became one).
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.flush();
    if (!out) throw UserError("error: cannot write '" + given + "'");
    return;
  }
  const std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError("error: cannot write '" + given + "'");
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw UserError("error: cannot write '" + given + "'");
    }
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw UserError("error: cannot write '" + given + "': " + ec.message());
  }
}

std::string format_diagnostic(const SourceLoc &loc, const std::string &message, const char *severity) {
  if (!loc.file) return std::string(severity) + ": " + message;
  std::string out = loc.file->name + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": " +
                    severity + ": " + message;
  // Quote the line so the caret has something to point at.
  const std::string &text = loc.file->text;
  size_t start = 0;
  for (int line = 1; line < loc.line && start != std::string::npos; ++line) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > text.size()) return out;
  size_t end = text.find('\n', start);
  std::string source_line = text.substr(start, end == std::string::npos ? end : end - start);
  std::string caret;
  for (int i = 1; i < loc.column && i - 1 < static_cast<int>(source_line.size()); ++i)
    caret += source_line[i - 1] == '\t' ? '\t' : ' ';
  out += "\n" + source_line + "\n" + caret + "^";
  return out;
}

void error_at(const SourceLoc &loc, const std::string &message) { throw UserError(format_diagnostic(loc, message)); }

}  // namespace ks
