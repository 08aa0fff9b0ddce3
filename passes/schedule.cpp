// The schedule text format and the dispatch of each step to its primitive.
#include "passes/schedule.h"

#include "ir/lexer.h"
#include "passes/primitives.h"

namespace ks {

const char *primitive_name(PrimitiveKind kind) {
  switch (kind) {
    case PrimitiveKind::Split: return "split";
    case PrimitiveKind::Tile: return "tile";
    case PrimitiveKind::Reorder: return "reorder";
    case PrimitiveKind::Fuse: return "fuse";
    case PrimitiveKind::Bind: return "bind";
    case PrimitiveKind::Unroll: return "unroll";
    case PrimitiveKind::Vectorize: return "vectorize";
    case PrimitiveKind::Inline: return "inline";
    case PrimitiveKind::ReverseInline: return "reverse_inline";
    case PrimitiveKind::CrossReduce: return "cross_reduce";
    case PrimitiveKind::Scan: return "scan";
    case PrimitiveKind::ComputeAt: return "compute_at";
    case PrimitiveKind::CacheWrite: return "cache_write";
    case PrimitiveKind::CacheRead: return "cache_read";
    case PrimitiveKind::Pad: return "pad";
    case PrimitiveKind::Transpose: return "transpose";
    case PrimitiveKind::Prefetch: return "prefetch";
    case PrimitiveKind::AsyncCopy: return "async_copy";
  }
  return "?";
}

namespace {

constexpr PrimitiveKind kPrimitives[] = {
    PrimitiveKind::Split,         PrimitiveKind::Tile,      PrimitiveKind::Reorder,    PrimitiveKind::Fuse,
    PrimitiveKind::Bind,          PrimitiveKind::Unroll,    PrimitiveKind::Vectorize,  PrimitiveKind::Inline,
    PrimitiveKind::CrossReduce,   PrimitiveKind::ComputeAt, PrimitiveKind::CacheWrite, PrimitiveKind::CacheRead,
    PrimitiveKind::Pad,           PrimitiveKind::Transpose, PrimitiveKind::Prefetch,   PrimitiveKind::Scan,
    PrimitiveKind::ReverseInline, PrimitiveKind::AsyncCopy};

// "split, tile, ..., pad"
std::string primitive_names() {
  std::string out;
  for (PrimitiveKind k : kPrimitives) out += (out.empty() ? "" : ", ") + std::string(primitive_name(k));
  return out;
}

class ScheduleParser {
 public:
  explicit ScheduleParser(const std::shared_ptr<const SourceFile> &file) : ts_(tokenize(file)) {}

  Schedule schedule() {
    Schedule s;
    while (!ts_.at_end()) {
      if (ts_.peek().is("rewrite")) {
        const Token &head = ts_.next();
        if (!s.steps.empty())
          error_at(head.loc, "rewrites come before the primitives: they change the graph that the primitives schedule");
        s.rewrites.push_back(rewrite(head));
      } else {
        s.steps.push_back(step());
      }
    }
    return s;
  }

 private:
  TokenStream ts_;

  std::string name(const char *what) { return ts_.expect_identifier(what).text; }

  // stage.loop
  void loop_ref(Primitive &p) {
    p.stage = name("a stage name");
    ts_.expect(".", "between the stage and the loop (stage.loop)");
    p.loops.push_back(name("a loop name"));
  }

  int64_t factor() {
    const Token &t = ts_.peek();
    if (t.kind != TokenKind::Integer)
      ts_.fail("expected a factor (a positive integer), found " + TokenStream::describe(t));
    ts_.next();
    try {
      int64_t v = std::stoll(t.text);
      if (v < 1) error_at(t.loc, "a factor must be at least 1");
      return v;
    } catch (const std::out_of_range &) {
      error_at(t.loc, "factor " + t.text + " is too large");
    }
  }

  MemoryScope memory() {
    const Token &t = ts_.expect_identifier("local or private");
    if (t.text == "local") return MemoryScope::Local;
    if (t.text == "private") return MemoryScope::Private;
    error_at(t.loc, "unknown memory '" + t.text + "'; caches are local or private");
  }

