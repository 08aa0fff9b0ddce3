#include "runtime/program_cache.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ks::runtime {

uint64_t fnv1a64(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

ProgramCache::ProgramCache(std::string dir) : dir_(std::move(dir)) {
  if (!dir_.empty()) return;
  if (const char *d = std::getenv("KSMITH_CACHE_DIR"); d && *d)
    dir_ = d;
  else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir_ = std::string(x) + "/kernelsmith";
  else if (const char *home = std::getenv("HOME"); home && *home)
    dir_ = std::string(home) + "/.cache/kernelsmith";
}

std::string ProgramCache::path_for(const std::string &key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(fnv1a64(key)));
  return dir_ + "/" + name;
}

// Entry layout: key length (8 bytes), key, binary length (8 bytes), binary.
std::optional<std::vector<unsigned char>> ProgramCache::load(const std::string &key) const {
  if (dir_.empty()) return std::nullopt;
  std::ifstream in(path_for(key), std::ios::binary);
  if (!in) return std::nullopt;
  uint64_t key_size = 0, binary_size = 0;
  if (!in.read(reinterpret_cast<char *>(&key_size), sizeof key_size) || key_size != key.size()) return std::nullopt;
  std::string stored(key_size, '\0');
  if (!in.read(stored.data(), static_cast<std::streamsize>(key_size)) || stored != key) return std::nullopt;
  if (!in.read(reinterpret_cast<char *>(&binary_size), sizeof binary_size) || binary_size > (1u << 30))
    return std::nullopt;
  std::vector<unsigned char> binary(binary_size);
  if (!in.read(reinterpret_cast<char *>(binary.data()), static_cast<std::streamsize>(binary_size))) return std::nullopt;
  return binary;
}

void ProgramCache::store(const std::string &key, const std::vector<unsigned char> &binary) const {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return;
  std::string path = path_for(key);
  std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    uint64_t key_size = key.size(), binary_size = binary.size();
    out.write(reinterpret_cast<const char *>(&key_size), sizeof key_size);
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    out.write(reinterpret_cast<const char *>(&binary_size), sizeof binary_size);
    out.write(reinterpret_cast<const char *>(binary.data()), static_cast<std::streamsize>(binary.size()));
    if (!out) {
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) std::filesystem::remove(temp, ec);
}

}  // namespace ks::runtime
