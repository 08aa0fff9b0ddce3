// The nodes of kernelsmith's IRs: expressions (shared by Graph IR and Loop IR) and
// Loop IR statements. Nodes are immutable values built by checked make() functions
// and held through the Expr and Stmt handles; same_as() compares identity, so a pass
// that changes nothing returns the very same handle.
//
// Semantics (the reference interpreter is their executable form):
//  - i32 and i64 are two's-complement integers; integer `/` and `%` round toward
//    negative infinity (floor division, Python's rule), so `(-1) / 2 == -1` and
//    `(-1) % 2 == 1`. Division by zero is undefined; the frontend never emits it.
//  - f32 arithmetic is IEEE single precision on the device; the reference computes
//    every float operation in float64 and the checker allows for the difference.
//  - Operands of a binary operation have the same type; casts are explicit nodes.
//    Comparisons yield bool; `&&`, `||` and `!` take bool.
//  - A Load with a pad value reads that value wherever an index falls outside the
//    buffer; a Load without one must stay inside (the frontend proves it).
//  - Expressions have no side effects; evaluation order is not observable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/builtins.h"
#include "ir/diagnostic.h"
#include "ir/types.h"

namespace ks {

enum class NodeKind {
#define KS_EXPR_NODE(N) N,
#define KS_STMT_NODE(N) N,
#include "ir/nodes.def"
};

struct IRNode {
  explicit IRNode(NodeKind kind) : node_kind(kind) {}
  virtual ~IRNode() = default;
  const NodeKind node_kind;
};

struct BaseExprNode : IRNode {
  BaseExprNode(NodeKind kind, DType type) : IRNode(kind), type(type) {}
  const DType type;
};

struct BaseStmtNode : IRNode {
  using IRNode::IRNode;
};

/// A handle to an immutable expression node (or to nothing).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const BaseExprNode> node) : node_(std::move(node)) {}
  const BaseExprNode *get() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  DType type() const { return node_->type; }
  NodeKind kind() const { return node_->node_kind; }
  bool same_as(const Expr &other) const { return node_ == other.node_; }
  template <typename T>
  const T *as() const {
    return node_ && node_->node_kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const BaseExprNode> node_;
};

/// A handle to an immutable statement node (or to nothing).
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const BaseStmtNode> node) : node_(std::move(node)) {}
  const BaseStmtNode *get() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  NodeKind kind() const { return node_->node_kind; }
  bool same_as(const Stmt &other) const { return node_ == other.node_; }
  template <typename T>
  const T *as() const {
    return node_ && node_->node_kind == T::kKind ? static_cast<const T *>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const BaseStmtNode> node_;
};

// ---- expressions ------------------------------------------------------------

enum class UnaryOp { Neg, Not };
/// LogAddExp: log(exp(a) + exp(b)) of floats, computed as max + log(1 + exp(min - max))
/// (logsumexp's combine: a running maximum and a rescaled running sum in one value).
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Min, Max, LogAddExp, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
const char *binary_op_symbol(BinaryOp op);  // "+", "min", ...
bool is_comparison(BinaryOp op);
/// The operator written infix as symbol ("+", "<=", "&&"; not min and max).
std::optional<BinaryOp> parse_infix_op(const std::string &symbol);
/// Precedence of an operator in the printed syntax and the DSL, higher binding
/// tighter: || 1, && 2, == != 3, < <= > >= 4, + - 5, * / % 6; min and max print as
/// calls (8).
int infix_precedence(BinaryOp op);

struct IntImm : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImm(DType type, int64_t value) : BaseExprNode(kKind, type), value(value) {}
  const int64_t value;
  static Expr make(DType type, int64_t value);
};

struct FloatImm : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImm(DType type, double value) : BaseExprNode(kKind, type), value(value) {}
  const double value;
  static Expr make(DType type, double value);
};

struct Var : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Var;
  Var(DType type, std::string name) : BaseExprNode(kKind, type), name(std::move(name)) {}
  const std::string name;
  static Expr make(DType type, const std::string &name);
};

