// Recursive-descent parser of the DSL. Grammar:
//
//   spec      := 'kernel' NAME '(' [tensor {',' tensor}] ')' '->' outputs
//                {('where' | 'check') size {',' size} | 'require' expr {',' expr}
//                 | 'const' constant {',' constant}}
//                '{' {statement} '}'
//   outputs   := tensor | '(' tensor {',' tensor} ')'
//   tensor    := NAME ':' TYPE '[' [expr {',' expr}] ']' ['in' expr '..' expr]
//   size      := NAME '=' expr
//   constant  := NAME '=' ['-'] NUMBER
//   statement := NAME '[' [ivar {',' ivar}] ']' '=' [REDUCE '(' rvar {',' rvar} ')'] expr
//   ivar      := NAME [':' expr]
//   rvar      := NAME [':' expr ['..' expr]]      (a reduction's variable; a range's bounds
//                                                  may name the definition's indices)
//   expr      := C-like precedence: || && (== !=) (< <= > >=) (+ -) (* / %) unary primary
//   primary   := NUMBER | NAME | NAME '(' args ')' | NAME '[' args ']' ['else' expr] | '(' expr ')'
//
// `min(...)`/`max(...)` right after '=' is a reduction when every name in the
// parentheses is new (not an index of the left side, a size or a tensor); otherwise
// it is the two-argument function.
#include "frontend/parser.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/ir.h"
#include "ir/lexer.h"

namespace ks::frontend {

namespace {

// Deeper expressions are refused: every later stage walks them recursively.
constexpr int kMaxExpressionDepth = 256;

class Parser {
 public:
  explicit Parser(const std::shared_ptr<const SourceFile> &file) : file_(file), own_(tokenize(file)), ts_(own_) {}
  // Over another parser's tokens (a kernel body's plan): expressions only.
  explicit Parser(TokenStream &ts) : own_({}), ts_(ts) {}

  Spec spec() {
    Spec s;
    s.file = file_;
    if (ts_.at_end()) ts_.fail("empty spec: expected 'kernel'");
    s.loc = ts_.expect("kernel", "at the start of a spec").loc;
    // The kernel's name never appears in an expression, so it may be a builtin's.
    s.name = ts_.expect_identifier("the kernel's name").text;
    ts_.expect("(", "after the kernel's name");
    ts_.comma_list(
        ")", [&] { s.inputs.push_back(tensor()); }, "parameters");
    ts_.expect(")", "after the parameters");
    ts_.expect("->", "before the outputs");
    if (ts_.accept("(")) {
      do s.outputs.push_back(tensor());
      while (ts_.accept(","));
      ts_.expect(")", "after the outputs");
    } else {
      s.outputs.push_back(tensor());
    }
    for (const AstTensor &t : s.inputs) known_.insert(t.name);
    for (const AstTensor &t : s.outputs) known_.insert(t.name);
    while (ts_.peek().is("where") || ts_.peek().is("check") || ts_.peek().is("require") || ts_.peek().is("const")) {
      if (ts_.accept("const")) {
        do s.constants.push_back(constant());
        while (ts_.accept(","));
        continue;
      }
      if (ts_.accept("require")) {
        do s.requirements.push_back(expr());
        while (ts_.accept(","));
        continue;
      }
      bool is_check = ts_.next().is("check");
      do {
        AstSize size;
        size.loc = ts_.peek().loc;
        size.name = name("a size name");
        ts_.expect("=", "after the size's name");
        size.value = expr();
        if (ts_.peek().kind == TokenKind::Identifier && ts_.peek(1).is("="))
          ts_.fail("expected ',' between sizes before " + TokenStream::describe(ts_.peek()));
        known_.insert(size.name);
        (is_check ? s.check_sizes : s.sizes).push_back(std::move(size));
      } while (ts_.accept(","));
    }
    ts_.expect("{", "to open the kernel's body");
    while (!ts_.peek().is("}")) {
      if (ts_.at_end()) ts_.fail("expected '}' to close the kernel's body");
      s.statements.push_back(statement());
    }
    ts_.next();
    if (!ts_.at_end()) ts_.fail("unexpected " + TokenStream::describe(ts_.peek()) + " after the kernel's body");
    return s;
  }

