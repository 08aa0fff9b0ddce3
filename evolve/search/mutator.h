// The built-in mutator: one edit of the parent's schedule, drawn by weight from
//   factor      a split, tile, cross_reduce, scan or rfactor factor doubled or halved; a divisor
//               moved between two nested splits of one loop (their product kept);
//               or a sketch's tile levels rescaled (the group's tile with its
//               work-items, or the work-items within the tile)
//   threads     the work-group size: the split factor under a local binding, or a
//               cross_reduce's or scan's work-items, redrawn from 32 to the device's limit (2
//               to 32 along one loop of a 2-D tile), with the stages computed in the
//               same kernel; a stage without one gets the pattern (fuse its spatial
//               loops, split by T, bind group.x and local.x)
//   unroll      an unroll added on a small loop, or one removed
//   vectorize   a loop split and vectorised (2, 4, 8 lanes), or a vectorize removed
//   insert      a random step of any kind appended (evolve/search/space.h)
//   remove      a step removed
//   swap        two neighbouring steps swapped
//   toggle      an inline, compute_at, cache_read or cache_write added, or one removed; on a
//               device with cp.async, 3 in 10 times where the parent copies panels ahead:
//               a loop's prefetches made one async_copy, its slots changed, or undone
//   compute_at  a compute_at moved to another loop of its consumer
//   sketch      a fresh schedule from the program's sketches (evolve/search/sketch.h); the
//               naive kernel's children are all sketches (it has nothing to edit)
//   crossover   the parent's steps for some stages, an inspiration's for the others
//   transfer    one stage's steps from a library schedule (another problem's best on
//               this device, evolve/search/library.h) in place of the parent's; drawn only
//               when the run has a library
// Edits that remove, reorder or mix steps drop the later steps the IR then refuses
// (genome.h's repaired). Every proposal replays: an edit the IR refuses (a factor
// that no longer fits a vectorised loop, say) is dropped and another drawn, up to 16
// tries; the device's limits (work-group size, local memory) are the search's to
// check, and a proposal over them is recorded as refused at no device cost.
#pragma once

#include <map>
#include <string>

#include "evolve/search/proposer.h"

namespace ks {

class Mutator : public Proposer {
 public:
  /// Weights by kind; the defaults for those not given, none when weights is empty.
  explicit Mutator(const std::map<std::string, double> &weights);
  std::string name() const override { return "mutator"; }
  std::optional<Proposal> propose(const ProposalContext &context, Rng &rng) override;

 private:
  std::map<std::string, double> weights_;
};

}  // namespace ks
