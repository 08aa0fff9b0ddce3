// The run's best, and when it is believed: a candidate clearly faster than the best
// at once; one within search.retime_within of it only once the two are timed side by
// side (the noise of two evaluations is that large); after a timing side by side, the
// fastest of those timed together, the naive kernel among them where it was timed too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "evolve/search/jobs.h"
#include "evolve/search/ledger.h"

namespace ks {

class ProgressSink;

class BestTracker {
 public:
  BestTracker(RunLedger &ledger, ProgressSink &progress, const double &retime_within)
      : ledger_(ledger), progress_(progress), retime_within_(retime_within) {}

  /// A correct candidate just evaluated, other than the naive kernel: the best now,
  /// or the pair to time side by side (Counters::pending_retimes), or neither.
  void consider(const CandidateRow &c);

  /// The times of `ids` timed side by side (the naive kernel's first where
  /// with_naive), or none where the timing failed (`failure` says why): each
  /// candidate's speedup timed again, the best chosen among them. Returns the rows it
  /// changed, for the caller's transaction.
  std::vector<const CandidateRow *> retimed(const std::vector<std::string> &ids, bool with_naive,
                                            const std::optional<std::vector<Time>> &times, const std::string &failure);

 private:
  RunLedger &ledger_;
  ProgressSink &progress_;
  const double &retime_within_;  // the run's configuration, read when used
};

/// "1.25x": a speedup, three significant digits.
std::string format_speedup(double speedup);
/// Four significant digits at most, no trailing zeros: 3, 1.25, 0.5566.
std::string format_number(double x);

}  // namespace ks
