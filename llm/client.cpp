// The model client over libcurl's multi interface: one loop starts the requests the
// caps allow, lets curl move every transfer, and settles each one that ends (an
// answer, a retry scheduled, or a failure). No threads of its own.
#include "llm/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "ir/diagnostic.h"

namespace ks::llm {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
Clock::duration from_seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// One request's life: its endpoint, its attempts, when it may next be tried.
struct Job {
  size_t index = 0, endpoint = 0;
  std::string body;  // the JSON sent, the same on every attempt
  Clock::time_point start, deadline, ready;
  int attempts = 0;
};

// One attempt in flight.
struct Transfer {
  Job *job = nullptr;
  CURL *easy = nullptr;
  curl_slist *headers = nullptr;
  std::string response;
  std::string retry_after;
  char error[CURL_ERROR_SIZE] = {0};
  ~Transfer() {
    if (easy) curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
  }
};

size_t on_body(char *data, size_t size, size_t count, void *user) {
  static_cast<Transfer *>(user)->response.append(data, size * count);
  return size * count;
}

size_t on_header(char *data, size_t size, size_t count, void *user) {
  const std::string line(data, size * count);
  const std::string name = "retry-after:";
  if (line.size() > name.size()) {
    std::string head = line.substr(0, name.size());
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    if (head == name) static_cast<Transfer *>(user)->retry_after = line.substr(name.size());
  }
  return size * count;
}

// The start of a body, on one line (for a message).
std::string body_start(const std::string &body, size_t length) {
  std::string start = body.substr(0, length);
  std::replace(start.begin(), start.end(), '\n', ' ');
  return start;
}

// What an error answer says: OpenAI's {"error": {"message": ...}}, {"error": "..."},
// or the start of the body.
std::string server_message(const std::string &body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json &e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return body.empty() ? "(no body)" : body_start(body, 200);
}

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string chat_url(const Endpoint &e) {
  std::string base = e.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/chat/completions";
}

// The whole exchange of one complete() call.
class Exchange {
 public:
  Exchange(const ClientOptions &options, const std::string &key, const std::vector<Request> &requests, uint64_t seed)
      : options_(options), key_(key), answers_(requests.size()), jitter_(seed + 1) {
    std::vector<double> weights;
    for (const Endpoint &e : options.endpoints) weights.push_back(e.weight);
    std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < requests.size(); ++i) {
      Job &job = jobs_.emplace_back();
      job.index = i;
      job.endpoint = options.endpoints.size() == 1 ? 0 : draw(rng);
      const Endpoint &e = options.endpoints[job.endpoint];
      const Sampling &s = requests[i].sampling;
      json body = {{"model", e.model},
                   {"messages", json::array({{{"role", "system"}, {"content", requests[i].system}},
                                             {{"role", "user"}, {"content", requests[i].user}}})},
                   {"temperature", s.temperature},
                   {"top_p", s.top_p},
                   {"max_tokens", s.max_tokens}};
      if (s.seed) body["seed"] = *s.seed;
      job.body = body.dump();
      Answer &a = answers_[i];
      a.endpoint = e.base_url;
      a.model = e.model;
      a.seed = s.seed;
      waiting_.push_back(&job);
    }
    per_endpoint_.assign(options.endpoints.size(), 0);
  }

  std::vector<Answer> run() {
    CURLM *multi = curl_multi_init();
    if (!multi) throw InternalError("curl_multi_init failed");
    multi_ = multi;
    while (!waiting_.empty() || !active_.empty()) {
      start_ready();
      int running = 0;
      curl_multi_perform(multi, &running);
      int left = 0;
      while (CURLMsg *msg = curl_multi_info_read(multi, &left))
        if (msg->msg == CURLMSG_DONE) settle(msg->easy_handle, msg->data.result);
      curl_multi_poll(multi, nullptr, 0, wait_ms(), nullptr);
    }
    curl_multi_cleanup(multi);
    return std::move(answers_);
  }

 private:
  void start_ready() {
    const Clock::time_point now = Clock::now();
    for (auto it = waiting_.begin(); it != waiting_.end() && active_.size() < size_t(options_.max_in_flight);) {
      Job *job = *it;
      if (job->ready > now || per_endpoint_[job->endpoint] >= options_.endpoints[job->endpoint].max_in_flight) {
        ++it;
        continue;
      }
      it = waiting_.erase(it);
      start(job, now);
    }
  }

