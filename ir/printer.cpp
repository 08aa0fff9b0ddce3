// Printers of expressions, statements, Graph IR and Loop IR.
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "ir/visitor.h"

namespace ks {

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

namespace {

std::string format_number(DType type, double value) {
  if (is_int(type)) return std::to_string(static_cast<int64_t>(value));
  return format_float(value);
}

constexpr int kUnaryPrecedence = 7;
constexpr int kPrimaryPrecedence = 8;

class Printer : public IRVisitorStrict {
 public:
  std::ostringstream out;
  int indent = 0;

  void expr(const Expr &e, int min_precedence = 0) {
    int p = precedence_of(e);
    if (p < min_precedence) {
      out << "(";
      dispatch(e);
      out << ")";
    } else {
      dispatch(e);
    }
  }

  // Prints the statements of a body. A let or allocate that is the last statement
  // owns the rest of the block and prints flat; one followed by others gets braces.
  void body(const Stmt &s) {
    if (const Seq *seq = s.as<Seq>()) {
      for (size_t i = 0; i < seq->stmts.size(); ++i) statement(seq->stmts[i], i + 1 == seq->stmts.size());
    } else {
      statement(s, true);
    }
  }

 private:
  static int precedence_of(const Expr &e) {
    if (const Binary *b = e.as<Binary>()) return infix_precedence(b->op);
    if (e.as<Unary>()) return kUnaryPrecedence;
    // A padded read is parenthesised as an operand: `(x[i - 1] else 0.0) * w[k]`.
    if (const Load *load = e.as<Load>(); load && load->pad) return 0;
    if (const IntImm *imm = e.as<IntImm>()) return imm->value < 0 ? kUnaryPrecedence : kPrimaryPrecedence;
    if (const FloatImm *imm = e.as<FloatImm>()) return std::signbit(imm->value) ? kUnaryPrecedence : kPrimaryPrecedence;
    return kPrimaryPrecedence;
  }

  void line_start() { out << std::string(static_cast<size_t>(indent) * 2, ' '); }

  void statement(const Stmt &s, bool last) {
    if (const LetStmt *let = s.as<LetStmt>()) {
      line_start();
      out << "let " << let->var << " = ";
      expr(let->value);
      scoped_body(let->body, last);
    } else if (const Allocate *alloc = s.as<Allocate>()) {
      line_start();
      out << "allocate " << alloc->buffer << ": " << dtype_name(alloc->type) << "[";
      for (size_t i = 0; i < alloc->shape.size(); ++i) out << (i ? ", " : "") << alloc->shape[i];
      out << "] " << memory_scope_name(alloc->scope);
      scoped_body(alloc->body, last);
    } else {
      dispatch(s);
    }
  }

  void scoped_body(const Stmt &b, bool last) {
    if (last) {
      out << "\n";
      body(b);
    } else {
      out << " {\n";
      ++indent;
      body(b);
      --indent;
      line_start();
      out << "}\n";
    }
  }

  void braced(const Stmt &b) {
    out << " {\n";
    ++indent;
    body(b);
    --indent;
    line_start();
    out << "}";
  }

  void indices(const std::vector<Expr> &list) {
    out << "[";
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out << ", ";
      expr(list[i]);
    }
    out << "]";
  }

  void regions(const char *label, const std::vector<Region> &list) {
    out << " " << label << "(";
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out << ", ";
      out << list[i].buffer << "[";
      for (size_t d = 0; d < list[i].ranges.size(); ++d) {
        if (d) out << ", ";
        expr(list[i].ranges[d].min);
        if (list[i].ranges[d].extent != 1) out << " +: " << list[i].ranges[d].extent;
      }
      out << "]";
    }
    out << ")";
  }

