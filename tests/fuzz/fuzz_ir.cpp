// Printed IR: Loop IR where the text starts with `program`, Graph IR otherwise;
// parsed, printed and parsed back (the same text again), then verified. Printed IR
// that fails the verifier is an InternalError by design (verify_* is the compiler
// checking itself): here that is an answer too, as long as nothing crashes first.
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = fuzz::source(data, size, "fuzz.ir");
  const bool loops = file->text.find("program") != std::string::npos &&
                     file->text.find_first_not_of(" \t\r\n") == file->text.find("program");
  auto verified = [](auto verify) {
    try {
      verify();
    } catch (const InternalError &) {  // the verifier's answer: this IR is not well formed
    }
  };
  if (loops) {
    std::optional<Program> program;
    fuzz::guarded(file->name, true, [&] { program = parse_program(file); });
    if (!program) return 0;
    fuzz::round_trip("Loop IR", print_program(*program), parse_program, print_program);
    fuzz::must("the verifier", [&] { verified([&] { verify_program(*program); }); });
  } else {
    std::optional<Graph> graph;
    fuzz::guarded(file->name, true, [&] { graph = parse_graph(file); });
    if (!graph) return 0;
    fuzz::round_trip("Graph IR", print_graph(*graph), parse_graph, print_graph);
    fuzz::must("the verifier", [&] { verified([&] { verify_graph(*graph); }); });
  }
  return 0;
}