  // Names up to the next keyword or `->`: the loops of reorder and fuse.
  void loop_list(Primitive &p) {
    while (ts_.peek().kind == TokenKind::Identifier && !is_keyword(ts_.peek()) && !ts_.peek(1).is("."))
      p.loops.push_back(ts_.next().text);
  }

  static bool is_keyword(const Token &t) {
    for (PrimitiveKind k : kPrimitives)
      if (t.text == primitive_name(k)) return true;
    return t.text == "rewrite";
  }

  // rewrite RULE STAGE, after the keyword.
  Rewrite rewrite(const Token &head) {
    Rewrite r;
    r.loc = head.loc;
    std::string rules;
    for (RewriteKind k : all_rewrite_kinds()) rules += (rules.empty() ? "" : ", ") + std::string(rewrite_name(k));
    const Token &rule = ts_.expect_identifier(("a rewrite (" + rules + ")").c_str());
    std::optional<RewriteKind> kind = parse_rewrite_kind(rule.text);
    if (!kind) error_at(rule.loc, "unknown rewrite '" + rule.text + "'; rewrites are " + rules);
    r.kind = *kind;
    r.stage = name("the stage it rewrites");
    if (rewrite_takes_arguments(r.kind)) {  // rfactor y.k F -> y_rf ko ki
      ts_.expect(".", "between the stage and its reduction variable (stage.variable)");
      r.loop = name("a reduction variable");
      r.factor = factor();
      ts_.expect("->", "before the names of the partial results' stage and its two variables");
      r.results = {name("the partial results' stage"), name("the part variable's name"),
                   name("the inner reduction variable's name")};
    }
    return r;
  }