 protected:
  void visit(const IntImm *n) override { out << n->value << (n->type == DType::I64 ? "L" : ""); }
  void visit(const FloatImm *n) override { out << format_float(n->value); }
  void visit(const Var *n) override { out << n->name; }
  void visit(const Unary *n) override {
    out << (n->op == UnaryOp::Neg ? "-" : "!");
    // A literal operand keeps parentheses: `-2.0` alone is a negative literal.
    bool literal = n->a.as<IntImm>() || n->a.as<FloatImm>();
    expr(n->a, literal ? kPrimaryPrecedence + 1 : kUnaryPrecedence);
  }
  void visit(const Binary *n) override {
    if (n->op == BinaryOp::Min || n->op == BinaryOp::Max || n->op == BinaryOp::LogAddExp) {
      out << binary_op_symbol(n->op) << "(";
      expr(n->a);
      out << ", ";
      expr(n->b);
      out << ")";
      return;
    }
    int p = infix_precedence(n->op);
    expr(n->a, p);
    out << " " << binary_op_symbol(n->op) << " ";
    expr(n->b, p + 1);
  }
  void visit(const Call *n) override {
    out << builtin_info(n->fn).name << "(";
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (i) out << ", ";
      expr(n->args[i]);
    }
    out << ")";
  }
  void visit(const Cast *n) override {
    out << dtype_name(n->type) << "(";
    expr(n->value);
    out << ")";
  }
  void visit(const Select *n) override {
    out << "select(";
    expr(n->condition);
    out << ", ";
    expr(n->true_value);
    out << ", ";
    expr(n->false_value);
    out << ")";
  }
  void visit(const Load *n) override {
    out << n->buffer;
    indices(n->indices);
    if (n->pad) out << " else " << format_number(n->type, *n->pad);
  }
  void visit(const For *n) override {
    line_start();
    out << "for " << n->var << " in 0.." << n->extent;
    if (n->kind != ForKind::Serial) out << " " << for_kind_name(n->kind);
    braced(n->body);
    out << "\n";
  }
  void visit(const Block *n) override {
    line_start();
    out << "block " << n->stage;
    regions("reads", n->reads);
    regions("writes", n->writes);
    braced(n->body);
    out << "\n";
  }
  // Lets and allocations print through statement(), which knows whether they own
  // the rest of their block; dispatch never reaches them.
  void visit(const Allocate *) override { throw InternalError("allocate printed out of a body"); }
  void visit(const Barrier *n) override {
    line_start();
    out << "barrier " << memory_scope_name(n->scope);
    if (n->wait_copies >= 0) out << " after_copies " << n->wait_copies;
    out << "\n";
  }
  void visit(const AsyncCopy *n) override {
    line_start();
    out << "async_copy";
    braced(n->body);
    out << "\n";
  }
  void visit(const IfThenElse *n) override {
    line_start();
    out << "if ";
    expr(n->condition);
    braced(n->then_case);
    if (n->else_case.defined()) {
      out << " else";
      braced(n->else_case);
    }
    out << "\n";
  }
  void visit(const LetStmt *) override { throw InternalError("let printed out of a body"); }
  void visit(const Store *n) override {
    line_start();
    out << n->buffer;
    indices(n->indices);
    out << " = ";
    expr(n->value);
    out << "\n";
  }
  void visit(const Seq *n) override {
    for (size_t i = 0; i < n->stmts.size(); ++i) statement(n->stmts[i], i + 1 == n->stmts.size());
  }
};

}  // namespace

std::string print_expr(const Expr &e) {
  Printer p;
  p.expr(e);
  return p.out.str();
}

std::string print_stmt(const Stmt &s, int indent) {
  Printer p;
  p.indent = indent;
  p.body(s);
  return p.out.str();
}

std::string print_tensor_decl(const TensorDecl &t) {
  std::ostringstream out;
  out << tensor_role_name(t.role) << " " << t.name << ": " << dtype_name(t.type) << "[";
  for (size_t i = 0; i < t.shape.size(); ++i) out << (i ? ", " : "") << t.shape[i];
  out << "]";
  if (t.range) out << " in " << format_number(t.type, t.range->lo) << ".." << format_number(t.type, t.range->hi);
  return out.str();
}

std::string print_graph(const Graph &graph) {
  std::ostringstream out;
  out << "graph " << graph.name << "\n";
  if (!graph.sizes.empty()) {
    out << "sizes ";
    for (size_t i = 0; i < graph.sizes.size(); ++i)
      out << (i ? ", " : "") << graph.sizes[i].name << " = " << graph.sizes[i].value;
    out << "\n";
  }
  if (!graph.constants.empty()) {
    out << "constants ";
    for (size_t i = 0; i < graph.constants.size(); ++i)
      out << (i ? ", " : "") << graph.constants[i].name << " = " << format_float(graph.constants[i].value);
    out << "\n";
  }
  for (const TensorDecl &t : graph.tensors) out << print_tensor_decl(t) << "\n";
  for (const Stage &stage : graph.stages) {
    out << stage.output << "[";
    for (size_t i = 0; i < stage.spatial.size(); ++i)
      out << (i ? ", " : "") << stage.spatial[i].name << ": " << stage.spatial[i].extent;
    out << "] = ";
    auto vars = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i)
        out << (i > from ? ", " : "") << stage.reduce_vars[i].name << ": " << stage.reduce_vars[i].extent;
    };
    const Call *pair = stage.body.as<Call>();
    if (stage.reduce == ReduceOp::SoftmaxSum && pair && pair->args.size() == 2) {
      // softmax_sum(j: T) softmax_pair(sum(d: D) score, value): the score's sum inside.
      const size_t outer = stage.reduce_vars.size() - std::min(stage.score_vars, stage.reduce_vars.size());
      out << "softmax_sum(";
      vars(0, outer);
      out << ") softmax_pair(";
      if (outer < stage.reduce_vars.size()) {
        out << "sum(";
        vars(outer, stage.reduce_vars.size());
        out << ") ";
      }
      out << print_expr(pair->args[0]) << ", " << print_expr(pair->args[1]) << ")\n";
      continue;
    }
    if (stage.reduce != ReduceOp::None) {
      out << reduce_op_name(stage.reduce) << "(";
      vars(0, stage.reduce_vars.size());
      out << ") ";
    }
    out << print_expr(stage.body) << "\n";
  }
  return out.str();
}

std::string print_program(const Program &program) {
  std::ostringstream out;
  out << "program " << program.name << "\n";
  for (const TensorDecl &b : program.buffers) out << print_tensor_decl(b) << "\n";
  for (const Kernel &kernel : program.kernels) {
    out << "\nkernel " << kernel.name << " {\n";
    out << print_stmt(kernel.body, 1);
    out << "}\n";
  }
  return out.str();
}

}  // namespace ks
