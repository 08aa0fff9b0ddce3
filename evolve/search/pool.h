// One proposal's pool: the proposer asked up to cost_model.pool times (once when the
// cost model does not rank), each proposal replayed and deduplicated, the new
// programs scored by the model over its look-ahead steps, one chosen. No device and
// no database: the search hands in the replay, the candidates it knows and the
// model's scores (PoolWorld), so the ranking is tested alone (tests/unit/pool_test.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "evolve/search/genome.h"
#include "evolve/search/proposer.h"

namespace ks {

/// How a pool is drawn and chosen from.
struct PoolSettings {
  int size = 1;         // proposals asked for (cost_model.pool); 1 where the model does not rank
  bool ranked = false;  // the model scores the members (trained, and the proposer asks no model)
  int steps = 1;        // generations the model looks ahead (cost_model.steps)
  double explore = 0;   // the share chosen at random from the parent's own children (cost_model.explore)
};

/// What the pool asks of the search.
struct PoolWorld {
  std::function<Replayed(const Schedule &)> replay;              // at the timed and the check sizes
  std::function<bool(const std::string &)> known;                // an id the run has a candidate of
  std::function<std::string(const std::string &)> duplicate_of;  // what a duplicate of that id is told
  std::function<std::vector<float>(const std::vector<std::vector<float>> &)> score;  // the model, on features
};

/// A proposal whose program no candidate has: its id and, where the pool is larger
/// than one, its program's features.
struct PoolMember {
  Proposal proposal;
  std::string id;
  std::vector<float> features;
};

struct PoolChoice {
  std::optional<PoolMember> chosen;  // none: nothing new, or refused
  // A pool of one whose proposal the IR or the device's limits refused: the
  // proposal and why (the search records it; no device time).
  std::optional<Proposal> refused;
  std::string refusal;
  std::optional<float> predicted;  // the model's score of the chosen, when ranked among several
  std::string how;                 // ", ranked first of 24 over 2 steps", ", drawn unranked from 24", or ""
  int64_t refused_count = 0, duplicates = 0;
};

/// The pool drawn for context: the first proposal is `given` where the caller asked
/// the proposer already. Tells the proposer what became of each proposal but the
/// chosen one (the caller does, once it is recorded). Draws from own only through the
/// proposer and the explore draw, so that a run's random streams are as before.
PoolChoice choose_from_pool(Proposer &proposer, const ProposalContext &context,
                            std::optional<std::optional<Proposal>> given, Rng &own, const PoolSettings &settings,
                            const PoolWorld &world);

}  // namespace ks
