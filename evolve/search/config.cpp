// Reading, checking and printing an evolution run's configuration.
#include "evolve/search/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "evolve/search/mutator.h"
#include "ir/diagnostic.h"

namespace ks {

const std::vector<std::string> &grid_features() {
  static const std::vector<std::string> names = {
      "kernels",          "max_group_size", "local_memory_bytes", "barriers",   "max_loop_depth", "unrolled_loops",
      "vectorized_loops", "schedule_steps", "max_work_items",     "code_bytes", "stages"};
  return names;
}

const std::vector<double> &default_bins(const std::string &feature) {
  // Fixed edges, never rescaled: a cell means the same at the start of a run, at its
  // end and after a resume.
  static const std::map<std::string, std::vector<double>> bins = {
      {"kernels", {2, 3, 4}},
      {"max_group_size", {32, 64, 128, 256, 512}},
      {"local_memory_bytes", {1, 1024, 4096, 16384}},
      {"barriers", {1, 2, 4, 8}},
      {"max_loop_depth", {1, 2, 3, 4}},
      {"unrolled_loops", {1, 2, 4}},
      {"vectorized_loops", {1, 2, 4}},
      {"schedule_steps", {2, 4, 8, 16}},
      {"max_work_items", {1024, 65536, 1048576}},
      {"code_bytes", {2000, 4000, 8000}},
      {"stages", {2, 3, 4}},
  };
  static const std::vector<double> none;
  auto it = bins.find(feature);
  return it == bins.end() ? none : it->second;
}

const std::vector<double> &EvolveConfig::edges(const std::string &feature) const {
  auto it = bins.find(feature);
  return it != bins.end() ? it->second : default_bins(feature);
}

namespace {

std::string join(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Debian 12's toml++ (3.3.0) reaches __builtin_unreachable, undefined behaviour, when
// it asks whether some non-ASCII characters are whitespace (a table generated with
// holes: marzer/tomlplusplus#190 and #295, fixed upstream by #305 in 2026), malformed
// UTF-8 among the ways there. Until Debian ships the fix, the text is checked first:
// UTF-8, and none of the characters of those holes (a string may write one as \uXXXX).
void check_toml_text(const std::string &text, const std::string &name) {
  int line = 1, column = 1;
  auto fail = [&](const std::string &message) {
    throw UserError(name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " + message);
  };
  for (size_t i = 0; i < text.size(); ++column) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      if (lead == '\n') ++line, column = 0;
      continue;
    }
    const int length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead < 0xE0 ? 2 : 0;
    if (length == 0 || i + length > text.size()) fail("the file is not UTF-8 (byte " + std::to_string(lead) + ")");
    char32_t c = lead & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) fail("the file is not UTF-8 (byte " + std::to_string(next) + ")");
      c = (c << 6) | (next & 0x3F);
    }
    const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[length] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) fail("the file is not UTF-8");
    const bool hole =
        (c > 0xA0 && c < 0x49A) || (c >= 0x2C5E && c < 0x3058 && c != 0x3000) || (c >= 0xFB26 && c < 0xFEFF);
    if (hole) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
      fail(std::string("character ") + code + " is refused: Debian's toml++ 3.3.0 misreads it; in a string, write \\u" +
           (code + 2));
    }
    i += length;
  }
}

