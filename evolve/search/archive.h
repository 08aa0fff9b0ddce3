// The archive of an evolution run: islands, each a MAP-Elites grid over two features
// of the candidates with fixed bin edges (a cell means the same through a run and
// its resume), holding the fastest correct candidate per cell. Parents and
// inspirations come from one island; every few island generations the best elites
// of each island are copied to the next one (a ring), migrants never migrating again.
// Only correct candidates enter; the search keeps the others as failures.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evolve/search/space.h"

namespace ks {

/// A cell of a grid: the bin of each feature.
struct Cell {
  int a = 0, b = 0;
  auto operator<=>(const Cell &) const = default;
};

/// The bin of value for ascending edges: 0 below edges[0], i where
/// edges[i-1] <= value < edges[i], edges.size() at or above the last.
int bin_of(double value, const std::vector<double> &edges);

struct Elite {
  std::string id;
  double speedup = 0;
  bool migrant = false;  // copied from another island: never migrates again
};

/// How a parent was chosen.
enum class ParentPick { Exploit, Explore, Uniform };
const char *parent_pick_name(ParentPick pick);  // "exploit", ...

/// A change to the archive, for the run database to keep in step.
struct ArchiveChange {
  enum Kind { Member, Cell } kind = Member;
  int island = 0;
  ks::Cell cell;
  Elite elite;
};

class Archive {
 public:
  Archive(int islands, std::vector<double> edges_a, std::vector<double> edges_b);

  int islands() const { return static_cast<int>(grids_.size()); }
  ks::Cell cell_of(double feature_a, double feature_b) const;

  /// Adds a correct candidate to an island: a member (for uniform picks), and the
  /// elite of its cell when the cell is empty or it is faster than the elite there.
  /// Returns whether it became the elite. A candidate already on the island is
  /// refused (false, nothing changed).
  bool add(int island, const Elite &candidate, ks::Cell cell);

  /// A new speedup for a candidate (timed again), wherever it is.
  void set_speedup(const std::string &id, double speedup);

  /// A parent on an island: with probability exploit (of exploit + explore +
  /// uniform) the best of three elites drawn at random (a tournament, so the best
  /// few are favoured without the very best always winning); explore: the elite of a
  /// random occupied cell; uniform: any member. None while the island is empty.
  std::optional<std::string> choose_parent(int island, Rng &rng, double exploit, double explore, double uniform,
                                           ParentPick *pick) const;

  /// Up to n candidates of the island besides `parent` for a proposer to look at:
  /// half the best elites, the rest elites of other cells at random (top and diverse).
  std::vector<std::string> inspirations(int island, const std::string &parent, int n, Rng &rng) const;

  /// Ring migration: the `count` best elites of each island that are not migrants
  /// are offered to the next island as migrants, unless already there. Returns how
  /// many became elites there.
  int migrate(int count);

  const std::map<ks::Cell, Elite> &grid(int island) const { return grids_.at(static_cast<size_t>(island)); }
  const std::vector<Elite> &members(int island) const { return members_.at(static_cast<size_t>(island)); }
  /// The fastest elite of all islands (empty id when none).
  Elite best() const;

  /// The changes since the last call, oldest first (the run database writes them).
  std::vector<ArchiveChange> take_changes();

  /// Puts back an island as the run database kept it (a resume): its members in the
  /// order they came, each with its cell, and its grid.
  void restore(int island, const std::vector<std::pair<Elite, ks::Cell>> &members,
               const std::map<ks::Cell, Elite> &grid);

 private:
  std::vector<double> edges_a_, edges_b_;
  std::vector<std::map<ks::Cell, Elite>> grids_;
  std::vector<std::vector<Elite>> members_;
  std::vector<std::set<std::string>> on_island_;
  std::map<std::string, ks::Cell> cell_by_id_;  // the cell a candidate falls in (the same on every island)
  std::vector<ArchiveChange> changes_;
};

}  // namespace ks
