// Reading, checking and printing an evolution run's configuration.
#include "evolve/search/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <type_traits>

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

// Reads a key's value, checking its type and range; an error at the value's line.
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
  EvolveConfig::Weights weights(const toml::node &node, const std::string &key,
                                const std::vector<std::string> &names) const {
    const toml::table *t = node.as_table();
    if (!t) fail(node, key + " must be a table of weights, as { " + names[0] + " = 1.0 }");
    EvolveConfig::Weights out;
    for (auto &&[k, v] : *t) {
      std::string item(k.str());
      if (std::find(names.begin(), names.end(), item) == names.end())
        fail(v, "unknown " + key + " '" + item + "'; they are " + join(names));
      out[item] = number(v, key + "." + item, 0, 1e6);
    }
    return out;
  }
};

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  std::string s = out.str();
  return s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos ? s + ".0" : s;
}

std::string weights_text(const EvolveConfig::Weights &weights) {
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

// A value as TOML, as its type prints.
template <class T>
std::string text(const T &v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return number_text(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return quoted(v);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return strings_text(v);
  } else {
    static_assert(std::is_same_v<T, EvolveConfig::Weights>, "a key of this type needs printed(read, printer)");
    return weights_text(v);
  }
}

// ---- the keys of their own shape (config_keys.def's own and printed) ----------------

void read_proposers(const Reader &r, const toml::node &n, const std::string &key, EvolveConfig::Weights &v) {
  v = r.weights(n, key, proposer_names());
}

void read_island_proposers(const Reader &r, const toml::node &n, const std::string &key,
                           std::vector<EvolveConfig::Weights> &mixes) {
  const toml::array *a = n.as_array();
  if (!a) r.fail(n, key + " is a list of mixes, one per island, as [{ mutator = 1.0 }, { llm-kernel = 1.0 }]");
  mixes.clear();
  for (const toml::node &mix : *a) mixes.push_back(r.weights(mix, key, proposer_names()));
}

std::optional<std::string> print_island_proposers(const EvolveConfig &c) {
  if (c.island_proposers.empty()) return std::nullopt;
  std::string out;
  for (const EvolveConfig::Weights &mix : c.island_proposers) out += (out.empty() ? "" : ", ") + weights_text(mix);
  return "[" + out + "]";
}

void read_give_up(const Reader &r, const toml::node &n, const std::string &key, double &v) {
  v = r.number(n, key, 0, 1e6);
  if (v > 0 && v < 1) r.fail(n, key + " must be 0 (time every candidate) or at least 1 (a multiple of the best time)");
}

void check_feature(const Reader &r, const toml::node &n, const std::string &feature) {
  const std::vector<std::string> &known = grid_features();
  if (std::find(known.begin(), known.end(), feature) == known.end())
    r.fail(n, "unknown feature '" + feature + "'; features are " + join(known));
}

void read_features(const Reader &r, const toml::node &n, const std::string &key, std::vector<std::string> &features) {
  const toml::array *a = n.as_array();
  if (!a || a->size() != 2) r.fail(n, key + " must name two features, as [\"kernels\", \"barriers\"]");
  features.clear();
  for (const toml::node &item : *a) {
    features.push_back(r.string(item, key));
    check_feature(r, item, features.back());
  }
  if (features[0] == features[1]) r.fail(n, key + " names '" + features[0] + "' twice");
}

void read_bins(const Reader &r, const toml::node &n, const std::string &key, EvolveConfig::Bins &bins) {
  const toml::table *t = n.as_table();
  if (!t) r.fail(n, key + " must be a table of edges, as { kernels = [2, 3, 4] }");
  for (auto &&[k, v] : *t) {
    const std::string feature(k.str()), name = key + "." + feature;
    check_feature(r, v, feature);
    const toml::array *a = v.as_array();
    if (!a || a->empty()) r.fail(v, name + " must be a list of increasing numbers");
    std::vector<double> edges;
    for (const toml::node &e : *a) {
      edges.push_back(r.number(e, name, -1e18, 1e18));
      if (edges.size() > 1 && edges.back() <= edges[edges.size() - 2]) r.fail(e, name + " must increase");
    }
    bins[feature] = edges;
  }
}

// The grid's features' edges, the defaults included.
std::optional<std::string> print_bins(const EvolveConfig &c) {
  std::string out;
  for (const std::string &feature : c.features) {
    std::string edges;
    for (double e : c.edges(feature)) edges += (edges.empty() ? "" : ", ") + number_text(e);
    out += (out.empty() ? "" : ", ") + feature + " = [" + edges + "]";
  }
  return "{ " + out + " }";
}

void read_mutations(const Reader &r, const toml::node &n, const std::string &key, EvolveConfig::Weights &v) {
  std::vector<std::string> names;
  for (const auto &[name, weight] : default_mutation_weights()) names.push_back(name);
  v = r.weights(n, key, names);
}

std::optional<std::string> print_mutations(const EvolveConfig &c) {
  return weights_text(c.mutations.empty() ? default_mutation_weights() : c.mutations);
}

void read_prior(const Reader &r, const toml::node &n, const std::string &key, std::vector<std::string> &paths) {
  const toml::array *a = n.as_array();
  if (!a) r.fail(n, key + " must be a list of files, as [\"runs.jsonl\"]");
  paths.clear();
  for (const toml::node &item : *a) {
    paths.push_back(r.string(item, key));
    if (paths.back().empty()) r.fail(item, key + " names an empty path");
  }
}

void read_key_variable(const Reader &r, const toml::node &n, const std::string &key, std::string &v) {
  v = r.string(n, key);
  if (v.empty() || v.find_first_of("= \t") != std::string::npos)
    r.fail(n, key + " names an environment variable (the key itself never goes in a file)");
}

std::optional<std::string> print_max_calls(const EvolveConfig &c) { return std::to_string(c.llm_max_calls()); }

std::optional<std::string> print_max_run_tokens(const EvolveConfig &c) {
  return std::to_string(c.llm_max_run_tokens());
}

EvolveConfig::Llm::Member read_member(const Reader &r, const toml::node &n, const std::string &key,
                                      const std::string &form) {
  const toml::table *t = n.as_table();
  if (!t) r.fail(n, form);
  EvolveConfig::Llm::Member member;
  for (auto &&[k, v] : *t) {
    const std::string name(k.str());
    if (name == "url")
      member.url = r.string(v, key + ".url");
    else if (name == "model")
      member.model = r.string(v, key + ".model");
    else if (name == "weight")
      member.weight = r.number(v, key + ".weight", 0, 1e6);
    else if (name == "in_flight")
      member.in_flight = static_cast<int>(r.integer(v, key + ".in_flight", 1, 256));
    else
      r.fail(v, "unknown key '" + name + "' in a member of " + key + "; a member has url, model, weight, in_flight");
  }
  if (member.model.empty()) r.fail(n, "a member of " + key + " needs its model");
  return member;
}

void read_ensemble(const Reader &r, const toml::node &n, const std::string &key,
                   std::vector<EvolveConfig::Llm::Member> &ensemble) {
  const toml::array *members = n.as_array();
  const std::string form = key +
                           " is a list of models, as [{ model = \"a\", weight = 0.7 }, "
                           "{ url = \"http://host:8000/v1\", model = \"b\", weight = 0.3, in_flight = 2 }]";
  if (!members || members->empty()) r.fail(n, form);
  ensemble.clear();
  for (const toml::node &m : *members) ensemble.push_back(read_member(r, m, key, form));
}

std::optional<std::string> print_ensemble(const EvolveConfig &c) {
  if (c.llm.ensemble.empty()) return std::nullopt;
  std::string out;
  for (const EvolveConfig::Llm::Member &m : c.llm.ensemble)
    out += std::string(out.empty() ? "" : ", ") + "{ url = " + quoted(m.url) + ", model = " + quoted(m.model) +
           ", weight = " + number_text(m.weight) + ", in_flight = " + std::to_string(m.in_flight) + " }";
  return "[" + out + "]";
}

// ---- flags whose value is not the key's (config_keys.def's flag(..., convert)) --------

// --proposer mutator, or mutator:0.6,llm-schedule:0.4 (weights).
EvolveConfig::Weights proposer_mix(const std::string &text) {
  EvolveConfig::Weights weights;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    double weight = 1;
    if (colon != std::string::npos) {
      const std::string w = item.substr(colon + 1);
      char *end = nullptr;
      weight = std::strtod(w.c_str(), &end);
      if (w.empty() || *end || !(weight >= 0) || weight > 1e6)
        throw UserError("error: --proposer: '" + item + "' needs a weight from 0 to 1e6 after the colon, as " +
                        "mutator:0.6,llm-schedule:0.3,llm-kernel:0.1");
    }
    if (name.empty() || weights.count(name))
      throw UserError("error: --proposer: '" + text + "' names a proposer twice or not at all");
    check_proposer_name(name, "--proposer");
    weights[name] = weight;
  }
  return weights;
}

