// Recursive-descent parser of printed Graph IR and Loop IR. Names are resolved as
// they are read (variables to their types, buffers to their declarations), and
// every node goes through its checked make(), so a parsed IR is well typed.
#include "ir/parser.h"

#include <cmath>
#include <functional>
#include <map>

#include "ir/lexer.h"

namespace ks {

namespace {

// The precedence of the infix operator t is, or 0 when it is none.
int binary_precedence(const Token &t, BinaryOp *op) {
  if (t.kind != TokenKind::Punct) return 0;
  auto parsed = parse_infix_op(t.text);
  if (!parsed) return 0;
  *op = *parsed;
  return infix_precedence(*op);
}

class IRParser {
 public:
  explicit IRParser(const std::shared_ptr<const SourceFile> &file) : ts_(tokenize(file)) {}

  Graph graph() {
    Graph g;
    ts_.expect("graph", "at the start of a Graph IR text");
    g.name = ts_.expect_identifier("the graph's name").text;
    if (ts_.accept("sizes")) {
      do {
        SizeBinding size;
        size.name = ts_.expect_identifier("a size name").text;
        ts_.expect("=");
        size.value = integer();
        g.sizes.push_back(size);
      } while (ts_.accept(","));
    }
    if (ts_.accept("constants")) {
      do {
        ConstantBinding constant;
        constant.name = ts_.expect_identifier("a constant's name").text;
        ts_.expect("=");
        constant.value = signed_number();
        g.constants.push_back(constant);
      } while (ts_.accept(","));
    }
    while (!ts_.at_end()) {
      if (is_decl_start()) {
        TensorDecl t = tensor_decl();
        declare_buffer(t);
        g.tensors.push_back(t);
      } else {
        g.stages.push_back(stage());
      }
    }
    return g;
  }

  Program program() {
    Program p;
    ts_.expect("program", "at the start of a Loop IR text");
    p.name = ts_.expect_identifier("the program's name").text;
    while (is_decl_start()) {
      TensorDecl t = tensor_decl();
      declare_buffer(t);
      p.buffers.push_back(t);
    }
    while (!ts_.at_end()) {
      ts_.expect("kernel", "or the end of the program");
      Kernel k;
      k.name = ts_.expect_identifier("a kernel name").text;
      ts_.expect("{");
      k.body = statements();
      ts_.expect("}");
      p.kernels.push_back(k);
    }
    return p;
  }

 private:
  TokenStream ts_;
  std::vector<std::pair<std::string, DType>> vars_;  // innermost last
  std::map<std::string, TensorDecl> buffers_;

  template <typename F>
  auto checked(const SourceLoc &loc, F &&make) -> decltype(make()) {
    try {
      return make();
    } catch (const InternalError &e) {
      error_at(loc, e.detail());
    }
  }

  bool is_decl_start() const {
    const Token &t = ts_.peek();
    return (t.is("input") || t.is("output") || t.is("temp")) && ts_.peek(1).kind == TokenKind::Identifier &&
           ts_.peek(2).is(":");
  }

  void declare_buffer(const TensorDecl &t) {
    if (buffers_.count(t.name)) ts_.fail("buffer '" + t.name + "' is declared twice");
    buffers_[t.name] = t;
  }

  int64_t integer() {
    bool negative = ts_.accept("-");
    const Token &t = ts_.peek();
    if (t.kind != TokenKind::Integer) ts_.fail("expected an integer, found " + TokenStream::describe(t));
    ts_.next();
    std::string digits = t.text;
    if (!digits.empty() && digits.back() == 'L') digits.pop_back();
    try {
      int64_t v = std::stoll(digits);
      return negative ? -v : v;
    } catch (const std::exception &) {
      error_at(t.loc, "integer " + t.text + " is out of range");
    }
  }

  double signed_number() {
    bool negative = ts_.accept("-");
    const Token &t = ts_.peek();
    double v;
    if (t.is("inf")) {
      v = INFINITY;
    } else if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float) {
      std::string digits = t.text;
      if (!digits.empty() && digits.back() == 'L') digits.pop_back();
      v = std::strtod(digits.c_str(), nullptr);
    } else {
      ts_.fail("expected a number, found " + TokenStream::describe(t));
    }
    ts_.next();
    return negative ? -v : v;
  }

  DType dtype() {
    const Token &t = ts_.expect_identifier("a type");
    auto type = parse_dtype(t.text);
    if (!type) error_at(t.loc, "unknown type '" + t.text + "'; types are f32, f16, bf16, i32, i64");
    return *type;
  }

  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    ts_.expect("[");
    if (!ts_.peek().is("]")) {
      do {
        SourceLoc loc = ts_.peek().loc;
        dims.push_back(integer());
        if (dims.back() < 1) error_at(loc, "a dimension must be at least 1");
      } while (ts_.accept(","));
    }
    ts_.expect("]");
    return dims;
  }