// One [table] of the file: its keys, each read into the configuration by a setter
// that checks the value's type and range.
struct Reader {
  std::string name;  // the file's name, for errors
  [[noreturn]] void fail(const toml::node &node, const std::string &message) const {
    const toml::source_position at = node.source().begin;
    throw UserError(name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": error: " + message);
  }
  int64_t integer(const toml::node &node, const std::string &key, int64_t lo, int64_t hi) const {
    // The type first: toml++ 3.3.0's value<int64_t>() of a float past int64's range
    // is an undefined conversion (found by tests/fuzz/fuzz_config).
    if (!node.is_integer()) fail(node, key + " must be an integer");
    std::optional<int64_t> v = node.value<int64_t>();
    if (!v) fail(node, key + " must be an integer");
    if (*v < lo || *v > hi)
      fail(node, key + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", not " +
                     std::to_string(*v));
    return *v;
  }
  double number(const toml::node &node, const std::string &key, double lo, double hi) const {
    if (!node.is_number()) fail(node, key + " must be a number");
    double v = *node.value<double>();
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream text;
      text << key << " must be between " << lo << " and " << hi << ", not " << v;
      fail(node, text.str());
    }
    return v;
  }
  bool boolean(const toml::node &node, const std::string &key) const {
    if (!node.is_boolean()) fail(node, key + " must be true or false");
    return *node.value<bool>();
  }
  std::string string(const toml::node &node, const std::string &key) const {
    if (!node.is_string()) fail(node, key + " must be a string");
    return *node.value<std::string>();
  }
  std::map<std::string, double> weights(const toml::node &node, const std::string &key,
                                        const std::vector<std::string> &names) const {
    const toml::table *t = node.as_table();
    if (!t) fail(node, key + " must be a table of weights, as { " + names[0] + " = 1.0 }");
    std::map<std::string, double> out;
    for (auto &&[k, v] : *t) {
      std::string item(k.str());
      if (std::find(names.begin(), names.end(), item) == names.end())
        fail(v, "unknown " + key + " '" + item + "'; they are " + join(names));
      out[item] = number(v, key + "." + item, 0, 1e6);
    }
    return out;
  }
};

using Setter = std::function<void(const Reader &, const toml::node &, EvolveConfig &)>;

