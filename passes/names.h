// Fresh names for what passes introduce (loop variables, accumulators), kept apart
// from every name already in use so printed IR and generated code stay unambiguous.
#pragma once

#include <set>
#include <string>

namespace ks {

class NameSet {
 public:
  void reserve(const std::string &name) { used_.insert(name); }
  bool contains(const std::string &name) const { return used_.count(name) > 0; }
  /// base if free, else base1, base2, ...; the result is reserved.
  std::string fresh(const std::string &base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + std::to_string(i);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace ks
