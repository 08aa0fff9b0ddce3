// The configuration of an evolution run: a TOML file (toml++) whose every key has a
// default, flags that override it, and the resolved whole printed back as TOML. A key
// the file should not have, a value of the wrong type or out of range is an error at
// its line: `run.toml:3:1: error: unknown key 'search.budgt'; [search] has budget, ...`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ks {

struct EvolveConfig {
  // [search]
  int budget = 200;           // device evaluations (proposals the IR refuses cost none)
  double minutes = 0;         // wall-clock limit (what still runs gets a tenth more); 0: none
  double target_speedup = 0;  // stop once the best reaches it; 0: never
  // Whether candidates may rewrite the graph (passes/rewrite.h): sketches start from
  // the rewrites that cut its work, the mutator adds and removes them, and a model's
  // may carry them. false: the graph as written, every proposal with a rewrite refused
  // (the arm that bench/rewrite_arms.sh compares against).
  bool rewrites = true;
  uint64_t seed = 1;          // of the search's random stream (proposals, sampling)
  int workers = 1;            // evaluations in flight on each device, each slot a persistent worker process
  double time_limit_s = 300;  // one evaluation, in its child; killed past it
  std::map<std::string, double> proposers = {{"mutator", 1.0}};  // name -> weight: mutator, random, llm-...
  // Per island, its own mix (island i takes the i-th); islands past the list take
  // `proposers`. E.g. one island of model bodies beside three of the mutator.
  std::vector<std::map<std::string, double>> island_proposers;
  /// The mix island i draws its proposers from.
  const std::map<std::string, double> &proposers_of(int island) const {
    return island < static_cast<int>(island_proposers.size()) ? island_proposers[static_cast<size_t>(island)]
                                                              : proposers;
  }
  // [evaluation]
  std::string device;  // as `ksmith run --device`, or several comma-separated, or "all"; "" the default device
  std::string target;  // "opencl" or "spirv"; "" the device's
  std::string sizes, check_sizes;  // "N=512,D=64": timed and check sizes over the spec's
  int trials = 2;                  // check trials with fresh inputs
  int batches = 5;                 // timed batches per evaluation
  double min_batch_ms = 2;         // the shortest batch
  // A candidate whose runs at the timed sizes are slower than this many times the
  // best so far (and than 10 ms) is not timed further: status "slow".
  // 0: every candidate timed in full.
  double give_up = 3;
  // [archive]
  int islands = 4;
  std::vector<std::string> features = {"kernels", "max_group_size"};  // the grid's two axes
  std::map<std::string, std::vector<double>> bins;                    // edges per feature (defaults: default_bins)
  // [sampling]: how a parent is chosen on its island, and what the proposer sees
  double exploit = 0.7;  // among the island's best elites
  double explore = 0.2;  // the elite of a random occupied cell
  double uniform = 0.1;  // any correct candidate of the island
  int inspirations = 3;  // other elites shown to the proposer: the best and the diverse
  // [migration]
  int generation = 8;  // evaluations on an island that make one of its generations
  int interval = 4;    // island generations between migrations (ring: island i to i + 1)
  int migrants = 2;    // the island's best elites copied each time
  // [noise]
  double retime_within = 0.05;  // a new best within this of the old one is timed again beside it
  int final_top = 5;            // the best candidates timed again side by side at the end
  // [mutator]: how often each kind of mutation is drawn (evolve/search/mutator.h)
  std::map<std::string, double> mutations;
  // A folder of other problems' tuned schedules on this device (evolve/search/library.h):
  // what the transfer mutation takes a stage's steps from; "" none.
  std::string library;
  // [cost_model]: which proposals reach the device (evolve/search/cost_model.h)
  std::string cost_model = "xgboost";  // "xgboost": rank a pool of proposals; "none": send each
  int cost_pool = 24;                  // proposals ranked for each one sent
  int cost_steps = 1;                  // generations ranked before one is sent (1: the children alone)
  int cost_warmup = 16;                // measured candidates before the model ranks (until then: the first)
  double cost_explore = 0.05;          // share of proposals sent unranked, so the model keeps learning
  int cost_retrain_every = 8;          // measurements between trainings
  // Earlier runs' measurements on the device (ksmith export --cost-rows): the model
  // ranks from the first proposal, trained on them and then on the run's own too.
  std::vector<std::string> cost_prior;
  // [llm]: the model(s) behind the LLM proposers (llm/client.h). Its key is read
  // from the environment variable key_variable names, never written anywhere.
  struct Llm {
    std::string url;    // the OpenAI-compatible base URL ("" : $OPENAI_BASE_URL)
    std::string model;  // "" : no model; the run gives the LLM's share to the mutator
    std::string key_variable = "OPENAI_API_KEY";
    double temperature = 0.8, top_p = 0.95;
    int max_tokens = 4096;
    double deadline_s = 120;  // a request, its retries included
    int attempts = 4;         // tries of a request (429, 5xx, no connection)
    int token_budget = 6000;  // the prompt's, trimmed to it (llm/prompt.h)
    // The model calls of a run (this session of it) take at most this long in all,
    // their waits included; then the LLM proposers' share goes to the mutator. 0: no limit.
    double run_deadline_s = 0;
    // The run's budget of model calls, and of their tokens (prompt and answer), for the
    // LLM proposers together; once one is spent their share goes to the mutator. -1:
    // three calls per evaluation of search.budget, and as many tokens as those calls
    // may take (token_budget + max_tokens each). 0 calls: the model is never asked.
    // (max_tokens is a request's answer, OpenAI's name; the run's is max_run_tokens.)
    int64_t max_calls = -1;
    int64_t max_run_tokens = -1;
    // Proposals in a row that make a program already evaluated, after which a model's
    // proposer gives its share to the mutator.
    int max_duplicates = 3;
    // An ensemble: several models (each its URL, "" for url above), each request
    // drawn by weight, each endpoint with its own cap on requests in flight. Empty:
    // the one model above.
    struct Member {
      std::string url, model;
      double weight = 1;
      int in_flight = 4;
    };
    std::vector<Member> ensemble;
    bool configured() const { return !ensemble.empty() || (!url.empty() && !model.empty()); }
  } llm;

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

/// Parses a configuration over the defaults; `name` is the file's name in errors.
/// Throws UserError at the offending key's line.
EvolveConfig parse_config(const std::string &text, const std::string &name);
EvolveConfig load_config(const std::string &path);

/// Checks values that flags may have set as a file would (ranges, names); throws
/// UserError naming the setting.
void validate(const EvolveConfig &config);

}  // namespace ks