// Every table and key of the file, with its setter: the one place that names them.
const std::map<std::string, std::map<std::string, Setter>> &schema() {
  static const std::map<std::string, std::map<std::string, Setter>> tables = {
      {"search",
       {{"budget", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.budget = static_cast<int>(r.integer(n, "search.budget", 1, 10000000));
         }},
        {"minutes", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.minutes = r.number(n, "search.minutes", 0, 1e6); }},
        {"target_speedup", [](const Reader &r, const toml::node &n,
                              EvolveConfig &c) { c.target_speedup = r.number(n, "search.target_speedup", 0, 1e9); }},
        {"rewrites", [](const Reader &r, const toml::node &n,
                        EvolveConfig &c) { c.rewrites = r.boolean(n, "search.rewrites"); }},
        {"seed", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.seed = static_cast<uint64_t>(r.integer(n, "search.seed", 0, INT64_MAX));
         }},
        {"workers", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.workers = static_cast<int>(r.integer(n, "search.workers", 1, 256));
         }},
        {"time_limit_s", [](const Reader &r, const toml::node &n,
                            EvolveConfig &c) { c.time_limit_s = r.number(n, "search.time_limit_s", 1, 86400); }},
        {"proposers", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.proposers = r.weights(n, "search.proposers", proposer_names());
         }},
        {"island_proposers", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           const toml::array *mixes = n.as_array();
           if (!mixes) r.fail(n, "search.island_proposers is a list of mixes, one per island, as [{ mutator = 1.0 }, "
                                 "{ llm-kernel = 1.0 }]");
           c.island_proposers.clear();
           for (const toml::node &mix : *mixes)
             c.island_proposers.push_back(r.weights(mix, "search.island_proposers", proposer_names()));
         }}}},
      {"evaluation",
       {{"device", [](const Reader &r, const toml::node &n,
                      EvolveConfig &c) { c.device = r.string(n, "evaluation.device"); }},
        {"target", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.target = r.string(n, "evaluation.target");
           if (c.target != "opencl" && c.target != "spirv" && !c.target.empty())
             r.fail(n, "evaluation.target must be \"opencl\" or \"spirv\", not \"" + c.target + "\"");
         }},
        {"sizes", [](const Reader &r, const toml::node &n,
                     EvolveConfig &c) { c.sizes = r.string(n, "evaluation.sizes"); }},
        {"check_sizes", [](const Reader &r, const toml::node &n,
                           EvolveConfig &c) { c.check_sizes = r.string(n, "evaluation.check_sizes"); }},
        {"trials", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.trials = static_cast<int>(r.integer(n, "evaluation.trials", 1, 1000));
         }},
        {"batches", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.batches = static_cast<int>(r.integer(n, "evaluation.batches", 1, 1000));
         }},
        {"min_batch_ms", [](const Reader &r, const toml::node &n,
                            EvolveConfig &c) { c.min_batch_ms = r.number(n, "evaluation.min_batch_ms", 0, 1e5); }},
        {"give_up", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.give_up = r.number(n, "evaluation.give_up", 0, 1e6);
           if (c.give_up > 0 && c.give_up < 1)
             r.fail(n, "evaluation.give_up must be 0 (time every candidate) or at least 1 (a multiple of the best "
                       "time)");
         }}}},
      {"archive",
       {{"islands", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.islands = static_cast<int>(r.integer(n, "archive.islands", 1, 64));
         }},
        {"features",
         [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           const toml::array *a = n.as_array();
           if (!a || a->size() != 2) r.fail(n, "archive.features must name two features, as [\"kernels\", \"barriers\"]");
           c.features.clear();
           for (const toml::node &item : *a) {
             std::string f = r.string(item, "archive.features");
             const std::vector<std::string> &known = grid_features();
             if (std::find(known.begin(), known.end(), f) == known.end())
               r.fail(item, "unknown feature '" + f + "'; features are " + join(known));
             c.features.push_back(f);
           }
           if (c.features[0] == c.features[1]) r.fail(n, "archive.features names '" + c.features[0] + "' twice");
         }},
        {"bins",
         [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           const toml::table *t = n.as_table();
           if (!t) r.fail(n, "archive.bins must be a table of edges, as { kernels = [2, 3, 4] }");
           for (auto &&[k, v] : *t) {
             std::string f(k.str());
             const std::vector<std::string> &known = grid_features();
             if (std::find(known.begin(), known.end(), f) == known.end())
               r.fail(v, "unknown feature '" + f + "'; features are " + join(known));
             const toml::array *a = v.as_array();
             if (!a || a->empty()) r.fail(v, "archive.bins." + f + " must be a list of increasing numbers");
             std::vector<double> edges;
             for (const toml::node &e : *a) {
               edges.push_back(r.number(e, "archive.bins." + f, -1e18, 1e18));
               if (edges.size() > 1 && edges.back() <= edges[edges.size() - 2])
                 r.fail(e, "archive.bins." + f + " must increase");
             }
             c.bins[f] = edges;
           }
         }}}},
      {"sampling",
       {{"exploit", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.exploit = r.number(n, "sampling.exploit", 0, 1); }},
        {"explore", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.explore = r.number(n, "sampling.explore", 0, 1); }},
        {"uniform", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.uniform = r.number(n, "sampling.uniform", 0, 1); }},
        {"inspirations", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.inspirations = static_cast<int>(r.integer(n, "sampling.inspirations", 0, 32));
         }}}},
      {"migration",
       {{"generation", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.generation = static_cast<int>(r.integer(n, "migration.generation", 1, 100000));
         }},
        {"interval", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.interval = static_cast<int>(r.integer(n, "migration.interval", 1, 100000));
         }},
        {"migrants", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.migrants = static_cast<int>(r.integer(n, "migration.migrants", 0, 64));
         }}}},
      {"noise",
       {{"retime_within", [](const Reader &r, const toml::node &n,
                             EvolveConfig &c) { c.retime_within = r.number(n, "noise.retime_within", 0, 1); }},
        {"final_top", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.final_top = static_cast<int>(r.integer(n, "noise.final_top", 0, 64));
         }}}},
      {"mutator",
       {{"weights", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           std::vector<std::string> names;
           for (const auto &[name, weight] : default_mutation_weights()) names.push_back(name);
           c.mutations = r.weights(n, "mutator.weights", names);
         }},
        {"library", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.library = r.string(n, "mutator.library"); }}}},
      {"cost_model",
       {{"kind", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.cost_model = r.string(n, "cost_model.kind");
           if (c.cost_model != "xgboost" && c.cost_model != "none")
             r.fail(n, "cost_model.kind must be \"xgboost\" or \"none\", not \"" + c.cost_model + "\"");
         }},
        {"pool", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.cost_pool = static_cast<int>(r.integer(n, "cost_model.pool", 1, 4096));
         }},
        {"steps", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.cost_steps = static_cast<int>(r.integer(n, "cost_model.steps", 1, 16));
         }},
        {"warmup", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.cost_warmup = static_cast<int>(r.integer(n, "cost_model.warmup", 2, 1000000));
         }},
        {"explore", [](const Reader &r, const toml::node &n,
                       EvolveConfig &c) { c.cost_explore = r.number(n, "cost_model.explore", 0, 1); }},
        {"retrain_every", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.cost_retrain_every = static_cast<int>(r.integer(n, "cost_model.retrain_every", 1, 1000000));
         }},
        {"prior", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           const toml::array *a = n.as_array();
           if (!a) r.fail(n, "cost_model.prior must be a list of files, as [\"runs.jsonl\"]");
           c.cost_prior.clear();
           for (const toml::node &item : *a) {
             std::string path = r.string(item, "cost_model.prior");
             if (path.empty()) r.fail(item, "cost_model.prior names an empty path");
             c.cost_prior.push_back(path);
           }
         }}}},
      {"llm",
       {{"url", [](const Reader &r, const toml::node &n, EvolveConfig &c) { c.llm.url = r.string(n, "llm.url"); }},
        {"model", [](const Reader &r, const toml::node &n,
                     EvolveConfig &c) { c.llm.model = r.string(n, "llm.model"); }},
        {"key_variable",
         [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.key_variable = r.string(n, "llm.key_variable");
           if (c.llm.key_variable.empty() || c.llm.key_variable.find_first_of("= \t") != std::string::npos)
             r.fail(n, "llm.key_variable names an environment variable (the key itself never goes in a file)");
         }},
        {"temperature", [](const Reader &r, const toml::node &n,
                           EvolveConfig &c) { c.llm.temperature = r.number(n, "llm.temperature", 0, 2); }},
        {"top_p", [](const Reader &r, const toml::node &n, EvolveConfig &c) { c.llm.top_p = r.number(n, "llm.top_p", 0, 1); }},
        {"max_tokens", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.max_tokens = static_cast<int>(r.integer(n, "llm.max_tokens", 1, 1000000));
         }},
        {"deadline_s", [](const Reader &r, const toml::node &n,
                          EvolveConfig &c) { c.llm.deadline_s = r.number(n, "llm.deadline_s", 0.1, 86400); }},
        {"attempts", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.attempts = static_cast<int>(r.integer(n, "llm.attempts", 1, 100));
         }},
        {"token_budget", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.token_budget = static_cast<int>(r.integer(n, "llm.token_budget", 256, 10000000));
         }},
        {"run_deadline_s", [](const Reader &r, const toml::node &n,
                              EvolveConfig &c) { c.llm.run_deadline_s = r.number(n, "llm.run_deadline_s", 0, 1e7); }},
        {"max_calls", [](const Reader &r, const toml::node &n,
                         EvolveConfig &c) { c.llm.max_calls = r.integer(n, "llm.max_calls", 0, 1000000000); }},
        {"max_run_tokens", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.max_run_tokens = r.integer(n, "llm.max_run_tokens", 0, 1000000000000);
         }},
        {"max_duplicates", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           c.llm.max_duplicates = static_cast<int>(r.integer(n, "llm.max_duplicates", 1, 1000000));
         }},
        {"ensemble", [](const Reader &r, const toml::node &n, EvolveConfig &c) {
           const toml::array *members = n.as_array();
           const char *form = "llm.ensemble is a list of models, as [{ model = \"a\", weight = 0.7 }, "
                              "{ url = \"http://host:8000/v1\", model = \"b\", weight = 0.3, in_flight = 2 }]";
           if (!members || members->empty()) r.fail(n, form);
           c.llm.ensemble.clear();
           for (const toml::node &m : *members) {
             const toml::table *t = m.as_table();
             if (!t) r.fail(m, form);
             EvolveConfig::Llm::Member member;
             for (auto &&[k, v] : *t) {
               const std::string key(k.str());
               if (key == "url")
                 member.url = r.string(v, "llm.ensemble.url");
               else if (key == "model")
                 member.model = r.string(v, "llm.ensemble.model");
               else if (key == "weight")
                 member.weight = r.number(v, "llm.ensemble.weight", 0, 1e6);
               else if (key == "in_flight")
                 member.in_flight = static_cast<int>(r.integer(v, "llm.ensemble.in_flight", 1, 256));
               else
                 r.fail(v, "unknown key '" + key + "' in a member of llm.ensemble; a member has url, model, weight, "
                                                  "in_flight");
             }
             if (member.model.empty()) r.fail(m, "a member of llm.ensemble needs its model");
             c.llm.ensemble.push_back(member);
           }
         }}}},
  };
  return tables;
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  std::string s = out.str();
  return s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos ? s + ".0" : s;
}

