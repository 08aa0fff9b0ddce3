// One request to a model made by a proposer, as the search hands it to the run
// database (never the key).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ks {

struct ModelCall {
  std::string endpoint, model;
  std::optional<int64_t> seed;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double latency_s = 0;
  int attempts = 0;
  bool ok = false;     // a proposal came of it
  std::string result;  // "proposed", or why not (the request's failure, the answer's fault)
};

}  // namespace ks
