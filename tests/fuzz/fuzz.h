// What every fuzz target shares: the input as a source file, and the campaign's one
// rule. A UserError is an answer (the input is wrong, and the message says where);
// any other exception escaping, like a crash, a sanitizer report, a time-out or
// unbounded memory, is a bug, and abort() makes libFuzzer keep the input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/diagnostic.h"

namespace ks::fuzz {

inline std::shared_ptr<const SourceFile> source(const uint8_t *data, size_t size, const std::string &name) {
  return std::make_shared<const SourceFile>(SourceFile{name, std::string(reinterpret_cast<const char *>(data), size)});
}

[[noreturn]] inline void bug(const std::string &what) {
  std::fprintf(stderr, "\n==== kernelsmith fuzz: %s\n", what.c_str());
  std::abort();
}

/// Runs f; a UserError must name the input (`NAME:line:col: error: ...`, or
/// `NAME:line: error:` for line-based formats) where located is set; any other
/// exception is a bug.
template <class F>
void guarded(const std::string &name, bool located, F &&f) {
  try {
    f();
  } catch (const UserError &e) {
    const std::string message = e.what();
    if (message.find("error") == std::string::npos) bug("a user error that does not say 'error': " + message);
    if (located && message.rfind(name + ":", 0) != 0) bug("a user error without the input's place: " + message);
  } catch (const std::exception &e) {
    bug(std::string("escaped: ") + e.what());
  }
}

/// Runs f where the input is the tool's own (printed IR, a printed schedule): no
/// error of any kind is an answer there.
template <class F>
void must(const std::string &what, F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    bug(what + ": " + e.what());
  }
}

/// Text the tool printed parses back and prints the same again.
template <class Parse, class Print>
void round_trip(const std::string &what, const std::string &printed, Parse parse, Print print) {
  must("the printed " + what + " does not parse back the same", [&] {
    const std::string twice = print(parse(std::make_shared<const SourceFile>(SourceFile{"printed", printed})));
    if (twice != printed) throw std::runtime_error("printed:\n" + printed + "\nparsed and printed again:\n" + twice);
  });
}

/// A fixed spec of a target, elaborated at its default sizes.
inline Graph elaborated(const char *spec_text) {
  return frontend::elaborate(frontend::parse_spec(std::make_shared<const SourceFile>(SourceFile{"spec.ks", spec_text})),
                             frontend::SizeSet::Default, {});
}

/// a * b, saturating at limit (sizes the fuzzer writes may overflow int64).
inline int64_t capped_product(int64_t a, int64_t b, int64_t limit) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > limit) return limit;
  return r;
}

}  // namespace ks::fuzz
