#include "ir/matrix_tile.h"

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

#include "ir/affine.h"
#include "ir/simplify.h"
#include "ir/visitor.h"

namespace ks {

namespace {

constexpr int64_t kWarp = 32;

// The statements from body down to target (target last); empty where it is not there.
bool find_path(const Stmt &s, const BaseStmtNode *target, std::vector<Stmt> *path) {
  if (!s.defined()) return false;
  path->push_back(s);
  if (s.get() == target) return true;
  bool found = false;
  if (const For *f = s.as<For>())
    found = find_path(f->body, target, path);
  else if (const Block *b = s.as<Block>())
    found = find_path(b->body, target, path);
  else if (const Allocate *a = s.as<Allocate>())
    found = find_path(a->body, target, path);
  else if (const AsyncCopy *c = s.as<AsyncCopy>())
    found = find_path(c->body, target, path);
  else if (const LetStmt *l = s.as<LetStmt>())
    found = find_path(l->body, target, path);
  else if (const IfThenElse *i = s.as<IfThenElse>())
    found = find_path(i->then_case, target, path) || find_path(i->else_case, target, path);
  else if (const Seq *q = s.as<Seq>())
    for (const Stmt &t : q->stmts)
      if ((found = find_path(t, target, path))) break;
  if (!found) path->pop_back();
  return found;
}

// Every combination of the loops' values, the last loop fastest.
std::vector<std::map<std::string, int64_t>> points(const std::vector<MatrixTile::Loop> &loops) {
  std::vector<std::map<std::string, int64_t>> out{{}};
  for (const MatrixTile::Loop &l : loops) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &p : out)
      for (int64_t v = 0; v < l.extent; ++v) {
        next.push_back(p);
        next.back()[l.var] = v;
      }
    out = std::move(next);
  }
  return out;
}

// The loops' values at point `index` (the last loop fastest), as expressions of it.
void decode(const std::vector<MatrixTile::Loop> &loops, const Expr &index, std::map<std::string, Expr> *values) {
  int64_t inner = 1;
  for (size_t i = loops.size(); i-- > 0;) {
    Expr digit = inner == 1 ? index : index / make_int(inner, index.type());
    if (i > 0) digit = digit % make_int(loops[i].extent, index.type());
    (*values)[loops[i].var] = digit;
    inner *= loops[i].extent;
  }
}

int64_t product(const std::vector<MatrixTile::Loop> &loops) {
  int64_t p = 1;
  for (const auto &l : loops) p *= l.extent;
  return p;
}

// What the nest inside the loop is, lets expanded, or a reason why it is not one.
struct Nest {
  std::vector<MatrixTile::Loop> loops;
  std::map<std::string, Expr> lets;  // expanded
  std::vector<Expr> guards;          // likewise
  const Store *store = nullptr;
};

std::string walk_nest(const Stmt &s, Nest *nest) {
  if (const For *f = s.as<For>()) {
    if (f->kind != ForKind::Serial && f->kind != ForKind::Unrolled && f->kind != ForKind::Matrix)
      return "it holds a " + std::string(for_kind_name(f->kind)) + " loop " + f->var;
    nest->loops.push_back({f->var, f->extent});
    return walk_nest(f->body, nest);
  }
  if (const LetStmt *l = s.as<LetStmt>()) {
    nest->lets[l->var] = substitute(l->value, nest->lets);
    return walk_nest(l->body, nest);
  }
  if (const IfThenElse *i = s.as<IfThenElse>(); i && !i->else_case.defined()) {
    nest->guards.push_back(substitute(i->condition, nest->lets));
    return walk_nest(i->then_case, nest);
  }
  if (const Store *st = s.as<Store>()) {
    nest->store = st;
    return "";
  }
  return "its body is not one nest of loops around one multiply-add";
}