struct Unary : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Unary;
  Unary(DType type, UnaryOp op, Expr a) : BaseExprNode(kKind, type), op(op), a(std::move(a)) {}
  const UnaryOp op;
  const Expr a;
  static Expr make(UnaryOp op, Expr a);
};

struct Binary : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Binary;
  Binary(DType type, BinaryOp op, Expr a, Expr b)
      : BaseExprNode(kKind, type), op(op), a(std::move(a)), b(std::move(b)) {}
  const BinaryOp op;
  const Expr a, b;
  static Expr make(BinaryOp op, Expr a, Expr b);
};

struct Call : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  Call(DType type, Builtin fn, std::vector<Expr> args) : BaseExprNode(kKind, type), fn(fn), args(std::move(args)) {}
  const Builtin fn;
  const std::vector<Expr> args;
  static Expr make(Builtin fn, std::vector<Expr> args);
};

struct Cast : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  Cast(DType type, Expr value) : BaseExprNode(kKind, type), value(std::move(value)) {}
  const Expr value;
  static Expr make(DType type, Expr value);
};

struct Select : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  Select(DType type, Expr condition, Expr true_value, Expr false_value)
      : BaseExprNode(kKind, type),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  const Expr condition, true_value, false_value;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

/// A read of buffer[indices...]; with a pad value, reads outside the buffer yield it.
struct Load : BaseExprNode {
  static constexpr NodeKind kKind = NodeKind::Load;
  Load(DType type, std::string buffer, std::vector<Expr> indices, std::optional<double> pad)
      : BaseExprNode(kKind, type), buffer(std::move(buffer)), indices(std::move(indices)), pad(pad) {}
  const std::string buffer;
  const std::vector<Expr> indices;
  const std::optional<double> pad;
  static Expr make(DType type, const std::string &buffer, std::vector<Expr> indices,
                   std::optional<double> pad = std::nullopt);
};

// ---- statements (Loop IR) -----------------------------------------------------

/// How a loop runs: serially, unrolled, vectorized, or bound to a hardware index
/// (one iteration per work-group or per work-item along x, y or z).
// Matrix: a serial loop whose nest a warp runs as matrix instructions (ir/matrix_tile.h).
enum class ForKind { Serial, Unrolled, Vectorized, Matrix, GroupX, GroupY, GroupZ, LocalX, LocalY, LocalZ };
const char *for_kind_name(ForKind kind);  // "serial", "group.x", ...
std::optional<ForKind> parse_for_kind(const std::string &name);
bool is_group(ForKind kind);
bool is_local(ForKind kind);
int hardware_dim(ForKind kind);  // 0, 1, 2 for x, y, z; -1 for the others

enum class MemoryScope { Global, Local, Private };
const char *memory_scope_name(MemoryScope scope);
std::optional<MemoryScope> parse_memory_scope(const std::string &name);

/// The type of a loop variable over [0, extent): i32 unless the extent needs more.
DType index_type_for(int64_t extent);

/// A half-open interval [min, min + extent) of one buffer dimension.
struct Range {
  Expr min;
  int64_t extent = 1;
};

/// The part of a buffer a block reads or writes, one Range per dimension.
struct Region {
  std::string buffer;
  std::vector<Range> ranges;
};

struct For : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::For;
  For(std::string var, int64_t extent, ForKind kind, Stmt body)
      : BaseStmtNode(kKind), var(std::move(var)), extent(extent), kind(kind), body(std::move(body)) {}
  const std::string var;  // runs over [0, extent)
  const int64_t extent;
  const ForKind kind;
  const Stmt body;
  Expr loop_var() const { return Var::make(index_type_for(extent), var); }
  static Stmt make(const std::string &var, int64_t extent, ForKind kind, Stmt body);
};

/// One stage's computation at one iteration point, with what it reads and writes.
struct Block : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::Block;
  Block(std::string stage, std::vector<Region> reads, std::vector<Region> writes, Stmt body)
      : BaseStmtNode(kKind),
        stage(std::move(stage)),
        reads(std::move(reads)),
        writes(std::move(writes)),
        body(std::move(body)) {}
  const std::string stage;
  const std::vector<Region> reads, writes;
  const Stmt body;
  static Stmt make(const std::string &stage, std::vector<Region> reads, std::vector<Region> writes, Stmt body);
};