  Primitive step() {
    Primitive p;
    const Token &head = ts_.expect_identifier(("a primitive (" + primitive_names() + ") or a rewrite").c_str());
    p.loc = head.loc;
    const std::string &kind = head.text;
    if (kind == "split") {
      p.kind = PrimitiveKind::Split;
      loop_ref(p);
      p.factors.push_back(factor());
      ts_.expect("->", "before the names of the new loops");
      p.results = {name("the outer loop's name"), name("the inner loop's name")};
    } else if (kind == "tile") {
      p.kind = PrimitiveKind::Tile;
      p.stage = name("a stage name");
      p.loops = {name("the first loop"), name("the second loop")};
      p.factors = {factor(), factor()};
      ts_.expect("->", "before the names of the new loops");
      for (int i = 0; i < 4; ++i) p.results.push_back(name("a new loop's name"));
    } else if (kind == "reorder") {
      p.kind = PrimitiveKind::Reorder;
      p.stage = name("a stage name");
      loop_list(p);
      if (p.loops.size() < 2) error_at(head.loc, "reorder needs a stage and at least two loops");
    } else if (kind == "fuse") {
      p.kind = PrimitiveKind::Fuse;
      p.stage = name("a stage name");
      loop_list(p);
      if (p.loops.empty()) error_at(head.loc, "fuse needs a stage and its loops");
      ts_.expect("->", "before the fused loop's name");
      p.results.push_back(name("the fused loop's name"));
    } else if (kind == "bind") {
      p.kind = PrimitiveKind::Bind;
      loop_ref(p);
      const Token &axis = ts_.expect_identifier("group.x/y/z or local.x/y/z");
      std::string text = axis.text;
      if (ts_.accept(".")) text += "." + name("x, y or z");
      auto parsed = parse_for_kind(text);
      if (!parsed || (!is_group(*parsed) && !is_local(*parsed)))
        error_at(axis.loc,
                 "unknown binding '" + text + "'; bind to group.x, group.y, group.z, local.x, local.y or local.z");
      p.binding = *parsed;
    } else if (kind == "unroll") {
      p.kind = PrimitiveKind::Unroll;
      loop_ref(p);
    } else if (kind == "vectorize") {
      p.kind = PrimitiveKind::Vectorize;
      loop_ref(p);
    } else if (kind == "cross_reduce" || kind == "scan") {
      p.kind = kind == "scan" ? PrimitiveKind::Scan : PrimitiveKind::CrossReduce;
      loop_ref(p);
      p.factors.push_back(factor());
      ts_.expect("->", "before the work-item variable's name");
      p.results.push_back(name("the work-item variable's name"));
    } else if (kind == "compute_at") {
      p.kind = PrimitiveKind::ComputeAt;
      p.stage = name("the producer stage");
      p.consumer = name("the consumer stage");
      ts_.expect(".", "between the consumer stage and its loop (stage.loop)");
      p.loops.push_back(name("a loop name"));
    } else if (kind == "cache_write") {
      p.kind = PrimitiveKind::CacheWrite;
      loop_ref(p);
      p.memory = memory();
    } else if (kind == "cache_read") {
      p.kind = PrimitiveKind::CacheRead;
      loop_ref(p);
      p.buffer = name("the buffer to cache");
      p.memory = memory();
      ts_.expect("->", "before the cache's name");
      p.results.push_back(name("the cache's name"));
    } else if (kind == "pad") {
      p.kind = PrimitiveKind::Pad;
      p.stage = name("a stage name");
      ts_.expect(".", "between the stage and the buffer (stage.buffer)");
      p.buffer = name("a local buffer's name");
      p.factors.push_back(factor());
    } else if (kind == "transpose" || kind == "prefetch") {
      p.kind = kind == "transpose" ? PrimitiveKind::Transpose : PrimitiveKind::Prefetch;
      p.stage = name("a stage name");
      ts_.expect(".", "between the stage and the buffer (stage.buffer)");
      p.buffer = name("a local buffer's name");
    } else if (kind == "async_copy") {
      p.kind = PrimitiveKind::AsyncCopy;
      loop_ref(p);
      p.factors.push_back(factor());
    } else if (kind == "inline" || kind == "reverse_inline") {
      p.kind = kind == "inline" ? PrimitiveKind::Inline : PrimitiveKind::ReverseInline;
      p.stage = name("a stage name");
    } else {
      error_at(head.loc, "unknown primitive '" + kind + "'; primitives are " + primitive_names());
    }
    return p;
  }
};

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// What a step was asked to act on, as written: `split y.q`, `reorder y`, `cache_read c.ko a`.
std::string target_of(const Primitive &p) {
  const std::string head = primitive_name(p.kind) + std::string(" ") + p.stage;
  switch (p.kind) {
    case PrimitiveKind::Tile:
    case PrimitiveKind::Reorder:
    case PrimitiveKind::Fuse:
    case PrimitiveKind::Inline:
    case PrimitiveKind::ReverseInline: return head;
    case PrimitiveKind::ComputeAt: return head + " " + p.consumer + "." + p.loops[0];
    case PrimitiveKind::Pad:
    case PrimitiveKind::Transpose:
    case PrimitiveKind::Prefetch: return head + "." + p.buffer;
    case PrimitiveKind::CacheRead: return head + "." + p.loops[0] + " " + p.buffer;
    default: return head + "." + p.loops[0];
  }
}

}  // namespace

Schedule parse_schedule(const std::shared_ptr<const SourceFile> &file) { return ScheduleParser(file).schedule(); }

Schedule load_schedule(const std::string &path) { return parse_schedule(read_source_file(path, "schedule")); }

std::string print_primitive(const Primitive &p) {
  std::string out = primitive_name(p.kind);
  switch (p.kind) {
    case PrimitiveKind::Split:
      return out + " " + p.stage + "." + p.loops[0] + " " + std::to_string(p.factors[0]) + " -> " + join(p.results);
    case PrimitiveKind::Tile:
      return out + " " + p.stage + " " + join(p.loops) + " " + std::to_string(p.factors[0]) + " " +
             std::to_string(p.factors[1]) + " -> " + join(p.results);
    case PrimitiveKind::Reorder: return out + " " + p.stage + " " + join(p.loops);
    case PrimitiveKind::Fuse: return out + " " + p.stage + " " + join(p.loops) + " -> " + join(p.results);
    case PrimitiveKind::Bind: return out + " " + p.stage + "." + p.loops[0] + " " + for_kind_name(p.binding);
    case PrimitiveKind::Unroll:
    case PrimitiveKind::Vectorize: return out + " " + p.stage + "." + p.loops[0];
    case PrimitiveKind::Inline:
    case PrimitiveKind::ReverseInline: return out + " " + p.stage;
    case PrimitiveKind::CrossReduce:
    case PrimitiveKind::Scan:
      return out + " " + p.stage + "." + p.loops[0] + " " + std::to_string(p.factors[0]) + " -> " + p.results[0];
    case PrimitiveKind::ComputeAt: return out + " " + p.stage + " " + p.consumer + "." + p.loops[0];
    case PrimitiveKind::CacheWrite: return out + " " + p.stage + "." + p.loops[0] + " " + memory_scope_name(p.memory);
    case PrimitiveKind::CacheRead:
      return out + " " + p.stage + "." + p.loops[0] + " " + p.buffer + " " + memory_scope_name(p.memory) + " -> " +
             p.results[0];
    case PrimitiveKind::Pad: return out + " " + p.stage + "." + p.buffer + " " + std::to_string(p.factors[0]);
    case PrimitiveKind::Transpose:
    case PrimitiveKind::Prefetch: return out + " " + p.stage + "." + p.buffer;
    case PrimitiveKind::AsyncCopy: return out + " " + p.stage + "." + p.loops[0] + " " + std::to_string(p.factors[0]);
  }
  return out;
}

std::string print_schedule(const Schedule &schedule) {
  std::string out;
  for (const Rewrite &r : schedule.rewrites) out += print_rewrite(r) + "\n";
  for (const Primitive &p : schedule.steps) out += print_primitive(p) + "\n";
  return out;
}

Graph rewritten_graph(const Graph &graph, const Schedule &schedule) {
  Graph out = graph;
  for (const Rewrite &r : schedule.rewrites) out = apply_rewrite(out, r);
  return out;
}

Program apply_primitive(const Program &program, const Primitive &p) {
  std::string reason;
  std::optional<Program> out;
  switch (p.kind) {
    case PrimitiveKind::Split:
      out = split(program, p.stage, p.loops[0], p.factors[0], p.results[0], p.results[1], &reason);
      break;
    case PrimitiveKind::Tile:
      out = tile(program, p.stage, p.loops[0], p.loops[1], p.factors[0], p.factors[1], p.results, &reason);
      break;
    case PrimitiveKind::Reorder: out = reorder(program, p.stage, p.loops, &reason); break;
    case PrimitiveKind::Fuse: out = fuse(program, p.stage, p.loops, p.results[0], &reason); break;
    case PrimitiveKind::Bind: out = ks::bind(program, p.stage, p.loops[0], p.binding, &reason); break;
    case PrimitiveKind::Unroll: out = unroll(program, p.stage, p.loops[0], &reason); break;
    case PrimitiveKind::Vectorize: out = vectorize(program, p.stage, p.loops[0], &reason); break;
    case PrimitiveKind::Inline: out = inline_stage(program, p.stage, &reason); break;
    case PrimitiveKind::ReverseInline: out = reverse_inline(program, p.stage, &reason); break;
    case PrimitiveKind::CrossReduce:
      out = cross_reduce(program, p.stage, p.loops[0], p.factors[0], p.results[0], &reason);
      break;
    case PrimitiveKind::Scan: out = scan(program, p.stage, p.loops[0], p.factors[0], p.results[0], &reason); break;
    case PrimitiveKind::ComputeAt: out = compute_at(program, p.stage, p.consumer, p.loops[0], &reason); break;
    case PrimitiveKind::CacheWrite: out = cache_write(program, p.stage, p.loops[0], p.memory, &reason); break;
    case PrimitiveKind::CacheRead:
      out = cache_read(program, p.stage, p.loops[0], p.buffer, p.memory, p.results[0], &reason);
      break;
    case PrimitiveKind::Pad: out = pad(program, p.stage, p.buffer, p.factors[0], &reason); break;
    case PrimitiveKind::Transpose: out = transpose(program, p.stage, p.buffer, &reason); break;
    case PrimitiveKind::Prefetch: out = prefetch(program, p.stage, p.buffer, &reason); break;
    case PrimitiveKind::AsyncCopy: out = async_copy(program, p.stage, p.loops[0], p.factors[0], &reason); break;
  }
  if (!out) {
    error_at(p.loc, target_of(p) + ": " + reason);
  }
  return *out;
}

}  // namespace ks