// --size N=64 --size K=32: one list, as the file writes it.
std::string comma_joined(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// --no-rewrites, given: the key false.
bool switched_off(bool given) { return !given; }

// ---- how a key is read, printed and flagged (config_keys.def's read and flag) -------
// Each is checked against its field's type when the table below compiles.

template <class T>
struct Between {  // a number in [lo, hi]
  T lo, hi;
};
template <class L, class H>
Between<std::common_type_t<L, H>> between(L lo, H hi) {
  using T = std::common_type_t<L, H>;
  return {static_cast<T>(lo), static_cast<T>(hi)};
}

struct AsWritten {};  // a bool or a string
constexpr AsWritten as_written;

struct OneOf {  // a string among these; "" among them is allowed, not listed in the message
  std::vector<std::string> choices;
};
template <class... S>
OneOf one_of(S... choices) {
  return {{choices...}};
}

template <class T>
struct Own {  // a key of its own shape
  void (*read)(const Reader &, const toml::node &, const std::string &key, T &value);
};
template <class T>
Own<T> own(void (*read)(const Reader &, const toml::node &, const std::string &, T &)) {
  return {read};
}

using Printer = std::optional<std::string> (*)(const EvolveConfig &);  // nullopt: the key not printed
template <class Read>
struct Printed {  // read as `read` reads, printed by `print`
  Read read;
  Printer print;
};
template <class Read>
Printed<Read> printed(Read read, Printer print) {
  return {read, print};
}

template <class T, class B>
void read_value(const Reader &r, const toml::node &n, const std::string &key, T &v, const Between<B> &range) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "between(lo, hi) is a number's range");
  if constexpr (std::is_integral_v<T>) {
    static_assert(std::is_integral_v<B>, "an integer's range is of integers");
    v = static_cast<T>(r.integer(n, key, range.lo, range.hi));
  } else {
    v = r.number(n, key, range.lo, range.hi);
  }
}
void read_value(const Reader &r, const toml::node &n, const std::string &key, bool &v, AsWritten) {
  v = r.boolean(n, key);
}
void read_value(const Reader &r, const toml::node &n, const std::string &key, std::string &v, AsWritten) {
  v = r.string(n, key);
}
void read_value(const Reader &r, const toml::node &n, const std::string &key, std::string &v, const OneOf &one) {
  v = r.string(n, key);
  if (std::find(one.choices.begin(), one.choices.end(), v) != one.choices.end()) return;
  std::vector<std::string> named;
  for (const std::string &c : one.choices)
    if (!c.empty()) named.push_back("\"" + c + "\"");
  std::string listed;  // "a", "b" or "c"
  for (size_t i = 0; i < named.size(); ++i) listed += (i == 0 ? "" : i + 1 < named.size() ? ", " : " or ") + named[i];
  r.fail(n, key + " must be " + listed + ", not \"" + v + "\"");
}
template <class T>
void read_value(const Reader &r, const toml::node &n, const std::string &key, T &v, const Own<T> &own) {
  own.read(r, n, key, v);
}
template <class T, class Read>
void read_value(const Reader &r, const toml::node &n, const std::string &key, T &v, const Printed<Read> &p) {
  read_value(r, n, key, v, p.read);
}