/// A buffer that lives for the duration of body, in the given memory.
struct Allocate : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::Allocate;
  Allocate(std::string buffer, DType type, std::vector<int64_t> shape, MemoryScope scope, Stmt body)
      : BaseStmtNode(kKind),
        buffer(std::move(buffer)),
        type(type),
        shape(std::move(shape)),
        scope(scope),
        body(std::move(body)) {}
  const std::string buffer;
  const DType type;
  const std::vector<int64_t> shape;
  const MemoryScope scope;
  const Stmt body;
  static Stmt make(const std::string &buffer, DType type, std::vector<int64_t> shape, MemoryScope scope, Stmt body);
};

/// Work-items of a group wait here; memory of the given scope is made consistent.
/// With wait_copies = N >= 0, each work-item first waits until at most N of the
/// asynchronous copies it started (AsyncCopy groups, oldest first) are still under way.
struct Barrier : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::Barrier;
  Barrier(MemoryScope scope, int64_t wait_copies) : BaseStmtNode(kKind), scope(scope), wait_copies(wait_copies) {}
  const MemoryScope scope;
  const int64_t wait_copies;  // -1: no wait
  static Stmt make(MemoryScope scope, int64_t wait_copies = -1);
};

/// One group of asynchronous copies: body's stores (global values into local
/// buffers) may land at any time until a barrier that waits for the group. Run in
/// order, it is the same program: what makes it asynchronous is that nothing reads
/// what it writes before such a barrier (passes/async_copy.cpp builds it so).
struct AsyncCopy : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::AsyncCopy;
  explicit AsyncCopy(Stmt body) : BaseStmtNode(kKind), body(std::move(body)) {}
  const Stmt body;
  static Stmt make(Stmt body);
};

struct IfThenElse : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::IfThenElse;
  IfThenElse(Expr condition, Stmt then_case, Stmt else_case)
      : BaseStmtNode(kKind),
        condition(std::move(condition)),
        then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
  const Expr condition;
  const Stmt then_case, else_case;  // else_case may be undefined
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

struct LetStmt : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::LetStmt;
  LetStmt(std::string var, Expr value, Stmt body)
      : BaseStmtNode(kKind), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  const std::string var;
  const Expr value;
  const Stmt body;
  static Stmt make(const std::string &var, Expr value, Stmt body);
};

struct Store : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::Store;
  Store(std::string buffer, std::vector<Expr> indices, Expr value)
      : BaseStmtNode(kKind), buffer(std::move(buffer)), indices(std::move(indices)), value(std::move(value)) {}
  const std::string buffer;
  const std::vector<Expr> indices;
  const Expr value;
  static Stmt make(const std::string &buffer, std::vector<Expr> indices, Expr value);
};

/// Statements in order. make() flattens nested sequences and unwraps a single
/// statement, so every sequence prints and parses back to the same tree.
struct Seq : BaseStmtNode {
  static constexpr NodeKind kKind = NodeKind::Seq;
  explicit Seq(std::vector<Stmt> stmts) : BaseStmtNode(kKind), stmts(std::move(stmts)) {}
  const std::vector<Stmt> stmts;
  static Stmt make(std::vector<Stmt> stmts);
};

// ---- small constructors used everywhere -----------------------------------------

Expr make_int(int64_t value, DType type = DType::I32);
Expr make_f32(double value);
/// Converts value to type, adding a Cast only when needed.
Expr cast_to(DType type, Expr value);
/// Brings a and b to a common type: the float if either is float, else the wider int.
DType common_type(DType a, DType b);
/// Arithmetic helpers that insert casts to the common type.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
/// Returns the integer value of a constant expression, if it is one.
std::optional<int64_t> as_const_int(const Expr &e);
/// log(exp(a) + exp(b)) without overflow: the larger plus log(1 + exp(smaller - larger));
/// -inf where both are (the interpreter's and the simplifier's LogAddExp).
double log_add_exp(double a, double b);

}  // namespace ks
