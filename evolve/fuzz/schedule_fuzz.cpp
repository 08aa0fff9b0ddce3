// The schedule fuzzer (schedule_fuzz.h): cases drawn, run, tallied; findings
// minimised and written out.
#include "evolve/fuzz/schedule_fuzz.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "evolve/fuzz/random_spec.h"
#include "evolve/isolate.h"
#include "evolve/search/cost_features.h"
#include "evolve/search/genome.h"
#include "evolve/search/sketch.h"
#include "evolve/workers.h"
#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "passes/lower.h"
#include "passes/pipeline.h"
#include "passes/primitives.h"
#include "passes/rewrite.h"

namespace ks {

std::vector<int64_t> schedule_factors(const Schedule &schedule) {
  std::vector<int64_t> out;
  for (const Primitive &p : schedule.steps)
    if (p.kind == PrimitiveKind::Split || p.kind == PrimitiveKind::Tile || p.kind == PrimitiveKind::CrossReduce ||
        p.kind == PrimitiveKind::Scan || p.kind == PrimitiveKind::AsyncCopy)
      out.insert(out.end(), p.factors.begin(), p.factors.end());
  for (const Rewrite &r : schedule.rewrites)
    if (r.kind == RewriteKind::Rfactor) out.push_back(r.factor);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

frontend::SizeOverrides overrides_of(const Sizes &sizes) {
  frontend::SizeOverrides o;
  o.values = sizes;
  o.flag = "--check-size";
  return o;
}

// The spec's graph at sizes (every size given), or none where it refuses them.
std::optional<Graph> graph_at(const frontend::Spec &spec, const Sizes &sizes) {
  try {
    return frontend::elaborate(spec, frontend::SizeSet::Check, overrides_of(sizes));
  } catch (const UserError &) {
    return std::nullopt;
  }
}

double points_of(const Graph &graph) {
  double points = 0;
  for (const Stage &stage : graph.stages) {
    double p = static_cast<double>(graph.find_tensor(stage.output)->numel());
    for (const IterVar &v : stage.reduce_vars) p *= static_cast<double>(v.extent);
    points += p;
  }
  return points;
}

// The check sizes: every size of the spec, by name.
Sizes check_sizes(const frontend::Spec &spec) {
  Sizes out;
  for (const SizeBinding &s : frontend::elaborate(spec, frontend::SizeSet::Check, {}).sizes) out[s.name] = s.value;
  return out;
}

std::string sizes_text(const Sizes &sizes) {
  std::string out;
  for (const auto &[name, value] : sizes) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out;
}

}  // namespace

std::optional<double> interpreter_points(const frontend::Spec &spec, const Sizes &sizes) {
  std::optional<Graph> g = graph_at(spec, sizes);
  if (!g) return std::nullopt;
  return points_of(*g);
}

std::optional<double> program_work(const frontend::Spec &spec, const Schedule &schedule, const Sizes &sizes) {
  std::optional<Graph> g = graph_at(spec, sizes);
  if (!g) return std::nullopt;
  std::vector<float> features;
  try {
    features = cost_features(run_pipeline(*g, schedule));
  } catch (const UserError &) {
    return std::nullopt;
  }
  double work = 0;
  const std::vector<std::string> &names = cost_feature_names();
  for (const char *count :
       {"log_flops", "log_global_loads", "log_global_stores", "log_local_accesses", "log_private_accesses"}) {
    const size_t i = static_cast<size_t>(std::find(names.begin(), names.end(), count) - names.begin());
    if (i == names.size()) throw InternalError(std::string("fuzz: no cost feature named ") + count);
    work += std::exp2(static_cast<double>(features[i])) - 1;  // the counts are log2(1 + x)
  }
  return work;
}

std::vector<Sizes> boundary_sizes(const frontend::Spec &spec, const std::vector<int64_t> &factors, Rng &rng, int count,
                                  double max_points, const SizeFilter &fits) {
  const Sizes base = check_sizes(spec);
  std::vector<std::string> names;
  for (const auto &[name, value] : base) names.push_back(name);
  if (names.empty()) return {};
  // The sizes worth trying: a ragged edge of a factor or of two nested (one, two and
  // three times each, one less and one more), primes, and the smallest.
  std::vector<int64_t> edges = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 61, 67, 97, 127, 131};
  std::vector<int64_t> units = factors;
  for (size_t i = 0; i < factors.size(); ++i)
    for (size_t j = i; j < factors.size(); ++j)
      if (factors[i] * factors[j] <= 4096) units.push_back(factors[i] * factors[j]);
  for (int64_t f : units)
    for (int64_t m = 1; m <= 3; ++m)
      for (int64_t d = -1; d <= 1; ++d)
        if (m * f + d >= 1) edges.push_back(m * f + d);
  std::vector<Sizes> out;
  std::set<Sizes> seen;
  for (int attempt = 0; attempt < 12 * count && static_cast<int>(out.size()) < count; ++attempt) {
    Sizes s = base;
    std::set<std::string> focus;
    const int chosen = std::uniform_int_distribution<int>(1, std::min<int>(2, static_cast<int>(names.size())))(rng);
    while (static_cast<int>(focus.size()) < chosen) focus.insert(pick(names, rng));
    for (const std::string &name : focus) s[name] = pick(edges, rng);
    for (const std::string &name : names)
      if (!focus.count(name) && std::uniform_int_distribution<int>(0, 1)(rng))
        s[name] = std::uniform_int_distribution<int64_t>(1, std::max<int64_t>(1, base.at(name)))(rng);
    std::optional<double> points = interpreter_points(spec, s);
    // Each set judged once: fits lowers the schedule.
    auto over = [&] { return points && (*points > max_points || (fits && !fits(s))); };
    bool too_big = over();
    // Over the budget: the other sizes halved toward 1, a few times.
    for (int shrink = 0; too_big && shrink < 8; ++shrink) {
      for (const std::string &name : names)
        if (!focus.count(name)) s[name] = std::max<int64_t>(1, s[name] / 2);
      points = interpreter_points(spec, s);
      too_big = over();
    }
    if (!points || too_big || !seen.insert(s).second) continue;
    out.push_back(s);
  }
  return out;
}

