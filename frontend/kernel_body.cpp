// The launch plan of a kernel body. Grammar, inside `/* ksmith plan ... */`:
//
//   plan    := {scratch | launch}
//   scratch := 'scratch' NAME ':' TYPE '[' expr {',' expr} ']'
//   launch  := 'launch' NAME 'global' extents 'local' extents '(' [NAME {',' NAME}] ')'
//   extents := '[' expr [',' expr [',' expr]] ']'
//
// expr is the DSL's, evaluated as a size (parse_expression, size_value). The plan
// is tokenized from a copy of the body with everything outside it blanked, so that
// every location is the body's own line and column.
#include "frontend/kernel_body.h"

#include <climits>
#include <map>
#include <set>

#include "frontend/elaborate.h"
#include "frontend/parser.h"
#include "ir/lexer.h"
#include "ir/types.h"

namespace ks::frontend {

namespace {

constexpr const char *kPlanWord = "ksmith plan";

// Where a plan comment opens: "/*", blanks, then "ksmith plan" and a word break.
size_t find_plan(const std::string &text, size_t from) {
  for (size_t at = text.find("/*", from); at != std::string::npos; at = text.find("/*", at + 2)) {
    size_t word = text.find_first_not_of(" \t\r\n", at + 2);
    if (word == std::string::npos || text.compare(word, std::char_traits<char>::length(kPlanWord), kPlanWord) != 0)
      continue;
    size_t after = word + std::char_traits<char>::length(kPlanWord);
    if (after < text.size() && (std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_')) continue;
    return at;
  }
  return std::string::npos;
}

SourceLoc location(const std::shared_ptr<const SourceFile> &file, size_t offset) {
  SourceLoc loc;
  loc.file = file;
  loc.line = 1;
  loc.column = 1;
  for (size_t i = 0; i < offset && i < file->text.size(); ++i) {
    if (file->text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

void repoint(AstExpr *e, const std::shared_ptr<const SourceFile> &file) {
  e->loc.file = file;
  for (AstExprPtr &arg : e->args) repoint(arg.get(), file);
  if (e->pad) repoint(e->pad.get(), file);
}

void repoint(LaunchPlanText *plan, const std::shared_ptr<const SourceFile> &file) {
  for (PlanScratch &s : plan->scratch) {
    s.loc.file = s.dtype_loc.file = file;
    for (AstExprPtr &e : s.shape) repoint(e.get(), file);
  }
  for (PlanLaunch &l : plan->launches) {
    l.loc.file = file;
    for (AstExprPtr &e : l.global) repoint(e.get(), file);
    for (AstExprPtr &e : l.local) repoint(e.get(), file);
    for (auto &arg : l.args) arg.second.file = file;
  }
}

class PlanParser {
 public:
  explicit PlanParser(TokenStream ts) : ts_(std::move(ts)) {}

  void parse(LaunchPlanText *plan) {
    while (!ts_.at_end()) {
      if (ts_.peek().is("scratch")) {
        plan->scratch.push_back(scratch());
      } else if (ts_.peek().is("launch")) {
        plan->launches.push_back(launch());
      } else {
        ts_.fail("expected 'scratch' or 'launch' in the plan, found " + TokenStream::describe(ts_.peek()));
      }
    }
  }

 private:
  TokenStream ts_;

  PlanScratch scratch() {
    ts_.next();
    PlanScratch s;
    s.loc = ts_.peek().loc;
    s.name = ts_.expect_identifier("the scratch buffer's name").text;
    ts_.expect(":", "after the scratch buffer's name");
    s.dtype_loc = ts_.peek().loc;
    s.dtype = ts_.expect_identifier("a type (f32, i32, i64)").text;
    s.shape = expressions("the scratch buffer's shape", 8);
    return s;
  }

  // `[expr, ...]`: one to `most` of them.
  std::vector<AstExprPtr> expressions(const std::string &what, size_t most) {
    ts_.expect("[", ("to open " + what).c_str());
    std::vector<AstExprPtr> out;
    ts_.comma_list("]", [&] {
      if (out.size() == most) ts_.fail(what + ": at most " + std::to_string(most) + " dimensions");
      out.push_back(parse_expression(ts_));
    });
    if (out.empty()) ts_.fail(what + ": at least one dimension");
    ts_.expect("]", ("to close " + what).c_str());
    return out;
  }

  std::vector<AstExprPtr> extents(const char *word) {
    ts_.expect(word, "in a launch (launch KERNEL global [..] local [..] (ARGS))");
    return expressions(std::string("the ") + word + " sizes", 3);
  }

  PlanLaunch launch() {
    ts_.next();
    PlanLaunch l;
    l.loc = ts_.peek().loc;
    l.kernel = ts_.expect_identifier("the kernel's name").text;
    l.global = extents("global");
    SourceLoc local_loc = ts_.peek().loc;
    l.local = extents("local");
    if (l.local.size() != l.global.size())
      error_at(local_loc, "kernel " + l.kernel + " has " + std::to_string(l.global.size()) + " global and " +
                              std::to_string(l.local.size()) + " local dimensions; give both the same count");
    ts_.expect("(", "to open the kernel's arguments");
    ts_.comma_list(")", [&] {
      const Token &t = ts_.expect_identifier("an argument: a tensor of the spec, a scratch buffer or a size");
      l.args.emplace_back(t.text, t.loc);
    });
    ts_.expect(")", "to close the kernel's arguments");
    return l;
  }
};

}  // namespace

KernelBody parse_kernel_body(const std::shared_ptr<const SourceFile> &file) {
  KernelBody body;
  body.file = file;
  const std::string &text = file->text;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    error_at(SourceLoc{file, 1, 1}, "the kernel body is empty");
  const size_t open = find_plan(text, 0);
  if (open == std::string::npos) return body;
  const size_t start = text.find(kPlanWord, open) + std::char_traits<char>::length(kPlanWord);
  const size_t close = text.find("*/", start);
  if (close == std::string::npos) error_at(location(file, open), "the plan's comment is never closed ('*/')");
  if (size_t again = find_plan(text, close); again != std::string::npos)
    error_at(location(file, again), "a second plan; a kernel body has one");
  // The plan alone, at its own lines and columns.
  auto blanked = std::make_shared<SourceFile>(*file);
  for (size_t i = 0; i < blanked->text.size(); ++i)
    if ((i < start || i >= close) && blanked->text[i] != '\n') blanked->text[i] = ' ';
  LaunchPlanText plan;
  plan.loc = location(file, open);
  PlanParser(TokenStream(tokenize(blanked))).parse(&plan);
  if (plan.launches.empty())
    error_at(plan.loc, "the plan launches no kernel; add 'launch KERNEL global [..] local [..] (ARGS)'");
  // Later errors (resolve_plan's) show the body's own lines, not the blanked copy's.
  repoint(&plan, file);
  body.plan = std::move(plan);
  return body;
}

ResolvedPlan resolve_plan(const LaunchPlanText &plan, const Graph &graph) {
  std::map<std::string, int64_t> sizes;
  std::string names;
  for (const SizeBinding &s : graph.sizes) {
    sizes[s.name] = s.value;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  const std::string hint = "; sizes are " + (names.empty() ? std::string("none") : names);
  ResolvedPlan out;
  std::map<std::string, size_t> scratch;
  for (const PlanScratch &s : plan.scratch) {
    if (sizes.count(s.name)) error_at(s.loc, "scratch buffer '" + s.name + "' has the name of a size");
    if (graph.find_tensor(s.name))
      error_at(s.loc, "scratch buffer '" + s.name + "' has the name of a tensor of the spec");
    if (scratch.count(s.name)) error_at(s.loc, "scratch buffer '" + s.name + "' is declared twice");
    TensorDecl t;
    t.name = s.name;
    t.role = TensorRole::Temp;
    auto type = parse_dtype(s.dtype);
    if (!type || *type == DType::Bool || *type == DType::F64 || is_half(*type))
      error_at(s.dtype_loc, "unknown type '" + s.dtype + "'; a scratch buffer's types are f32, i32, i64");
    t.type = *type;
    int64_t elements = 1;
    for (const AstExprPtr &e : s.shape) {
      int64_t extent = size_value(*e, sizes, hint);
      if (extent < 1)
        error_at(e->loc,
                 "a dimension of '" + s.name + "' is " + std::to_string(extent) + "; dimensions must be at least 1");
      if (__builtin_mul_overflow(elements, extent, &elements) || elements > (int64_t{1} << 40))
        error_at(e->loc, "'" + s.name + "' has more than 2^40 elements");
      t.shape.push_back(extent);
    }
    scratch[s.name] = out.scratch.size();
    out.scratch.push_back(t);
  }
  std::set<std::string> given;  // tensors passed to some launch
  for (const PlanLaunch &l : plan.launches) {
    ResolvedLaunch r;
    r.kernel = l.kernel;
    r.dims = static_cast<int>(l.global.size());
    for (int d = 0; d < r.dims; ++d) {
      const char *axis = d == 0 ? "x" : d == 1 ? "y" : "z";
      int64_t local = size_value(*l.local[static_cast<size_t>(d)], sizes, hint);
      int64_t global = size_value(*l.global[static_cast<size_t>(d)], sizes, hint);
      if (local < 1 || local > 1024)
        error_at(l.local[static_cast<size_t>(d)]->loc, "local size " + std::string(axis) + " of kernel " + l.kernel +
                                                           " is " + std::to_string(local) + "; it must be 1 to 1024");
      if (global < 1 || global > (int64_t{1} << 40))
        error_at(l.global[static_cast<size_t>(d)]->loc, "global size " + std::string(axis) + " of kernel " + l.kernel +
                                                            " is " + std::to_string(global) + "; it must be 1 to 2^40");
      r.local[static_cast<size_t>(d)] = local;
      r.global[static_cast<size_t>(d)] = (global + local - 1) / local * local;
    }
    for (const auto &[name, loc] : l.args) {
      ResolvedArg a;
      a.name = name;
      if (scratch.count(name)) {
        a.kind = ResolvedArg::Kind::Scratch;
      } else if (const TensorDecl *t = graph.find_tensor(name)) {
        if (t->role == TensorRole::Temp)
          error_at(loc, "'" + name +
                            "' is an intermediate of the spec, which a kernel body does not get; declare a scratch "
                            "buffer for it");
        a.kind = ResolvedArg::Kind::Tensor;
        given.insert(name);
      } else if (auto it = sizes.find(name); it != sizes.end()) {
        if (it->second > INT_MAX)
          error_at(loc, "size " + name + " is " + std::to_string(it->second) + ", past a 32-bit int argument");
        a.kind = ResolvedArg::Kind::Size;
        a.value = it->second;
      } else {
        std::string tensors;
        for (const TensorDecl &t : graph.tensors)
          if (t.role != TensorRole::Temp) tensors += (tensors.empty() ? "" : ", ") + t.name;
        error_at(loc, "'" + name + "' is neither a tensor of the spec (" + tensors + "), a scratch buffer nor a size" +
                          hint);
      }
      r.args.push_back(a);
    }
    out.launches.push_back(r);
  }
  for (const TensorDecl &t : graph.tensors)
    if (t.role == TensorRole::Output && !given.count(t.name))
      error_at(plan.loc, "output '" + t.name + "' is passed to no kernel of the plan, so nothing writes it");
  return out;
}

}  // namespace ks::frontend
