// Sizes files (`ksmith bench --sizes FILE`: NAME SIZES lines) and each line's
// assignments (`--size M=64,eps=1e-3`), applied to a spec with a derived size, a
// requirement and a constant; an error names the file and line, or the flag.
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "tests/fuzz/fuzz.h"

using namespace ks;

namespace {

const frontend::Spec &grouped() {
  static const frontend::Spec spec = frontend::parse_spec(std::make_shared<const SourceFile>(SourceFile{"spec.ks", R"(
kernel grouped(x: f32[N, C]) -> y: f32[N, G]
  where N = 4, C = 6, G = 3, CG = C / G
  require C % G == 0
  const eps = 1e-5
{
  y[n, g] = sum(c: CG) x[n, g * CG + c] + eps
})"}));
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = fuzz::source(data, size, "fuzz.txt");
  std::map<std::string, std::string> lines;
  fuzz::guarded(file->name, true, [&] { lines = frontend::parse_sizes_file(*file); });
  for (const auto &line : lines) {
    const std::string &assignments = line.second;
    frontend::SizeOverrides overrides;
    bool parsed = false;
    fuzz::guarded("", false, [&] {
      frontend::parse_size_assignments(assignments, &overrides);
      parsed = true;
    });
    if (parsed)
      fuzz::guarded("", false, [&] { frontend::elaborate(grouped(), frontend::SizeSet::Default, overrides); });
  }
  return 0;
}