std::optional<Sizes> past_largest_tile(const frontend::Spec &spec, const std::vector<int64_t> &factors,
                                       double max_points, const SizeFilter &fits) {
  // Without a factor, past the check sizes still: as if a tile of 8.
  const int64_t largest = factors.empty() ? 8 : *std::max_element(factors.begin(), factors.end());
  Sizes s = check_sizes(spec);
  bool past = false;
  for (auto &[name, value] : s) {
    const int64_t was = value;
    // Past two tiles where the budget allows, else past one.
    for (int64_t raised : {2 * largest + 1, largest + 1}) {
      if (value > largest) break;
      value = raised;
      std::optional<double> points = interpreter_points(spec, s);
      if (!points || *points > max_points || (fits && !fits(s))) value = was;
    }
    past = past || value > largest;
  }
  if (!past) return std::nullopt;
  return s;
}

namespace {

// A device with the matrix units and cp.async, for the matrix sketch: the fuzzer runs
// its tiles emulated and its copies in order where the device has neither.
runtime::DeviceInfo matrix_unit_device() {
  runtime::DeviceInfo d;
  d.api = "opencl";
  d.gpu = true;
  d.max_work_group_size = 1024;
  d.max_work_item_sizes = {1024, 1024, 64};
  d.local_memory_bytes = 48 * 1024;
  d.async_copies = d.matrix_units = true;
  return d;
}

// A schedule that starts from a matrix-unit tile of the search's sketches (a few
// draws), then takes up to two random steps of other kinds on top; none where the
// graph has no contraction the sketch tiles so.
std::optional<Schedule> matrix_schedule(const Graph &graph, Rng &rng, const std::set<PrimitiveKind> &kinds) {
  const runtime::DeviceInfo device = matrix_unit_device();
  for (int draw = 0; draw < 4; ++draw) {
    std::optional<Sketch> sketch = sample_sketch(graph, device, rng);
    if (!sketch || std::none_of(sketch->schedule.steps.begin(), sketch->schedule.steps.end(),
                                [](const Primitive &p) { return p.kind == PrimitiveKind::Tensorize; }))
      continue;
    Schedule schedule = sketch->schedule;
    Replayed r = replay(graph, schedule);
    if (!r.program) continue;
    const size_t steps = schedule.steps.size() + std::uniform_int_distribution<size_t>(0, 2)(rng);
    for (int attempt = 0; attempt < 8 && schedule.steps.size() < steps; ++attempt)
      add_random_step(&*r.program, &schedule, rng, 4, 256, kinds, kMaxUnroll);
    return schedule;
  }
  return std::nullopt;
}

}  // namespace

