// Child processes in their own process groups, the device lock, the process queue.
#include "evolve/workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ir/diagnostic.h"

extern char **environ;

namespace ks {

namespace {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads what is ready on fd into out; false at end of file.
bool drain(int fd, std::string *out) {
  char chunk[65536];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) out->append(chunk, static_cast<size_t>(n));
  return n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN));
}

}  // namespace

Child::Child(const std::vector<std::string> &argv_text) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result_.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result_.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  // A process group of its own: killing it reaches whatever the child started, and
  // a Ctrl-C at the terminal reaches the parent alone, which stops the children.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<std::string> text = argv_text;
  std::vector<char *> argv;
  for (std::string &a : text) argv.push_back(a.data());
  argv.push_back(nullptr);
  start_ = monotonic_seconds();
  int spawned = posix_spawnp(&pid_, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    pid_ = -1;
    result_.err = "cannot start " + argv_text[0] + ": " + std::strerror(spawned);
    return;
  }
  out_ = out_pipe[0];
  err_ = err_pipe[0];
  result_.started = true;
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill();
    reap(true);
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

double Child::seconds() const { return monotonic_seconds() - start_; }

void Child::kill() {
  if (pid_ > 0 && !reaped_) ::kill(-pid_, SIGKILL);
}

void Child::reap(bool wait) {
  if (pid_ <= 0 || reaped_) return;
  int status = 0;
  pid_t done;
  while ((done = ::waitpid(pid_, &status, wait ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (done != pid_) return;
  reaped_ = true;
  result_.seconds = seconds();
  if (WIFEXITED(status)) result_.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
}

bool Child::poll(int wait_ms) {
  if (!result_.started) return true;
  if (out_ >= 0 || err_ >= 0) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    int ready = ::poll(fds, 2, wait_ms);
    if (ready > 0) {
      if (out_ >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(out_, &result_.out)) {
        ::close(out_);
        out_ = -1;
      }
      if (err_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(err_, &result_.err)) {
        ::close(err_);
        err_ = -1;
      }
    }
  }
  // Streams closed: the child has exited or is exiting (or handed them on to a
  // process of its group that lives on, which a kill of the group ends).
  if (out_ < 0 && err_ < 0) reap(true);
  return reaped_ && out_ < 0 && err_ < 0;
}

ChildRun run_child(const std::vector<std::string> &argv, double time_limit_s) {
  Child child(argv);
  const double deadline = monotonic_seconds() + time_limit_s;
  bool timed_out = false;
  while (!child.poll(static_cast<int>(std::clamp((deadline - monotonic_seconds()) * 1e3, 0.0, 1000.0)))) {
    if (monotonic_seconds() >= deadline) {
      timed_out = true;
      child.kill();
      while (!child.poll(1000)) {
      }
    }
  }
  ChildRun out = child.result();
  out.timed_out = timed_out;
  return out;
}

DeviceLock::DeviceLock(const std::string &path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UserError("error: cannot open the device lock '" + path + "': " + std::strerror(errno));
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);
}

void DeviceLock::share() {
  while (::flock(fd_, LOCK_SH) != 0 && errno == EINTR) {
  }
}

void DeviceLock::own() {
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

void DeviceLock::release() { ::flock(fd_, LOCK_UN); }

std::string device_lock_path(const std::string &api, int index, const std::string &name) {
  const char *cache = std::getenv("KSMITH_CACHE_DIR");
  const char *home = std::getenv("HOME");
  std::string dir = cache && *cache ? cache : std::string(home ? home : "/tmp") + "/.cache/kernelsmith";
  std::string file = api + "-" + std::to_string(index) + "-";
  for (char c : name) file += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return dir + "/locks/" + file + ".lock";
}

ProcessQueue::ProcessQueue(std::string ksmith, size_t workers) : ksmith_(std::move(ksmith)), workers_(workers) {}

void ProcessQueue::submit(Job job) {
  std::vector<std::string> argv = {ksmith_};
  argv.insert(argv.end(), job.args.begin(), job.args.end());
  running_.push_back({std::move(job), std::make_unique<Child>(argv)});
}

std::vector<JobResult> ProcessQueue::wait(double timeout_s) {
  std::vector<JobResult> done;
  const double deadline = monotonic_seconds() + timeout_s;
  while (done.empty()) {
    // Each child's streams (the first one waits a little for its output); then
    // whoever finished, or ran out of time.
    double left = deadline - monotonic_seconds();
    int wait_ms = static_cast<int>(std::clamp(left * 1e3, 0.0, 200.0));
    if (running_.empty()) break;
    for (size_t i = 0; i < running_.size(); ++i) {
      Child &c = *running_[i].child;
      bool finished = c.poll(i == 0 ? wait_ms : 0);
      bool late = !finished && c.seconds() > running_[i].job.time_limit_s;
      if (late) {
        c.kill();
        while (!c.poll(1000)) {
        }
      }
      if (finished || late) {
        JobResult r{running_[i].job.ticket, c.result()};
        r.child.timed_out = late;
        done.push_back(std::move(r));
        running_[i].child.reset();
      }
    }
    std::erase_if(running_, [](const Running &r) { return !r.child; });
    if (monotonic_seconds() >= deadline) break;
  }
  return done;
}

void ProcessQueue::stop() {
  for (Running &r : running_) r.child->kill();
  running_.clear();  // each Child reaps its process as it goes
}

}  // namespace ks