std::string weights_text(const std::map<std::string, double> &weights) {
  std::string out;
  for (const auto &[k, v] : weights) out += (out.empty() ? "" : ", ") + k + " = " + number_text(v);
  return "{ " + out + " }";
}

std::string quoted(const std::string &s) {
  std::ostringstream out;
  out << toml::value<std::string>(s);
  return out.str();
}

std::string strings_text(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &s : items) out += (out.empty() ? "" : ", ") + quoted(s);
  return "[" + out + "]";
}

}  // namespace

EvolveConfig parse_config(const std::string &text, const std::string &name) {
  check_toml_text(text, name);
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error &e) {
    const toml::source_position at = e.source().begin;
    throw UserError(name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                    ": error: " + std::string(e.description()));
  }
  EvolveConfig config;
  Reader reader{name};
  const auto &tables = schema();
  for (auto &&[table_key, table_node] : root) {
    std::string table(table_key.str());
    auto found = tables.find(table);
    if (found == tables.end()) {
      std::vector<std::string> names;
      for (const auto &[t, keys] : tables) names.push_back("[" + t + "]");
      reader.fail(table_node, "unknown table '" + table + "'; tables are " + join(names));
    }
    const toml::table *keys = table_node.as_table();
    if (!keys) reader.fail(table_node, "'" + table + "' must be a table: [" + table + "]");
    for (auto &&[key_name, value] : *keys) {
      std::string key(key_name.str());
      auto setter = found->second.find(key);
      if (setter == found->second.end()) {
        std::vector<std::string> names;
        for (const auto &[k, s] : found->second) names.push_back(k);
        reader.fail(value, "unknown key '" + table + "." + key + "'; [" + table + "] has " + join(names));
      }
      setter->second(reader, value, config);
    }
  }
  try {
    validate(config);
  } catch (const UserError &e) {
    throw UserError(name + ": " + e.what());
  }
  return config;
}

