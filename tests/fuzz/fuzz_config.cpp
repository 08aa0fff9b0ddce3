// Run configurations (`ksmith evolve --config FILE`, TOML through toml++): every key
// is checked against the defaults; an error names the file and the key's line.
#include "evolve/search/config.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  ks::fuzz::guarded("fuzz.toml", true, [&] { ks::parse_config(text, "fuzz.toml"); });
  return 0;
}
