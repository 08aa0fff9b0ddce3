// Where evaluations run: child processes of `ksmith`, each in a process group of its
// own (a time limit or a stop kills the group, whatever it started), watched without
// blocking; the device lock that lets evaluations on one device share it while they
// check and own it while they time (two kernels timed at once distort each other);
// and the queue the search submits to, kept behind one interface so that workers on
// other hosts can serve it later.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "evolve/isolate.h"
#include "runtime/device.h"

namespace ks {

/// Seconds on the monotonic clock: what the time limits and the rates are measured with.
double monotonic_seconds();

/// A child process in a process group of its own, its output collected as it comes.
class Child {
 public:
  /// Starts argv[0] (looked up in PATH when it has no '/'); see started(). With
  /// input, its standard input is a pipe that send() writes to. Without own_group
  /// it stays in this process's group: a kill of the group, or a Ctrl-C, reaches it.
  explicit Child(const std::vector<std::string> &argv, bool input = false, bool own_group = true);
  ~Child();  // kills the group of a child still running
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;

  bool started() const { return result_.started; }
  /// Reads what is ready, waiting at most wait_ms for something; true once the
  /// child has exited and both its streams are read to their end.
  bool poll(int wait_ms);
  /// Kills the child's whole process group (the child alone, without one of its own).
  void kill();
  /// Sends it SIGINT: a search stops after the evaluation in hand, resumably.
  void interrupt();
  double seconds() const;
  /// What it printed and how it ended (complete once poll() returned true).
  const ChildRun &result() const { return result_; }
  /// Writes text to its standard input; false when it cannot (the child is gone).
  bool send(const std::string &text);
  /// The first whole line it printed since the last one taken, without its newline.
  std::optional<std::string> take_line();
  /// What it printed on its standard error since the last call.
  std::string take_err() { return std::exchange(result_.err, {}); }

 private:
  pid_t pid_ = -1;
  bool own_group_ = true;
  int in_ = -1, out_ = -1, err_ = -1;
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
  ChildRun child;      // timed_out when the time limit killed it
  std::string device;  // where it ran, as the queue's slot names it
  std::string note;    // what the queue did about it, for the run's log: a device retired
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

/// Jobs served by persistent workers (`ksmith worker`, one process per slot, kept
/// between jobs): a worker opens its device once and keeps what the candidates of a
/// spec share at the timed sizes (evaluate.h's EvalCache). A job goes to an idle
/// slot with the slot's arguments appended (its device and lock); a worker that
/// crashes, or runs past a job's time limit, is killed (its process group), the job
/// fails with the reason, and the slot's next job starts a fresh worker. A device
/// whose slots give kRetireAfter jobs in a row no output (it is gone: every job fails
/// to open it, or its worker dies) is retired while another device serves on; the
/// result that retires it says so in its note.
class WorkerQueue : public EvaluationQueue {
 public:
  struct Slot {
    std::string device;             // what the slot's results name: "opencl:1 NVIDIA H100 80GB HBM3"
    std::vector<std::string> args;  // appended to each job's: "--device", "opencl:1", ...
    // Appended to `ksmith worker` when the slot's worker starts: a device of another
    // rank is served through a relay to the farm's head ("--relay", SOCKET, "--to", "rank1/opencl:0").
    std::vector<std::string> worker;
  };
  WorkerQueue(std::string ksmith, std::vector<Slot> slots);
  ~WorkerQueue() override;
  static constexpr int kRetireAfter = 3;
  size_t slots() const override;
  size_t running() const override;
  void submit(Job job) override;
  std::vector<JobResult> wait(double timeout_s) override;
  void stop() override;

 private:
  struct Worker {
    Slot slot;
    std::unique_ptr<Child> child;
    std::optional<Job> job;  // the one it serves
    double started = 0;      // when that job was sent
    std::string err;         // what the worker printed on its standard error during the job
  };
  std::string ksmith_;
  std::vector<Worker> slots_;
  std::map<std::string, int> dry_;  // by device: jobs in a row without output
  std::set<std::string> retired_;   // devices given up on
  bool serves(const Worker &w) const { return !retired_.count(w.slot.device); }
  std::string retire_if_gone(const JobResult &r);
};

/// The line a worker reads for a job, and the job's result from the line it prints.
std::string worker_request(const Job &job);
/// Parses a worker's answer into result; false (result untouched) for a line that is not one.
/// *retire: whether the worker ends after it (its device failed: a fresh one serves on).
bool worker_answer(const std::string &line, JobResult *result, bool *retire = nullptr);

/// The slots of a run on these devices: per_device on each (they share its lock:
/// checks in parallel, timing one at a time), each job told its device and lock. A
/// device of another rank (DeviceInfo::place) is reached through the farm's relay
/// (evolve/farm/farm.h); its rank adds the lock of its host.
std::vector<WorkerQueue::Slot> device_slots(const std::vector<runtime::DeviceInfo> &devices, int per_device);

}  // namespace ks
