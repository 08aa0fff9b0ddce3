// On-disk cache of compiled program binaries, keyed by a hash of (device, driver,
// build options, source). An entry stores its key text in full and is used only
// when that matches, so a hash collision costs a rebuild, never a wrong binary.
// Entries are written to a temporary file and renamed: a crash never leaves a torn
// entry. Any failure to read or write the cache is ignored (the build just runs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ks::runtime {

class ProgramCache {
 public:
  /// dir "" means $KSMITH_CACHE_DIR, else $XDG_CACHE_HOME/kernelsmith, else ~/.cache/kernelsmith.
  explicit ProgramCache(std::string dir = "");
  std::optional<std::vector<unsigned char>> load(const std::string &key) const;
  void store(const std::string &key, const std::vector<unsigned char> &binary) const;
  const std::string &dir() const { return dir_; }

 private:
  std::string path_for(const std::string &key) const;
  std::string dir_;
};

/// 64-bit FNV-1a of text: a file name for a cache entry, not a security hash.
uint64_t fnv1a64(const std::string &text);

}  // namespace ks::runtime