EvolveConfig load_config(const std::string &path) {
  return parse_config(read_source_file(path, "configuration")->text, path);
}

void validate(const EvolveConfig &c) {
  auto positive_sum = [](const std::map<std::string, double> &weights) {
    double sum = 0;
    for (const auto &[k, v] : weights) sum += v;
    return sum > 0;
  };
  if (!positive_sum(c.proposers)) throw UserError("error: search.proposers: no proposer has a positive weight");
  if (c.island_proposers.size() > static_cast<size_t>(c.islands))
    throw UserError("error: search.island_proposers has " + std::to_string(c.island_proposers.size()) + " mixes for " +
                    std::to_string(c.islands) + " islands");
  for (size_t i = 0; i < c.island_proposers.size(); ++i)
    if (!positive_sum(c.island_proposers[i]))
      throw UserError("error: search.island_proposers: the mix of island " + std::to_string(i) +
                      " has no proposer with a positive weight");
  double ensemble_weight = 0;
  for (const EvolveConfig::Llm::Member &m : c.llm.ensemble) ensemble_weight += m.weight;
  if (!c.llm.ensemble.empty() && !(ensemble_weight > 0))
    throw UserError("error: llm.ensemble: no model has a positive weight");
  for (const auto &[name, weight] : c.proposers) check_proposer_name(name, "search.proposers");
  if (c.exploit + c.explore + c.uniform <= 0)
    throw UserError("error: sampling: exploit, explore and uniform are all zero");
  if (!c.mutations.empty() && !positive_sum(c.mutations))
    throw UserError("error: mutator.weights: no mutation has a positive weight");
  if (c.cost_model != "xgboost" && c.cost_model != "none")
    throw UserError("error: cost_model.kind must be xgboost or none, not '" + c.cost_model + "'");
  if (c.llm.max_calls < -1)
    throw UserError("error: llm.max_calls must be 0 or more, not " + std::to_string(c.llm.max_calls));
  if (c.llm.max_run_tokens < -1)
    throw UserError("error: llm.max_run_tokens must be 0 or more, not " + std::to_string(c.llm.max_run_tokens));
  if (c.target != "" && c.target != "opencl" && c.target != "spirv")
    throw UserError("error: evaluation.target must be opencl or spirv, not '" + c.target + "'");
}

int64_t EvolveConfig::llm_max_calls() const { return llm.max_calls >= 0 ? llm.max_calls : 3 * int64_t{budget}; }

int64_t EvolveConfig::llm_max_run_tokens() const {
  return llm.max_run_tokens >= 0 ? llm.max_run_tokens
                                 : llm_max_calls() * (int64_t{llm.token_budget} + int64_t{llm.max_tokens});
}