// The product of `acc[p] = acc[p] + product` (either order of the sum), in f32;
// undefined where the store is not one.
Expr accumulated(const Store &store) {
  const Binary *add = store.value.as<Binary>();
  if (!add || add->op != BinaryOp::Add || store.value.type() != DType::F32) return Expr();
  for (int side = 0; side < 2; ++side) {
    const Load *acc = (side ? add->b : add->a).as<Load>();
    if (!acc || acc->buffer != store.buffer || acc->indices.size() != store.indices.size()) continue;
    bool same = true;
    for (size_t i = 0; same && i < acc->indices.size(); ++i) same = equal(acc->indices[i], store.indices[i]);
    if (same) return side ? add->a : add->b;
  }
  return Expr();
}

// The factors of a product, x / d read as x times 1 / d.
void factors_of(const Expr &e, std::vector<Expr> *out) {
  if (const Binary *b = e.as<Binary>(); b && (b->op == BinaryOp::Mul || b->op == BinaryOp::Div)) {
    factors_of(b->a, out);
    if (b->op == BinaryOp::Mul)
      factors_of(b->b, out);
    else
      out->push_back(Binary::make(BinaryOp::Div, make_f32(1.0), b->b));
    return;
  }
  out->push_back(e);
}

std::set<std::string> vars_of(const std::vector<Expr> &indices) {
  std::set<std::string> out;
  for (const Expr &i : indices)
    for (const std::string &v : vars_in(i)) out.insert(v);
  return out;
}

// The variables the indices of an operand's loads use.
std::set<std::string> index_vars(const Expr &operand) {
  std::set<std::string> out;
  for (const Load *l : collect<Load>(operand)) out.merge(vars_of(l->indices));
  return out;
}

// An operand's buffers, for messages: "a_s", "s_s and lse".
std::string names_of(const Expr &operand) {
  std::vector<std::string> names;
  for (const Load *l : collect<Load>(operand))
    if (std::find(names.begin(), names.end(), l->buffer) == names.end()) names.push_back(l->buffer);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? " and " : "") + names[i];
  return out;
}

// e with the values of `values` put in, its loads' indices simplified, its arithmetic
// as written.
Expr expanded(const Expr &e, const std::map<std::string, Expr> &values) {
  struct SimplifyIndices : IRMutator {
    using IRMutator::visit;
    Expr visit(const Load *n, const Expr &) override {
      std::vector<Expr> indices;
      for (const Expr &i : n->indices) indices.push_back(simplify(i));
      return Load::make(n->type, n->buffer, indices, n->pad);
    }
  } walk;
  return walk.mutate(substitute(e, values));
}

