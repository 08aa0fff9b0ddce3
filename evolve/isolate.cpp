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

ChildRun run_child(const std::vector<std::string> &argv_text, double time_limit_s) {
  ChildRun result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> text = argv_text;
  std::vector<char *> argv;
  for (std::string &a : text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    result.err = "cannot start " + argv_text[0] + ": " + std::strerror(spawned);
    return result;
  }
  result.started = true;

  // Collect both streams until they close or the time runs out.
  bool out_open = true, err_open = true;
  const auto deadline = start + std::chrono::duration<double>(time_limit_s);
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(out_pipe[0], &result.out);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(err_pipe[0], &result.err);
  }
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

IsolatedRun run_isolated(const std::string &ksmith_path, const std::vector<std::string> &args, double time_limit_s) {
  std::vector<std::string> argv = {ksmith_path, "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--json");
  ChildRun child = run_child(argv, time_limit_s);
  IsolatedRun result;
  result.seconds = child.seconds;
  if (!child.started) {
    result.failure = child.err;
    return result;
  }
  if (!child.out.empty()) {
    nlohmann::json j = nlohmann::json::parse(child.out, nullptr, false);
    if (!j.is_discarded() && j.is_object()) result.record = std::move(j);
  }
  if (child.timed_out) {
    char text[96];
    std::snprintf(text, sizeof text, "no record within the time limit of %.0f s: the evaluation was killed",
                  time_limit_s);
    result.failure = text;
  } else if (child.signal) {
    result.failure = std::string("the evaluation died of ") + ::strsignal(child.signal) +
                     (child.err.empty() ? "" : ": " + first_line(child.err));
  } else if (!result.record) {
    result.failure = child.err.empty()
                         ? "the evaluation printed no record (exit " + std::to_string(child.exit_status) + ")"
                         : first_line(child.err);
  } else {
    result.ok = result.record->value("ok", false);
    if (!result.ok) result.failure = result.record->value("verdict", std::string("the record did not pass"));
  }
  return result;
}

}  // namespace ks