std::string EvolveConfig::to_toml() const {
  std::ostringstream out;
  out << "[search]\n"
      << "budget = " << budget << "\n"
      << "minutes = " << number_text(minutes) << "\n"
      << "target_speedup = " << number_text(target_speedup) << "\n"
      << "rewrites = " << (rewrites ? "true" : "false") << "\n"
      << "seed = " << seed << "\n"
      << "workers = " << workers << "\n"
      << "time_limit_s = " << number_text(time_limit_s) << "\n"
      << "proposers = " << weights_text(proposers) << "\n";
  if (!island_proposers.empty()) {
    out << "island_proposers = [";
    for (size_t i = 0; i < island_proposers.size(); ++i) out << (i ? ", " : "") << weights_text(island_proposers[i]);
    out << "]\n";
  }
  out << "\n"
      << "[evaluation]\n"
      << "device = " << quoted(device) << "\n"
      << "target = " << quoted(target) << "\n"
      << "sizes = " << quoted(sizes) << "\n"
      << "check_sizes = " << quoted(check_sizes) << "\n"
      << "trials = " << trials << "\n"
      << "batches = " << batches << "\n"
      << "min_batch_ms = " << number_text(min_batch_ms) << "\n"
      << "give_up = " << number_text(give_up) << "\n\n"
      << "[archive]\n"
      << "islands = " << islands << "\n"
      << "features = " << strings_text(features) << "\n"
      << "bins = { ";
  for (size_t i = 0; i < features.size(); ++i) {
    out << (i ? ", " : "") << features[i] << " = [";
    const std::vector<double> &e = edges(features[i]);
    for (size_t j = 0; j < e.size(); ++j) out << (j ? ", " : "") << number_text(e[j]);
    out << "]";
  }
  out << " }\n\n"
      << "[sampling]\n"
      << "exploit = " << number_text(exploit) << "\n"
      << "explore = " << number_text(explore) << "\n"
      << "uniform = " << number_text(uniform) << "\n"
      << "inspirations = " << inspirations << "\n\n"
      << "[migration]\n"
      << "generation = " << generation << "\n"
      << "interval = " << interval << "\n"
      << "migrants = " << migrants << "\n\n"
      << "[noise]\n"
      << "retime_within = " << number_text(retime_within) << "\n"
      << "final_top = " << final_top << "\n\n"
      << "[mutator]\n"
      << "weights = " << weights_text(mutations.empty() ? default_mutation_weights() : mutations) << "\n"
      << "library = " << quoted(library) << "\n\n"
      << "[cost_model]\n"
      << "kind = " << quoted(cost_model) << "\n"
      << "pool = " << cost_pool << "\n"
      << "steps = " << cost_steps << "\n"
      << "warmup = " << cost_warmup << "\n"
      << "explore = " << number_text(cost_explore) << "\n"
      << "retrain_every = " << cost_retrain_every << "\n"
      << "prior = " << strings_text(cost_prior) << "\n\n"
      << "[llm]\n"
      << "url = " << quoted(llm.url) << "\n"
      << "model = " << quoted(llm.model) << "\n"
      << "key_variable = " << quoted(llm.key_variable) << "\n"
      << "temperature = " << number_text(llm.temperature) << "\n"
      << "top_p = " << number_text(llm.top_p) << "\n"
      << "max_tokens = " << llm.max_tokens << "\n"
      << "deadline_s = " << number_text(llm.deadline_s) << "\n"
      << "attempts = " << llm.attempts << "\n"
      << "token_budget = " << llm.token_budget << "\n"
      << "run_deadline_s = " << number_text(llm.run_deadline_s) << "\n"
      << "max_calls = " << llm_max_calls() << "\n"
      << "max_run_tokens = " << llm_max_run_tokens() << "\n"
      << "max_duplicates = " << llm.max_duplicates << "\n";
  if (!llm.ensemble.empty()) {
    out << "ensemble = [";
    for (size_t i = 0; i < llm.ensemble.size(); ++i) {
      const Llm::Member &m = llm.ensemble[i];
      out << (i ? ", " : "") << "{ url = " << quoted(m.url) << ", model = " << quoted(m.model)
          << ", weight = " << number_text(m.weight) << ", in_flight = " << m.in_flight << " }";
    }
    out << "]\n";
  }
  return out.str();
}

}  // namespace ks
