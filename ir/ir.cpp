// Checked constructors of IR nodes. A make() that fails throws InternalError: the
// frontend and the parsers validate user input first, so reaching one is a bug.
#include "ir/ir.h"

#include <cmath>

namespace ks {

namespace {
[[noreturn]] void type_error(const std::string &message) { throw InternalError(message); }
}  // namespace

const char *binary_op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::LogAddExp: return "logaddexp";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

double log_add_exp(double a, double b) {
  const double m = std::fmax(a, b);
  if (std::isinf(m) && m < 0) return m;
  return m + std::log1p(std::exp(std::fmin(a, b) - m));
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge || op == BinaryOp::Eq ||
         op == BinaryOp::Ne;
}

std::optional<BinaryOp> parse_infix_op(const std::string &symbol) {
  for (BinaryOp op :
       {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod, BinaryOp::Lt, BinaryOp::Le,
        BinaryOp::Gt, BinaryOp::Ge, BinaryOp::Eq, BinaryOp::Ne, BinaryOp::And, BinaryOp::Or})
    if (symbol == binary_op_symbol(op)) return op;
  return std::nullopt;
}

int infix_precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return 1;
    case BinaryOp::And: return 2;
    case BinaryOp::Eq:
    case BinaryOp::Ne: return 3;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: return 4;
    case BinaryOp::Add:
    case BinaryOp::Sub: return 5;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return 6;
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::LogAddExp: return 8;
  }
  return 8;
}

Expr IntImm::make(DType type, int64_t value) {
  if (!is_int(type)) type_error("integer constant of type " + std::string(dtype_name(type)));
  if (type == DType::I32 && (value < INT32_MIN || value > INT32_MAX))
    type_error("constant " + std::to_string(value) + " does not fit i32");
  return Expr(std::make_shared<IntImm>(type, value));
}

Expr FloatImm::make(DType type, double value) {
  if (!is_float(type)) type_error("float constant of type " + std::string(dtype_name(type)));
  return Expr(std::make_shared<FloatImm>(type, value));
}

Expr Var::make(DType type, const std::string &name) {
  if (name.empty()) type_error("variable without a name");
  return Expr(std::make_shared<Var>(type, name));
}

Expr Unary::make(UnaryOp op, Expr a) {
  if (!a.defined()) type_error("unary operation on nothing");
  if (op == UnaryOp::Not && a.type() != DType::Bool) type_error("'!' needs a bool operand");
  if (op == UnaryOp::Neg && a.type() == DType::Bool) type_error("'-' of a bool");
  DType type = a.type();
  return Expr(std::make_shared<Unary>(type, op, std::move(a)));
}

Expr Binary::make(BinaryOp op, Expr a, Expr b) {
  if (!a.defined() || !b.defined()) type_error("binary operation on nothing");
  if (a.type() != b.type())
    type_error(std::string("operands of '") + binary_op_symbol(op) + "' have types " + dtype_name(a.type()) + " and " +
               dtype_name(b.type()));
  DType type = a.type();
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    if (type != DType::Bool) type_error(std::string("'") + binary_op_symbol(op) + "' needs bool operands");
  } else if (type == DType::Bool && op != BinaryOp::Eq && op != BinaryOp::Ne) {
    type_error(std::string("'") + binary_op_symbol(op) + "' of bool operands");
  }
  if (op == BinaryOp::LogAddExp && !is_float(type)) type_error("'logaddexp' needs float operands");
  if (is_comparison(op)) type = DType::Bool;
  return Expr(std::make_shared<Binary>(type, op, std::move(a), std::move(b)));
}

Expr Call::make(Builtin fn, std::vector<Expr> args) {
  const BuiltinInfo &info = builtin_info(fn);
  if (static_cast<int>(args.size()) != info.arity)
    type_error(std::string(info.name) + " takes " + std::to_string(info.arity) + " arguments");
  for (const Expr &arg : args)
    if (!arg.defined() || arg.type() != DType::F32) type_error(std::string(info.name) + " takes f32 arguments");
  return Expr(std::make_shared<Call>(DType::F32, fn, std::move(args)));
}

