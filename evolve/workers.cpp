// Child processes in their own process groups, the device lock, the workers that serve the search.
#include "evolve/workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "evolve/farm/farm.h"
#include "ir/diagnostic.h"

extern char **environ;

namespace ks {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// Reads what is ready on fd into out; false at end of file.
bool drain(int fd, std::string *out) {
  char chunk[65536];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) out->append(chunk, static_cast<size_t>(n));
  return n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN));
}

}  // namespace

Child::Child(const std::vector<std::string> &argv_text, bool input, bool own_group) : own_group_(own_group) {
  int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
  if (input && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    result_.err = std::string("cannot create a pipe: ") + std::strerror(errno);
    return;
  }
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
  if (input) posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  // A process group of its own: killing it reaches whatever the child started, and
  // a Ctrl-C at the terminal reaches the parent alone, which stops the children.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
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
  if (input) ::close(in_pipe[0]);
  in_ = in_pipe[1];
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
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

bool Child::send(const std::string &text) {
  size_t sent = 0;
  while (in_ >= 0 && sent < text.size()) {
    ssize_t n = ::write(in_, text.data() + sent, text.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return in_ >= 0;
}

std::optional<std::string> Child::take_line() {
  const size_t end = result_.out.find('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string line = result_.out.substr(0, end);
  result_.out.erase(0, end + 1);
  return line;
}

double Child::seconds() const { return monotonic_seconds() - start_; }

void Child::kill() {
  if (pid_ > 0 && !reaped_) ::kill(own_group_ ? -pid_ : pid_, SIGKILL);
}

void Child::interrupt() {
  if (pid_ > 0 && !reaped_) ::kill(pid_, SIGINT);
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

std::string worker_request(const Job &job) {
  return nlohmann::json{{"ticket", job.ticket}, {"args", job.args}}.dump() + "\n";
}

bool worker_answer(const std::string &line, JobResult *result, bool *retire) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("ticket") || !j["ticket"].is_number_unsigned() || !j.contains("exit") ||
      !j["exit"].is_number_integer() || !j.contains("out") || !j["out"].is_string() || !j.contains("err") ||
      !j["err"].is_string())
    return false;
  result->ticket = j["ticket"].get<uint64_t>();
  result->child.started = true;
  result->child.exit_status = j["exit"].get<int>();
  result->child.out = j["out"].get<std::string>();
  result->child.err = j["err"].get<std::string>();
  if (retire) *retire = j.contains("retire");
  return true;
}

WorkerQueue::WorkerQueue(std::string ksmith, std::vector<Slot> slots) : ksmith_(std::move(ksmith)) {
  for (Slot &s : slots) slots_.push_back({std::move(s), nullptr, std::nullopt, 0, {}});
}

WorkerQueue::~WorkerQueue() { stop(); }

size_t WorkerQueue::slots() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [&](const Worker &w) { return serves(w); }));
}

std::string WorkerQueue::retire_if_gone(const JobResult &r) {
  int &dry = dry_[r.device];
  dry = r.child.out.empty() ? dry + 1 : 0;
  if (dry < kRetireAfter || retired_.count(r.device)) return "";
  std::set<std::string> others;
  for (const Worker &w : slots_)
    if (serves(w) && w.slot.device != r.device) others.insert(w.slot.device);
  if (others.empty()) return "";  // the last device: the search decides when to give up
  retired_.insert(r.device);
  std::string rest;
  for (const std::string &d : others) rest += (rest.empty() ? "" : ", ") + d;
  const std::string why = r.child.err.substr(0, r.child.err.find('\n'));
  return "note: " + r.device + " gave no record for " + std::to_string(kRetireAfter) + " evaluations in a row (" +
         (why.empty() ? "its worker ended" : why) + "): it is left out from here on; the run goes on with " + rest;
}

size_t WorkerQueue::running() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Worker &w) { return w.job; }));
}

void WorkerQueue::submit(Job job) {
  for (Worker &w : slots_) {
    if (w.job || !serves(w)) continue;
    if (!w.child || !w.child->started() || w.child->poll(0)) {
      std::vector<std::string> argv = {ksmith_, "worker"};
      argv.insert(argv.end(), w.slot.worker.begin(), w.slot.worker.end());
      w.child = std::make_unique<Child>(argv, true);
    }
    job.args.insert(job.args.end(), w.slot.args.begin(), w.slot.args.end());
    w.started = monotonic_seconds();
    w.err.clear();
    w.child->send(worker_request(job));  // a worker gone already shows in wait()
    w.job = std::move(job);
    return;
  }
  throw InternalError("WorkerQueue::submit with every slot busy");
}

std::vector<JobResult> WorkerQueue::wait(double timeout_s) {
  std::vector<JobResult> done;
  const double deadline = monotonic_seconds() + timeout_s;
  while (done.empty() && running() > 0) {
    const int wait_ms = static_cast<int>(std::clamp((deadline - monotonic_seconds()) * 1e3, 0.0, 200.0));
    bool first = true;
    for (Worker &w : slots_) {
      if (!w.job) continue;
      Child &c = *w.child;
      const bool exited = c.poll(first ? wait_ms : 0);
      first = false;
      w.err += c.take_err();
      JobResult r;
      r.device = w.slot.device;
      if (std::optional<std::string> line = c.take_line()) {
        bool retire = false;
        if (worker_answer(*line, &r, &retire) && r.ticket == w.job->ticket) {
          r.child.seconds = monotonic_seconds() - w.started;
          done.push_back(std::move(r));
          w.job.reset();
          if (retire) w.child.reset();  // it ends after this answer: the next job starts a fresh worker
          continue;
        }
        w.err += "a worker's answer that is not one: " + line->substr(0, 200) + "\n";
        c.kill();
      }
      const bool late = !exited && monotonic_seconds() - w.started > w.job->time_limit_s;
      if (late) c.kill();
      if (exited || late || !c.started()) {
        while (c.started() && !c.poll(1000)) {
        }
        // The worker is gone: the job fails as a child process would have.
        r.ticket = w.job->ticket;
        r.child = c.result();
        r.child.out.clear();
        r.child.err = w.err + c.take_err();
        r.child.timed_out = late;
        r.child.seconds = monotonic_seconds() - w.started;
        done.push_back(std::move(r));
        w.job.reset();
        w.child.reset();
      }
    }
    if (monotonic_seconds() >= deadline) break;
  }
  for (JobResult &r : done) {
    r.note = retire_if_gone(r);
    if (!r.note.empty())
      for (Worker &w : slots_)
        if (!serves(w) && !w.job && w.child) w.child.reset();  // an idle worker of the device retired
  }
  return done;
}

void WorkerQueue::stop() {
  for (Worker &w : slots_) {
    if (w.child) w.child->kill();
    w.child.reset();
    w.job.reset();
  }
}

std::vector<WorkerQueue::Slot> device_slots(const std::vector<runtime::DeviceInfo> &devices, int per_device) {
  std::vector<WorkerQueue::Slot> slots;
  for (int k = 0; k < per_device; ++k)
    for (const runtime::DeviceInfo &d : devices) {
      if (d.place.empty())
        slots.push_back({d.selector() + " " + d.name,
                         {"--device", d.selector(), "--device-lock", device_lock_path(d.api, d.index, d.name)},
                         {}});
      else
        slots.push_back(
            {d.where() + " " + d.name, {"--device", d.selector()}, {"--relay", farm_socket(), "--to", d.where()}});
    }
  return slots;
}

}  // namespace ks