  TensorDecl tensor_decl() {
    TensorDecl t;
    const Token &role = ts_.next();
    t.role = role.is("input") ? TensorRole::Input : role.is("output") ? TensorRole::Output : TensorRole::Temp;
    t.name = ts_.expect_identifier("a tensor name").text;
    ts_.expect(":");
    t.type = dtype();
    if (t.type == DType::Bool) ts_.fail("a tensor cannot hold bool");
    t.shape = shape();
    if (ts_.accept("in")) {
      ValueRange range;
      range.lo = signed_number();
      ts_.expect("..");
      range.hi = signed_number();
      t.range = range;
    }
    return t;
  }

  const TensorDecl &buffer(const Token &name) {
    auto it = buffers_.find(name.text);
    if (it == buffers_.end()) error_at(name.loc, "unknown buffer '" + name.text + "'");
    return it->second;
  }

  std::optional<DType> lookup_var(const std::string &name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  }

  // ---- expressions ----
  Expr expr(int min_precedence = 1) {
    Expr lhs = unary();
    for (;;) {
      BinaryOp op;
      int p = binary_precedence(ts_.peek(), &op);
      if (p == 0 || p < min_precedence) return lhs;
      SourceLoc loc = ts_.next().loc;
      Expr rhs = expr(p + 1);
      lhs = checked(loc, [&] { return Binary::make(op, lhs, rhs); });
    }
  }

