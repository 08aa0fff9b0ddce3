// Where evaluations run: child processes of `ksmith`, each in a process group of its
// own (a time limit or a stop kills the group, whatever it started), watched without
// blocking; the device lock that lets evaluations on one device share it while they
// check and own it while they time (two kernels timed at once distort each other);
// and the queue the search submits to, kept behind one interface so that workers on
// other hosts can serve it later.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evolve/isolate.h"

namespace ks {

/// A child process in a process group of its own, its output collected as it comes.
class Child {
 public:
  /// Starts argv[0] (looked up in PATH when it has no '/'); see started().
  explicit Child(const std::vector<std::string> &argv);
  ~Child();  // kills the group of a child still running
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;

  bool started() const { return result_.started; }
  /// Reads what is ready, waiting at most wait_ms for something; true once the
  /// child has exited and both its streams are read to their end.
  bool poll(int wait_ms);
  /// Kills the child's whole process group.
  void kill();
  double seconds() const;
  /// What it printed and how it ended (complete once poll() returned true).
  const ChildRun &result() const { return result_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool reaped_ = false;
  double start_ = 0;
  ChildRun result_;
  void reap(bool wait);
};

/// Evaluations on one device share it for compiling and checking, and own it alone
/// for timing: an advisory lock (flock) on a file named for the device, released by
/// the kernel when a holder dies, killed or not.
class DeviceLock {
 public:
  /// path: the lock file (created if needed). Throws UserError when it cannot be.
  explicit DeviceLock(const std::string &path);
  ~DeviceLock();
  void share();
  void own();
  void release();

 private:
  int fd_ = -1;
};

/// The lock file for a device: in the cache folder ($KSMITH_CACHE_DIR, else
/// ~/.cache/kernelsmith), named for the device's API, index and name.
std::string device_lock_path(const std::string &api, int index, const std::string &name);

/// One evaluation to run: `ksmith` with args (the subcommand and its options).
struct Job {
  uint64_t ticket = 0;
  std::vector<std::string> args;
  double time_limit_s = 600;
};

struct JobResult {
  uint64_t ticket = 0;
  ChildRun child;  // timed_out when the time limit killed it
};

class EvaluationQueue {
 public:
  virtual ~EvaluationQueue() = default;
  /// How many jobs may run at once.
  virtual size_t slots() const = 0;
  virtual size_t running() const = 0;
  virtual void submit(Job job) = 0;
  /// Waits at most timeout_s for running jobs to finish; returns those that did.
  virtual std::vector<JobResult> wait(double timeout_s) = 0;
  /// Kills every running job (their results are not returned).
  virtual void stop() = 0;
};

/// Jobs as child processes of this machine's `ksmith`.
class ProcessQueue : public EvaluationQueue {
 public:
  ProcessQueue(std::string ksmith, size_t workers);
  size_t slots() const override { return workers_; }
  size_t running() const override { return running_.size(); }
  void submit(Job job) override;
  std::vector<JobResult> wait(double timeout_s) override;
  void stop() override;

 private:
  struct Running {
    Job job;
    std::unique_ptr<Child> child;
  };
  std::string ksmith_;
  size_t workers_;
  std::vector<Running> running_;
};

}  // namespace ks