Schedule fuzz_schedule(const Graph &graph, Rng &rng, int steps) {
  // Every primitive but tensorize, which needs the instruction's layout that random
  // steps do not build: the matrix sketch draws it (evolve/search/sketch.cpp), for one
  // schedule in kMatrixShare of a graph with a contraction.
  std::set<PrimitiveKind> every(all_primitive_kinds().begin(), all_primitive_kinds().end());
  every.erase(PrimitiveKind::Tensorize);
  const bool contraction = std::any_of(graph.stages.begin(), graph.stages.end(),
                                       [](const Stage &st) { return classify_stage(st) == StagePattern::Contraction; });
  if (contraction && std::uniform_real_distribution<double>(0, 1)(rng) < kMatrixShare)
    if (std::optional<Schedule> s = matrix_schedule(graph, rng, every)) return *s;
  Schedule schedule;
  Graph g = graph;
  if (std::uniform_int_distribution<int>(0, 1)(rng)) {
    const int count = std::uniform_int_distribution<int>(1, 2)(rng);
    for (int n = 0; n < count; ++n) {
      // Every rewrite that applies to some stage (rfactor of a random variable by a
      // random factor), one of them taken.
      std::vector<std::pair<Rewrite, Graph>> options;
      for (const Stage &stage : g.stages)
        for (RewriteKind kind : all_rewrite_kinds()) {
          Rewrite r{kind, stage.output, {}, {}, 0, {}};
          if (kind == RewriteKind::Rfactor) {
            if (stage.reduce_vars.empty()) continue;
            const IterVar &v = pick(stage.reduce_vars, rng);
            r.loop = v.name;
            r.factor = std::uniform_int_distribution<int64_t>(1, v.extent + 2)(rng);
            r.results = {stage.output + "_rf", v.name + "_o", v.name + "_i"};
          }
          std::string reason;
          if (std::optional<Graph> next = try_rewrite(g, r, &reason)) options.push_back({r, *next});
        }
      if (options.empty()) break;
      const auto &[r, next] = pick(options, rng);
      schedule.rewrites.push_back(r);
      g = next;
    }
  }
  Program program = lower(g);
  for (int attempt = 0; attempt < 4 * steps && static_cast<int>(schedule.steps.size()) < steps; ++attempt)
    add_random_step(&program, &schedule, rng, 4, 256, every, kMaxUnroll);
  // The steps that need others before them (a local cache to pad, transpose,
  // prefetch or copy ahead; a running total to scan) are rarely drawn among all: one
  // in two schedules tries one of them on top.
  static const std::vector<PrimitiveKind> rare = {PrimitiveKind::Pad,      PrimitiveKind::Transpose,
                                                  PrimitiveKind::Prefetch, PrimitiveKind::AsyncCopy,
                                                  PrimitiveKind::Scan,     PrimitiveKind::CacheRead};
  if (std::uniform_int_distribution<int>(0, 1)(rng))
    add_random_step(&program, &schedule, rng, 12, 256, {pick(rare, rng)}, kMaxUnroll);
  return schedule;
}

const char *outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Passed: return "passed";
    case Outcome::Refused: return "refused";
    case Outcome::Wrong: return "wrong";
    case Outcome::Flagged: return "flagged";
    case Outcome::Internal: return "internal";
    case Outcome::Build: return "build";
    case Outcome::Failed: return "failed";
    case Outcome::Crash: return "crash";
    case Outcome::Hang: return "hang";
    case Outcome::Slow: return "slow";
  }
  return "?";
}