using KeyPrinter = std::function<std::optional<std::string>(const EvolveConfig &)>;
template <class Field, class Read>
KeyPrinter printer(Field field, const Read &) {
  return [field](const EvolveConfig &c) -> std::optional<std::string> { return text(field(c)); };
}
template <class Field, class Read>
KeyPrinter printer(Field, const Printed<Read> &p) {
  return p.print;
}

struct NoFlag {};
constexpr NoFlag no_flag;

template <class Convert>
struct Flag {
  const char *name, *help;
  bool checked;     // by the command line, as the file's value is
  Convert convert;  // the flag's value to the key's; nullptr: the same
};
Flag<std::nullptr_t> flag(const char *name, const char *help) { return {name, help, true, nullptr}; }
Flag<std::nullptr_t> unchecked_flag(const char *name, const char *help) { return {name, help, false, nullptr}; }
template <class To, class From>
Flag<To (*)(From)> flag(const char *name, const char *help, To (*convert)(From)) {
  return {name, help, false, convert};
}

// The command line's checks of a flag's value, those of the file's.
template <class T, class Read>
void check_as(FlagValue<T> &, const Read &) {}
template <class T, class B>
void check_as(FlagValue<T> &flag, const Between<B> &range) {
  flag.range = std::pair<T, T>(static_cast<T>(range.lo), static_cast<T>(range.hi));
}
template <class T>
void check_as(FlagValue<T> &flag, const OneOf &one) {
  flag.choices = one.choices;
}
template <class T, class Read>
void check_as(FlagValue<T> &flag, const Printed<Read> &p) {
  check_as(flag, p.read);
}