  // Nesting is bounded: later stages walk expressions recursively.
  int depth_ = 0;
  struct DepthGuard {
    IRParser &p;
    explicit DepthGuard(IRParser &parser) : p(parser) {
      if (++p.depth_ > 256) p.ts_.fail("expression nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  Expr unary() {
    DepthGuard guard(*this);
    const Token &t = ts_.peek();
    if (t.is("-")) {
      const Token &n = ts_.peek(1);
      if (n.kind == TokenKind::Integer || n.kind == TokenKind::Float || n.is("inf")) return number();
      ts_.next();
      Expr a = unary();
      return checked(t.loc, [&] { return Unary::make(UnaryOp::Neg, a); });
    }
    if (t.is("!")) {
      ts_.next();
      Expr a = unary();
      return checked(t.loc, [&] { return Unary::make(UnaryOp::Not, a); });
    }
    return primary();
  }

  Expr number() {
    SourceLoc loc = ts_.peek().loc;
    bool negative = ts_.peek().is("-");
    const Token &t = ts_.peek(negative ? 1 : 0);
    if (t.kind == TokenKind::Integer) {
      DType type = t.text.back() == 'L' ? DType::I64 : DType::I32;
      int64_t v = integer();
      return checked(loc, [&] { return IntImm::make(type, v); });
    }
    return FloatImm::make(DType::F32, signed_number());
  }

  // `open expr {',' expr} close`: call arguments and indices.
  std::vector<Expr> expr_list(const char *open, const char *close) {
    std::vector<Expr> list;
    ts_.expect(open);
    ts_.comma_list(close, [&] { list.push_back(expr()); });
    ts_.expect(close);
    return list;
  }

  Expr primary() {
    const Token &t = ts_.peek();
    if (t.kind == TokenKind::Integer || t.kind == TokenKind::Float || t.is("inf")) return number();
    if (t.is("nan")) {
      ts_.next();
      return FloatImm::make(DType::F32, NAN);
    }
    if (t.is("(")) {
      ts_.next();
      Expr e = expr();
      ts_.expect(")");
      return e;
    }
    if (t.kind != TokenKind::Identifier) ts_.fail("expected an expression, found " + TokenStream::describe(t));
    const Token name = ts_.next();
    if (ts_.peek().is("(")) {
      std::vector<Expr> args = expr_list("(", ")");
      auto need = [&](size_t n) {
        if (args.size() != n) error_at(name.loc, "'" + name.text + "' takes " + std::to_string(n) + " arguments");
      };
      if (name.text == "min" || name.text == "max" || name.text == "logaddexp") {
        need(2);
        BinaryOp op = name.text == "min" ? BinaryOp::Min : name.text == "max" ? BinaryOp::Max : BinaryOp::LogAddExp;
        return checked(name.loc, [&] { return Binary::make(op, args[0], args[1]); });
      }
      if (name.text == "select") {
        need(3);
        return checked(name.loc, [&] { return Select::make(args[0], args[1], args[2]); });
      }
      if (auto type = parse_dtype(name.text)) {
        need(1);
        if (is_half(*type)) return checked(name.loc, [&] { return Call::make(rounding_to(*type), args); });
        return checked(name.loc, [&] { return Cast::make(*type, args[0]); });
      }
      if (auto fn = find_builtin(name.text)) return checked(name.loc, [&] { return Call::make(*fn, args); });
      error_at(name.loc, "unknown function '" + name.text + "'");
    }
    if (ts_.peek().is("[")) {
      const TensorDecl &b = buffer(name);
      std::vector<Expr> indices = expr_list("[", "]");
      if (indices.size() != b.shape.size())
        error_at(name.loc, "buffer '" + name.text + "' has " + std::to_string(b.shape.size()) +
                               " dimensions, indexed with " + std::to_string(indices.size()));
      std::optional<double> pad;
      if (ts_.accept("else")) pad = signed_number();
      return checked(name.loc, [&] { return Load::make(b.type, b.name, indices, pad); });
    }
    auto type = lookup_var(name.text);
    if (!type) error_at(name.loc, "unknown variable '" + name.text + "'");
    return Var::make(*type, name.text);
  }

  // ---- Graph IR stages ----
  std::vector<IterVar> iter_vars() {
    std::vector<IterVar> list;
    if (ts_.peek().is("]") || ts_.peek().is(")")) return list;
    do {
      IterVar v;
      v.name = ts_.expect_identifier("a loop variable").text;
      ts_.expect(":");
      SourceLoc loc = ts_.peek().loc;
      v.extent = integer();
      if (v.extent < 1) error_at(loc, "an extent must be at least 1");
      list.push_back(v);
    } while (ts_.accept(","));
    return list;
  }

  Stage stage() {
    Stage s;
    const Token &name = ts_.expect_identifier("a tensor declaration or a stage");
    const TensorDecl &out = buffer(name);
    s.output = name.text;
    ts_.expect("[");
    s.spatial = iter_vars();
    ts_.expect("]");
    if (s.spatial.size() != out.shape.size())
      error_at(name.loc, "stage '" + name.text + "' has " + std::to_string(s.spatial.size()) + " variables for " +
                             std::to_string(out.shape.size()) + " dimensions");
    ts_.expect("=");
    size_t scope = vars_.size();
    for (const IterVar &v : s.spatial) vars_.push_back({v.name, index_type_for(v.extent)});
    const Token &head = ts_.peek();
    if (head.kind == TokenKind::Identifier && ts_.peek(1).is("(") && ts_.peek(2).kind == TokenKind::Identifier &&
        ts_.peek(3).is(":")) {
      auto op = parse_reduce_op(head.text);
      if (!op) error_at(head.loc, "unknown reduction '" + head.text + "'");
      ts_.next();
      ts_.expect("(");
      s.reduce = *op;
      s.reduce_vars = iter_vars();
      ts_.expect(")");
      for (const IterVar &v : s.reduce_vars) vars_.push_back({v.name, index_type_for(v.extent)});
    }
    s.body = expr();
    vars_.resize(scope);
    return s;
  }

  // ---- Loop IR statements ----
  // Parses statements up to the closing brace (not consumed). A `let` or
  // `allocate` without its own braces owns the rest of the block.
  Stmt statements() {
    std::vector<Stmt> list;
    while (!ts_.peek().is("}")) {
      if (ts_.at_end()) ts_.fail("expected '}' before the end of input");
      const Token &t = ts_.peek();
      if (t.is("let")) {
        ts_.next();
        std::string var = ts_.expect_identifier("a variable name").text;
        ts_.expect("=");
        Expr value = expr();
        vars_.push_back({var, value.type()});
        Stmt body = scoped_body();
        vars_.pop_back();
        list.push_back(checked(t.loc, [&] { return LetStmt::make(var, value, body); }));
        if (!braced_last_) break;
      } else if (t.is("allocate")) {
        ts_.next();
        TensorDecl local;
        local.name = ts_.expect_identifier("a buffer name").text;
        ts_.expect(":");
        const Token &type_token = ts_.peek();
        local.type = dtype();
        local.shape = shape();
        const Token &scope_name = ts_.expect_identifier("a memory scope");
        auto scope = parse_memory_scope(scope_name.text);
        if (!scope) error_at(scope_name.loc, "unknown memory scope '" + scope_name.text + "'");
        if (is_half(local.type) && *scope != MemoryScope::Local)
          error_at(type_token.loc, std::string("an allocation of ") + dtype_name(local.type) + " in " +
                                       scope_name.text +
                                       " memory: registers hold f32 values; only local memory keeps 16-bit storage");
        if (buffers_.count(local.name)) error_at(t.loc, "buffer '" + local.name + "' is declared twice");
        buffers_[local.name] = local;
        Stmt body = scoped_body();
        buffers_.erase(local.name);
        list.push_back(
            checked(t.loc, [&] { return Allocate::make(local.name, local.type, local.shape, *scope, body); }));
        if (!braced_last_) break;
      } else {
        list.push_back(statement());
      }
    }
    return Seq::make(std::move(list));
  }

  bool braced_last_ = false;

  Stmt scoped_body() {
    if (ts_.accept("{")) {
      Stmt body = statements();
      ts_.expect("}");
      braced_last_ = true;
      return body;
    }
    Stmt body = statements();
    braced_last_ = false;
    return body;
  }

  Stmt block_body() {
    ts_.expect("{");
    Stmt body = statements();
    ts_.expect("}");
    return body;
  }

  std::vector<Region> regions() {
    std::vector<Region> list;
    ts_.expect("(");
    if (!ts_.peek().is(")")) {
      do {
        const Token &name = ts_.expect_identifier("a buffer name");
        const TensorDecl &b = buffer(name);
        Region region;
        region.buffer = b.name;
        ts_.expect("[");
        if (!ts_.peek().is("]")) {
          do {
            Range range;
            range.min = expr();
            if (ts_.accept("+:")) range.extent = integer();
            region.ranges.push_back(range);
          } while (ts_.accept(","));
        }
        ts_.expect("]");
        if (region.ranges.size() != b.shape.size())
          error_at(name.loc, "region of '" + name.text + "' has the wrong number of dimensions");
        list.push_back(region);
      } while (ts_.accept(","));
    }
    ts_.expect(")");
    return list;
  }

  Stmt statement() {
    const Token t = ts_.peek();
    if (t.is("for")) {
      ts_.next();
      std::string var = ts_.expect_identifier("a loop variable").text;
      ts_.expect("in");
      SourceLoc zero = ts_.peek().loc;
      if (integer() != 0) error_at(zero, "loops start at 0");
      ts_.expect("..");
      int64_t extent = integer();
      ForKind kind = ForKind::Serial;
      if (!ts_.peek().is("{")) {
        const Token &k = ts_.expect_identifier("a loop kind");
        std::string name = k.text;
        if (ts_.accept(".")) name += "." + ts_.expect_identifier("x, y or z").text;
        auto parsed = parse_for_kind(name);
        if (!parsed) error_at(k.loc, "unknown loop kind '" + name + "'");
        kind = *parsed;
      }
      vars_.push_back({var, index_type_for(extent)});
      Stmt body = block_body();
      vars_.pop_back();
      return checked(t.loc, [&] { return For::make(var, extent, kind, body); });
    }
    if (t.is("block")) {
      ts_.next();
      std::string stage = ts_.expect_identifier("a stage name").text;
      ts_.expect("reads");
      std::vector<Region> reads = regions();
      ts_.expect("writes");
      std::vector<Region> writes = regions();
      Stmt body = block_body();
      return checked(t.loc, [&] { return Block::make(stage, reads, writes, body); });
    }
    if (t.is("barrier")) {
      ts_.next();
      const Token &scope_name = ts_.expect_identifier("a memory scope");
      auto scope = parse_memory_scope(scope_name.text);
      if (!scope) error_at(scope_name.loc, "unknown memory scope '" + scope_name.text + "'");
      int64_t wait_copies = -1;
      if (ts_.accept("after_copies")) wait_copies = integer();
      return checked(t.loc, [&] { return Barrier::make(*scope, wait_copies); });
    }
    if (t.is("async_copy")) {
      ts_.next();
      Stmt body = block_body();
      return checked(t.loc, [&] { return AsyncCopy::make(body); });
    }
    if (t.is("if")) {
      ts_.next();
      Expr condition = expr();
      Stmt then_case = block_body();
      Stmt else_case;
      if (ts_.accept("else")) else_case = block_body();
      return checked(t.loc, [&] { return IfThenElse::make(condition, then_case, else_case); });
    }
    if (t.kind == TokenKind::Identifier && ts_.peek(1).is("[")) {
      ts_.next();
      const TensorDecl &b = buffer(t);
      std::vector<Expr> indices = expr_list("[", "]");
      if (indices.size() != b.shape.size())
        error_at(t.loc, "buffer '" + t.text + "' has " + std::to_string(b.shape.size()) + " dimensions, indexed with " +
                            std::to_string(indices.size()));
      ts_.expect("=");
      Expr value = expr();
      if (value.type() != value_type(b.type))
        error_at(t.loc,
                 "store of " + std::string(dtype_name(value.type())) + " to " + t.text + " of " + dtype_name(b.type));
      return checked(t.loc, [&] { return Store::make(b.name, indices, value); });
    }
    ts_.fail("expected a statement, found " + TokenStream::describe(t));
  }
};

}  // namespace

Graph parse_graph(const std::shared_ptr<const SourceFile> &file) { return IRParser(file).graph(); }
Program parse_program(const std::shared_ptr<const SourceFile> &file) { return IRParser(file).program(); }

}  // namespace ks
