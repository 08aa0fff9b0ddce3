// The schedule text format, parsed and printed from each primitive's arguments in the
// registry (passes/primitive_info.h), and the dispatch of each step to its applier.
#include "passes/schedule.h"

#include "ir/lexer.h"
#include "passes/primitive_info.h"

namespace ks {

const char *primitive_name(PrimitiveKind kind) {
  switch (kind) {
// clang-format off
#define PRIMITIVE(Kind, name) case PrimitiveKind::Kind: return #name;
#include "passes/primitives.def"
    // clang-format on
  }
  return "?";
}

namespace {

// "split, fuse, ..., async_copy"
std::string primitive_names() {
  std::string out;
  for (PrimitiveKind k : all_primitive_kinds()) out += (out.empty() ? "" : ", ") + std::string(primitive_name(k));
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

  static bool is_keyword(const Token &t) { return t.text == "rewrite" || parse_primitive_kind(t.text); }

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
    std::optional<PrimitiveKind> kind = parse_primitive_kind(head.text);
    if (!kind) error_at(head.loc, "unknown primitive '" + head.text + "'; primitives are " + primitive_names());
    p.kind = *kind;
    for (const PrimitiveArg &arg : primitive_info(p.kind).args) argument(arg, head, p);
    return p;
  }

  // Reads one argument as written into its field of p.
  void argument(const PrimitiveArg &arg, const Token &head, Primitive &p) {
    switch (arg.kind) {
      case ArgKind::Stage: p.stage = name(arg.what ? arg.what : "a stage name"); break;
      case ArgKind::StageLoop: loop_ref(p); break;
      case ArgKind::StageBuffer:
        p.stage = name("a stage name");
        ts_.expect(".", "between the stage and the buffer (stage.buffer)");
        p.buffer = name("a local buffer's name");
        break;
      case ArgKind::ConsumerLoop:
        p.consumer = name("the consumer stage");
        ts_.expect(".", "between the consumer stage and its loop (stage.loop)");
        p.loops.push_back(name("a loop name"));
        break;
      case ArgKind::Loop: p.loops.push_back(name(arg.what)); break;
      case ArgKind::Loops:
        loop_list(p);
        if (static_cast<int>(p.loops.size()) < arg.least)
          error_at(head.loc, head.text + " needs a stage and " + arg.what);
        break;
      case ArgKind::Buffer: p.buffer = name(arg.what); break;
      case ArgKind::Factor: p.factors.push_back(factor()); break;
      case ArgKind::Memory: p.memory = memory(); break;
      case ArgKind::Binding: p.binding = binding(); break;
      case ArgKind::Arrow: ts_.expect("->", arg.what); break;
      case ArgKind::Result: p.results.push_back(name(arg.what)); break;
    }
  }

  ForKind binding() {
    const Token &axis = ts_.expect_identifier("group.x/y/z or local.x/y/z");
    std::string text = axis.text;
    if (ts_.accept(".")) text += "." + name("x, y or z");
    auto parsed = parse_for_kind(text);
    if (!parsed || (!is_group(*parsed) && !is_local(*parsed)))
      error_at(axis.loc,
               "unknown binding '" + text + "'; bind to group.x, group.y, group.z, local.x, local.y or local.z");
    return *parsed;
  }
};

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// Whether an argument names what the step acts on (`cache_read c.ko a`), as the
// head of a refusal says it.
bool names_target(ArgKind kind) {
  return kind == ArgKind::Stage || kind == ArgKind::StageLoop || kind == ArgKind::StageBuffer ||
         kind == ArgKind::ConsumerLoop || kind == ArgKind::Buffer;
}

// The step as written; only_target: up to its first argument that is not its target
// (`split y.q`, `reorder y`, `cache_read c.ko a`).
std::string printed(const Primitive &p, bool only_target) {
  std::string out = primitive_name(p.kind);
  size_t loop = 0, factor = 0, result = 0;
  for (const PrimitiveArg &arg : primitive_info(p.kind).args) {
    if (only_target && !names_target(arg.kind)) break;
    out += " ";
    switch (arg.kind) {
      case ArgKind::Stage: out += p.stage; break;
      case ArgKind::StageLoop: out += p.stage + "." + p.loops.at(loop++); break;
      case ArgKind::StageBuffer: out += p.stage + "." + p.buffer; break;
      case ArgKind::ConsumerLoop: out += p.consumer + "." + p.loops.at(loop++); break;
      case ArgKind::Loop: out += p.loops.at(loop++); break;
      case ArgKind::Loops:
        out += join(std::vector<std::string>(p.loops.begin() + static_cast<long>(loop), p.loops.end()));
        loop = p.loops.size();
        break;
      case ArgKind::Buffer: out += p.buffer; break;
      case ArgKind::Factor: out += std::to_string(p.factors.at(factor++)); break;
      case ArgKind::Memory: out += memory_scope_name(p.memory); break;
      case ArgKind::Binding: out += for_kind_name(p.binding); break;
      case ArgKind::Arrow: out += "->"; break;
      case ArgKind::Result: out += p.results.at(result++); break;
    }
  }
  return out;
}

}  // namespace

Schedule parse_schedule(const std::shared_ptr<const SourceFile> &file) { return ScheduleParser(file).schedule(); }

Schedule load_schedule(const std::string &path) { return parse_schedule(read_source_file(path, "schedule")); }

std::string print_primitive(const Primitive &p) { return printed(p, false); }

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
  std::optional<Program> out = primitive_info(p.kind).apply(program, p, &reason);
  if (!out) error_at(p.loc, printed(p, true) + ": " + reason);
  return *out;
}

}  // namespace ks