  AstExprPtr expression() { return expr(); }

 private:
  std::shared_ptr<const SourceFile> file_;
  TokenStream own_;
  TokenStream &ts_;
  std::set<std::string> known_;  // tensors and sizes, for the reduction rule

  std::string name(const char *what) {
    const Token &t = ts_.expect_identifier(what);
    if (is_reserved_word(t.text)) error_at(t.loc, "'" + t.text + "' is a reserved word and cannot be used as a name");
    return t.text;
  }

  AstTensor tensor() {
    AstTensor t;
    t.loc = ts_.peek().loc;
    t.name = name("a tensor name");
    ts_.expect(":", "after the tensor's name");
    t.dtype_loc = ts_.peek().loc;
    t.dtype = ts_.expect_identifier("a type (f32, f16, bf16, i32, i64)").text;
    ts_.expect("[", "to open the tensor's shape");
    ts_.comma_list(
        "]", [&] { t.shape.push_back(expr()); }, "dimensions");
    ts_.expect("]", "to close the tensor's shape");
    if (ts_.accept("in")) {
      t.range_lo = expr();
      ts_.expect("..", "in the value range");
      t.range_hi = expr();
    }
    return t;
  }

  AstConstant constant() {
    AstConstant c;
    c.loc = ts_.peek().loc;
    c.name = name("a constant's name");
    ts_.expect("=", "after the constant's name");
    bool negative = ts_.accept("-");
    const Token &t = ts_.peek();
    if (t.kind != TokenKind::Float && t.kind != TokenKind::Integer)
      ts_.fail("a constant's value is a number (1e-5, 0.1, -2.0), found " + TokenStream::describe(t));
    c.value = std::strtod(t.text.c_str(), nullptr);
    if (!std::isfinite(c.value)) ts_.fail("constant " + t.text + " is not a finite number");
    if (negative) c.value = -c.value;
    ts_.next();
    known_.insert(c.name);
    return c;
  }

  AstIndexVar index_var(bool reduction = false) {
    AstIndexVar v;
    v.loc = ts_.peek().loc;
    v.name = name("an index variable");
    if (ts_.accept(":")) v.extent = expr();
    if (v.extent && ts_.peek().is("..")) {
      if (!reduction) ts_.fail("only a reduction's variable takes a range (k: LO..HI); an index takes an extent");
      ts_.next();
      v.lo = std::move(v.extent);
      v.hi = expr();
    }
    return v;
  }

  // Whether the tokens after '=' open a reduction (see the rule at the top).
  bool starts_reduction(const std::set<std::string> &lhs_vars) const {
    const Token &op = ts_.peek();
    if (op.kind != TokenKind::Identifier || !ts_.peek(1).is("(")) return false;
    bool always = op.is("sum") || op.is("prod") || op.is("argmax") || op.is("argmin") || op.is("logsumexp");
    if (always) return true;
    if (!op.is("max") && !op.is("min")) return false;
    for (int i = 2;; i += 2) {
      const Token &v = ts_.peek(i);
      if (v.kind != TokenKind::Identifier || lhs_vars.count(v.text) || known_.count(v.text)) return false;
      const Token &after = ts_.peek(i + 1);
      if (after.is(":")) return true;  // an extent or range annotation only appears in a reduction
      if (after.is(")")) return true;
      if (!after.is(",")) return false;
    }
  }

