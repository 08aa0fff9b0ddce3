// The model client (llm/client.h) against the stand-in server of tests/llm (canned
// answers by model name, on localhost: no model is reachable from these machines).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "llm/client.h"
#include "test_util.h"

namespace ks::llm {
namespace {

namespace fs = std::filesystem;

const char *kKey = "sk-standin-7f3a9c1e5b";  // what the key-checking server expects

// The stand-in server in a child process, on an ephemeral port it writes to a file.
class StandIn {
 public:
  explicit StandIn(bool expect_key) {
    dir_ = fs::temp_directory_path() / ("ks_standin_" + std::to_string(getpid()) + (expect_key ? "_key" : ""));
    fs::create_directories(dir_);
    const std::string port_file = (dir_ / "port").string(), log = (dir_ / "log.jsonl").string();
    fs::remove(port_file);
    pid_ = fork();
    if (pid_ == 0) {
      if (expect_key)
        setenv("STANDIN_EXPECT_KEY", kKey, 1);
      else
        unsetenv("STANDIN_EXPECT_KEY");
      const std::string script = std::string(KS_SOURCE_DIR) + "/tests/llm/standin_server.py";
      execl("/usr/bin/python3", "python3", script.c_str(), "--port-file", port_file.c_str(), "--log", log.c_str(),
            static_cast<char *>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200 && port_.empty(); ++i) {
      std::ifstream in(port_file);
      std::getline(in, port_);
      if (port_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~StandIn() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }
  bool up() const { return !port_.empty(); }
  std::string url() const { return "http://127.0.0.1:" + port_ + "/v1"; }
  std::string log() const {
    std::ifstream in(dir_ / "log.jsonl");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  std::string port_;
};

ClientOptions options_for(const std::string &url, const std::string &model) {
  ClientOptions o;
  o.endpoints = {Endpoint{url, model}};
  o.key_variable = "KS_TEST_NO_SUCH_KEY";
  o.request_deadline_s = 20;
  o.backoff_s = 0.05;
  return o;
}

Answer ask(const ClientOptions &o, const std::string &user = "tile the matmul") {
  Client client(o);
  std::vector<Answer> answers = client.complete({Request{"You schedule kernels.", user, {}}}, 1);
  EXPECT_EQ(answers.size(), 1u);
  return answers.at(0);
}

class ModelClient : public testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new StandIn(false); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_->up()) GTEST_SKIP() << "SKIP: the stand-in server did not start (/usr/bin/python3)";
  }
  static StandIn *server_;
};
StandIn *ModelClient::server_ = nullptr;

TEST_F(ModelClient, ReadsAnAnswerWithItsUsage) {
  Answer a = ask(options_for(server_->url(), "good-schedule"));
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_NE(a.content.find("<schedule>\nsplit c.i 64 -> io ii"), std::string::npos) << a.content;
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(a.model, "good-schedule");
  EXPECT_GT(a.prompt_tokens, 0);
  EXPECT_GT(a.completion_tokens, 0);
  EXPECT_GT(a.latency_s, 0);
}

TEST_F(ModelClient, SendsTheMessagesAndTheSampling) {
  ClientOptions o = options_for(server_->url(), "echo");
  Client client(o);
  Sampling s;
  s.temperature = 0.25;
  s.top_p = 0.5;
  s.max_tokens = 77;
  s.seed = 1234;
  Answer a = client.complete({Request{"SYSTEM TEXT", "USER TEXT", s}}, 1).at(0);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_NE(a.content.find("system: SYSTEM TEXT"), std::string::npos) << a.content;
  EXPECT_NE(a.content.find("user: USER TEXT"), std::string::npos) << a.content;
  EXPECT_NE(a.content.find("temperature=0.25 top_p=0.5 max_tokens=77 seed=1234"), std::string::npos) << a.content;
  EXPECT_EQ(a.seed, std::optional<int64_t>(1234));
}

TEST_F(ModelClient, KeepsATruncatedAnswerAsItCame) {
  Answer a = ask(options_for(server_->url(), "truncated"));
  ASSERT_TRUE(a.ok) << a.error;  // the answer parser decides what a cut-off answer is worth
  EXPECT_EQ(a.finish_reason, "length");
}

TEST_F(ModelClient, WaitsAsRetryAfterAsks) {
  for (const char *model : {"rate-limited", "rate-limited-date"}) {
    ClientOptions o = options_for(server_->url(), model);
    o.backoff_s = 0;  // only Retry-After can make it wait
    Answer a = ask(o);
    ASSERT_TRUE(a.ok) << a.error;
    EXPECT_EQ(a.attempts, 2) << model;
    EXPECT_GE(a.latency_s, 0.9) << model;
  }
}

TEST_F(ModelClient, RetriesServerErrorsThenGivesUp) {
  Answer flaky = ask(options_for(server_->url(), "flaky-500"));
  ASSERT_TRUE(flaky.ok) << flaky.error;
  EXPECT_EQ(flaky.attempts, 3);
  ClientOptions o = options_for(server_->url(), "always-500");
  o.max_attempts = 2;
  Answer down = ask(o);
  EXPECT_FALSE(down.ok);
  EXPECT_EQ(down.attempts, 2);
  EXPECT_EQ(down.http_status, 503);
  EXPECT_NE(down.error.find("HTTP 503"), std::string::npos) << down.error;
  EXPECT_NE(down.error.find("(2 attempts)"), std::string::npos) << down.error;
  EXPECT_NE(down.error.find(server_->url()), std::string::npos) << down.error;
}

TEST_F(ModelClient, StopsAtTheDeadline) {
  ClientOptions o = options_for(server_->url(), "slow");
  o.request_deadline_s = 1;
  const auto start = std::chrono::steady_clock::now();
  Answer a = ask(o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.error.find("no answer within the deadline of 1 s"), std::string::npos) << a.error;
  EXPECT_LT(took, 3.0);
}

TEST_F(ModelClient, NamesWhatIsWrongWithAnAnswer) {
  struct Case {
    const char *model, *expected;
    int attempts;
  };
  for (const Case &c : {Case{"bad-json", "the answer is not JSON: {\"choices\": [", 1},
                        Case{"no-choices", "the answer has no choices", 1},
                        Case{"no-such-model", "HTTP 404: The model `no-such-model` does not exist", 1},
                        Case{"bad-request", "HTTP 400: max_tokens is too large", 1}}) {
    Answer a = ask(options_for(server_->url(), c.model));
    EXPECT_FALSE(a.ok) << c.model;
    EXPECT_NE(a.error.find(c.expected), std::string::npos) << a.error;
    EXPECT_EQ(a.attempts, c.attempts) << c.model;  // none of these is worth a retry
  }
}

TEST_F(ModelClient, SpreadsAnEnsembleByWeightAndCapsWhatIsInFlight) {
  ClientOptions o = options_for(server_->url(), "count");
  o.endpoints.push_back(Endpoint{server_->url(), "good-schedule", 3, 1});
  o.endpoints[0].weight = 1;
  o.endpoints[0].max_in_flight = 2;
  Client client(o);
  std::vector<Request> requests(40, Request{"s", "u", {}});
  std::vector<Answer> answers = client.complete(requests, 7);
  int first = 0, second = 0;
  for (const Answer &a : answers) {
    ASSERT_TRUE(a.ok) << a.error;
    (a.model == "count" ? first : second) += 1;
  }
  EXPECT_EQ(first + second, 40);
  EXPECT_GE(second, 22) << "weights 1 and 3";
  EXPECT_GE(first, 3) << "weights 1 and 3";
  // Every request to "count" arrived once: its counter reached their number.
  bool last_seen = false;
  for (const Answer &a : answers)
    last_seen = last_seen || (a.model == "count" && a.content.rfind("request " + std::to_string(first) + "\n", 0) == 0);
  EXPECT_TRUE(last_seen);
}

TEST_F(ModelClient, SaysWhenNoServerAnswers) {
  ClientOptions o = options_for("http://127.0.0.1:9/v1", "good-schedule");  // the discard port: nothing listens
  o.max_attempts = 2;
  Answer a = ask(o);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.attempts, 2);
  EXPECT_NE(a.error.find("no answer: "), std::string::npos) << a.error;
}

TEST(ModelClientOptions, BadOptionsAreUserErrors) {
  auto error = [](ClientOptions o) { return test::user_error([&] { Client c(o); }); };
  ClientOptions o;
  EXPECT_EQ(error(o), "error: the model client has no endpoint (a base URL and a model)");
  o.endpoints = {Endpoint{"localhost:8000", "m"}};
  EXPECT_EQ(error(o), "error: model endpoint 'localhost:8000': not an http:// or https:// URL");
  o.endpoints = {Endpoint{"http://localhost:8000/v1", ""}};
  EXPECT_EQ(error(o), "error: model endpoint 'http://localhost:8000/v1': no model named");
  o.endpoints = {Endpoint{"http://localhost:8000/v1", "m", -1}};
  EXPECT_EQ(error(o), "error: model endpoint 'http://localhost:8000/v1': its weight must be a positive number, not -1");
  o.endpoints = {Endpoint{"http://localhost:8000/v1", "m"}};
  o.request_deadline_s = 0;
  EXPECT_EQ(error(o), "error: the model client's deadline per request must be positive, not 0 s");
}

TEST(ModelClientOptions, RetryAfterIsSecondsOrADate) {
  EXPECT_EQ(retry_after_seconds(" 3\r\n", 0), std::optional<double>(3));
  EXPECT_EQ(retry_after_seconds("Sun, 06 Nov 1994 08:49:37 GMT", 784111770), std::optional<double>(7));
  EXPECT_EQ(retry_after_seconds("Sun, 06 Nov 1994 08:49:37 GMT", 784111790), std::optional<double>(0));
  EXPECT_EQ(retry_after_seconds("soon", 0), std::nullopt);
  EXPECT_EQ(retry_after_seconds("", 0), std::nullopt);
}

// The key goes in the Authorization header and nowhere else: not in an answer, not
// in an error, not in the server's log of what it received.
TEST(ModelClientKey, IsSentAndNeverWritten) {
  StandIn server(/*expect_key=*/true);
  if (!server.up()) GTEST_SKIP() << "SKIP: the stand-in server did not start (/usr/bin/python3)";
  ClientOptions o = options_for(server.url(), "good-schedule");
  o.key_variable = "KS_TEST_MODEL_KEY";
  setenv("KS_TEST_MODEL_KEY", kKey, 1);
  Answer with = ask(o);
  EXPECT_TRUE(with.ok) << with.error;
  ClientOptions wrong = o;
  setenv("KS_TEST_MODEL_KEY", "sk-wrong-0000", 1);
  Answer refused = ask(wrong);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("HTTP 401"), std::string::npos) << refused.error;
  unsetenv("KS_TEST_MODEL_KEY");
  Answer without = ask(o);
  EXPECT_FALSE(without.ok);
  for (const Answer &a : {with, refused, without}) {
    EXPECT_EQ(a.error.find("sk-"), std::string::npos) << a.error;
    EXPECT_EQ(a.content.find("sk-"), std::string::npos) << a.content;
  }
  const std::string log = server.log();
  EXPECT_NE(log.find("\"authorized\": true"), std::string::npos) << log;
  EXPECT_EQ(log.find("sk-"), std::string::npos) << log;
}

}  // namespace
}  // namespace ks::llm