// The rest of matrix_tile's checks with the product's operands as given: a_value the
// rows' (A), b_value the columns' (B), every let expanded (tile.acc_index and
// tile.guard likewise); nullopt with *why where they do not hold.
std::optional<MatrixTile> with_operands(MatrixTile tile, const Expr &a_value, const Expr &b_value,
                                        const std::vector<MatrixTile::Loop> &loops,
                                        const std::vector<MatrixTile::Loop> &around, std::string *why) {
  auto refuse = [&](const std::string &reason) -> std::optional<MatrixTile> {
    *why = reason;
    return std::nullopt;
  };
  tile.a_value = a_value;
  tile.b_value = b_value;
  const std::string a_name = names_of(a_value), b_name = names_of(b_value);

  // The nest's loops, by what reads them.
  const std::set<std::string> in_a = index_vars(a_value), in_b = index_vars(b_value), in_acc = vars_of(tile.acc_index);
  for (const MatrixTile::Loop &l : loops) {
    if (l.extent == 1) continue;
    const bool a = in_a.count(l.var), b = in_b.count(l.var), p = in_acc.count(l.var);
    if (a && b && !p) {
      tile.k.push_back(l);
    } else if (a != b && p) {
      (a ? tile.m : tile.n).push_back(l);
    } else {
      return refuse("its loop " + l.var +
                    (a && b ? " is read by both operands and the accumulator's index"
                     : p    ? " is read by the accumulator's index and neither operand"
                            : " is read by neither operand (" + a_name + ", " + b_name + ")"));
    }
  }
  if (in_acc.count(tile.lane)) return refuse("the accumulator's index depends on the lane");
  if (tile.guard.defined()) {
    std::set<std::string> spatial{tile.lane};
    for (const auto *loops : {&tile.m, &tile.n})
      for (const MatrixTile::Loop &l : *loops) spatial.insert(l.var);
    if (mentions(tile.guard, spatial))
      return refuse("a condition inside it depends on the lane or on the rows or columns (" +
                    std::string("unguarded accumulators are what a tile needs: its panels padded past the edge)"));
  }
  auto take_pair = [](std::vector<MatrixTile::Loop> *loops, std::string *name) {
    for (size_t i = loops->size(); i-- > 0;)
      if ((*loops)[i].extent == 2) {
        *name = (*loops)[i].var;
        loops->erase(loops->begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
    return false;
  };
  if (!take_pair(&tile.m, &tile.h))
    return refuse("none of its loops over the rows of " + a_name +
                  " has 2 iterations (an instruction's rows g and g + 8)");
  if (!take_pair(&tile.n, &tile.c))
    return refuse("none of its loops over the columns of " + b_name +
                  " has 2 iterations (an instruction's columns 2t and 2t + 1)");
  if (product(tile.k) % 8 != 0)
    return refuse("its reduction has " + std::to_string(product(tile.k)) +
                  " points, not a multiple of the instruction's 8");

  // The lanes' rows and columns, at four points of the loops around. Every loop is a
  // slot of the compiled indices' values.
  std::vector<std::map<std::string, int64_t>> samples(4);
  std::mt19937_64 rng(0x6d6d61);  // fixed: the same verdict every time
  for (const MatrixTile::Loop &l : around) {
    samples[0][l.var] = 0;
    samples[1][l.var] = l.extent - 1;
    for (int s = 2; s < 4; ++s) samples[s][l.var] = std::uniform_int_distribution<int64_t>(0, l.extent - 1)(rng);
  }
  std::vector<MatrixTile::Loop> rows = tile.m, cols = tile.n;
  rows.push_back({tile.h, 2});
  cols.push_back({tile.c, 2});
  std::vector<std::string> vars{tile.lane};
  for (const auto &loops : {around, rows, cols, tile.k})
    for (const MatrixTile::Loop &l : loops) vars.push_back(l.var);
  std::map<std::string, size_t> slot;
  for (size_t i = 0; i < vars.size(); ++i) slot[vars[i]] = i;
  auto compiled = [&](const std::vector<Expr> &indices) -> std::optional<std::vector<IndexProgram>> {
    std::vector<IndexProgram> out;
    for (const Expr &i : indices) {
      std::optional<IndexProgram> p = IndexProgram::compile(i, vars);
      if (!p) return std::nullopt;
      out.push_back(std::move(*p));
    }
    return out;
  };
  std::vector<int64_t> values(vars.size(), 0);
  auto evaluated = [&](const std::vector<IndexProgram> &indices) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> out;
    for (const IndexProgram &i : indices) {
      std::optional<int64_t> v = i(values);
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  };
  auto set = [&](const std::map<std::string, int64_t> &point) {
    for (const auto &[v, x] : point) values[slot.at(v)] = x;
  };
  const auto row_points = points(rows), col_points = points(cols), k_points = points(tile.k);
  struct Read {
    std::string side;
    std::vector<IndexProgram> indices;
    int lane_class;
  };
  std::vector<Read> reads;  // each load of an operand, its side
  for (const auto &[operand, lane_class] : {std::pair{a_value, 0}, std::pair{b_value, 1}})
    for (const Load *l : collect<Load>(operand)) {
      auto indices = compiled(l->indices);
      if (!indices) return refuse("an index of " + l->buffer + " is not integer arithmetic of the loops");
      reads.push_back({l->buffer, std::move(*indices), lane_class});
    }
  auto acc_index = compiled(tile.acc_index);
  if (!acc_index) return refuse("an index of " + tile.acc + " is not integer arithmetic of the loops");
  for (const auto &sample : samples) {
    set(sample);
    for (const Read &r : reads) {
      const auto &free_points = r.lane_class == 0 ? row_points : col_points;
      for (const auto &fp : free_points)
        for (const auto &kp : k_points) {
          set(fp);
          set(kp);
          for (int64_t lane = 0; lane < kWarp; ++lane) {
            // The lane that must read the same element: same g for A, same t for B.
            values[0] = lane;
            auto at = evaluated(r.indices);
            values[0] = r.lane_class == 0 ? lane / 4 * 4 : lane % 4;
            auto same = evaluated(r.indices);
            if (!at || !same) return refuse("an index of " + r.side + " is not integer arithmetic of the loops");
            if (*at != *same)
              return refuse("lanes " + std::to_string(lane) + " and " + std::to_string(values[0]) +
                            " read different elements of " + r.side + " where the instruction's layout has them " +
                            (r.lane_class == 0 ? "share a row (g = lane / 4)" : "share a column (t = lane % 4)"));
          }
        }
    }
    std::set<std::vector<int64_t>> seen;
    for (const auto &rp : row_points)
      for (const auto &cp : col_points) {
        set(rp);
        set(cp);
        auto at = evaluated(*acc_index);
        if (!at) return refuse("an index of " + tile.acc + " is not integer arithmetic of the loops");
        if (!seen.insert(*at).second)
          return refuse("two of its rows and columns accumulate into one element of " + tile.acc);
      }
  }
  return tile;
}

}  // namespace

bool has_matrix_loop(const Stmt &body) {
  const std::vector<const For *> loops = collect<For>(body);
  return std::any_of(loops.begin(), loops.end(), [](const For *f) { return f->kind == ForKind::Matrix; });
}

Expr MatrixTile::guarded(const Expr &load, const std::map<std::string, Expr> &values) const {
  const Expr value = simplify(substitute(load, values));
  if (!guard.defined()) return value;
  return simplify(Select::make(substitute(guard, values), value, make_f32(0.0)));
}

int64_t MatrixTile::steps() const { return product(k) / step_points(); }
int64_t MatrixTile::m_tiles() const { return product(m); }
int64_t MatrixTile::n_tiles() const { return product(n); }

const char *precision_name(Precision precision) { return precision == Precision::F32 ? "fp32" : "tf32"; }

std::optional<Precision> parse_precision(const std::string &name) {
  for (Precision p : {Precision::F32, Precision::TF32})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

Expr MatrixTile::a_fragment(const Expr &lane_value, const Expr &tile, const Expr &q, const Expr &step) const {
  const DType t = lane_value.type();
  auto c = [&](int64_t v) { return make_int(v, t); };
  const bool wide = step_points() == 16;
  std::map<std::string, Expr> values{{lane, lane_value}, {h, wide ? q / c(2) % c(2) : q % c(2)}};
  decode(m, tile, &values);
  // k slot t + 4 (q / 2) of the step is k point 2t + q / 2; with 16-bit operands,
  // slot 2t + q % 2 + 8 (q / 4) is point 4t + q % 2 + 2 (q / 4).
  const Expr point = wide ? lane_value % c(4) * c(4) + q % c(2) + q / c(4) * c(2) : lane_value % c(4) * c(2) + q / c(2);
  decode(k, step * c(step_points()) + point, &values);
  return guarded(a_value, values);
}

Expr MatrixTile::b_fragment(const Expr &lane_value, const Expr &tile, const Expr &q, const Expr &step) const {
  const DType t = lane_value.type();
  const Expr g = lane_value / make_int(4, t);
  // The lane whose column 2t + c is g: t = g / 2, c = g % 2 (B's index uses no other digit).
  std::map<std::string, Expr> values{{lane, g / make_int(2, t)}, {c, g % make_int(2, t)}};
  decode(n, tile, &values);
  // Slot t + 4q is point 2t + q; with 16-bit operands, slot 2t + q % 2 + 8 (q / 2)
  // is point 4t + q.
  const int64_t per_lane = step_points() == 16 ? 4 : 2;
  decode(k, step * make_int(step_points(), t) + lane_value % make_int(4, t) * make_int(per_lane, t) + q, &values);
  return guarded(b_value, values);
}

Expr MatrixTile::a_at(int64_t tile, int64_t row, int64_t point, const Expr &step) const {
  const DType t = step.type();
  std::map<std::string, Expr> values = point_values(point, step);
  // A's indices use the lane through g alone: lane 4g reads row g + 8h.
  values[lane] = make_int(row % 8 * 4, t);
  values[h] = make_int(row / 8, t);
  decode(m, make_int(tile, t), &values);
  return simplify(substitute(a_value, values));
}

Expr MatrixTile::b_at(int64_t tile, int64_t point, int64_t column, const Expr &step) const {
  const DType t = step.type();
  std::map<std::string, Expr> values = point_values(point, step);
  // B's use it through t alone: lane t reads columns 2t and 2t + 1.
  values[lane] = make_int(column / 2, t);
  values[c] = make_int(column % 2, t);
  decode(n, make_int(tile, t), &values);
  return simplify(substitute(b_value, values));
}

Expr MatrixTile::guard_at(int64_t point, const Expr &step) const {
  return guard.defined() ? simplify(substitute(guard, point_values(point, step))) : Expr();
}

std::map<std::string, Expr> MatrixTile::point_values(int64_t point, const Expr &step) const {
  std::map<std::string, Expr> values;
  decode(k, step * make_int(step_points(), step.type()) + make_int(point, step.type()), &values);
  return values;
}

std::map<std::string, Expr> MatrixTile::register_values(int64_t mt, int64_t nt, int r) const {
  std::map<std::string, Expr> values{{h, make_int(r / 2)}, {c, make_int(r % 2)}};
  decode(m, make_int(mt), &values);
  decode(n, make_int(nt), &values);
  return values;
}

std::vector<Expr> MatrixTile::acc_at(int64_t mt, int64_t nt, int r) const {
  const std::map<std::string, Expr> values = register_values(mt, nt, r);
  std::vector<Expr> out;
  for (const Expr &i : acc_index) out.push_back(simplify(substitute(i, values)));
  return out;
}

Expr MatrixTile::scale_at(int64_t mt, int64_t nt, int r) const {
  return scale.defined() ? simplify(substitute(scale, register_values(mt, nt, r))) : Expr();
}

namespace {

std::optional<MatrixTile> form_of(const Stmt &kernel_body, const For &loop, std::string *reason) {
  auto refuse = [&](const std::string &why) -> std::optional<MatrixTile> {
    *reason = "loop " + loop.var + " is not a warp's matrix tile: " + why;
    return std::nullopt;
  };
  std::vector<Stmt> path;
  if (!find_path(kernel_body, &loop, &path)) return refuse("it is not in the kernel");
  const Stmt self = path.back();
  path.pop_back();

  // The loops and lets around the nest; the lane; no condition between lane and nest
  // that may differ between a warp's lanes (one of the group's and serial loops'
  // variables alone, skip_masked_steps's, holds for all of them or none).
  MatrixTile tile;
  std::vector<MatrixTile::Loop> around;
  std::map<std::string, Expr> lets;
  std::set<std::string> private_buffers, work_items;
  for (const Stmt &s : path) {
    if (const For *f = s.as<For>()) {
      if (is_local(f->kind)) work_items.insert(f->var);
      if (f->kind == ForKind::LocalX) {
        if (f->extent != kWarp)
          return refuse("the kernel's local.x loop " + f->var + " has " + std::to_string(f->extent) +
                        " work-items; a matrix tile's lanes are a warp's 32, along local.x");
        tile.lane = f->var;
      } else {
        around.push_back({f->var, f->extent});
      }
    } else if (const LetStmt *l = s.as<LetStmt>()) {
      lets[l->var] = substitute(l->value, lets);
    } else if (const Allocate *a = s.as<Allocate>()) {
      if (a->scope == MemoryScope::Private) private_buffers.insert(a->buffer);
    } else if (const IfThenElse *c = s.as<IfThenElse>(); c && !tile.lane.empty()) {
      const Expr condition = substitute(c->condition, lets);
      if (!collect<Load>(condition).empty() || mentions(condition, work_items))
        return refuse(
            "a condition that may differ between the lanes encloses it, and every lane of a warp must run the "
            "instruction");
    }
  }
  if (tile.lane.empty()) return refuse("no local.x loop of 32 work-items (a warp's lanes) encloses it");

  Nest nest;
  nest.lets = lets;
  std::string why = walk_nest(self, &nest);
  if (!why.empty()) return refuse(why);
  const Store &store = *nest.store;
  if (!private_buffers.count(store.buffer))
    return refuse("it accumulates into " + store.buffer + ", not a private accumulator (cache_write ... private)");
  const Expr product = accumulated(store);
  std::vector<Expr> factors;
  if (product.defined()) factors_of(product, &factors);
  std::vector<size_t> operands;  // the factors that may be A or B: f32 and reading memory
  for (size_t i = 0; i < factors.size(); ++i)
    if (factors[i].type() == DType::F32 && !collect<Load>(factors[i]).empty()) operands.push_back(i);
  if (operands.size() < 2)
    return refuse(
        "its store is not acc[p] = acc[p] + a[..] * b[..] in f32 (times factors the reduction does not read)");
  tile.acc = store.buffer;
  // Every let expanded; loops of one iteration are their variable at 0 (a split that
  // left one behind).
  std::map<std::string, Expr> values = nest.lets;
  for (const MatrixTile::Loop &l : nest.loops)
    if (l.extent == 1) values[l.var] = make_int(0, index_type_for(1));
  for (auto &[name, value] : values) value = substitute(value, values);
  auto expand = [&](const std::vector<Expr> &indices) {
    std::vector<Expr> out;
    for (const Expr &i : indices) out.push_back(simplify(substitute(i, values)));
    return out;
  };
  tile.acc_index = expand(store.indices);
  for (const Expr &g : nest.guards) tile.guard = tile.guard.defined() ? (tile.guard && g) : g;
  if (tile.guard.defined()) tile.guard = substitute(tile.guard, values);
  // Each pair of the candidates as the operands, the rows' operand first, either way
  // round; the other factors are the scale, which no k loop may read. Pairs of plain
  // loads first, so that a refusal names the pair a reader would (e and v of
  // e / total * v, not e and 1 / total).
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t x = 0; x < operands.size(); ++x)
    for (size_t y = x + 1; y < operands.size(); ++y) pairs.emplace_back(operands[x], operands[y]);
  auto loads = [&](const std::pair<size_t, size_t> &r) {
    return (factors[r.first].as<Load>() ? 1 : 0) + (factors[r.second].as<Load>() ? 1 : 0);
  };
  std::stable_sort(
      pairs.begin(), pairs.end(),
      [&](const std::pair<size_t, size_t> &p, const std::pair<size_t, size_t> &q) { return loads(p) > loads(q); });
  std::vector<Expr> factor_values;  // each factor with every let expanded, once
  for (const Expr &f : factors) factor_values.push_back(expanded(f, values));
  std::string first;
  for (const auto &[x, y] : pairs) {
    MatrixTile pair = tile;
    pair.scale = Expr();
    for (size_t i = 0; i < factors.size(); ++i)
      if (i != x && i != y)
        pair.scale =
            pair.scale.defined() ? Binary::make(BinaryOp::Mul, pair.scale, factor_values[i]) : factor_values[i];
    for (int order = 0; order < 2; ++order) {
      const size_t a = order ? y : x, b = order ? x : y;
      pair.a = factors[a];
      pair.b = factors[b];
      std::string why;
      std::optional<MatrixTile> t = with_operands(pair, factor_values[a], factor_values[b], nest.loops, around, &why);
      std::string along;  // a k loop the scale reads
      if (t && t->scale.defined())
        for (const MatrixTile::Loop &k : t->k)
          if (along.empty() && mentions(t->scale, {k.var})) along = k.var;
      if (t && along.empty()) return t;
      if (!along.empty())
        why = "its product's other factors vary along the reduction's loop " + along +
              " (the matrix unit sums a[..] * b[..] alone)";
      if (first.empty()) first = why;
    }
  }
  return refuse(first);
}

}  // namespace

// A pure function of two immutable nodes, asked again and again of the same ones: the
// verifier checks every matrix loop after every schedule step, and most steps leave
// the kernel that holds it as it was (the same nodes); then the printer asks twice.
// The last answers are kept, each holding its kernel's body, so that no key's node is
// freed and its address reused while its answer is kept.
std::optional<MatrixTile> matrix_tile(const Stmt &kernel_body, const For &loop, std::string *reason) {
  struct Answer {
    Stmt body;
    const For *loop;
    std::optional<MatrixTile> tile;
    std::string reason;
  };
  constexpr size_t kKept = 16;
  thread_local std::deque<Answer> kept;
  for (const Answer &a : kept)
    if (a.body.same_as(kernel_body) && a.loop == &loop) {
      if (!a.tile) *reason = a.reason;
      return a.tile;
    }
  Answer a{kernel_body, &loop, std::nullopt, ""};
  a.tile = form_of(kernel_body, loop, &a.reason);
  if (!a.tile) *reason = a.reason;
  kept.push_front(a);
  if (kept.size() > kKept) kept.pop_back();
  return a.tile;
}

namespace {

// The 16-bit format every value of an expression is exact in: F16 or BF16, F32 where
// none is known (a value of f32 arithmetic, or of a buffer filled otherwise), F64 for
// "any" (zeros). A buffer the kernel allocates holds its stores' values, followed
// through `depth` copies.
struct ExactFormat {
  const std::function<DType(const std::string &)> &storage;
  std::set<std::string> allocated;
  std::multimap<std::string, Expr> stored;  // each allocated buffer's stored values

  ExactFormat(const Stmt &body, const std::function<DType(const std::string &)> &storage) : storage(storage) {
    for (const Allocate *a : collect<Allocate>(body)) allocated.insert(a->buffer);
    for (const Store *s : collect<Store>(body))
      if (allocated.count(s->buffer)) stored.emplace(s->buffer, s->value);
  }
  static DType meet(DType a, DType b) { return a == DType::F64 ? b : b == DType::F64 || a == b ? a : DType::F32; }
  DType of(const Expr &e, int depth) const {
    if (const FloatImm *f = e.as<FloatImm>()) return f->value == 0 ? DType::F64 : DType::F32;
    if (const Select *s = e.as<Select>()) return meet(of(s->true_value, depth), of(s->false_value, depth));
    if (const Call *c = e.as<Call>())  // bf16(x): a value of the format whatever x is
      if (std::optional<DType> format = rounded_format(c->fn)) return *format;
    const Load *l = e.as<Load>();
    if (!l || (l->pad && *l->pad != 0)) return DType::F32;
    const DType type = storage(l->buffer);
    if (is_half(type)) return type;
    if (type != DType::F32 || !allocated.count(l->buffer) || depth == 0) return DType::F32;
    DType format = DType::F64;
    auto [first, last] = stored.equal_range(l->buffer);
    for (auto it = first; it != last; ++it) format = meet(format, of(it->second, depth - 1));
    return format;
  }
};

}  // namespace

MatrixTile with_half_operands(MatrixTile tile, const Stmt &kernel_body,
                              const std::function<DType(const std::string &)> &storage) {
  const ExactFormat exact(kernel_body, storage);
  const DType a = exact.of(tile.a_value, 3), b = exact.of(tile.b_value, 3);
  tile.operands = a == b && is_half(a) && product(tile.k) % 16 == 0 ? a : DType::F32;
  return tile;
}

}  // namespace ks
