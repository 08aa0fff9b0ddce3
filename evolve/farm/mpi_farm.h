// The farm over MPI: `mpirun -np N ksmith tune ...` (or `ksmith evolve`). Rank 0, the
// head, runs the searches and owns every database; each rank, the head included,
// evaluates on its share of its host's devices (the devices --devices names there,
// dealt round-robin to the host's ranks by local rank). A search's job for a device of
// rank R goes from its relay (farm.h) to the head's broker thread, to R as a message,
// to a `ksmith worker` there; the answer comes back the same way. The messages are the
// worker's own lines (a job's command line, a record's JSON). See evolve/farm/README.md.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"

namespace ks {

struct FarmOptions {
  std::string selectors, api;         // this host's devices, as --devices names them
  double rank_timeout_s = 60;         // a rank silent this long is taken for hung: the job ends
  std::atomic<bool> *stop = nullptr;  // the head's stop flag: set when a rank fails
  std::string command;                // the command, as a message tells the user to run it again
  std::string ksmith;                 // the executable a rank's workers run in; "": this process's
};

/// Whether this process was started by an MPI launcher (mpirun, srun) as a rank,
/// rather than as a child of a farm's head or of no launcher.
bool launched_by_mpi();

class Farm {
 public:
  /// Joins the MPI job (launched_by_mpi()): a rank finds its devices, the head gathers
  /// every rank's, checks that every rank runs the same ksmith and starts its broker.
  /// A UserError, every rank told to stop, for a build without MPI, a rank whose
  /// devices cannot be found, a rank that runs another ksmith, no device on any rank.
  static std::unique_ptr<Farm> join(const FarmOptions &options);
  virtual ~Farm() = default;
  virtual bool head() const = 0;
  /// A rank other than the head: serves jobs until the head ends the job; the exit status.
  virtual int serve() = 0;
  /// The head: every rank's devices, its own first (others' with DeviceInfo::place).
  virtual const std::vector<runtime::DeviceInfo> &devices() const = 0;
  /// The head: ends the job. Every rank stops and the status is returned; after a
  /// rank failed, the failure is said and the job aborted (MPI_Abort) instead.
  virtual int finish(int status) = 0;
};

}  // namespace ks