template <class Field, class Read>
std::optional<ConfigFlag> make_flag(Field, const Read &, NoFlag) {
  return std::nullopt;
}
template <class Field, class Read>
std::optional<ConfigFlag> make_flag(Field field, const Read &read, const Flag<std::nullptr_t> &flag) {
  using T = std::decay_t<decltype(field(std::declval<EvolveConfig &>()))>;
  FlagValue<T> value;
  if (flag.checked) check_as(value, read);
  value.set = [field](EvolveConfig &c, const T &v) { field(c) = v; };
  return ConfigFlag{flag.name, flag.help, value};
}
template <class Field, class Read, class To, class From>
std::optional<ConfigFlag> make_flag(Field field, const Read &, const Flag<To (*)(From)> &flag) {
  using T = std::decay_t<From>;
  FlagValue<T> value;
  value.set = [field, convert = flag.convert](EvolveConfig &c, const T &v) { field(c) = convert(v); };
  return ConfigFlag{flag.name, flag.help, value};
}

// A key of the file: its table and name, how a value is read into the configuration
// and printed back, and the flag that sets it.
struct Key {
  const char *table, *name;
  std::function<void(const Reader &, const toml::node &, EvolveConfig &)> read;
  KeyPrinter print;
  std::optional<ConfigFlag> flag;
};

// field: the key's member of a configuration, const or not.
template <class Field, class Read, class FlagOf>
Key key(const char *table, const char *name, Field field, const Read &read, const FlagOf &flag) {
  const std::string dotted = std::string(table) + "." + name;
  return {table, name,
          [field, read, dotted](const Reader &r, const toml::node &n, EvolveConfig &c) {
            read_value(r, n, dotted, field(c), read);
          },
          printer(field, read), make_flag(field, read, flag)};
}