Expr Cast::make(DType type, Expr value) {
  if (!value.defined()) type_error("cast of nothing");
  if (is_half(type)) type_error(std::string("a cast to ") + dtype_name(type) + ", a storage type");
  return Expr(std::make_shared<Cast>(type, std::move(value)));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  if (!condition.defined() || condition.type() != DType::Bool) type_error("select needs a bool condition");
  if (true_value.type() != false_value.type())
    type_error(std::string("select's values have types ") + dtype_name(true_value.type()) + " and " +
               dtype_name(false_value.type()));
  DType type = true_value.type();
  return Expr(std::make_shared<Select>(type, std::move(condition), std::move(true_value), std::move(false_value)));
}

Expr Load::make(DType type, const std::string &buffer, std::vector<Expr> indices, std::optional<double> pad) {
  if (type == DType::Bool) type_error("buffer " + buffer + " of bool");
  type = value_type(type);  // a 16-bit tensor's element read is an f32 value
  for (const Expr &index : indices)
    if (!index.defined() || !is_int(index.type())) type_error("index of " + buffer + " is not an integer");
  return Expr(std::make_shared<Load>(type, buffer, std::move(indices), pad));
}

const char *for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::Serial: return "serial";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Matrix: return "matrix";
    case ForKind::GroupX: return "group.x";
    case ForKind::GroupY: return "group.y";
    case ForKind::GroupZ: return "group.z";
    case ForKind::LocalX: return "local.x";
    case ForKind::LocalY: return "local.y";
    case ForKind::LocalZ: return "local.z";
  }
  return "?";
}

std::optional<ForKind> parse_for_kind(const std::string &name) {
  for (ForKind kind : {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized, ForKind::Matrix, ForKind::GroupX,
                       ForKind::GroupY, ForKind::GroupZ, ForKind::LocalX, ForKind::LocalY, ForKind::LocalZ})
    if (name == for_kind_name(kind)) return kind;
  return std::nullopt;
}

bool is_group(ForKind kind) { return kind == ForKind::GroupX || kind == ForKind::GroupY || kind == ForKind::GroupZ; }
bool is_local(ForKind kind) { return kind == ForKind::LocalX || kind == ForKind::LocalY || kind == ForKind::LocalZ; }
int hardware_dim(ForKind kind) {
  switch (kind) {
    case ForKind::GroupX:
    case ForKind::LocalX: return 0;
    case ForKind::GroupY:
    case ForKind::LocalY: return 1;
    case ForKind::GroupZ:
    case ForKind::LocalZ: return 2;
    default: return -1;
  }
}

const char *memory_scope_name(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::Global: return "global";
    case MemoryScope::Local: return "local";
    case MemoryScope::Private: return "private";
  }
  return "?";
}

std::optional<MemoryScope> parse_memory_scope(const std::string &name) {
  for (MemoryScope scope : {MemoryScope::Global, MemoryScope::Local, MemoryScope::Private})
    if (name == memory_scope_name(scope)) return scope;
  return std::nullopt;
}

DType index_type_for(int64_t extent) { return extent > INT32_MAX ? DType::I64 : DType::I32; }

Stmt For::make(const std::string &var, int64_t extent, ForKind kind, Stmt body) {
  if (extent < 1) type_error("loop " + var + " has extent " + std::to_string(extent));
  if (!body.defined()) type_error("loop " + var + " has no body");
  return Stmt(std::make_shared<For>(var, extent, kind, std::move(body)));
}

Stmt Block::make(const std::string &stage, std::vector<Region> reads, std::vector<Region> writes, Stmt body) {
  if (!body.defined()) type_error("block " + stage + " has no body");
  return Stmt(std::make_shared<Block>(stage, std::move(reads), std::move(writes), std::move(body)));
}