  void start(Job *job, Clock::time_point now) {
    if (job->attempts == 0) {
      job->start = now;
      job->deadline = now + from_seconds(options_.request_deadline_s);
    }
    ++job->attempts;
    auto t = std::make_unique<Transfer>();
    t->job = job;
    t->easy = curl_easy_init();
    if (!t->easy) throw InternalError("curl_easy_init failed");
    const Endpoint &e = options_.endpoints[job->endpoint];
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    if (!key_.empty()) t->headers = curl_slist_append(t->headers, ("Authorization: Bearer " + key_).c_str());
    const long remaining_ms = std::max(1L, long(1e3 * seconds(job->deadline - now)));
    curl_easy_setopt(t->easy, CURLOPT_URL, chat_url(e).c_str());
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, job->body.c_str());
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, long(job->body.size()));
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, remaining_ms);
    curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, std::min(remaining_ms, 10000L));
    curl_multi_add_handle(multi_, t->easy);
    ++per_endpoint_[job->endpoint];
    active_[t->easy] = std::move(t);
  }

  // One attempt ended: an answer, a failure, or a retry scheduled.
  void settle(CURL *easy, CURLcode result) {
    std::unique_ptr<Transfer> t = std::move(active_.at(easy));
    active_.erase(easy);
    curl_multi_remove_handle(multi_, easy);
    Job &job = *t->job;
    --per_endpoint_[job.endpoint];
    Answer &a = answers_[job.index];
    const Clock::time_point now = Clock::now();
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    a.http_status = int(status);
    a.attempts = job.attempts;
    a.latency_s = seconds(now - job.start);
    const std::string attempts = std::to_string(job.attempts) + (job.attempts == 1 ? " attempt" : " attempts");
    if (result == CURLE_OPERATION_TIMEDOUT)
      return fail(a,
                  "no answer within the deadline of " + number(options_.request_deadline_s) + " s (" + attempts + ")");
    std::string reason;
    std::optional<double> asked;
    if (result != CURLE_OK) {
      reason = std::string("no answer: ") + (t->error[0] ? t->error : curl_easy_strerror(result));
    } else if (status == 200) {
      return read_answer(t->response, &a);
    } else if (status == 429 || status >= 500) {
      reason = "HTTP " + std::to_string(status) + ": " + server_message(t->response);
      if (!t->retry_after.empty()) asked = retry_after_seconds(t->retry_after, std::time(nullptr));
    } else {
      return fail(a, "HTTP " + std::to_string(status) + ": " + server_message(t->response));
    }
    if (job.attempts >= options_.max_attempts) return fail(a, reason + " (" + attempts + ")");
    const double backoff = std::min(options_.backoff_max_s, options_.backoff_s * std::pow(2.0, job.attempts - 1)) *
                           std::uniform_real_distribution<double>(0.5, 1.5)(jitter_);
    const double delay = asked ? *asked : backoff;
    if (now + from_seconds(delay) >= job.deadline)
      return fail(a, reason + "; the next attempt, in " + number(delay) + " s, would pass the deadline of " +
                         number(options_.request_deadline_s) + " s (" + attempts + ")");
    job.ready = now + from_seconds(delay);
    waiting_.push_back(&job);
  }

  void read_answer(const std::string &body, Answer *a) {
    const json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) return fail(*a, "the answer is not JSON: " + body_start(body, 80));
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
      return fail(*a, "the answer has no choices");
    const json &choice = j["choices"][0];
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object() ||
        !choice["message"].contains("content") || !choice["message"]["content"].is_string())
      return fail(*a, "the answer's first choice has no message content");
    a->content = choice["message"]["content"].get<std::string>();
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      a->finish_reason = choice["finish_reason"].get<std::string>();
    if (j.contains("usage") && j["usage"].is_object()) {
      const json &u = j["usage"];
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
        a->prompt_tokens = u["prompt_tokens"].get<int64_t>();
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
        a->completion_tokens = u["completion_tokens"].get<int64_t>();
    }
    a->ok = true;
  }

  void fail(Answer &a, const std::string &why) {
    a.ok = false;
    a.error = "endpoint " + a.endpoint + " (model " + a.model + "): " + why;
  }

  // Until the next retry is due, at most 100 ms: curl wakes the poll itself when a
  // transfer has news.
  int wait_ms() const {
    int ms = 100;
    const Clock::time_point now = Clock::now();
    for (const Job *job : waiting_) ms = std::min<int>(ms, std::max<int>(0, int(1e3 * seconds(job->ready - now))));
    return ms;
  }

  const ClientOptions &options_;
  const std::string &key_;
  std::vector<Answer> answers_;
  std::deque<Job> jobs_;  // stable addresses for the queue and the transfers
  std::deque<Job *> waiting_;
  std::map<CURL *, std::unique_ptr<Transfer>> active_;
  std::vector<int> per_endpoint_;
  std::mt19937_64 jitter_;
  CURLM *multi_ = nullptr;
};

}  // namespace

std::optional<double> retry_after_seconds(const std::string &value, std::time_t now) {
  const size_t first = value.find_first_not_of(" \t\r\n"), last = value.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) return std::nullopt;
  const std::string v = value.substr(first, last - first + 1);
  if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }))
    return v.size() > 9 ? std::nullopt : std::optional<double>(std::stod(v));
  const std::time_t at = curl_getdate(v.c_str(), nullptr);
  if (at == -1) return std::nullopt;
  return std::max(0.0, double(at - now));
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw UserError("error: the model client has no endpoint (a base URL and a model)");
  for (const Endpoint &e : options_.endpoints) {
    const std::string where = "error: model endpoint '" + e.base_url + "'";
    if (e.base_url.rfind("http://", 0) != 0 && e.base_url.rfind("https://", 0) != 0)
      throw UserError(where + ": not an http:// or https:// URL");
    if (e.model.empty()) throw UserError(where + ": no model named");
    if (!(e.weight > 0) || !std::isfinite(e.weight))
      throw UserError(where + ": its weight must be a positive number, not " + number(e.weight));
    if (e.max_in_flight < 1)
      throw UserError(where + ": at least one request in flight, not " + std::to_string(e.max_in_flight));
  }
  if (!(options_.request_deadline_s > 0))
    throw UserError("error: the model client's deadline per request must be positive, not " +
                    number(options_.request_deadline_s) + " s");
  if (options_.max_attempts < 1) throw UserError("error: the model client needs at least one attempt a request");
  if (options_.max_in_flight < 1) throw UserError("error: the model client needs at least one request in flight");
  if (!(options_.backoff_s >= 0) || !(options_.backoff_max_s >= 0))
    throw UserError("error: the model client's backoff must not be negative");
  if (const char *key = std::getenv(options_.key_variable.c_str())) key_ = key;
  init_curl();
}

Client::~Client() = default;

std::vector<Answer> Client::complete(const std::vector<Request> &requests, uint64_t seed) {
  if (requests.empty()) return {};
  return Exchange(options_, key_, requests, seed).run();
}

}  // namespace ks::llm
