#include "evolve/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

extern char **environ;

namespace ks {

namespace {

// Reads what is ready on fd into out; false at end of file.
bool drain(int fd, std::string *out) {
  char chunk[65536];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) out->append(chunk, static_cast<size_t>(n));
  return n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN));
}

std::string first_line(const std::string &text) {
  size_t end = text.find('\n');
  return text.substr(0, end == std::string::npos ? text.size() : end);
}

}  // namespace

IsolatedRun run_isolated(const std::string &ksmith_path, const std::vector<std::string> &args, double time_limit_s) {
  IsolatedRun result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> argv_text = {ksmith_path, "run"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  argv_text.push_back("--json");
  std::vector<char *> argv;
  for (std::string &a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  int spawned = posix_spawn(&pid, ksmith_path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    result.failure = "cannot start " + ksmith_path + ": " + std::strerror(spawned);
    return result;
  }

  // Collect both streams until they close or the time runs out.
  std::string out, err;
  bool out_open = true, err_open = true, timed_out = false;
  const auto deadline = start + std::chrono::duration<double>(time_limit_s);
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(out_pipe[0], &out);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(err_pipe[0], &err);
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!out.empty()) {
    nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    if (!j.is_discarded() && j.is_object()) result.record = std::move(j);
  }
  if (timed_out) {
    char text[96];
    std::snprintf(text, sizeof text, "no record within the time limit of %.0f s: the evaluation was killed",
                  time_limit_s);
    result.failure = text;
  } else if (WIFSIGNALED(status)) {
    result.failure = std::string("the evaluation died of ") + ::strsignal(WTERMSIG(status)) +
                     (err.empty() ? "" : ": " + first_line(err));
  } else if (!result.record) {
    result.failure = err.empty() ? "the evaluation printed no record (exit " + std::to_string(WEXITSTATUS(status)) + ")"
                                 : first_line(err);
  } else {
    result.ok = result.record->value("ok", false);
    if (!result.ok) result.failure = result.record->value("verdict", std::string("the record did not pass"));
  }
  return result;
}

}  // namespace ks