Stmt Allocate::make(const std::string &buffer, DType type, std::vector<int64_t> shape, MemoryScope scope, Stmt body) {
  for (int64_t extent : shape)
    if (extent < 1) type_error("allocation " + buffer + " has an empty dimension");
  if (!body.defined()) type_error("allocation " + buffer + " has no body");
  return Stmt(std::make_shared<Allocate>(buffer, type, std::move(shape), scope, std::move(body)));
}

Stmt Barrier::make(MemoryScope scope, int64_t wait_copies) {
  if (scope == MemoryScope::Private) type_error("a barrier on private memory");
  if (wait_copies < -1) type_error("a barrier waiting for a negative count of copies");
  return Stmt(std::make_shared<Barrier>(scope, wait_copies));
}

Stmt AsyncCopy::make(Stmt body) {
  if (!body.defined()) type_error("an asynchronous copy without a body");
  return Stmt(std::make_shared<AsyncCopy>(std::move(body)));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  if (!condition.defined() || condition.type() != DType::Bool) type_error("if needs a bool condition");
  if (!then_case.defined()) type_error("if without a body");
  return Stmt(std::make_shared<IfThenElse>(std::move(condition), std::move(then_case), std::move(else_case)));
}

Stmt LetStmt::make(const std::string &var, Expr value, Stmt body) {
  if (!value.defined() || !body.defined()) type_error("let " + var + " is incomplete");
  return Stmt(std::make_shared<LetStmt>(var, std::move(value), std::move(body)));
}

Stmt Store::make(const std::string &buffer, std::vector<Expr> indices, Expr value) {
  for (const Expr &index : indices)
    if (!index.defined() || !is_int(index.type())) type_error("index of " + buffer + " is not an integer");
  if (!value.defined() || value.type() == DType::Bool) type_error("store of no value to " + buffer);
  return Stmt(std::make_shared<Store>(buffer, std::move(indices), std::move(value)));
}

Stmt Seq::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt &stmt : stmts) {
    if (!stmt.defined()) continue;
    if (const Seq *inner = stmt.as<Seq>())
      flat.insert(flat.end(), inner->stmts.begin(), inner->stmts.end());
    else
      flat.push_back(std::move(stmt));
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<Seq>(std::move(flat)));
}

Expr make_int(int64_t value, DType type) { return IntImm::make(type, value); }
Expr make_f32(double value) { return FloatImm::make(DType::F32, value); }

Expr cast_to(DType type, Expr value) {
  if (value.type() == type) return value;
  // Constants convert at once, so printed IR stays readable.
  if (const IntImm *imm = value.as<IntImm>()) {
    if (is_float(type)) return FloatImm::make(type, static_cast<double>(imm->value));
    if (is_int(type) && (type == DType::I64 || (imm->value >= INT32_MIN && imm->value <= INT32_MAX)))
      return IntImm::make(type, imm->value);
  }
  return Cast::make(type, std::move(value));
}

DType common_type(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (is_float(a) || is_float(b)) return DType::F32;
  if (a == DType::I64 || b == DType::I64) return DType::I64;
  return DType::I32;
}

namespace {
Expr arith(BinaryOp op, Expr a, Expr b) {
  DType type = common_type(a.type(), b.type());
  return Binary::make(op, cast_to(type, std::move(a)), cast_to(type, std::move(b)));
}
}  // namespace

Expr operator+(Expr a, Expr b) { return arith(BinaryOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return arith(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return arith(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return arith(BinaryOp::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return arith(BinaryOp::Mod, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return arith(BinaryOp::Lt, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return arith(BinaryOp::Ge, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return Binary::make(BinaryOp::And, std::move(a), std::move(b)); }

std::optional<int64_t> as_const_int(const Expr &e) {
  if (const IntImm *imm = e.as<IntImm>()) return imm->value;
  return std::nullopt;
}

}  // namespace ks
