// The configuration of an evolution run: a TOML file (toml++) whose every key has a
// default, flags that override some, and the resolved whole printed back as TOML. A
// key the file should not have, a value of the wrong type or out of range is an error
// at its line: `run.toml:3:1: error: unknown key 'search.budgt'; [search] has budget, ...`.
// Each key is declared once, in config_keys.def: its table, name, field, type,
// default, range and flag; EvolveConfig's fields are generated from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ks {

struct EvolveConfig {
  using Weights = std::map<std::string, double>;            // name -> weight
  using Bins = std::map<std::string, std::vector<double>>;  // feature -> edges
  // [llm]: the model(s) behind the LLM proposers.
  struct Llm {
    // A model of an ensemble: its URL ("" for url's), name, share of the requests and
    // cap on requests in flight.
    struct Member {
      std::string url, model;
      double weight = 1;
      int in_flight = 4;
    };
    // [llm]'s keys, each documented in config_keys.def.
#define KS_KEY(...)
#define KS_LLM_KEY(key, Type, read, flag, ...) Type key = __VA_ARGS__;
#include "evolve/search/config_keys.def"
    bool configured() const { return !ensemble.empty() || (!url.empty() && !model.empty()); }
  } llm;
  // The other keys, each documented in config_keys.def.
#define KS_KEY(table, key, field, Type, read, flag, ...) Type field = __VA_ARGS__;
#define KS_LLM_KEY(...)
#include "evolve/search/config_keys.def"

  /// The mix island i draws its proposers from.
  const Weights &proposers_of(int island) const {
    return island < static_cast<int>(island_proposers.size()) ? island_proposers[static_cast<size_t>(island)]
                                                              : proposers;
  }
  /// llm.max_calls and llm.max_run_tokens, their defaults resolved against the budget.
  int64_t llm_max_calls() const;
  int64_t llm_max_run_tokens() const;
  /// The resolved configuration as TOML: every key, defaults included.
  std::string to_toml() const;
  /// The bin edges of a feature: the configured ones, else its default.
  const std::vector<double> &edges(const std::string &feature) const;
};

/// The features a grid may use (numeric fields of the evaluation record's features).
const std::vector<std::string> &grid_features();
/// A feature's default bin edges (a value v falls in bin i when edge[i-1] <= v < edge[i]).
const std::vector<double> &default_bins(const std::string &feature);

/// The kinds of mutation and their default weights (evolve/search/README.md gives the
/// reasons).
const std::map<std::string, double> &default_mutation_weights();
/// Every proposer's name: mutator, random, llm-schedule, llm-kernel.
const std::vector<std::string> &proposer_names();
/// A UserError ("error: WHERE: unknown proposer 'x'; proposers are ...") unless name
/// is one of them.
void check_proposer_name(const std::string &name, const std::string &where);

/// Parses a configuration over the defaults; `name` is the file's name in errors.
/// Throws UserError at the offending key's line.
EvolveConfig parse_config(const std::string &text, const std::string &name);
EvolveConfig load_config(const std::string &path);

/// Checks values that flags may have set as a file would (ranges, names); throws
/// UserError naming the setting.
void validate(const EvolveConfig &config);

/// How a flag of `ksmith evolve` sets a key over the file's: its value, a T as the
/// command line reads it and checked there as the file's (range, choices), set into
/// a configuration.
template <class T>
struct FlagValue {
  std::optional<std::pair<T, T>> range;
  std::vector<std::string> choices;
  std::function<void(EvolveConfig &, const T &)> set;
};
struct ConfigFlag {
  const char *name, *help;
  std::variant<FlagValue<bool>, FlagValue<int>, FlagValue<int64_t>, FlagValue<uint64_t>, FlagValue<double>,
               FlagValue<std::string>, FlagValue<std::vector<std::string>>>
      value;
};
/// The flags that set keys (config_keys.def), in the order of their keys.
const std::vector<ConfigFlag> &config_flags();

}  // namespace ks
