// Name resolution, size binding, extent inference and type checking of a spec.
//
// Algorithm:
//  1. Bind sizes in `where` order; each value is an integer expression over the
//     sizes before it. The chosen size set and overrides replace values by name.
//  2. Declare inputs and outputs with their shapes evaluated.
//  3. For each statement in order:
//     a. spatial extents: written (`i: N`), else the output's declared shape, else
//        the extent of a dimension the variable indexes bare (`x[i, k]`);
//     b. reduction extents: written, else inferred the same way;
//     c. convert the body to IR: resolve names, insert casts, check every read is
//        of a defined tensor with the right rank and (without `else`) in bounds;
//     d. declare an intermediate with the inferred shape and type, or check the
//        declared output's type.
//  4. Every output must have been defined.
#include "frontend/elaborate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "ir/bounds.h"
#include "ir/builtins.h"
#include "ir/lexer.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"

namespace ks::frontend {

void parse_size_assignments(const std::string &text, SizeOverrides *out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UserError("error: " + out->flag + " expects NAME=VALUE, got '" + item + "'");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == value.size() && v >= 0) {
      out->values[name] = v;
    } else {
      char *end = nullptr;
      double f = std::strtod(value.c_str(), &end);
      if (end != value.c_str() + value.size() || !std::isfinite(f))
        throw UserError("error: " + out->flag + " " + name + "=" + value +
                        ": the value must be a non-negative integer (a size) or a finite number (a constant)");
      out->constants[name] = f;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

namespace {

using Kind = AstExpr::Kind;

std::string indices_given(size_t n) { return n == 1 ? "1 index is given" : std::to_string(n) + " indices are given"; }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::string describe(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out.empty() ? "none" : out;
}

// a op b, or an error where it overflows 64-bit integers.
int64_t checked(const AstExpr &e, int64_t a, int64_t b, char op) {
  int64_t r;
  bool overflow = op == '+'   ? __builtin_add_overflow(a, b, &r)
                  : op == '-' ? __builtin_sub_overflow(a, b, &r)
                              : __builtin_mul_overflow(a, b, &r);
  if (overflow) error_at(e.loc, "size expression overflows 64-bit integers");
  return r;
}

}  // namespace

int64_t size_value(const AstExpr &e, const std::map<std::string, int64_t> &sizes, const std::string &unknown_hint) {
  auto value = [&](const AstExpr &x) { return size_value(x, sizes, unknown_hint); };
  switch (e.kind) {
    case Kind::Int: return e.int_value;
    case Kind::Name: {
      auto it = sizes.find(e.text);
      if (it != sizes.end()) return it->second;
      error_at(e.loc, "unknown size '" + e.text + "'" + unknown_hint);
    }
    case Kind::Unary:
      if (e.text == "-") return checked(e, 0, value(*e.args[0]), '-');
      break;
    case Kind::Binary: {
      int64_t a = value(*e.args[0]), b = value(*e.args[1]);
      if (e.text == "+" || e.text == "-" || e.text == "*") return checked(e, a, b, e.text[0]);
      if (e.text == "/" || e.text == "%") {
        if (b == 0) error_at(e.loc, "division by zero in a size expression");
        return e.text == "/" ? floor_div(a, b) : a - b * floor_div(a, b);
      }
      break;
    }
    case Kind::Call:
      if ((e.text == "min" || e.text == "max") && e.args.size() == 2) {
        int64_t a = value(*e.args[0]), b = value(*e.args[1]);
        return e.text == "min" ? std::min(a, b) : std::max(a, b);
      }
      break;
    default: break;
  }
  error_at(e.loc, "a size must be an integer expression of sizes (+ - * / % min max)");
}

namespace {

class Elaborator {
 public:
  Elaborator(const Spec &spec, SizeSet which, const SizeOverrides &overrides)
      : spec_(spec), which_(which), overrides_(overrides) {}

  Graph run() {
    graph_.name = spec_.name;
    bind_sizes();
    bind_constants();
    check_requirements();
    for (const AstTensor &t : spec_.inputs) declare(t, TensorRole::Input);
    for (const AstTensor &t : spec_.outputs) declare(t, TensorRole::Output);
    for (const AstStatement &s : spec_.statements) later_[s.tensor] = s.loc.line;
    for (const AstStatement &s : spec_.statements) statement(s);
    for (const AstTensor &t : spec_.outputs)
      if (!defined_.count(t.name)) error_at(t.loc, "output '" + t.name + "' is never defined");
    verify_graph(graph_);
    return graph_;
  }

 private:
  const Spec &spec_;
  SizeSet which_;
  const SizeOverrides &overrides_;
  Graph graph_;
  std::map<std::string, int64_t> sizes_;
  std::map<std::string, double> constants_;
  std::map<std::string, SourceLoc> tensor_locs_;
  std::set<std::string> defined_;     // inputs and tensors defined so far
  std::map<std::string, int> later_;  // every defined tensor, by the line defining it
  BoundsScope values_;                // value ranges of integer tensors
  // The statement being elaborated.
  std::map<std::string, int64_t> vars_;
  std::string current_;
  const AstExpr *body_ = nullptr;            // its right side
  std::vector<std::string> statement_vars_;  // its index and reduction variables, as written

  // ---- sizes ----
  int64_t size_expr(const AstExpr &e) { return size_value(e, sizes_, known_sizes_hint()); }

  // The sizes a `where` size is derived from (none for a number).
  std::vector<std::string> derived_from(const std::string &name) const {
    std::vector<std::string> from;
    for (const AstSize &w : spec_.sizes)
      if (w.name == name) size_names(*w.value, &from);
    return from;
  }

  // The sizes an expression names, once each, in order.
  static void size_names(const AstExpr &e, std::vector<std::string> *out) {
    if (e.kind == Kind::Name && std::find(out->begin(), out->end(), e.text) == out->end()) out->push_back(e.text);
    for (const AstExprPtr &arg : e.args) size_names(*arg, out);
  }

  std::string known_sizes_hint() const {
    std::vector<std::string> names;
    for (const AstSize &s : spec_.sizes) names.push_back(s.name);
    return "; sizes are " + describe(names);
  }

  // ---- requirements ----
  // Each name of e a size; else size_expr's error at the name.
  void every_name_known(const AstExpr &e) {
    if (e.kind == Kind::Name) size_expr(e);
    for (const AstExprPtr &arg : e.args) every_name_known(*arg);
  }

  // Whether a requirement holds: comparisons and logic over size expressions.
  bool holds(const AstExpr &e) {
    if (e.kind == Kind::Unary && e.text == "!") return !holds(*e.args[0]);
    if (e.kind == Kind::Binary) {
      const std::string &op = e.text;
      if (op == "&&") return holds(*e.args[0]) && holds(*e.args[1]);
      if (op == "||") return holds(*e.args[0]) || holds(*e.args[1]);
      if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
        const int64_t a = size_expr(*e.args[0]), b = size_expr(*e.args[1]);
        return op == "=="   ? a == b
               : op == "!=" ? a != b
               : op == "<"  ? a < b
               : op == "<=" ? a <= b
               : op == ">"  ? a > b
                            : a >= b;
      }
    }
    return size_expr(e) != 0;
  }

  // The expression as written, give or take parentheses.
  static std::string text_of(const AstExpr &e) {
    auto inner = [](const AstExpr &x) { return x.kind == Kind::Binary ? "(" + text_of(x) + ")" : text_of(x); };
    switch (e.kind) {
      case Kind::Int: return std::to_string(e.int_value);
      case Kind::Name: return e.text;
      case Kind::Unary: return e.text + inner(*e.args[0]);
      case Kind::Binary: return inner(*e.args[0]) + " " + e.text + " " + inner(*e.args[1]);
      case Kind::Call: {
        std::string out = e.text + "(";
        for (size_t i = 0; i < e.args.size(); ++i) out += (i ? ", " : "") + text_of(*e.args[i]);
        return out + ")";
      }
      default: return "...";
    }
  }

  // Every `require` holds at these sizes; else the error names the requirement and
  // the sizes it reads: the flag's where the flag set one of them, the spec's else.
  void check_requirements() {
    for (const AstExprPtr &r : spec_.requirements) {
      every_name_known(*r);  // also those that && and || would not reach
      if (holds(*r)) continue;
      std::vector<std::string> names;
      size_names(*r, &names);
      std::string values;
      bool overridden = false;
      for (const std::string &n : names) {
        values += (values.empty() ? "" : ", ") + n + " = " + std::to_string(sizes_.at(n));
        overridden = overridden || overrides_.values.count(n);
      }
      const std::string what = "'" + text_of(*r) + "'";
      if (overridden)
        throw UserError("error: " + overrides_.flag + ": the sizes break " + spec_.name + "'s requirement " + what +
                        " (line " + std::to_string(r->loc.line) + "): " + values);
      const AstExpr *first = r.get();  // the caret at the requirement's start, not its operator
      while (first->kind == Kind::Binary) first = first->args[0].get();
      error_at(first->loc, "the " + std::string(which_ == SizeSet::Check ? "check" : "default") +
                               " sizes break the requirement " + what + ": " + values);
    }
  }

  void bind_sizes() {
    std::set<std::string> declared;
    for (const AstSize &s : spec_.sizes) {
      if (!declared.insert(s.name).second) error_at(s.loc, "size '" + s.name + "' is defined twice");
    }
    std::map<std::string, const AstSize *> check;
    for (const AstSize &s : spec_.check_sizes) {
      if (!declared.count(s.name)) error_at(s.loc, "check names size '" + s.name + "', which 'where' does not define");
      if (check.count(s.name)) error_at(s.loc, "size '" + s.name + "' is checked twice");
      if (std::vector<std::string> from = derived_from(s.name); !from.empty())
        error_at(s.loc, "check gives size '" + s.name + "', which 'where' derives from " + describe(from) +
                            "; give those instead");
      check[s.name] = &s;
    }
    auto unknown = [&](const std::string &name) {
      std::vector<std::string> names;
      for (const AstSize &s : spec_.sizes) names.push_back(s.name);
      if (spec_.constants.empty())
        throw UserError("error: " + overrides_.flag + " names unknown size '" + name + "'; sizes of " + spec_.name +
                        " are " + describe(names));
      std::vector<std::string> constants;
      for (const AstConstant &c : spec_.constants) constants.push_back(c.name);
      throw UserError("error: " + overrides_.flag + " names unknown size or constant '" + name + "'; " + spec_.name +
                      "'s sizes are " + describe(names) + ", its constants " + describe(constants));
    };
    for (const auto &[name, value] : overrides_.values)
      if (!declared.count(name) && !is_constant(name)) unknown(name);
    for (const auto &[name, value] : overrides_.constants) {
      if (declared.count(name))
        throw UserError("error: " + overrides_.flag + " " + name + "=" + (std::ostringstream() << value).str() + ": " +
                        name + " is a size; its value must be a non-negative integer");
      if (!is_constant(name)) unknown(name);
    }
    for (const AstSize &s : spec_.sizes) {
      int64_t value;
      SourceLoc where = s.loc;
      auto over = overrides_.values.find(s.name);
      if (over != overrides_.values.end()) {
        // A size the spec derives from others: overriding it alone would make the
        // spec inconsistent (its shapes and bounds assume the formula).
        if (std::vector<std::string> from = derived_from(s.name); !from.empty())
          throw UserError("error: " + overrides_.flag + " " + s.name + "=" + std::to_string(over->second) + ": " +
                          s.name + " is derived from " + describe(from) + " (line " + std::to_string(s.loc.line) +
                          "); give those instead");
        value = over->second;
      } else if (which_ == SizeSet::Check && check.count(s.name)) {
        value = size_expr(*check[s.name]->value);
        where = check[s.name]->loc;
      } else {
        value = size_expr(*s.value);
      }
      if (value < 0)
        error_at(where, "size '" + s.name + "' is " + std::to_string(value) + "; sizes cannot be negative");
      sizes_[s.name] = value;
      graph_.sizes.push_back({s.name, value});
    }
  }

  bool is_constant(const std::string &name) const {
    for (const AstConstant &c : spec_.constants)
      if (c.name == name) return true;
    return false;
  }

  // ---- constants ----
  // Each constant's value: the override's where given, else the spec's.
  void bind_constants() {
    for (const AstConstant &c : spec_.constants) {
      if (sizes_.count(c.name)) error_at(c.loc, "'" + c.name + "' is already a size");
      if (constants_.count(c.name)) error_at(c.loc, "constant '" + c.name + "' is defined twice");
      double value = c.value;
      if (auto it = overrides_.constants.find(c.name); it != overrides_.constants.end())
        value = it->second;
      else if (auto it = overrides_.values.find(c.name); it != overrides_.values.end())
        value = static_cast<double>(it->second);
      constants_[c.name] = value;
      graph_.constants.push_back({c.name, value});
    }
  }

  // ---- tensors ----
  // The type an intermediate stage is stored in: its value's, except that a float
  // computed from tensors of one 16-bit type (and integers, constants) is stored in
  // that type, as PyTorch gives the result of half tensors' operations; f32(...) is
  // f32 whatever it converts (PyTorch's x.float()). Read from the spec's text: the
  // value's Expr has no trace of the conversion (a 16-bit load is an f32 value).
  DType stored_type(const Expr &body, const AstExpr &text) const {
    if (body.type() != DType::F32) return body.type();
    std::set<DType> operands;
    float_operands(text, &operands);
    return operands.size() == 1 && is_half(*operands.begin()) ? *operands.begin() : DType::F32;
  }
  // The storage types of the float values e computes from: tensors read, f32(...),
  // bf16(...) and f16(...).
  void float_operands(const AstExpr &e, std::set<DType> *types) const {
    if (e.kind == Kind::Access) {  // its indices are integers
      if (const TensorDecl *t = graph_.find_tensor(e.text); t && is_float(value_type(t->type))) types->insert(t->type);
      return;
    }
    if (e.kind == Kind::Call) {
      if (auto type = parse_dtype(e.text)) {
        if (is_half(*type))
          types->insert(*type);
        else if (is_float(*type))
          types->insert(DType::F32);
        return;
      }
      for (size_t i = e.text == "select" ? 1 : 0; i < e.args.size(); ++i) float_operands(*e.args[i], types);
      return;
    }
    if (e.kind == Kind::Binary) {
      auto op = parse_infix_op(e.text);
      if (op && (is_comparison(*op) || *op == BinaryOp::And || *op == BinaryOp::Or)) return;  // a condition
    }
    for (const AstExprPtr &arg : e.args) float_operands(*arg, types);
  }

  void declare(const AstTensor &t, TensorRole role) {
    check_new_name(t.name, t.loc);
    TensorDecl decl;
    decl.name = t.name;
    decl.role = role;
    auto type = parse_dtype(t.dtype);
    if (!type || *type == DType::Bool || *type == DType::F64)
      error_at(t.dtype_loc, "unknown type '" + t.dtype + "'; types are f32, f16, bf16, i32, i64");
    decl.type = *type;
    int64_t elements = 1;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t extent = size_expr(*t.shape[d]);
      // Byte offsets must fit 64 bits, with room for the widest element.
      if (extent > 0 && (__builtin_mul_overflow(elements, extent, &elements) || elements > (int64_t{1} << 59)))
        error_at(t.shape[d]->loc, "'" + t.name + "' has more than 2^59 elements");
      if (extent < 1)
        error_at(t.shape[d]->loc, "dimension " + std::to_string(d) + " of '" + t.name + "' is " +
                                      std::to_string(extent) + "; dimensions must be at least 1");
      decl.shape.push_back(extent);
    }
    if (t.range_lo) {
      if (role != TensorRole::Input) error_at(t.loc, "only inputs have a value range");
      ValueRange range{range_bound(*t.range_lo, decl.type), range_bound(*t.range_hi, decl.type)};
      if (!(range.lo < range.hi)) error_at(t.range_lo->loc, "the value range of '" + t.name + "' is empty");
      decl.range = range;
    } else if (role == TensorRole::Input && is_int(decl.type)) {
      error_at(t.loc, "integer input '" + t.name + "' needs a value range, e.g. '" + t.name + ": " + t.dtype +
                          "[...] in 0..N'");
    }
    graph_.tensors.push_back(decl);
    tensor_locs_[t.name] = t.loc;
    if (role == TensorRole::Input) {
      defined_.insert(t.name);
      if (is_int(decl.type)) values_.buffer_values[t.name] = tensor_value_interval(decl);
    }
  }

  double range_bound(const AstExpr &e, DType type) {
    if (e.kind == Kind::Float || (e.kind == Kind::Unary && e.text == "-" && e.args[0]->kind == Kind::Float)) {
      if (is_int(type)) error_at(e.loc, "the value range of an integer tensor must be integers");
      return e.kind == Kind::Float ? e.float_value : -e.args[0]->float_value;
    }
    return static_cast<double>(size_expr(e));
  }

  void check_new_name(const std::string &name, const SourceLoc &loc) {
    if (sizes_.count(name)) error_at(loc, "'" + name + "' is already a size");
    if (constants_.count(name)) error_at(loc, "'" + name + "' is already a constant");
    if (tensor_locs_.count(name)) error_at(loc, "tensor '" + name + "' is already declared");
  }

  TensorDecl *find_tensor(const std::string &name) {
    for (TensorDecl &t : graph_.tensors)
      if (t.name == name) return &t;
    return nullptr;
  }

  // ---- statements ----
  // The extent of a variable that indexes a dimension bare, e.g. `k` in x[m, k].
  void infer_extents(const AstExpr &e, std::map<std::string, std::pair<int64_t, SourceLoc>> *found) {
    if (e.kind == Kind::Access) {
      if (const TensorDecl *t = find_tensor(e.text); t && t->shape.size() == e.args.size())
        for (size_t d = 0; d < e.args.size(); ++d)
          if (e.args[d]->kind == Kind::Name && !found->count(e.args[d]->text))
            (*found)[e.args[d]->text] = {t->shape[d], e.args[d]->loc};
    }
    for (const AstExprPtr &arg : e.args) infer_extents(*arg, found);
    if (e.pad) infer_extents(*e.pad, found);
  }

  // A reduction variable over `LO..HI`: integer bounds of the definition's indices
  // (and earlier reduction variables) and sizes. It runs over [0, the largest HI);
  // *in_range gains `LO <= k && k < HI`. An empty range adds nothing (the sum of no
  // terms is 0, the max of none -inf); argmax and argmin over one have no answer.
  IterVar ranged_var(const AstIndexVar &v, ReduceOp op, Expr *in_range) {
    if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin)
      error_at(v.lo->loc, std::string(reduce_op_name(op)) +
                              " takes extents, not ranges: over an empty range it would have no answer");
    if (sizes_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a size and cannot be an index variable");
    if (constants_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a constant and cannot be an index variable");
    if (tensor_locs_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a tensor and cannot be an index variable");
    auto bound = [&](const AstExpr &e, const char *which) {
      Expr b = expr(e);
      if (!is_int(b.type()))
        error_at(e.loc, std::string("the ") + which + " of the range of '" + v.name + "' must be an integer, not " +
                            dtype_name(b.type()));
      Interval range = bounds_of(b, scope());
      if (!range.bounded)
        error_at(e.loc,
                 std::string("the ") + which + " of the range of '" + v.name + "' has no bound the compiler can prove");
      return std::make_pair(b, range);
    };
    auto [lo, lo_range] = bound(*v.lo, "start");
    auto [hi, hi_range] = bound(*v.hi, "end");
    if (lo_range.lo < 0)
      error_at(v.lo->loc, "the range of '" + v.name + "' may start at " + std::to_string(lo_range.lo) +
                              ", below 0; a reduction variable counts from 0 (shift it in the expression)");
    if (hi_range.hi < 1 || hi_range.hi <= lo_range.lo)
      error_at(v.hi->loc,
               "the range of '" + v.name + "' is empty everywhere (it ends by " + std::to_string(hi_range.hi) + ")");
    IterVar out{v.name, hi_range.hi};
    vars_[v.name] = out.extent;
    Expr k = Var::make(index_type_for(out.extent), v.name);
    DType t = common_type(common_type(lo.type(), hi.type()), k.type());
    // Only the sides that can fail: `0..i + 1` needs no `0 <= k`.
    std::vector<Expr> sides;
    if (lo_range.hi > 0) sides.push_back(Binary::make(BinaryOp::Le, cast_to(t, lo), cast_to(t, k)));
    if (hi_range.lo < out.extent) sides.push_back(Binary::make(BinaryOp::Lt, cast_to(t, k), cast_to(t, hi)));
    for (const Expr &side : sides)
      *in_range = in_range->defined() ? Binary::make(BinaryOp::And, *in_range, side) : side;
    return out;
  }

  static Expr reduce_identity_of(ReduceOp op, DType type) {
    if (op == ReduceOp::Max || op == ReduceOp::Min) {
      bool max = op == ReduceOp::Max;
      if (type == DType::I32) return make_int(max ? INT32_MIN : INT32_MAX, DType::I32);
      if (type == DType::I64) return make_int(max ? INT64_MIN : INT64_MAX, DType::I64);
      return make_f32(max ? -INFINITY : INFINITY);
    }
    double identity = reduce_identity(op);
    return is_int(type) ? make_int(static_cast<int64_t>(identity), type) : make_f32(identity);
  }

  // The first bare name of e that is no index variable of the statement, size or
  // tensor.
  const AstExpr *first_unknown_name(const AstExpr &e) const {
    if (e.kind == Kind::Name && e.text != "inf" && !sizes_.count(e.text) && !constants_.count(e.text) &&
        !tensor_locs_.count(e.text) &&
        std::find(statement_vars_.begin(), statement_vars_.end(), e.text) == statement_vars_.end())
      return &e;
    for (const AstExprPtr &arg : e.args)
      if (const AstExpr *found = first_unknown_name(*arg)) return found;
    return e.pad ? first_unknown_name(*e.pad) : nullptr;
  }

  IterVar iter_var(const AstIndexVar &v, std::optional<int64_t> known,
                   const std::map<std::string, std::pair<int64_t, SourceLoc>> &inferred) {
    if (sizes_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a size and cannot be an index variable");
    if (constants_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a constant and cannot be an index variable");
    if (tensor_locs_.count(v.name)) error_at(v.loc, "'" + v.name + "' is a tensor and cannot be an index variable");
    if (vars_.count(v.name)) error_at(v.loc, "index variable '" + v.name + "' is used twice in this definition");
    IterVar out{v.name, 0};
    if (v.extent) {
      out.extent = size_expr(*v.extent);
      if (out.extent < 1) error_at(v.extent->loc, "the extent of '" + v.name + "' must be at least 1");
      if (known && *known != out.extent)
        error_at(v.extent->loc, "'" + v.name + "' is given extent " + std::to_string(out.extent) + " but '" + current_ +
                                    "' has extent " + std::to_string(*known) + " there");
    } else if (known) {
      out.extent = *known;
    } else if (auto it = inferred.find(v.name); it != inferred.end()) {
      out.extent = it->second.first;
    } else {
      // A misspelt index (`x[i, j]` for `x[i, k]`) leaves k without an extent: the
      // misspelling is the error to report.
      if (const AstExpr *unknown = first_unknown_name(*body_))
        error_at(unknown->loc, "unknown name '" + unknown->text + "'; index variables here are " +
                                   describe(statement_vars_) + " ('" + v.name +
                                   "' indexes no tensor bare, so its extent is unknown too)");
      error_at(v.loc, "cannot infer the extent of '" + v.name + "'; write it as '" + v.name + ": EXTENT'");
    }
    vars_[v.name] = out.extent;
    return out;
  }

  void statement(const AstStatement &s) {
    vars_.clear();
    current_ = s.tensor;
    TensorDecl *declared = find_tensor(s.tensor);
    if (declared && declared->role == TensorRole::Input) error_at(s.loc, "cannot assign to input '" + s.tensor + "'");
    if (defined_.count(s.tensor)) error_at(s.loc, "tensor '" + s.tensor + "' is defined twice");
    if (!declared) check_new_name(s.tensor, s.loc);
    if (declared && declared->shape.size() != s.indices.size())
      error_at(s.loc, "'" + s.tensor + "' has " + std::to_string(declared->shape.size()) + " dimensions but " +
                          indices_given(s.indices.size()));

    std::map<std::string, std::pair<int64_t, SourceLoc>> inferred;
    infer_extents(*s.body, &inferred);
    Expr in_range;  // where the ranged reduction variables are inside their ranges
    body_ = s.body.get();
    statement_vars_.clear();
    for (const AstIndexVar &v : s.indices) statement_vars_.push_back(v.name);
    for (const AstIndexVar &v : s.reduce_vars) statement_vars_.push_back(v.name);

    Stage stage;
    stage.output = s.tensor;
    stage.loc = s.loc;
    for (size_t d = 0; d < s.indices.size(); ++d) {
      std::optional<int64_t> known;
      if (declared) known = declared->shape[d];
      stage.spatial.push_back(iter_var(s.indices[d], known, inferred));
    }
    if (!s.reduce.empty()) {
      auto op = parse_reduce_op(s.reduce);
      if (!op) error_at(s.reduce_loc, "unknown reduction '" + s.reduce + "'");
      stage.reduce = *op;
      for (const AstIndexVar &v : s.reduce_vars) {
        if (vars_.count(v.name))
          error_at(v.loc, "reduction variable '" + v.name + "' is already an index of '" + s.tensor + "'");
        stage.reduce_vars.push_back(v.lo ? ranged_var(v, stage.reduce, &in_range)
                                         : iter_var(v, std::nullopt, inferred));
      }
    }

    Expr body = expr(*s.body);
    // A reduction over ranges that depend on the indices runs over their bounding
    // box and adds the identity outside the range: the reads were proven over the
    // box, and the stage stays one rectangular reduction every pass understands.
    if (in_range.defined()) body = Select::make(in_range, body, reduce_identity_of(stage.reduce, body.type()));
    if (body.type() == DType::Bool)
      error_at(s.body->loc, "a tensor cannot hold a comparison; use select(condition, a, b)");
    if (stage.reduce == ReduceOp::LogSumExp && !is_float(body.type()))
      error_at(s.body->loc, std::string("logsumexp takes float values, not ") + dtype_name(body.type()) +
                                "; convert them with f32(...)");
    bool arg = stage.reduce == ReduceOp::ArgMax || stage.reduce == ReduceOp::ArgMin;
    DType type;
    if (declared) {
      type = declared->type;
      if (!arg) {
        if (is_int(type) && is_float(body.type()))
          error_at(s.body->loc, "'" + s.tensor + "' is " + dtype_name(type) + " but the expression is " +
                                    dtype_name(body.type()) + "; convert it with " + dtype_name(type) + "(...)");
        body = cast_to(value_type(type), body);
      } else if (!is_int(type)) {
        error_at(s.reduce_loc, std::string(reduce_op_name(stage.reduce)) + " yields an index, but '" + s.tensor +
                                   "' is " + dtype_name(type));
      }
    } else {
      type = arg ? DType::I64 : stored_type(body, *s.body);
      TensorDecl decl;
      decl.name = s.tensor;
      decl.type = type;
      decl.role = TensorRole::Temp;
      for (const IterVar &v : stage.spatial) decl.shape.push_back(v.extent);
      graph_.tensors.push_back(decl);
      tensor_locs_[s.tensor] = s.loc;
    }
    stage.body = body;
    if (is_int(type)) {
      BoundsScope scope = values_;
      for (const auto &[name, extent] : vars_) scope.vars[name] = Interval::of(0, extent - 1);
      values_.buffer_values[s.tensor] = stage_value_interval(stage, scope);
    }
    graph_.stages.push_back(stage);
    defined_.insert(s.tensor);
  }

  // ---- expressions ----
  // Ranges of the current statement's variables and of integer tensors.
  BoundsScope scope() const {
    BoundsScope s = values_;
    for (const auto &[name, extent] : vars_) s.vars[name] = Interval::of(0, extent - 1);
    return s;
  }

  static Expr fold(BinaryOp op, const Expr &a, const Expr &b) {
    auto x = as_const_int(a), y = as_const_int(b);
    if (x && y && a.type() == b.type()) {
      int64_t v;
      switch (op) {
        case BinaryOp::Add: v = *x + *y; break;
        case BinaryOp::Sub: v = *x - *y; break;
        case BinaryOp::Mul: v = *x * *y; break;
        case BinaryOp::Div:
        case BinaryOp::Mod:
          if (*y == 0) return Binary::make(op, a, b);
          v = op == BinaryOp::Div ? floor_div(*x, *y) : *x - *y * floor_div(*x, *y);
          break;
        default: return Binary::make(op, a, b);
      }
      if (a.type() == DType::I64 || (v >= INT32_MIN && v <= INT32_MAX)) return IntImm::make(a.type(), v);
    }
    if (op == BinaryOp::Add && y == 0) return a;
    if (op == BinaryOp::Add && x == 0) return b;
    if (op == BinaryOp::Sub && y == 0) return a;
    if (op == BinaryOp::Mul && y == 1) return a;
    if (op == BinaryOp::Mul && x == 1) return b;
    return Binary::make(op, a, b);
  }

  Expr numeric(const AstExpr &e, const char *what) {
    Expr v = expr(e);
    if (v.type() == DType::Bool) error_at(e.loc, std::string(what) + " must be a number, not a comparison");
    return v;
  }

  Expr condition(const AstExpr &e) {
    Expr v = expr(e);
    if (v.type() != DType::Bool) error_at(e.loc, "expected a condition (a comparison), found a number");
    return v;
  }

  Expr arithmetic(BinaryOp op, const AstExpr &e) {
    Expr a = numeric(*e.args[0], "an operand");
    Expr b = numeric(*e.args[1], "an operand");
    DType type = common_type(a.type(), b.type());
    a = cast_to(type, a);
    b = cast_to(type, b);
    if ((op == BinaryOp::Div || op == BinaryOp::Mod) && is_int(type)) {
      if (as_const_int(b) == 0) error_at(e.loc, "division by zero");
      Interval divisor = bounds_of(b, scope());
      if (!divisor.bounded || (divisor.lo <= 0 && divisor.hi >= 0))
        error_at(e.args[1]->loc, "the divisor " + print_expr(b) + " may be zero");
    }
    return fold(op, a, b);
  }

  Expr expr(const AstExpr &e) {
    switch (e.kind) {
      case Kind::Int:
        return IntImm::make(e.int_value > INT32_MAX || e.int_value < INT32_MIN ? DType::I64 : DType::I32, e.int_value);
      case Kind::Float: return make_f32(e.float_value);
      case Kind::Name: return name(e);
      case Kind::Unary: {
        if (e.text == "!") return Unary::make(UnaryOp::Not, condition(*e.args[0]));
        Expr a = numeric(*e.args[0], "the operand of '-'");
        if (const IntImm *imm = a.as<IntImm>()) return IntImm::make(a.type(), -imm->value);
        if (const FloatImm *imm = a.as<FloatImm>()) return FloatImm::make(a.type(), -imm->value);
        return Unary::make(UnaryOp::Neg, a);
      }
      case Kind::Binary: return binary(e);
      case Kind::Call: return call(e);
      case Kind::Access: return access(e);
    }
    throw InternalError("unknown syntax node");
  }

  Expr name(const AstExpr &e) {
    if (auto it = vars_.find(e.text); it != vars_.end()) return Var::make(index_type_for(it->second), e.text);
    if (auto it = sizes_.find(e.text); it != sizes_.end())
      return IntImm::make(it->second > INT32_MAX ? DType::I64 : DType::I32, it->second);
    if (auto it = constants_.find(e.text); it != constants_.end()) return make_f32(it->second);
    if (e.text == "inf") return make_f32(INFINITY);
    if (tensor_locs_.count(e.text)) error_at(e.loc, "tensor '" + e.text + "' needs indices: " + e.text + "[...]");
    std::vector<std::string> names;
    for (const auto &[n, extent] : vars_) names.push_back(n);
    error_at(e.loc, "unknown name '" + e.text + "'; index variables here are " + describe(names));
  }

  Expr binary(const AstExpr &e) {
    auto parsed = parse_infix_op(e.text);
    if (!parsed) throw InternalError("unknown operator " + e.text);
    BinaryOp op = *parsed;
    if (op == BinaryOp::And || op == BinaryOp::Or) {
      Expr a = condition(*e.args[0]), b = condition(*e.args[1]);
      return Binary::make(op, a, b);
    }
    return arithmetic(op, e);
  }

  Expr call(const AstExpr &e) {
    auto need = [&](size_t n) {
      if (e.args.size() != n)
        error_at(e.loc, "'" + e.text + "' takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + ", " +
                            std::to_string(e.args.size()) + " given");
    };
    if (e.text == "min" || e.text == "max") {
      need(2);
      return arithmetic(e.text == "min" ? BinaryOp::Min : BinaryOp::Max, e);
    }
    if (e.text == "select") {
      need(3);
      Expr c = condition(*e.args[0]);
      Expr a = numeric(*e.args[1], "a value of select"), b = numeric(*e.args[2], "a value of select");
      DType type = common_type(a.type(), b.type());
      return Select::make(c, cast_to(type, a), cast_to(type, b));
    }
    if (auto type = parse_dtype(e.text); type && *type != DType::F64) {
      need(1);
      if (*type == DType::Bool) error_at(e.loc, "cannot convert to bool; use a comparison");
      // A 16-bit format's value, computed with as f32 (rounded_format in ir/builtins.h).
      if (is_half(*type))
        return Call::make(rounding_to(*type), {cast_to(DType::F32, numeric(*e.args[0], "the rounded value"))});
      return cast_to(*type, numeric(*e.args[0], "the converted value"));
    }
    if (auto fn = find_builtin(e.text)) {
      if (!is_function(*fn))
        error_at(e.loc, e.text +
                            " is the body of a softmax_sum, which the online_attention rewrite writes; a spec "
                            "cannot call it");
      need(static_cast<size_t>(builtin_info(*fn).arity));
      std::vector<Expr> args;
      for (const AstExprPtr &arg : e.args) args.push_back(cast_to(DType::F32, numeric(*arg, "an argument")));
      return Call::make(*fn, args);
    }
    if (parse_reduce_op(e.text))
      error_at(e.loc, "a reduction like '" + e.text + "(k) ...' must come right after '=', over new variables");
    error_at(e.loc, "unknown function '" + e.text + "'");
  }

  Expr access(const AstExpr &e) {
    TensorDecl *t = find_tensor(e.text);
    if (!t && later_.count(e.text))
      error_at(e.loc, "'" + e.text + "' is used before it is defined (on line " + std::to_string(later_[e.text]) + ")");
    if (!t) error_at(e.loc, "unknown tensor '" + e.text + "'");
    if (e.text == current_) error_at(e.loc, "'" + e.text + "' is read in its own definition");
    if (!defined_.count(e.text)) error_at(e.loc, "'" + e.text + "' is used before it is defined");
    if (t->shape.size() != e.args.size())
      error_at(e.loc, "'" + e.text + "' has " + std::to_string(t->shape.size()) + " dimensions but " +
                          indices_given(e.args.size()));
    std::vector<Expr> indices;
    for (const AstExprPtr &index : e.args) {
      Expr i = expr(*index);
      if (!is_int(i.type()))
        error_at(index->loc, std::string("an index must be an integer, not ") + dtype_name(i.type()));
      indices.push_back(i);
    }
    std::optional<double> pad;
    if (e.pad) {
      Expr p = expr(*e.pad);
      const FloatImm *f = p.as<FloatImm>();
      const IntImm *n = p.as<IntImm>();
      if (!f && !n) error_at(e.pad->loc, "the value after 'else' must be a constant");
      if (is_int(t->type) && !n) error_at(e.pad->loc, "'" + e.text + "' holds integers; its pad value must be one");
      pad = f ? f->value : static_cast<double>(n->value);
    } else {
      const BoundsScope ranges = scope();
      for (size_t d = 0; d < indices.size(); ++d) {
        Interval range = bounds_of(indices[d], ranges);
        if (!range.within(0, t->shape[d] - 1)) {
          std::string ranges = range.bounded
                                   ? "ranges over [" + std::to_string(range.lo) + ", " + std::to_string(range.hi) + "]"
                                   : "has no bound the compiler can prove";
          std::string dimension = "dimension " + std::to_string(d);
          std::string extent = " has extent " + std::to_string(t->shape[d]);
          // A bare variable running past the dimension is two shapes that disagree,
          // more often than padding wanted.
          if (const Var *v = indices[d].as<Var>(); v && range.bounded && range.lo == 0)
            error_at(e.args[d]->loc, "shape mismatch: '" + v->name + "' runs over " + std::to_string(range.hi + 1) +
                                         " values but " + dimension + " of '" + e.text + "'" + extent +
                                         "; make the shapes agree, or add 'else VALUE' to read padding past its end");
          error_at(e.args[d]->loc, "index " + print_expr(indices[d]) + " of '" + e.text + "' " + ranges + " but " +
                                       dimension + extent + "; add 'else VALUE' to read padding outside");
        }
      }
    }
    return Load::make(t->type, t->name, indices, pad);
  }
};

}  // namespace

Graph elaborate(const Spec &spec, SizeSet which, const SizeOverrides &overrides) {
  return Elaborator(spec, which, overrides).run();
}

std::map<std::string, std::string> read_sizes_file(const std::string &path) {
  return parse_sizes_file(*read_source_file(path, "sizes file"));
}

std::map<std::string, std::string> parse_sizes_file(const SourceFile &file) {
  std::map<std::string, std::string> sizes;
  std::istringstream lines(file.text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string name, value, extra;
    if (!(words >> name)) continue;
    const std::string at = file.name + ":" + std::to_string(number) + ": error: ";
    if (!(words >> value))
      throw UserError(at + "'" + name + "' has no sizes; a line is NAME SIZES, as in N=1024,D=512");
    if (words >> extra)
      throw UserError(at + "'" + extra + "' after " + name +
                      "'s sizes; a line is NAME SIZES, the sizes without spaces");
    if (!sizes.emplace(name, value).second) throw UserError(at + name + " is given twice");
  }
  return sizes;
}

}  // namespace ks::frontend