  AstStatement statement() {
    AstStatement s;
    s.loc = ts_.peek().loc;
    s.tensor = name("a tensor to define");
    ts_.expect("[", "after the defined tensor's name");
    std::set<std::string> lhs_vars;
    ts_.comma_list(
        "]",
        [&] {
          s.indices.push_back(index_var());
          lhs_vars.insert(s.indices.back().name);
        },
        "indices");
    ts_.expect("]", "to close the defined tensor's indices");
    ts_.expect("=", "in a definition");
    if (starts_reduction(lhs_vars)) {
      s.reduce_loc = ts_.peek().loc;
      s.reduce = ts_.next().text;
      ts_.expect("(");
      do s.reduce_vars.push_back(index_var(true));
      while (ts_.accept(","));
      ts_.expect(")", "to close the reduction's variables");
    }
    s.body = expr();
    // Definitions are one per line: more on this one is a missing operator or
    // separator inside it, said here rather than as a strange next definition.
    if (!ts_.peek().is("}") && !ts_.at_end() && !ts_.on_new_line())
      ts_.fail("unexpected " + TokenStream::describe(ts_.peek()) + " after the expression defining '" + s.tensor +
               "'; is an operator missing? (each definition starts on a new line)");
    return s;
  }

  int parentheses_ = 0, unary_depth_ = 0;

  static std::string too_deep() {
    return "expression nested too deeply (more than " + std::to_string(kMaxExpressionDepth) +
           " levels); split it into several statements";
  }

  // Records the node's depth; refuses one nested past the limit.
  AstExprPtr finish(AstExprPtr node) {
    for (const AstExprPtr &child : node->args) node->depth = std::max(node->depth, child->depth + 1);
    if (node->pad) node->depth = std::max(node->depth, node->pad->depth + 1);
    if (node->depth > kMaxExpressionDepth) error_at(node->loc, too_deep());
    return node;
  }

  static int precedence(const Token &t) {
    if (t.kind != TokenKind::Punct) return 0;
    auto op = parse_infix_op(t.text);
    return op ? infix_precedence(*op) : 0;
  }

  AstExprPtr expr(int min_precedence = 1) {
    AstExprPtr lhs = unary();
    for (;;) {
      int p = precedence(ts_.peek());
      if (p == 0 || p < min_precedence) return lhs;
      auto node = std::make_unique<AstExpr>();
      node->kind = AstExpr::Kind::Binary;
      node->loc = ts_.peek().loc;
      node->text = ts_.next().text;
      node->args.push_back(std::move(lhs));
      node->args.push_back(expr(p + 1));
      lhs = finish(std::move(node));
    }
  }

  AstExprPtr unary() {
    if (ts_.peek().is("-") || ts_.peek().is("!")) {
      if (++unary_depth_ > kMaxExpressionDepth) ts_.fail(too_deep());
      auto node = std::make_unique<AstExpr>();
      node->kind = AstExpr::Kind::Unary;
      node->loc = ts_.peek().loc;
      node->text = ts_.next().text;
      node->args.push_back(unary());
      --unary_depth_;
      return finish(std::move(node));
    }
    return primary();
  }

  std::vector<AstExprPtr> list(const char *open, const char *close, const char *items_are, const char *context) {
    std::vector<AstExprPtr> items;
    ts_.expect(open);
    ts_.comma_list(
        close, [&] { items.push_back(expr()); }, items_are);
    ts_.expect(close, context);
    return items;
  }

  // A reduction is a definition's whole right side; one written inside an
  // expression would otherwise parse as a call and fail later, somewhere else.
  [[noreturn]] void reduction_inside(const Token &t) {
    error_at(t.loc, "'" + t.text +
                        "(...)' as a reduction must come right after '=', not inside an expression; define it "
                        "as a tensor of its own (t[...] = " +
                        t.text + "(k) ...) and use that");
  }

