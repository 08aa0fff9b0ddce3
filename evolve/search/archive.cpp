// Islands of MAP-Elites grids: insertion, parent choice, inspirations, migration.
#include "evolve/search/archive.h"

#include <algorithm>
#include <utility>

namespace ks {

int bin_of(double value, const std::vector<double> &edges) {
  return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), value) - edges.begin());
}

const char *parent_pick_name(ParentPick pick) {
  switch (pick) {
    case ParentPick::Exploit: return "exploit";
    case ParentPick::Explore: return "explore";
    case ParentPick::Uniform: return "uniform";
  }
  return "?";
}

Archive::Archive(int islands, std::vector<double> edges_a, std::vector<double> edges_b)
    : edges_a_(std::move(edges_a)),
      edges_b_(std::move(edges_b)),
      grids_(static_cast<size_t>(islands)),
      members_(static_cast<size_t>(islands)),
      on_island_(static_cast<size_t>(islands)) {}

Cell Archive::cell_of(double feature_a, double feature_b) const {
  return {bin_of(feature_a, edges_a_), bin_of(feature_b, edges_b_)};
}

bool Archive::add(int island, const Elite &candidate, ks::Cell cell) {
  const size_t i = static_cast<size_t>(island);
  if (!on_island_[i].insert(candidate.id).second) return false;
  members_[i].push_back(candidate);
  cell_by_id_[candidate.id] = cell;
  changes_.push_back({ArchiveChange::Member, island, cell, candidate});
  auto [it, empty] = grids_[i].emplace(cell, candidate);
  if (!empty) {
    if (candidate.speedup <= it->second.speedup) return false;
    it->second = candidate;
  }
  changes_.push_back({ArchiveChange::Cell, island, cell, candidate});
  return true;
}

void Archive::set_speedup(const std::string &id, double speedup) {
  for (size_t i = 0; i < grids_.size(); ++i) {
    for (Elite &m : members_[i])
      if (m.id == id) m.speedup = speedup;
    for (auto &[cell, elite] : grids_[i])
      if (elite.id == id) {
        elite.speedup = speedup;
        changes_.push_back({ArchiveChange::Cell, static_cast<int>(i), cell, elite});
      }
  }
}

std::optional<std::string> Archive::choose_parent(int island, Rng &rng, double exploit, double explore, double uniform,
                                                  ParentPick *pick) const {
  const auto &grid = grids_.at(static_cast<size_t>(island));
  const auto &members = members_.at(static_cast<size_t>(island));
  if (grid.empty()) return std::nullopt;
  std::vector<const Elite *> elites;
  for (const auto &[cell, elite] : grid) elites.push_back(&elite);
  auto any = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  double r = std::uniform_real_distribution<double>(0, exploit + explore + uniform)(rng);
  if (r < exploit) {
    *pick = ParentPick::Exploit;
    const Elite *best = nullptr;
    for (int round = 0; round < 3; ++round) {
      const Elite *e = elites[any(elites.size())];
      if (!best || e->speedup > best->speedup) best = e;
    }
    return best->id;
  }
  if (r < exploit + explore || members.empty()) {
    *pick = ParentPick::Explore;
    return elites[any(elites.size())]->id;
  }
  *pick = ParentPick::Uniform;
  return members[any(members.size())].id;
}

std::vector<std::string> Archive::inspirations(int island, const std::string &parent, int n, Rng &rng) const {
  std::vector<const Elite *> elites;
  for (const auto &[cell, elite] : grids_.at(static_cast<size_t>(island)))
    if (elite.id != parent) elites.push_back(&elite);
  std::stable_sort(elites.begin(), elites.end(),
                   [](const Elite *x, const Elite *y) { return x->speedup > y->speedup; });
  std::vector<std::string> out;
  const size_t top = std::min(elites.size(), static_cast<size_t>((n + 1) / 2));
  for (size_t i = 0; i < top; ++i) out.push_back(elites[i]->id);
  std::vector<const Elite *> rest(elites.begin() + static_cast<long>(top), elites.end());
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t i = 0; i < rest.size() && static_cast<int>(out.size()) < n; ++i) out.push_back(rest[i]->id);
  return out;
}

int Archive::migrate(int count) {
  const int n = islands();
  if (n < 2 || count <= 0) return 0;
  // Choose every island's emigrants first, so that a migrant does not travel on in
  // the same round.
  std::vector<std::vector<Elite>> leaving(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::vector<Elite> elites;
    for (const auto &[cell, elite] : grids_[static_cast<size_t>(i)])
      if (!elite.migrant) elites.push_back(elite);
    std::stable_sort(elites.begin(), elites.end(),
                     [](const Elite &x, const Elite &y) { return x.speedup > y.speedup; });
    if (static_cast<int>(elites.size()) > count) elites.resize(static_cast<size_t>(count));
    leaving[static_cast<size_t>(i)] = elites;
  }
  int arrived = 0;
  for (int i = 0; i < n; ++i)
    for (Elite e : leaving[static_cast<size_t>(i)]) {
      e.migrant = true;
      arrived += add((i + 1) % n, e, cell_by_id_.at(e.id));
    }
  return arrived;
}

Elite Archive::best() const {
  Elite best;
  for (const auto &grid : grids_)
    for (const auto &[cell, elite] : grid)
      if (best.id.empty() || elite.speedup > best.speedup) best = elite;
  return best;
}

std::vector<ArchiveChange> Archive::take_changes() { return std::exchange(changes_, {}); }

void Archive::restore(int island, const std::vector<std::pair<Elite, ks::Cell>> &members,
                      const std::map<ks::Cell, Elite> &grid) {
  const size_t i = static_cast<size_t>(island);
  for (const auto &[elite, cell] : members) {
    members_[i].push_back(elite);
    on_island_[i].insert(elite.id);
    cell_by_id_[elite.id] = cell;
  }
  grids_[i] = grid;
}

}  // namespace ks