bool is_finding(Outcome outcome) {
  return outcome != Outcome::Passed && outcome != Outcome::Refused && outcome != Outcome::Slow;
}

namespace {

// Whether a case's schedule replays on its spec at its sizes (in this process: a
// minimisation's candidates that do not are never run).
bool replays(const FuzzCase &c) {
  try {
    const frontend::Spec spec = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{"fuzz.ks", c.spec_text}));
    run_pipeline(frontend::elaborate(spec, frontend::SizeSet::Check, overrides_of(c.sizes)), c.schedule);
    return true;
  } catch (const UserError &) {
    return false;
  }
}

}  // namespace

FuzzCase minimise(const FuzzCase &finding, Outcome outcome, const CaseRunner &run, int max_runs) {
  FuzzCase best = finding;
  int runs = 0;
  auto still = [&](const FuzzCase &c) {
    if (runs >= max_runs || !replays(c)) return false;
    ++runs;
    return run({c}).front().outcome == outcome;
  };
  // The steps, last first (a later step may name what an earlier one made), then the
  // rewrites.
  for (size_t i = best.schedule.steps.size(); i-- > 0;) {
    FuzzCase fewer = best;
    fewer.schedule.steps.erase(fewer.schedule.steps.begin() + static_cast<std::ptrdiff_t>(i));
    if (still(fewer)) best = fewer;
  }
  for (size_t i = best.schedule.rewrites.size(); i-- > 0;) {
    FuzzCase fewer = best;
    fewer.schedule.rewrites.erase(fewer.schedule.rewrites.begin() + static_cast<std::ptrdiff_t>(i));
    if (still(fewer)) best = fewer;
  }
  // Each size toward 1: 1 itself, then halving, then one less at a time (a few).
  for (auto &[name, value] : best.sizes) {
    (void)value;
    if (best.sizes[name] > 1) {
      FuzzCase smaller = best;
      smaller.sizes[name] = 1;
      if (still(smaller)) best = smaller;
    }
    while (best.sizes[name] > 1) {
      FuzzCase smaller = best;
      smaller.sizes[name] /= 2;
      if (!still(smaller)) break;
      best = smaller;
    }
    for (int step = 0; step < 3 && best.sizes[name] > 1; ++step) {
      FuzzCase smaller = best;
      --smaller.sizes[name];
      if (!still(smaller)) break;
      best = smaller;
    }
  }
  return best;
}