  AstExprPtr primary() {
    const Token &t = ts_.peek();
    auto node = std::make_unique<AstExpr>();
    node->loc = t.loc;
    if (t.kind == TokenKind::Integer) {
      node->kind = AstExpr::Kind::Int;
      try {
        node->int_value = std::stoll(t.text);
      } catch (const std::exception &) {
        ts_.fail("integer " + t.text + " is too large");
      }
      ts_.next();
      return node;
    }
    if (t.kind == TokenKind::Float) {
      node->kind = AstExpr::Kind::Float;
      node->float_value = std::strtod(t.text.c_str(), nullptr);
      ts_.next();
      return node;
    }
    if (t.is("(")) {
      ts_.next();
      if (++parentheses_ > kMaxExpressionDepth) error_at(t.loc, too_deep());
      AstExprPtr inner = expr();
      --parentheses_;
      ts_.expect(")", "to close the parenthesis");
      return inner;
    }
    if (t.kind != TokenKind::Identifier) ts_.fail("expected an expression, found " + TokenStream::describe(t));
    const Token &callee = ts_.next();
    node->text = callee.text;
    if (ts_.peek().is("(")) {
      bool reduction_word = node->text == "sum" || node->text == "prod" || node->text == "argmax" ||
                            node->text == "argmin" || node->text == "logsumexp";
      if (reduction_word) reduction_inside(callee);
      node->kind = AstExpr::Kind::Call;
      node->args = list("(", ")", "arguments", "to close the call's arguments");
      // `max(k) x[i, k]` inside an expression: a one-name call followed by an operand.
      bool min_max = node->text == "min" || node->text == "max";
      if (min_max && node->args.size() == 1 && node->args[0]->kind == AstExpr::Kind::Name && !ts_.on_new_line() &&
          (ts_.peek().kind == TokenKind::Identifier || ts_.peek().is("(")))
        reduction_inside(callee);
    } else if (ts_.peek().is("[")) {
      node->kind = AstExpr::Kind::Access;
      node->args = list("[", "]", "indices", "to close the indices");
      if (ts_.accept("else")) node->pad = unary();
    } else {
      node->kind = AstExpr::Kind::Name;
    }
    return finish(std::move(node));
  }
};

}  // namespace

Spec parse_spec(const std::shared_ptr<const SourceFile> &file) { return Parser(file).spec(); }

AstExprPtr parse_expression(TokenStream &ts) { return Parser(ts).expression(); }

Spec load_spec(const std::string &path, std::optional<DType> dtype) {
  std::shared_ptr<const SourceFile> file = read_source_file(path, "spec");
  if (dtype) file = std::make_shared<SourceFile>(SourceFile{path, with_dtype(file, *dtype)});
  return parse_spec(file);
}

std::string with_dtype(const std::shared_ptr<const SourceFile> &file, DType dtype) {
  const Spec spec = parse_spec(file);
  // Each declaration's offset in the text, from its line and column (1-based).
  std::vector<size_t> line_starts = {0};
  for (size_t i = 0; i < file->text.size(); ++i)
    if (file->text[i] == '\n') line_starts.push_back(i + 1);
  std::vector<size_t> offsets;
  for (const std::vector<AstTensor> *tensors : {&spec.inputs, &spec.outputs})
    for (const AstTensor &t : *tensors)
      if (t.dtype == "f32")
        offsets.push_back(line_starts.at(static_cast<size_t>(t.dtype_loc.line - 1)) +
                          static_cast<size_t>(t.dtype_loc.column - 1));
  std::string text = file->text;
  std::sort(offsets.rbegin(), offsets.rend());  // from the end: earlier offsets stay true
  for (size_t at : offsets) {
    if (text.compare(at, 3, "f32") != 0) throw InternalError("a declaration's type is not where the parser says");
    text.replace(at, 3, dtype_name(dtype));
  }
  return text;
}

std::optional<DType> parse_spec_dtype(const std::string &text) {
  if (text.empty()) return std::nullopt;
  std::optional<DType> type = parse_dtype(text);
  if (!type || !is_float(value_type(*type)) || *type == DType::F64)
    throw UserError("error: --dtype " + text + ": the types a suite runs at are f32, f16 and bf16");
  return type;
}

}  // namespace ks::frontend
