// The model client: OpenAI-compatible chat completions over HTTP (libcurl), as vLLM,
// SGLang, llama.cpp's server, Ollama and hosted APIs serve them. Several endpoints
// with weights (an ensemble), several requests in flight at once (curl multi) with a
// cap per endpoint, a deadline per request, retries with backoff and jitter on 429
// and 5xx that honour Retry-After. The key is read from the environment and sent
// only in the Authorization header: never in an answer, an error or a log.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace ks::llm {

struct Endpoint {
  std::string base_url;   // e.g. http://localhost:8000/v1; "/chat/completions" is appended
  std::string model;      // the "model" of each request
  double weight = 1;      // its share of the requests in an ensemble
  int max_in_flight = 4;  // requests at once to this endpoint
};

struct Sampling {
  double temperature = 0.8;
  double top_p = 0.95;
  int max_tokens = 4096;
  std::optional<int64_t> seed;  // sent where set (servers that honour it repeat themselves)
};

struct ClientOptions {
  std::vector<Endpoint> endpoints;
  // The environment variable holding the key; unset or empty: no Authorization
  // header (a local server needs none).
  std::string key_variable = "OPENAI_API_KEY";
  double request_deadline_s = 120;  // one request, its retries included
  int max_attempts = 4;             // tries of one request (429, 5xx, no connection)
  double backoff_s = 1;             // the first retry's delay, doubled each time, times 0.5 to 1.5
  double backoff_max_s = 30;
  int max_in_flight = 8;  // requests at once, all endpoints together
};

struct Request {
  std::string system, user;
  Sampling sampling;
};

/// What came back for one request. Never the key.
struct Answer {
  bool ok = false;
  std::string content;        // the model's message
  std::string finish_reason;  // "stop"; "length" where max_tokens cut it short
  std::string error;          // why not ok, naming the endpoint
  std::string endpoint, model;
  std::optional<int64_t> seed;
  int http_status = 0;  // of the last attempt; 0 where none answered
  int attempts = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double latency_s = 0;  // from the first attempt's start to the answer, waits included
};

class Client {
 public:
  /// Bad options (no endpoint, a URL that is not http(s), a weight or cap below
  /// what makes sense) are a UserError naming the option.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;

  /// Sends every request, each to an endpoint drawn by weight (from seed), up to the
  /// caps in flight at once; returns the answers in the requests' order. What a
  /// server does (refusals, bad JSON, silence) is an answer that is not ok, never an
  /// exception.
  std::vector<Answer> complete(const std::vector<Request> &requests, uint64_t seed);

  const ClientOptions &options() const { return options_; }
  bool has_key() const { return !key_.empty(); }

 private:
  ClientOptions options_;
  std::string key_;
};

/// The wait a Retry-After header value asks for, in seconds: delta-seconds or an
/// HTTP date (RFC 9110); nullopt where it is neither.
std::optional<double> retry_after_seconds(const std::string &value, std::time_t now);

}  // namespace ks::llm