namespace {

std::string first_words(const std::string &text, int words) {
  std::string out;
  int n = 0;
  bool in_word = false;
  for (char ch : text) {
    if (ch == '\n') break;
    const bool space = ch == ' ';
    if (!space && !in_word && ++n > words) break;
    in_word = !space;
    out += ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// What a `ksmith run --json` child gave, as an outcome.
CaseResult classify(const ChildRun &child, double time_limit_s) {
  if (child.timed_out)
    return {Outcome::Hang, "no answer within " + std::to_string(static_cast<int>(time_limit_s)) + " s"};
  const IsolatedRun run = isolated_outcome(child, time_limit_s);
  if (!run.record) return {Outcome::Crash, run.failure};
  const nlohmann::json &r = *run.record;
  const std::string verdict = r.value("verdict", "");
  if (r.value("ok", false)) return {Outcome::Passed, verdict};
  if (r.contains("failure")) {
    const std::string stage = r["failure"].value("stage", ""), message = r["failure"].value("message", "");
    if (stage == "compile")
      return {message.find("internal error") != std::string::npos ? Outcome::Internal : Outcome::Refused, message};
    if (stage == "launch") return {Outcome::Refused, message};
    if (stage == "build") return {Outcome::Build, message};
    return {Outcome::Failed, message};
  }
  if (r.contains("hacking_flags") && !r["hacking_flags"].empty()) return {Outcome::Flagged, verdict};
  return {Outcome::Wrong, verdict};
}

// A refusal's kind: its message without the file and line it points at, its first
// words, numbers as N.
std::string refusal_key(const std::string &why) {
  const size_t error = why.find("error: ");
  std::string key;
  for (char ch : first_words(error == std::string::npos ? why : why.substr(error + 7), 8))
    if (!std::isdigit(static_cast<unsigned char>(ch)))
      key += ch;
    else if (key.empty() || key.back() != 'N')
      key += 'N';
  return key;
}

std::string key_of(const FuzzCase &c) {  // what tells two findings apart
  std::string kinds;
  for (const Rewrite &r : c.schedule.rewrites) kinds += std::string(rewrite_name(r.kind)) + " ";
  for (const Primitive &p : c.schedule.steps) kinds += std::string(primitive_name(p.kind)) + " ";
  return c.spec_label + "\n" + kinds;
}

void write_file(const std::filesystem::path &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError("error: cannot write " + path.string());
}

std::string write_finding(const std::string &out, int number, const FuzzCase &c, const CaseResult &r,
                          const CaseResult &first, const FuzzCase &found) {
  char name[64];
  std::snprintf(name, sizeof name, "%03d-%s", number, outcome_name(r.outcome));
  const std::filesystem::path dir = std::filesystem::path(out) / "findings" / name;
  std::filesystem::create_directories(dir);
  write_file(dir / "spec.ks", c.spec_text);
  write_file(dir / "schedule.sched", print_schedule(c.schedule));
  write_file(dir / "sizes", sizes_text(c.sizes) + "\n");
  write_file(dir / "what.txt", std::string(outcome_name(r.outcome)) + " on " + c.device + " (" + c.spec_label + "):\n" +
                                   r.why + "\n\nas found, before minimising (" + sizes_text(found.sizes) + "):\n" +
                                   print_schedule(found.schedule) + first.why + "\n");
  write_file(dir / "repro.sh", "#!/bin/sh\n# " + std::string(outcome_name(r.outcome)) + ": replays this finding\n" +
                                   "cd \"$(dirname \"$0\")\"\nexec \"${KSMITH:-ksmith}\" run spec.ks --schedule " +
                                   "schedule.sched --check-size " + sizes_text(c.sizes) + " --no-time --trials 1 " +
                                   "--seed 1 --async-copies-in-order --emulate-matrix-units --device " + c.device +
                                   " \"$@\"\n");
  std::filesystem::permissions(dir / "repro.sh", std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  return dir.string();
}

void write_summary(const std::string &out, const FuzzOptions &o, const FuzzSummary &s) {
  nlohmann::json j = {{"seed", o.seed},
                      {"devices", o.devices},
                      {"specs", s.specs},
                      {"schedules", s.schedules},
                      {"pairs", s.pairs},
                      {"seconds", s.seconds},
                      {"outcomes", s.outcomes},
                      {"refusals", s.refusals},
                      {"primitives", s.primitives},
                      {"rewrites", s.rewrites},
                      {"device_seconds", s.device_seconds},
                      {"findings", s.findings}};
  write_file(std::filesystem::path(out) / "summary.json", j.dump(2) + "\n");
  std::string md = "# Schedule fuzzing\n\nSeed " + std::to_string(o.seed) + ", on ";
  for (size_t i = 0; i < o.devices.size(); ++i) md += (i ? ", " : "") + o.devices[i];
  char line[256];
  std::snprintf(line, sizeof line,
                ": %lld specs, %lld schedules, %lld pairs of a schedule and sizes checked on a device, in %.0f s.\n\n",
                static_cast<long long>(s.specs), static_cast<long long>(s.schedules), static_cast<long long>(s.pairs),
                s.seconds);
  md += line;
  md += "| outcome | pairs |\n|---|---|\n";
  for (const auto &[name, n] : s.outcomes) md += "| " + name + " | " + std::to_string(n) + " |\n";
  md += "\n| device | seconds of its pairs (wall time, summed over its workers) |\n|---|---|\n";
  for (const auto &[device, seconds] : s.device_seconds)
    md += "| " + device + " | " + std::to_string(static_cast<int64_t>(seconds)) + " |\n";
  md += "\n| step drawn | schedules |\n|---|---|\n";
  for (const auto &[name, n] : s.rewrites) md += "| rewrite " + name + " | " + std::to_string(n) + " |\n";
  for (const auto &[name, n] : s.primitives) md += "| " + name + " | " + std::to_string(n) + " |\n";
  md += "\n| refused because | pairs |\n|---|---|\n";
  for (const auto &[why, n] : s.refusals) md += "| " + why + " | " + std::to_string(n) + " |\n";
  md += "\nFindings: " + std::to_string(s.findings.size()) + "\n";
  for (const std::string &f : s.findings) md += "- " + f + "\n";
  write_file(std::filesystem::path(out) / "summary.md", md);
}

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One fuzzing campaign. Cases are run in batches of several schedules, so that every
// worker has work: the batch's results tallied, each finding minimised and written.
class Campaign {
 public:
  Campaign(const FuzzOptions &o, const CaseRunner &run)
      : o_(o),
        run_(run),
        start_(monotonic_seconds()),
        last_log_(start_),
        rng_(o.seed),
        spec_rng_(static_cast<uint32_t>(o.seed)) {
    std::filesystem::create_directories(o.out);
  }

  FuzzSummary run() {
    run_given();
    draw_rounds();
    flush();
    s_.seconds = monotonic_seconds() - start_;
    write_summary(o_.out, o_, s_);
    return s_;
  }

 private:
  bool done() const {
    return (o_.max_schedules > 0 && s_.schedules >= o_.max_schedules) ||
           (o_.max_seconds > 0 && monotonic_seconds() - start_ >= o_.max_seconds);
  }

  // A case run once more, given hang_patience times the time limit.
  CaseResult patiently(FuzzCase c) const {
    c.patience = o_.hang_patience;
    return run_({c}).front();
  }

  // A spec's text at the asked type (its f32 tensors), else as written; the case keeps
  // it, so that a finding's replay is of the spec that failed.
  std::string retyped(const std::string &label, const std::string &text) const {
    if (!o_.dtype) return text;
    return frontend::with_dtype(std::make_shared<SourceFile>(SourceFile{label, text}), *o_.dtype);
  }

  // The given pairs of a spec and a schedule, before any drawn.
  void run_given() {
    for (const auto &[spec_path, schedule_path] : o_.given) {
      if (done()) break;
      try {
        const std::string text = retyped(spec_path, read_text(spec_path));
        const frontend::Spec spec = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{spec_path, text}));
        queue(spec_path, text, spec, load_schedule(schedule_path));
      } catch (const UserError &e) {
        ++s_.refusals["a given schedule: " + refusal_key(e.what())];
      }
    }
  }

  // The examples in turn, a random spec between two where both are asked for.
  void draw_rounds() {
    for (int64_t round = 0; !done(); ++round) {
      const bool random =
          o_.spec_paths.empty() || (o_.random_specs > 0 && round % 2 == 1 && random_made_ < o_.random_specs);
      if (random && random_made_ >= o_.random_specs) break;
      std::string label, text;
      if (random) {
        text = random_spec(spec_rng_);
        label = "random spec " + std::to_string(++random_made_);
      } else {
        label = o_.spec_paths[static_cast<size_t>(round / (o_.random_specs > 0 ? 2 : 1)) % o_.spec_paths.size()];
        text = read_text(label);
      }
      draw_schedules(label, retyped(label, text));
    }
  }

  // Random schedules of one spec into the batch; a spec that does not parse or
  // elaborate is a refusal.
  void draw_schedules(const std::string &label, const std::string &text) {
    std::optional<frontend::Spec> spec;
    std::optional<Graph> graph;
    try {
      spec = frontend::parse_spec(std::make_shared<SourceFile>(SourceFile{label, text}));
      graph = frontend::elaborate(*spec, frontend::SizeSet::Check, {});
    } catch (const UserError &e) {
      ++s_.refusals["the spec: " + refusal_key(e.what())];
      return;
    }
    ++s_.specs;
    for (int k = 0; k < o_.schedules_per_spec && !done(); ++k)
      queue(label, text, *spec,
            fuzz_schedule(*graph, rng_, std::uniform_int_distribution<int>(1, std::max(1, o_.max_steps))(rng_)));
  }

  // One schedule of a spec at its boundary sizes on every device, into the batch; a
  // full batch is run.
  void queue(const std::string &label, const std::string &text, const frontend::Spec &spec, const Schedule &schedule) {
    const std::vector<int64_t> factors = schedule_factors(schedule);
    // A schedule that does not apply at some sizes is refused there, cheaply.
    const SizeFilter fits = [&](const Sizes &at) {
      const std::optional<double> work = program_work(spec, schedule, at);
      return !work || *work <= o_.max_work;
    };
    std::vector<Sizes> sizes = boundary_sizes(spec, factors, rng_, o_.sizes_per_schedule, o_.max_points, fits);
    if (std::optional<Sizes> past = past_largest_tile(spec, factors, o_.max_points, fits)) sizes.push_back(*past);
    ++s_.schedules;
    for (const Rewrite &r : schedule.rewrites) ++s_.rewrites[rewrite_name(r.kind)];
    for (const Primitive &p : schedule.steps) ++s_.primitives[primitive_name(p.kind)];
    for (const Sizes &at : sizes)
      for (const std::string &device : o_.devices) batch_.push_back({label, text, schedule, at, device});
    if (static_cast<int>(batch_.size()) >= o_.batch_cases) flush();
  }

  // Runs the batch, tallies it and writes its new findings, then the summary so far.
  void flush() {
    if (batch_.empty()) return;
    const std::vector<CaseResult> results = run_(batch_);
    for (size_t i = 0; i < batch_.size(); ++i) {
      ++s_.pairs;
      const CaseResult r = settle_hang(batch_[i], results[i]);
      ++s_.outcomes[outcome_name(r.outcome)];
      s_.device_seconds[batch_[i].device] += r.seconds;
      if (r.outcome == Outcome::Refused) ++s_.refusals[refusal_key(r.why)];
      if (is_finding(r.outcome)) write_new_finding(batch_[i], r);
    }
    batch_.clear();
    s_.seconds = monotonic_seconds() - start_;
    write_summary(o_.out, o_, s_);  // so far: a campaign cut short still says what it did
    log_progress();
  }

  // A hang given its patience: done then, it is slow (or a finding of another kind).
  CaseResult settle_hang(const FuzzCase &c, CaseResult r) const {
    if (r.outcome != Outcome::Hang || o_.hang_patience <= 1) return r;
    const CaseResult again = patiently(c);
    if (again.outcome == Outcome::Passed || again.outcome == Outcome::Refused) {
      char why[160];
      std::snprintf(why, sizeof why, "past the time limit, then done in %.0f s (%s)", again.seconds,
                    outcome_name(again.outcome));
      r = {Outcome::Slow, why, again.seconds};
    } else if (again.outcome != Outcome::Hang) {
      r = again;  // a finding of another kind once it finishes
    }
    return r;
  }

  // A finding minimised and, unless one of its kind is known, run again and written.
  void write_new_finding(const FuzzCase &found, const CaseResult &r) {
    // A hang's every run takes the whole time limit: a few runs only.
    FuzzCase small =
        minimise(found, r.outcome, run_, r.outcome == Outcome::Hang ? std::min(o_.minimise_runs, 8) : o_.minimise_runs);
    // A hang is minimised at the plain time limit, which a smaller case may pass only
    // slowly: given its patience, it must still hang, else the case as found stands.
    if (r.outcome == Outcome::Hang && o_.hang_patience > 1 && patiently(small).outcome != Outcome::Hang) small = found;
    if (!known_.insert(std::string(outcome_name(r.outcome)) + "\n" + key_of(small)).second) return;
    const CaseResult again = run_({small}).front();
    s_.findings.push_back(write_finding(o_.out, static_cast<int>(s_.findings.size()) + 1, small, again, r, found));
    if (o_.log) o_.log("finding: " + s_.findings.back() + ": " + first_words(again.why, 30));
  }

  // A line of progress every 10 s at most.
  void log_progress() {
    if (!o_.log || monotonic_seconds() - last_log_ < 10) return;
    last_log_ = monotonic_seconds();
    char line[200];
    std::snprintf(line, sizeof line, "%lld schedules, %lld pairs (%lld passed, %lld refused), %zu findings, %.0f s",
                  static_cast<long long>(s_.schedules), static_cast<long long>(s_.pairs),
                  static_cast<long long>(s_.outcomes["passed"]), static_cast<long long>(s_.outcomes["refused"]),
                  s_.findings.size(), last_log_ - start_);
    o_.log(line);
  }

  const FuzzOptions &o_;
  const CaseRunner &run_;
  FuzzSummary s_;
  const double start_;
  double last_log_;
  Rng rng_;
  std::mt19937 spec_rng_;
  std::set<std::string> known_;  // findings' keys
  int random_made_ = 0;
  std::vector<FuzzCase> batch_;
};

}  // namespace

FuzzSummary fuzz(const FuzzOptions &o, const CaseRunner &run) { return Campaign(o, run).run(); }

CaseRunner worker_runner(const std::string &ksmith, const std::vector<std::string> &devices,
                         const std::vector<int> &workers, const std::string &work_dir, double time_limit_s) {
  if (workers.size() != devices.size())
    throw InternalError("fuzz: " + std::to_string(workers.size()) + " worker counts for " +
                        std::to_string(devices.size()) + " devices");
  // One queue a device, so that one whose evaluations crash is never retired for
  // another (the crashes are what the fuzzer looks for).
  auto queues = std::make_shared<std::map<std::string, std::unique_ptr<WorkerQueue>>>();
  for (size_t i = 0; i < devices.size(); ++i)
    (*queues)[devices[i]] = std::make_unique<WorkerQueue>(
        ksmith, std::vector<WorkerQueue::Slot>(static_cast<size_t>(std::max(1, workers[i])),
                                               {devices[i], {"--device", devices[i]}, {}}));
  std::filesystem::create_directories(work_dir);
  return [queues, work_dir, time_limit_s](const std::vector<FuzzCase> &cases) {
    // Each case's files, named by their text's hash (shared by the cases of a schedule).
    auto file_for = [&](const std::string &text, const char *extension) {
      const std::string path = work_dir + "/" + std::to_string(std::hash<std::string>{}(text)) + extension;
      if (!std::filesystem::exists(path)) write_file(path, text);
      return path;
    };
    std::vector<CaseResult> results(cases.size());
    std::map<std::string, std::deque<size_t>> waiting;  // each device's cases, in order
    for (size_t i = 0; i < cases.size(); ++i) {
      if (!queues->count(cases[i].device))
        throw InternalError("fuzz: a case for a device not served: " + cases[i].device);
      waiting[cases[i].device].push_back(i);
    }
    for (size_t left = cases.size(); left > 0;) {
      for (auto &[device, queue] : *queues)
        while (queue->running() < queue->slots() && !waiting[device].empty()) {
          const size_t i = waiting[device].front();
          waiting[device].pop_front();
          const FuzzCase &c = cases[i];
          Job job;
          job.ticket = i;
          job.args = {"run",
                      file_for(c.spec_text, ".ks"),
                      "--schedule",
                      file_for(print_schedule(c.schedule), ".sched"),
                      "--no-time",
                      "--json",
                      "--trials",
                      "1",
                      "--seed",
                      "1",
                      "--async-copies-in-order",
                      "--emulate-matrix-units"};
          if (!c.sizes.empty()) job.args.insert(job.args.end(), {"--check-size", sizes_text(c.sizes)});
          job.time_limit_s = time_limit_s * c.patience;
          queue->submit(job);
        }
      for (auto &[device, queue] : *queues)
        for (const JobResult &r : queue->wait(0.05)) {
          results[r.ticket] = classify(r.child, time_limit_s * cases[r.ticket].patience);
          results[r.ticket].seconds = r.child.seconds;
          --left;
        }
    }
    return results;
  };
}

}  // namespace ks