// Every key, in the order they print (config_keys.def).
const std::vector<Key> &keys() {
  static const std::vector<Key> all = {
// clang-format off
#define KS_KEY(table, key_, field_, Type, read, flag, ...) \
      key(#table, #key_, [](auto &c) -> auto & { return c.field_; }, read, flag),
#define KS_LLM_KEY(key_, Type, read, flag, ...) KS_KEY(llm, key_, llm.key_, Type, read, flag, )
#include "evolve/search/config_keys.def"
      // clang-format on
  };
  return all;
}

// The keys by table and name, sorted as messages list them.
const std::map<std::string, std::map<std::string, const Key *>> &tables() {
  static const std::map<std::string, std::map<std::string, const Key *>> by_table = [] {
    std::map<std::string, std::map<std::string, const Key *>> out;
    for (const Key &k : keys()) out[k.table][k.name] = &k;
    return out;
  }();
  return by_table;
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
  const auto &by_table = tables();
  for (auto &&[table_key, table_node] : root) {
    std::string table(table_key.str());
    auto found = by_table.find(table);
    if (found == by_table.end()) {
      std::vector<std::string> names;
      for (const auto &[t, table_keys] : by_table) names.push_back("[" + t + "]");
      reader.fail(table_node, "unknown table '" + table + "'; tables are " + join(names));
    }
    const toml::table *entries = table_node.as_table();
    if (!entries) reader.fail(table_node, "'" + table + "' must be a table: [" + table + "]");
    for (auto &&[key_name, value] : *entries) {
      std::string key(key_name.str());
      auto known = found->second.find(key);
      if (known == found->second.end()) {
        std::vector<std::string> names;
        for (const auto &[k, s] : found->second) names.push_back(k);
        reader.fail(value, "unknown key '" + table + "." + key + "'; [" + table + "] has " + join(names));
      }
      known->second->read(reader, value, config);
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
  std::string out, table;
  for (const Key &k : keys()) {
    const std::optional<std::string> value = k.print(*this);
    if (!value) continue;
    if (k.table != table) out += (table.empty() ? "[" : "\n[") + std::string(k.table) + "]\n";
    table = k.table;
    out += std::string(k.name) + " = " + *value + "\n";
  }
  return out;
}

const std::vector<ConfigFlag> &config_flags() {
  static const std::vector<ConfigFlag> flags = [] {
    std::vector<ConfigFlag> out;
    for (const Key &k : keys())
      if (k.flag) out.push_back(*k.flag);
    return out;
  }();
  return flags;
}

// The names a configuration may use: the mutation kinds with their default weights
// (evolve/search/README.md gives the reasons) and the proposers.

const std::map<std::string, double> &default_mutation_weights() {
  // Growing a schedule (insert) is how the search leaves the naive kernel, so it
  // leads; retuning what is there (factor, threads) is the cheapest gain near a good
  // schedule; the toggles of memory and fusion come next; removing undoes a step
  // that hurt; swaps rarely matter, since most steps commute.
  // A fresh sketch now and then restarts from a pattern's skeleton with other
  // decisions (crossover then mixes its stages with the archive's). A transfer, as
  // often as a crossover, brings a stage's decisions that a whole search on another
  // problem found (a run without a library never draws it). A rewrite added or
  // removed changes the graph the rest schedules: the sketches already start from
  // the rewrites that cut the work, so this is the search's way to the others.
  static const std::map<std::string, double> weights = {
      {"insert", 0.2},      {"factor", 0.2},   {"threads", 0.1}, {"toggle", 0.08},   {"unroll", 0.06},
      {"vectorize", 0.06},  {"remove", 0.06},  {"swap", 0.02},   {"crossover", 0.1}, {"sketch", 0.08},
      {"compute_at", 0.04}, {"transfer", 0.1}, {"rewrite", 0.05}};
  return weights;
}

const std::vector<std::string> &proposer_names() {
  static const std::vector<std::string> names = {"mutator", "random", "llm-schedule", "llm-kernel"};
  return names;
}

void check_proposer_name(const std::string &name, const std::string &where) {
  const std::vector<std::string> &names = proposer_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  throw UserError("error: " + (where.empty() ? "" : where + ": ") + "unknown proposer '" + name + "'; proposers are " +
                  join(names));
}

}  // namespace ks
