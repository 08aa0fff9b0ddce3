#include "evolve/search/sketch.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "evolve/search/genome.h"
#include "ir/cost.h"
#include "ir/diagnostic.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "passes/canonical.h"
#include "passes/graph_edit.h"
#include "passes/loops.h"
#include "passes/lower.h"
#include "passes/names.h"
#include "passes/primitives.h"

namespace ks {

const char *stage_pattern_name(StagePattern pattern) {
  switch (pattern) {
    case StagePattern::Elementwise: return "elementwise";
    case StagePattern::Contraction: return "contraction";
    case StagePattern::RowReduction: return "row";
    case StagePattern::ColumnReduction: return "column";
    case StagePattern::RunningTotal: return "scan";
    case StagePattern::Attention: return "attention";
  }
  return "?";
}

namespace {

// One load of a stage's body: the buffer, and the variables each index uses.
struct Access {
  std::string buffer;
  std::vector<std::set<std::string>> index_vars;
  // Whether the contiguous (last) index moves with var.
  bool runs_along(const std::string &var) const { return !index_vars.empty() && index_vars.back().count(var); }
  // Whether any index moves with var.
  bool uses(const std::string &var) const {
    for (const auto &vars : index_vars)
      if (vars.count(var)) return true;
    return false;
  }
};

std::vector<Access> loads_of(const Expr &body) {
  struct Loads : IRVisitor {
    std::vector<Access> out;
    using IRVisitor::visit;
    void visit(const Load *n) override {
      Access a{n->buffer, {}};
      for (const Expr &i : n->indices) a.index_vars.push_back(vars_in(i));
      out.push_back(a);
      IRVisitor::visit(n);
    }
  } loads;
  loads.dispatch(body);
  return loads.out;
}

int64_t extent_product(const std::vector<IterVar> &vars) {
  int64_t n = 1;
  for (const IterVar &v : vars) n *= v.extent;
  return n;
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

bool chance(Rng &rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

// Powers of two in [lo, hi] (lo itself when the range is empty).
std::vector<int64_t> powers(int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= hi; p *= 2)
    if (p >= lo) out.push_back(p);
  if (out.empty()) out.push_back(lo);
  return out;
}

// Work-group sizes worth drawing for `work` items of parallel work, from `least` up
// to the device's limit, and no more than the work needs. On a GPU the least is 32
// (a warp, the smallest group that fills a SIMD unit); on a CPU it is 1: PoCL runs a
// group's work-items as a loop, vectorised across them, and a group of one
// work-item per row (no barriers) is often its fastest.
std::vector<int64_t> group_sizes(int64_t least, int64_t max_group, int64_t work) {
  const int64_t hi = std::min<int64_t>({max_group, 1024, std::max<int64_t>(least, pow2_at_least(work))});
  return powers(std::min<int64_t>(least, hi), hi);
}

const ForKind kGroups[] = {ForKind::GroupX, ForKind::GroupY, ForKind::GroupZ};

// The program and schedule as the sketch's steps leave them. A step the IR refuses
// changes neither; a rule that cannot finish rolls back to its mark.
class Builder {
 public:
  // max_copies: the unrolling budget of the device (a CPU's is smaller: compile time).
  Builder(Program program, int64_t max_copies) : program_(std::move(program)), max_copies_(max_copies) {}

  bool apply(const Primitive &p) {
    Program next;
    try {
      next = apply_primitive(program_, p);
    } catch (const UserError &) {
      return false;
    }
    if (p.kind == PrimitiveKind::Unroll && unrolled_copies(next) > max_copies_) return false;
    program_ = std::move(next);
    schedule_.steps.push_back(p);
    return true;
  }
  bool split(const std::string &stage, const std::string &loop, int64_t factor, const std::string &outer,
             const std::string &inner) {
    Primitive p = make(PrimitiveKind::Split, stage, {loop});
    p.factors = {factor};
    p.results = {outer, inner};
    return apply(p);
  }
  bool bind(const std::string &stage, const std::string &loop, ForKind kind) {
    Primitive p = make(PrimitiveKind::Bind, stage, {loop});
    p.binding = kind;
    return apply(p);
  }
  bool fuse(const std::string &stage, const std::vector<std::string> &loops, const std::string &fused) {
    Primitive p = make(PrimitiveKind::Fuse, stage, loops);
    p.results = {fused};
    return apply(p);
  }
  bool cache_read(const std::string &stage, const std::string &loop, const std::string &buffer, MemoryScope memory,
                  const std::string &cache) {
    Primitive p = make(PrimitiveKind::CacheRead, stage, {loop});
    p.buffer = buffer;
    p.memory = memory;
    p.results = {cache};
    return apply(p);
  }
  // A step named by its kind and loops alone (reorder, unroll, vectorize,
  // cache_write to private memory).
  bool step(PrimitiveKind kind, const std::string &stage, const std::vector<std::string> &loops) {
    return apply(make(kind, stage, loops));
  }
  // pad (one factor), transpose or prefetch (none) of a local buffer.
  bool layout(PrimitiveKind kind, const std::string &stage, const std::string &buffer, std::vector<int64_t> factors) {
    Primitive p = make(kind, stage, {});
    p.buffer = buffer;
    p.factors = std::move(factors);
    return apply(p);
  }
  bool async_copy(const std::string &stage, const std::string &loop, int64_t slots) {
    Primitive p = make(PrimitiveKind::AsyncCopy, stage, {loop});
    p.factors = {slots};
    return apply(p);
  }
  bool compute_at(const std::string &stage, const std::string &consumer, const std::string &loop) {
    Primitive p = make(PrimitiveKind::ComputeAt, stage, {loop});
    p.consumer = consumer;
    return apply(p);
  }

  // A name no kernel or buffer uses, nor any name handed out before.
  std::string fresh(const std::string &base) {
    NameSet used = program_names(program_);
    for (const std::string &n : handed_out_) used.reserve(n);
    const std::string n = used.fresh(base);
    handed_out_.insert(n);
    return n;
  }

  // The names of the stage's loops enclosing its block (outer) or inside it.
  std::vector<std::string> loops(const std::string &stage, bool inner = false) const {
    std::string reason;
    std::optional<StageLoops> l = stage_loops(program_, stage, &reason);
    std::vector<std::string> out;
    if (l)
      for (const For *f : inner ? l->inner : l->outer) out.push_back(f->var);
    return out;
  }
  int64_t extent(const std::string &stage, const std::string &loop) const {
    std::string reason;
    std::optional<StageLoops> l = stage_loops(program_, stage, &reason);
    const For *f = l ? l->find(loop) : nullptr;
    return f ? f->extent : 0;
  }

  struct Mark {
    Program program;
    size_t steps;
  };
  Mark mark() const { return {program_, schedule_.steps.size()}; }
  void rollback(const Mark &m) {
    program_ = m.program;
    schedule_.steps.resize(m.steps);
  }
  const Schedule &schedule() const { return schedule_; }
  int64_t max_copies() const { return max_copies_; }

 private:
  static Primitive make(PrimitiveKind kind, const std::string &stage, std::vector<std::string> loops) {
    Primitive p;
    p.kind = kind;
    p.stage = stage;
    p.loops = std::move(loops);
    return p;
  }
  Program program_;
  int64_t max_copies_;
  Schedule schedule_;
  std::set<std::string> handed_out_;
};

// The inputs and temporaries a stage loads, largest first (the operands worth a copy
// in faster memory).
std::vector<std::string> operands(const Graph &graph, const Stage &stage) {
  std::vector<std::string> out;
  for (const Access &a : loads_of(stage.body))
    if (a.buffer != stage.output && std::find(out.begin(), out.end(), a.buffer) == out.end()) out.push_back(a.buffer);
  std::stable_sort(out.begin(), out.end(), [&](const std::string &x, const std::string &y) {
    return graph.find_tensor(x)->numel() > graph.find_tensor(y)->numel();
  });
  return out;
}

// Binds a stage's row loops (outermost first) to work-groups: the innermost row to
// group.x, so that neighbouring groups take neighbouring rows. Outermost first: a
// bound loop may not lie inside a serial one.
bool bind_rows(Builder &b, const std::string &stage, const std::vector<std::string> &rows) {
  if (rows.size() > 3) return false;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!b.bind(stage, rows[i], kGroups[rows.size() - 1 - i])) return false;
  return true;
}

// `cross_reduce stage.loop threads`.
bool cross_reduce(Builder &b, const std::string &stage, const std::string &loop, int64_t threads) {
  Primitive p;
  p.kind = PrimitiveKind::CrossReduce;
  p.stage = stage;
  p.loops = {loop};
  p.factors = {threads};
  p.results = {b.fresh("t")};
  return b.apply(p);
}

// The cross_reduce of a row reduction with T work-items per group; its reduction
// loops fused first (a group norm's channels, height and width), its chunk loop
// unrolled or not.
bool cross_reduce_rows(Builder &b, const std::string &stage, int64_t threads, Rng &rng) {
  std::vector<std::string> rows = b.loops(stage);
  if (rows.size() > 3) {
    const std::string fused = b.fresh("rows");
    if (!b.fuse(stage, rows, fused)) return false;
    rows = {fused};
  }
  if (!bind_rows(b, stage, rows)) return false;
  if (threads == 1) return !rows.empty();  // a work-item per row: the rows bound, the reduction serial
  std::vector<std::string> inner = b.loops(stage, true);
  if (inner.empty()) return false;
  std::string loop = inner.back();
  if (inner.size() > 1) {
    const std::string fused = b.fresh("r");
    if (b.fuse(stage, inner, fused)) loop = fused;
  }
  if (!cross_reduce(b, stage, loop, threads)) return false;
  if (chance(rng, 0.6))
    for (const std::string &l : b.loops(stage, true))
      if (l != loop) b.step(PrimitiveKind::Unroll, stage, {l});  // refused where the chunk loop is long
  return true;
}

struct Drawer {
  const Graph &graph;
  int64_t least_group, max_group;
  bool async_copies;  // the device has cp.async (runtime::DeviceInfo)
  bool matrix_units;  // and matrix units kernelsmith writes for (mma.sync; Vulkan's cooperative matrices)
  bool f16_matrices;  // which take f16 operands alone (cooperative matrices)
  Rng &rng;
  Builder b;
  std::vector<std::string> notes;
  std::map<std::string, StagePattern> pattern;
  std::set<std::string> done;
  std::set<std::string> inlined;  // stages inlined into their readers

  // e with the inlined stages' bodies in place of their loads: what a kernel computes.
  Expr as_computed(const Expr &e) const {
    return replace_loads(e, [&](const Load &load, const Expr &) -> Expr {
      if (!inlined.count(load.buffer)) return Expr();
      return as_computed(instantiate(graph.stages[*stage_index(graph, load.buffer)], load.indices));
    });
  }

  // The loops fused (where several), split by a group size drawn for `work` work-items,
  // bound to group.x and local.x: the local loop, or "" where a step is refused (the
  // caller rolls back).
  std::string bind_flat(const std::string &s, const std::vector<std::string> &loops, int64_t work, int64_t *threads) {
    std::string all = loops[0];
    if (loops.size() > 1 && !b.fuse(s, loops, all = b.fresh("f"))) return "";
    *threads = pick(group_sizes(least_group, max_group, work), rng);
    const std::string g = b.fresh("g"), l = b.fresh("l");
    if (!b.split(s, all, *threads, g, l) || !b.bind(s, g, ForKind::GroupX) || !b.bind(s, l, ForKind::LocalX)) return "";
    return l;
  }

  // With probability p, the innermost reduction loop split by 2, 4 or 8 and its
  // steps unrolled: the note's words, or "" (nothing changed).
  std::string unroll_reduction(const Stage &stage, double p) {
    if (!chance(rng, p)) return "";
    const IterVar &r = stage.reduce_vars.back();
    const int64_t u = pick(std::vector<int64_t>{2, 4, 8}, rng);
    const std::string ro = b.fresh(r.name + "o"), ri = b.fresh(r.name + "i");
    Builder::Mark before = b.mark();
    if (r.extent >= u && b.split(stage.output, r.name, u, ro, ri) && b.step(PrimitiveKind::Unroll, stage.output, {ri}))
      return ", reduction unrolled by " + std::to_string(u);
    b.rollback(before);
    return "";
  }

  // A work-item per output: the spatial loops fused and split by the group size;
  // the innermost loop vectorised (elementwise stages) or the reduction unrolled.
  void per_output(const Stage &stage, bool try_vector = true) {
    const std::string &s = stage.output;
    Builder::Mark mark = b.mark();
    std::vector<std::string> loops = b.loops(s);
    if (loops.empty()) return;  // a scalar: the default binding
    std::string vector_loop;
    int64_t width = 0;
    if (try_vector && stage.reduce == ReduceOp::None && chance(rng, 0.35)) {
      const int64_t lanes = pick(std::vector<int64_t>{2, 4, 8}, rng);
      const std::string outer = b.fresh(loops.back() + "o"), inner = b.fresh(loops.back() + "v");
      if (b.extent(s, loops.back()) % lanes == 0 && b.split(s, loops.back(), lanes, outer, inner)) {
        loops.back() = outer;
        vector_loop = inner;
        width = lanes;
      }
    }
    int64_t threads = 0;
    if (bind_flat(s, loops, extent_product(stage.spatial) / std::max<int64_t>(1, width), &threads).empty())
      return b.rollback(mark);
    std::string note = s + ": a work-item per output (" + std::to_string(threads);
    if (!vector_loop.empty()) {
      if (!b.step(PrimitiveKind::Vectorize, s, {vector_loop})) {
        b.rollback(mark);
        return per_output(stage, false);
      }
      note += ", float" + std::to_string(width);
    }
    if (stage.reduce != ReduceOp::None) note += unroll_reduction(stage, 0.6);
    notes.push_back(note + ")");
  }

  // A reduction along a strided dimension (sum_dim's middle one): each work-item
  // sums w neighbouring columns at once, as one vector (a row of the input read as
  // float4), its w sums in registers; the reduction's steps unrolled so that loads
  // stay in flight. A last work-item past the edge goes lane by lane. The
  // hand-written sum_dim.sched, which the search had not found (bench/results.md).
  bool columns(const Stage &stage) {
    const std::string &s = stage.output;
    Builder::Mark mark = b.mark();
    std::vector<std::string> loops = b.loops(s);
    if (loops.empty() || stage.reduce_vars.empty()) return false;
    const int64_t lanes = pick(std::vector<int64_t>{2, 4, 4, 8}, rng);
    const std::string jo = b.fresh(loops.back() + "o"), jv = b.fresh(loops.back() + "v");
    if (b.extent(s, loops.back()) < lanes || !b.split(s, loops.back(), lanes, jo, jv)) return false;
    loops.back() = jo;
    int64_t threads = 0;
    const std::string l = bind_flat(s, loops, extent_product(stage.spatial) / lanes, &threads);
    if (l.empty() || !b.step(PrimitiveKind::CacheWrite, s, {l})) return b.rollback(mark), false;
    std::string note = s + ": a work-item per " + std::to_string(lanes) + " columns (" + std::to_string(threads) +
                       "), float" + std::to_string(lanes) + " sums in registers" + unroll_reduction(stage, 0.8);
    for (const std::string &v : {jv, jv + "_init", jv + "_out"})
      if (!b.step(PrimitiveKind::Vectorize, s, {v})) return b.rollback(mark), false;
    notes.push_back(note);
    return true;
  }

  // A tile's loops ordered: the stage's loops other than the tiled ones outermost,
  // fused and bound to group.z, then the tile's levels (the empty names skipped).
  bool tile_order(const std::string &s, const std::vector<std::string> &loops, const std::set<std::string> &tiled,
                  const std::vector<std::string> &levels) {
    std::vector<std::string> others, order;
    for (const std::string &l : loops)
      if (!tiled.count(l)) others.push_back(l);
    order = others;
    for (const std::string &l : levels)
      if (!l.empty()) order.push_back(l);
    if (!b.step(PrimitiveKind::Reorder, s, order)) return false;
    if (others.empty()) return true;
    std::string z = others[0];
    if (others.size() > 1 && !b.fuse(s, others, z = b.fresh("z"))) return false;
    return b.bind(s, z, ForKind::GroupZ);
  }

  // The shape of a tiled pair of loops: work-items (t), outputs per work-item (p) and
  // the chunks those come in (c), along each.
  struct TileShape {
    int64_t ta = 1, tb = 1, pa = 1, pb = 1, ca = 1, cb = 1;
  };
  // A tiled loop's levels: loop = o * (t * p) + reg * (t * c) + th * c + lane; reg
  // and lane empty where there is no such level.
  struct Levels {
    std::string o, th, reg, lane;
  };

  // The loop tiled beside the innermost (lb): one of at least 2 iterations. The tile
  // pays where each operand is reused: the other loop (lb) reuses the operands that
  // do not vary along it, so la is mostly a loop along which an operand that varies
  // with lb does not vary (matmul's i for b; a conv's output channels for x, not its
  // batch or rows, along which x varies like w does not). "" where none has 2.
  std::string reusing_loop(const std::string &s, const std::vector<std::string> &loops,
                           const std::vector<Access> &reads) {
    const std::string &lb = loops.back();
    std::vector<std::string> candidates;
    for (size_t i = 0; i + 1 < loops.size(); ++i)
      if (b.extent(s, loops[i]) >= 2) candidates.push_back(loops[i]);
    if (candidates.empty()) return "";
    std::vector<std::string> reusing;
    for (const std::string &l : candidates) {
      bool reuses = false;
      for (const Access &a : reads) reuses = reuses || (a.uses(lb) && !a.uses(l));
      if (reuses) reusing.push_back(l);
    }
    const std::vector<std::string> &pool = !reusing.empty() && chance(rng, 0.85) ? reusing : candidates;
    return chance(rng, 0.6) ? pool.back() : pick(pool, rng);
  }

  // Work-items along each tiled loop: the inner one 4 to 32 (coalesced rows), 32 or
  // more in a group where the loops are that long (a warp at least), within the
  // device's limit; outputs per work-item: at most 64 accumulators in registers.
  TileShape tile_shape(int64_t ea, int64_t eb) {
    TileShape t;
    const int64_t wa = pow2_at_least(ea), wb = pow2_at_least(eb);
    const int64_t least = std::min<int64_t>({least_group, max_group, wa * std::min<int64_t>(wb, 32)});
    // A large contraction on a GPU (both loops' tiles 128 or longer: a conv's 126
    // columns too) mostly gets the shape fast GPU GEMMs share (CLBlast's tuned
    // NVIDIA kernels, and the H100's 40 TFLOP/s schedule in bench/results.md): 128
    // to 512 work-items, 4 or 8 outputs a side each. Otherwise, and 3 draws in 10
    // there, any shape.
    const bool gemm_shape = least_group >= 32 && wa >= 128 && wb >= 128 && max_group >= 256 && chance(rng, 0.7);
    for (int tries = 0; tries < 32; ++tries) {
      t.tb = gemm_shape ? pick(std::vector<int64_t>{16, 16, 32}, rng)
                        : pick(powers(4, std::min<int64_t>(32, std::max<int64_t>(4, wb))), rng);
      t.ta = gemm_shape ? pick(std::vector<int64_t>{8, 16}, rng) : pick(powers(1, std::min<int64_t>(16, wa)), rng);
      if (t.ta * t.tb <= max_group && t.ta * t.tb >= least) break;
      t.ta = 1, t.tb = std::min<int64_t>(t.tb, max_group);
    }
    auto outputs = [&](int64_t w, int64_t th) {
      const int64_t most = std::max<int64_t>(1, std::min<int64_t>(8, w / th));
      return pick(gemm_shape && most >= 8 ? std::vector<int64_t>{4, 8, 8} : powers(1, most), rng);
    };
    t.pa = outputs(wa, t.ta);
    t.pb = outputs(wb, t.tb);
    // Each work-item's outputs along a loop come in chunks of c neighbours (c
    // divides p), chunks t * c apart: with c = 1 the work-items' outputs interleave
    // (a warp's reads of one row coalesce); with c = 4 a work-item reads its
    // operands as float4, from a panel whose rows the chunk runs along.
    // Chunks of 4 drawn twice as often: with transposed panels they are what made
    // the H100's GEMM read its operands as float4 (bench/results.md).
    auto chunk = [&](int64_t p) {
      std::vector<int64_t> c = powers(1, std::min<int64_t>(4, p));
      if (c.back() == 4) c.push_back(4);
      return pick(c, rng);
    };
    t.ca = chunk(t.pa);
    t.cb = chunk(t.pb);
    return t;
  }

  // Splits a tiled loop into its levels; false where a split is refused.
  bool split_levels(const std::string &s, const std::string &loop, int64_t t, int64_t p, int64_t c, Levels *l) {
    l->o = b.fresh(loop + "o");
    const std::string i = b.fresh(loop + "i");
    if (!b.split(s, loop, t * p, l->o, i)) return false;
    if (p == 1) {  // no register level: the inner loop is the work-items'
      l->th = i;
      return true;
    }
    std::string rest = i;
    if (p > c) {
      l->reg = b.fresh(loop + "r");
      rest = c == 1 ? b.fresh(loop + "t") : b.fresh(loop + "x");
      if (!b.split(s, i, t * c, l->reg, rest)) return false;
    }
    if (c == 1) {
      l->th = rest;
      return true;
    }
    l->th = b.fresh(loop + "t");
    l->lane = b.fresh(loop + "v");
    return b.split(s, rest, c, l->th, l->lane);
  }

  // The reduction split into steps whose operands' panels go to local memory (laid
  // out for the tile's reads) and are copied ahead; the inner reduction loop where
  // it is to be unrolled around the tile, else "".
  std::string reduction_steps(const Stage &stage, const std::vector<Access> &reads, const TileShape &t,
                              std::string *note) {
    const std::string &s = stage.output;
    const IterVar &r = stage.reduce_vars.front();
    // The reduction's steps unrolled around the register tile: then k is drawn
    // small enough that the copies (the tile's, about pa * pb / cb) fit the budget.
    const bool unroll_steps = chance(rng, 0.5);
    const int64_t tile_copies = std::max<int64_t>(1, t.pa * t.pb / t.cb);
    const int64_t k_most = unroll_steps ? std::max<int64_t>(4, b.max_copies() / tile_copies) : 32;
    if (r.extent < 8 || !chance(rng, 0.8)) return "";
    const int64_t k = pick(powers(4, std::min<int64_t>({32, k_most, r.extent})), rng);
    const std::string ro = b.fresh(r.name + "o"), ri = b.fresh(r.name + "i");
    if (!b.split(s, r.name, k, ro, ri)) return "";
    *note += ", k by " + std::to_string(k);
    std::vector<std::string> panels;
    for (const std::string &buffer : operands(graph, stage)) {
      const std::string cache = b.fresh(buffer + "_s");
      if (!chance(rng, 0.7) || !b.cache_read(s, ro, buffer, MemoryScope::Local, cache)) continue;
      *note += ", " + buffer + " in local";
      // A panel whose rows run along the reduction (a in a matmul, both operands of
      // x @ w.T) is read by each work-item down a column: mostly transposed, so that
      // a chunk of outputs reads neighbours (float4) and a warp's reads broadcast;
      // its rows then padded by 4 (float4 alignment kept), otherwise by 1 or not at
      // all (bank conflicts).
      bool along_k = false;
      for (const Access &a : reads) along_k = along_k || (a.buffer == buffer && a.runs_along(r.name));
      const bool transposed = chance(rng, along_k ? 0.85 : 0.15) && b.layout(PrimitiveKind::Transpose, s, cache, {});
      if (transposed) *note += " (transposed)";
      const int64_t padding = pick(transposed ? std::vector<int64_t>{0, 4, 4} : std::vector<int64_t>{0, 0, 1, 4}, rng);
      if (padding && b.layout(PrimitiveKind::Pad, s, cache, {padding}))
        *note += " (padded by " + std::to_string(padding) + ")";
      panels.push_back(cache);
    }
    // The next steps' panels copied while this step computes: asynchronously, into a
    // ring of 2 or 3 slots (async_copy), where the device has cp.async (on the H100 a
    // 4096^3 GEMM's b panel in 16-byte copies: 42.1 to 45.0 TFLOP/s,
    // bench/results.md); else (or where the ring does not fit) the next step read into
    // registers during this step's arithmetic (prefetch): the GEMM's global loads
    // otherwise stall the group between its barriers.
    bool prefetched = false;
    if (async_copies && !panels.empty() && chance(rng, 0.5)) {
      const int64_t slots = chance(rng, 0.5) ? 2 : 3;
      if (b.async_copy(s, ro, slots))
        *note += ", panels copied ahead (" + std::to_string(slots) + " slots)", prefetched = true;
    }
    if (!prefetched && chance(rng, 0.6))
      for (const std::string &cache : panels)
        if (b.layout(PrimitiveKind::Prefetch, s, cache, {})) *note += ", " + cache + " prefetched", prefetched = true;
    return unroll_steps || (prefetched && chance(rng, 0.3)) ? ri : "";
  }

  // The register tile's loops unrolled, its chunk's lanes vectorised, then the
  // reduction's steps and its other short loops (a conv's window) unrolled around it.
  void unroll_tile(const Stage &stage, const Levels &a, const Levels &c, int64_t cb, bool registers,
                   const std::string &unroll_k, std::string *note) {
    const std::string &s = stage.output;
    bool tile_unrolled = true;
    for (const std::string &reg : {a.reg, a.lane, c.reg})
      if (!reg.empty()) tile_unrolled = chance(rng, 0.8) && b.step(PrimitiveKind::Unroll, s, {reg}) && tile_unrolled;
    // The chunk's lanes as one vector operation where the panels allow (the
    // verifier's vector form), else unrolled; its write-back as a vector store.
    if (!c.lane.empty()) {
      if (chance(rng, 0.8) && b.step(PrimitiveKind::Vectorize, s, {c.lane}))
        *note += ", float" + std::to_string(cb);
      else
        b.step(PrimitiveKind::Unroll, s, {c.lane});
      if (registers && chance(rng, 0.8)) b.step(PrimitiveKind::Vectorize, s, {c.lane + "_out"});
    }
    // Only around an unrolled tile: around a serial one it gives no register its
    // constant index, and PoCL's compiler ran for minutes on 16 copies of a guarded
    // serial tile loop between two barriers (a matmul at N = 37, bench/results.md).
    if (!unroll_k.empty() && tile_unrolled && b.step(PrimitiveKind::Unroll, s, {unroll_k})) *note += ", k unrolled";
    for (size_t i = 1; i < stage.reduce_vars.size(); ++i)
      if (stage.reduce_vars[i].extent <= 8 && chance(rng, 0.5) &&
          b.step(PrimitiveKind::Unroll, s, {stage.reduce_vars[i].name}))
        *note += ", " + stage.reduce_vars[i].name + " unrolled";
  }

  // Multi-level tiling of a contraction (see sketch.h).
  bool tiled(const Stage &stage) {
    const std::string &s = stage.output;
    Builder::Mark mark = b.mark();
    std::vector<std::string> loops = b.loops(s);
    if (loops.size() < 2) return false;
    const std::string lb = loops.back();
    const std::vector<Access> reads = loads_of(stage.body);
    const std::string la = reusing_loop(s, loops, reads);
    if (la.empty()) return false;
    const TileShape t = tile_shape(b.extent(s, la), b.extent(s, lb));
    Levels a, c;
    if (!split_levels(s, la, t.ta, t.pa, t.ca, &a) || !split_levels(s, lb, t.tb, t.pb, t.cb, &c))
      return b.rollback(mark), false;
    if (!tile_order(s, loops, {la, lb}, {a.o, c.o, a.th, c.th, a.reg, a.lane, c.reg, c.lane}))
      return b.rollback(mark), false;
    if (!b.bind(s, a.o, ForKind::GroupY) || !b.bind(s, c.o, ForKind::GroupX) || !b.bind(s, a.th, ForKind::LocalY) ||
        !b.bind(s, c.th, ForKind::LocalX))
      return b.rollback(mark), false;
    char shape[128];
    std::snprintf(shape, sizeof shape, "%s: tiled %lldx%lld per group, %lldx%lld per work-item", s.c_str(),
                  static_cast<long long>(t.ta * t.pa), static_cast<long long>(t.tb * t.pb),
                  static_cast<long long>(t.pa), static_cast<long long>(t.pb));
    std::string note = shape;
    if (t.ca > 1 || t.cb > 1) note += " in " + std::to_string(t.ca) + "x" + std::to_string(t.cb) + " chunks";
    bool registers = false;
    if (t.pa * t.pb > 1 || chance(rng, 0.3)) {
      registers = b.step(PrimitiveKind::CacheWrite, s, {c.th});  // a step's memory is private
      if (registers) note += ", registers";
    }
    const std::string unroll_k = reduction_steps(stage, reads, t, &note);
    unroll_tile(stage, a, c, t.cb, registers, unroll_k, &note);
    notes.push_back(note);
    return true;
  }

  // A warp tile's rows along `loop` as mma.sync's fragments lay them out
  // (ir/matrix_tile.h): io * bm + wy * wm + mi * 16 + h * 8 + g, g from the lane; its
  // columns nj * 8 + t * 2 + cc, t from the lane.
  bool fragment_rows(const std::string &s, const std::string &loop, int64_t bm, int64_t wm, const std::string &io,
                     const std::string &ii, const std::string &wy, const std::string &wi, const std::string &mi,
                     const std::string &rr, const std::string &h, const std::string &g) {
    return b.split(s, loop, bm, io, ii) && b.split(s, ii, wm, wy, wi) && b.split(s, wi, 16, mi, rr) &&
           b.split(s, rr, 8, h, g);
  }
  bool fragment_columns(const std::string &s, const std::string &loop, const std::string &nj, const std::string &q,
                        const std::string &t, const std::string &cc) {
    return b.split(s, loop, 8, nj, q) && b.split(s, q, 2, t, cc);
  }

  // A contraction on the matrix units (see sketch.h): the tile's rows (the loop only
  // the first operand reads) and columns (only the second's) laid out as mma.sync's
  // fragments (ir/matrix_tile.h), the layout of bench/mma/: block bm x bn of warps
  // wm x wn, each lane's rows mi h g and columns nj t cc, lane = g t on local.x, the
  // warps on local.y; the reduction's panels in local memory padded against bank
  // conflicts (below), copied ahead where the device can; tensorize. At most 64
  // accumulators a lane: the instructions' own set (codegen's ks_d) doubles them.
  // The operands are the two loads the reduction reads, in the body as the kernel
  // computes it (attention's weights exp(s - row_max) with e inlined); other loads (a
  // row's total that divides the product) are its scale, which tensorize applies to
  // the sums. Where both operands are 16-bit tensors (mma.sync.m16n8k16 on their
  // exact values), the instructions sum into the accumulators themselves: 128 a lane,
  // panels of 16 or 32 k, three slots where they fit (rules below).
  bool matrix_tiled(const Stage &stage) {
    const std::string &s = stage.output;
    const std::vector<std::string> loops = b.loops(s);
    std::vector<Access> reads;
    for (const Access &a : loads_of(as_computed(stage.body)))
      for (const IterVar &v : stage.reduce_vars)
        if (a.uses(v.name)) {
          reads.push_back(a);
          break;
        }
    if (loops.size() < 2 || stage.reduce_vars.empty() || reads.size() != 2) return false;
    const bool half = std::all_of(reads.begin(), reads.end(), [&](const Access &a) {
      const TensorDecl *t = graph.find_tensor(a.buffer);
      return t && is_half(t->type) && (!f16_matrices || t->type == DType::F16);
    });
    if (f16_matrices && !half) return false;
    // Columns: the innermost loop that one operand reads and the other does not;
    // rows: the innermost other loop read by the other operand alone.
    std::string la, lb;
    int bi = -1;
    for (size_t i = loops.size(); i-- > 0 && lb.empty();)
      for (int o = 0; o < 2 && lb.empty(); ++o)
        if (reads[o].uses(loops[i]) && !reads[1 - o].uses(loops[i])) lb = loops[i], bi = o;
    if (lb.empty()) return false;
    for (size_t i = loops.size(); i-- > 0 && la.empty();)
      if (loops[i] != lb && reads[1 - bi].uses(loops[i]) && !reads[bi].uses(loops[i])) la = loops[i];
    if (la.empty()) return false;
    const int64_t ea = pow2_at_least(b.extent(s, la)), eb = pow2_at_least(b.extent(s, lb));
    if (ea < 16 || eb < 8) return false;
    // Mostly the largest warp tile (64 accumulators a lane): the most instructions for
    // each fragment register loaded and split (on the H200 32x64 and 64x32 2.19 and
    // 2.23 ms at 4096^3, 32x32 2.45 and 2.72; bench/results.md).
    // 16 bits: 64 x 64 (128 accumulators, no second set) at bf16 4096^3 0.506 ms
    // against 0.621 for 64 x 32 (H200, bench/results.md "Rings of 16-bit panels").
    const std::vector<int64_t> wms = powers(16, std::min<int64_t>(64, ea));
    const int64_t wm = wms.size() > 1 && chance(rng, 0.6) ? pick(std::vector<int64_t>(wms.begin() + 1, wms.end()), rng)
                                                          : pick(wms, rng);
    const std::vector<int64_t> wns = powers(8, std::min<int64_t>(std::min<int64_t>(64, (half ? 4096 : 2048) / wm), eb));
    const int64_t wn = chance(rng, 0.6) ? wns.back() : pick(wns, rng);
    const int64_t bm = wm * pick(powers(1, std::min<int64_t>(4, ea / wm)), rng);
    const int64_t warps_n = pick(powers(1, std::min<int64_t>({4, eb / wn, 8 / (bm / wm)})), rng);
    const int64_t bn = wn * warps_n;
    const IterVar &r = stage.reduce_vars.front();
    // 16-bit instructions take 16 k points a step (8 would leave them 3xTF32).
    const int64_t kt = pick(half ? std::vector<int64_t>{16, 16, 32} : std::vector<int64_t>{8, 16, 16, 32}, rng);
    Builder::Mark mark = b.mark();
    auto fail = [&] { return b.rollback(mark), false; };
    const std::string io = b.fresh(la + "o"), ii = b.fresh(la + "i"), jo = b.fresh(lb + "o"), ji = b.fresh(lb + "i");
    const std::string wy = b.fresh("wy"), wi = b.fresh("wi"), mi = b.fresh("mi"), rr = b.fresh("rr"), h = b.fresh("h"),
                      g = b.fresh("g"), wx = b.fresh("wx"), wj = b.fresh("wj"), nj = b.fresh("nj"), q = b.fresh("q"),
                      t = b.fresh("t"), cc = b.fresh("cc"), warp = b.fresh("warp"), lane = b.fresh("lane");
    if (!fragment_rows(s, la, bm, wm, io, ii, wy, wi, mi, rr, h, g) || !b.split(s, lb, bn, jo, ji) ||
        !b.split(s, ji, wn, wx, wj) || !fragment_columns(s, wj, nj, q, t, cc))
      return fail();
    if (!tile_order(s, loops, {la, lb}, {io, jo, wy, wx, g, t, mi, h, nj, cc}) || !b.fuse(s, {wy, wx}, warp) ||
        !b.fuse(s, {g, t}, lane) || !b.bind(s, io, ForKind::GroupY) || !b.bind(s, jo, ForKind::GroupX) ||
        !b.bind(s, warp, ForKind::LocalY) || !b.bind(s, lane, ForKind::LocalX) ||
        !b.step(PrimitiveKind::CacheWrite, s, {lane}))
      return fail();
    const std::string ko = b.fresh(r.name + "o"), ki = b.fresh(r.name + "i");
    if (!b.split(s, r.name, kt, ko, ki)) return fail();
    // The reduction's other loops (a convolution's window) outside the panels: a panel
    // is then kt k points, its copy a gather at one window offset (an implicit GEMM;
    // bench/mma/conv/), where inside it would take the window's extent times the room.
    if (stage.reduce_vars.size() > 1) {
      std::vector<std::string> order;
      for (const IterVar &v : stage.reduce_vars)
        if (v.name != r.name) order.push_back(v.name);
      order.push_back(ko);
      order.push_back(ki);
      if (!b.step(PrimitiveKind::Reorder, s, order)) return fail();
    }
    char shape[160];
    std::snprintf(shape, sizeof shape, "%s: matrix units, %lldx%lld per group, warps of %lldx%lld, k by %lld",
                  s.c_str(), static_cast<long long>(bm), static_cast<long long>(bn), static_cast<long long>(wm),
                  static_cast<long long>(wn), static_cast<long long>(kt));
    std::string note = shape;
    // Rows along the reduction are read two k points at a time (float2: ir/matrix_tile.h's
    // k slots), and a row of 24 or 40 floats puts a half-warp's pairs on 32 banks (kt
    // 16 and 32 padded by 8: 2.37 ms against 2.41 by 4 on the H200, bench/results.md);
    // by 4 where the wider panel and the ring do not fit together.
    // The others by 8: the lanes of a fragment then hit 32 banks. 16-bit rows along k
    // are read four k points (8 bytes) at a time: unpadded at 16 (rows of 8 words put a
    // half-warp on 32 banks), by 16 at 32 (rows of 24 words); their ring takes three
    // slots where they fit (two: 1.28 ms against 0.88 for three at bf16 4096^3).
    const bool ring = async_copies && chance(rng, 0.7);
    const Builder::Mark panels = b.mark();
    std::vector<std::string> caches;
    for (const Access &a : reads) caches.push_back(b.fresh(a.buffer + "_s"));
    const std::vector<int64_t> alongs = half       ? std::vector<int64_t>{kt == 16 ? 0 : 16, 8}
                                        : kt >= 16 ? std::vector<int64_t>{8, 4}
                                                   : std::vector<int64_t>{4};
    const int64_t slots = half ? 3 : 2;
    int64_t copied = 0;  // the ring's slots
    for (const int64_t along : alongs) {
      b.rollback(panels);
      bool fits = true;  // every panel along k padded as asked
      for (size_t o = 0; o < reads.size(); ++o) {
        if (!b.cache_read(s, ko, reads[o].buffer, MemoryScope::Local, caches[o])) return fail();
        const bool k_rows = reads[o].runs_along(r.name);
        const int64_t pad = k_rows ? along : 8;
        fits = (pad == 0 || b.layout(PrimitiveKind::Pad, s, caches[o], {pad}) || !k_rows) && fits;
      }
      if (!b.step(PrimitiveKind::Tensorize, s, {ki})) return fail();
      const bool last = along == alongs.back();
      copied = 0;
      if (ring && (fits || last))
        for (int64_t n = slots; n >= 2 && !copied; --n) copied = b.async_copy(s, ko, n) ? n : 0;
      if (last || (fits && (copied || !ring))) break;
    }
    if (copied) note += ", panels copied ahead (" + std::to_string(copied) + " slots)";
    // The accumulators written back a column pair at a time (columns 2t and 2t + 1, the
    // output's neighbours where the columns run along its last index): float2 stores
    // took attention's 1 GiB of scores from 1.16 to 0.85 ms on the H200
    // (bench/results.md). Not always: an epilogue may want the write-back as it is.
    if (chance(rng, 0.8) && b.step(PrimitiveKind::Vectorize, s, {cc + "_out"})) note += ", stored in pairs";
    notes.push_back(note);
    return true;
  }

  // A contraction P that only its consumer C reads, at C's rows and C's reduction
  // variable (attention's scores after `rewrite recompute s`), computed in C's kernel
  // (see sketch.h): at each step of C's loop over panels of kt, P's block of bm x kt on
  // the matrix units into local memory (compute_at inside the reduction), P's
  // row-operand (q) copied once a group, its column-operand's panel (k) and C's own (v)
  // in one ring. C is a matrix tile of bm rows and all its columns (weighted sum) or a
  // work-item a row (the rows' logsumexp). At 16 bits only: C's operand, read from the
  // f32 block in local memory, is then rounded to the format (`bf16(exp(s - lse))`),
  // so both contractions are m16n8k16. bench/mma/attention/attention_two_pass_half_b64x16.sched
  // is one draw: 0.990 ms at bf16 on the H200 beside 1.002 for the three kernels that
  // store the scores (bench/results.md, "Attention in two passes").
  // P's variables of C's loops (by the position of C's read of P); none where C reads P
  // other than at one point of plain variables, or where something else reads P.
  std::optional<std::map<std::string, std::string>> computed_inside(const Stage &c, const Stage &p) const {
    const TensorDecl *t = graph.find_tensor(p.output);
    if (!t || t->role != TensorRole::Temp || p.reduce != ReduceOp::Sum || p.reduce_vars.size() != 1 ||
        c.reduce_vars.size() != 1 || readers_of(graph, p.output) != 1)
      return std::nullopt;
    std::vector<const Load *> reads;
    for (const Load *l : collect<Load>(c.body))
      if (l->buffer == p.output) reads.push_back(l);
    if (reads.empty()) return std::nullopt;
    std::map<std::string, std::string> of;  // C's variable -> P's
    for (size_t d = 0; d < p.spatial.size(); ++d) {
      const Var *v = reads[0]->indices[d].as<Var>();
      for (const Load *l : reads)
        if (!v || !equal(l->indices[d], reads[0]->indices[d])) return std::nullopt;
      of[v->name] = p.spatial[d].name;
    }
    if (!of.count(c.reduce_vars[0].name)) return std::nullopt;
    return of;
  }

  // P's schedule for a work-group of bm rows, warps of wm rows and panels of kt columns
  // at its serial loop (named for compute_at): its loops matching C's down to the panel
  // loop. Its row-operand cached at the work-item loop, its column-operand at the panel.
  bool scores_panel(const Stage &p, const std::string &rows, const std::string &cols, int64_t bm, int64_t wm,
                    int64_t kt) {
    const std::string &s = p.output;
    const std::vector<std::string> loops = b.loops(s);
    const IterVar &r = p.reduce_vars[0];
    const int64_t extent = std::max<int64_t>(16, pow2_at_least(r.extent));  // the whole reduction one panel
    if (extent > 64) return false;
    std::vector<Access> reads;
    for (const Access &a : loads_of(p.body))
      if (a.uses(r.name)) reads.push_back(a);
    if (reads.size() != 2) return false;
    const int row_operand = reads[0].uses(rows) ? 0 : 1;
    if (!reads[row_operand].uses(rows) || !reads[1 - row_operand].uses(cols)) return false;
    const std::string io = b.fresh("io"), ii = b.fresh("ii"), wy = b.fresh("wy"), wi = b.fresh("wi"),
                      mi = b.fresh("mi"), rr = b.fresh("rr"), h = b.fresh("h"), g = b.fresh("g"), jq = b.fresh("jq"),
                      jj = b.fresh("jj"), nj = b.fresh("nj"), q = b.fresh("q"), t = b.fresh("t"), cc = b.fresh("cc"),
                      lane = b.fresh("lane"), kd = b.fresh("kd"), ki = b.fresh("ki");
    const std::string a_s = b.fresh(reads[row_operand].buffer + "_s"),
                      b_s = b.fresh(reads[1 - row_operand].buffer + "_s");
    return fragment_rows(s, rows, bm, wm, io, ii, wy, wi, mi, rr, h, g) && b.split(s, cols, kt, jq, jj) &&
           fragment_columns(s, jj, nj, q, t, cc) &&
           tile_order(s, loops, {rows, cols}, {io, wy, g, t, jq, mi, h, nj, cc}) && b.fuse(s, {g, t}, lane) &&
           b.bind(s, io, ForKind::GroupY) && b.bind(s, wy, ForKind::LocalY) && b.bind(s, lane, ForKind::LocalX) &&
           b.step(PrimitiveKind::CacheWrite, s, {jq}) && b.split(s, r.name, extent, kd, ki) &&
           b.cache_read(s, lane, reads[row_operand].buffer, MemoryScope::Local, a_s) &&
           b.cache_read(s, jq, reads[1 - row_operand].buffer, MemoryScope::Local, b_s) &&
           b.layout(PrimitiveKind::Pad, s, a_s, {8}) && b.layout(PrimitiveKind::Pad, s, b_s, {8}) &&
           b.step(PrimitiveKind::Tensorize, s, {ki});
  }

  // C a contraction (the weighted sum): a matrix tile of bm rows, warps of wm, all its
  // columns (at most 64), panels of 16 or 32 of its reduction; P computed at each panel.
  bool tiled_around(const Stage &c, const Stage &p, const std::map<std::string, std::string> &of) {
    const std::string &s = c.output;
    const std::vector<std::string> loops = b.loops(s);
    std::vector<Access> reads;
    for (const Access &a : loads_of(c.body))
      if (a.buffer != p.output && a.uses(c.reduce_vars[0].name)) reads.push_back(a);
    if (loops.size() < 2 || reads.size() != 1) return false;
    // Rows: the loop C reads P with (not the value's); columns: the value's alone.
    std::string la, lb;
    for (const std::string &l : loops) {
      if (of.count(l) && !reads[0].uses(l)) la = l;
      if (!of.count(l) && reads[0].uses(l)) lb = l;
    }
    if (la.empty() || lb.empty()) return false;
    const int64_t bn = pow2_at_least(b.extent(s, lb));
    if (bn < 8 || bn > 64) return false;
    // Panels of 32 j where the 48 KiB of local memory hold them (two-pass attention at
    // bf16 on the H200: 0.827 ms against 0.975 for panels of 16, bench/results.md).
    const int64_t bm = 64, wm = pick(std::vector<int64_t>{16, 32, 32}, rng),
                  kt = pick(std::vector<int64_t>{16, 32, 32}, rng);
    const int64_t slots = pick(std::vector<int64_t>{2, 3}, rng);
    Builder::Mark mark = b.mark();
    auto fail = [&] { return b.rollback(mark), false; };
    if (!scores_panel(p, of.at(la), of.at(c.reduce_vars[0].name), bm, wm, kt)) return fail();
    const std::string io = b.fresh(la + "o"), ii = b.fresh(la + "i"), wy = b.fresh("wy"), wi = b.fresh("wi"),
                      mi = b.fresh("mi"), rr = b.fresh("rr"), h = b.fresh("h"), g = b.fresh("g"), nj = b.fresh("nj"),
                      q = b.fresh("q"), t = b.fresh("t"), cc = b.fresh("cc"), lane = b.fresh("lane"),
                      ko = b.fresh("ko"), ki = b.fresh("ki"), v_s = b.fresh(reads[0].buffer + "_s");
    if (!fragment_rows(s, la, bm, wm, io, ii, wy, wi, mi, rr, h, g) || !fragment_columns(s, lb, nj, q, t, cc) ||
        !tile_order(s, loops, {la, lb}, {io, wy, g, t, mi, h, nj, cc}) || !b.fuse(s, {g, t}, lane) ||
        !b.bind(s, io, ForKind::GroupY) || !b.bind(s, wy, ForKind::LocalY) || !b.bind(s, lane, ForKind::LocalX) ||
        !b.step(PrimitiveKind::CacheWrite, s, {lane}) || !b.split(s, c.reduce_vars[0].name, kt, ko, ki) ||
        !b.cache_read(s, ko, reads[0].buffer, MemoryScope::Local, v_s) || !b.layout(PrimitiveKind::Pad, s, v_s, {8}) ||
        !b.compute_at(p.output, s, ko) || !b.layout(PrimitiveKind::Pad, s, p.output, {4}))
      return fail();
    const bool ring = async_copies && b.async_copy(s, ko, slots);
    if (!b.step(PrimitiveKind::Tensorize, s, {ki})) return fail();
    char shape[160];
    std::snprintf(shape, sizeof shape,
                  "%s: matrix units, %lld rows per group, warps of %lld, its %s computed at each "
                  "panel of %lld",
                  s.c_str(), static_cast<long long>(bm), static_cast<long long>(wm), p.output.c_str(),
                  static_cast<long long>(kt));
    notes.push_back(std::string(shape) + (ring ? ", panels copied ahead (" + std::to_string(slots) + " slots)" : ""));
    return true;
  }

  // C a row's reduction (the rows' logsumexp): a work-item a row, 64 rows a group in
  // warps of 32, over panels of 16 or 32; P computed at each panel.
  bool rows_around(const Stage &c, const Stage &p, const std::map<std::string, std::string> &of) {
    const std::string &s = c.output;
    const std::vector<std::string> loops = b.loops(s);
    std::string la;
    for (const std::string &l : loops)
      if (of.count(l)) la = l;
    if (la.empty()) return false;
    const int64_t bm = 64, kt = pick(std::vector<int64_t>{16, 32, 32}, rng),
                  slots = pick(std::vector<int64_t>{2, 3}, rng);
    Builder::Mark mark = b.mark();
    auto fail = [&] { return b.rollback(mark), false; };
    if (!scores_panel(p, of.at(la), of.at(c.reduce_vars[0].name), bm, 32, kt)) return fail();
    const std::string io = b.fresh(la + "o"), ii = b.fresh(la + "i"), wy = b.fresh("wy"), lane = b.fresh("lane"),
                      ko = b.fresh("ko"), ki = b.fresh("ki");
    if (!b.split(s, la, bm, io, ii) || !b.split(s, ii, 32, wy, lane) || !tile_order(s, loops, {la}, {io, wy, lane}) ||
        !b.bind(s, io, ForKind::GroupY) || !b.bind(s, wy, ForKind::LocalY) || !b.bind(s, lane, ForKind::LocalX) ||
        !b.split(s, c.reduce_vars[0].name, kt, ko, ki) || !b.step(PrimitiveKind::Unroll, s, {ki}) ||
        !b.compute_at(p.output, s, ko) || !b.layout(PrimitiveKind::Pad, s, p.output, {1}))
      return fail();
    const bool ring = async_copies && b.async_copy(s, ko, slots);
    notes.push_back(s + ": a work-item a row, 64 a group, its " + p.output + " computed at each panel of " +
                    std::to_string(kt) + (ring ? ", panels copied ahead (" + std::to_string(slots) + " slots)" : ""));
    return true;
  }

  // The rule where it applies (matrix units, P's operands 16-bit), in
  // kAroundItsScoresShare of the draws (none elsewhere: other graphs' draws are as they
  // were): true when C and P are both scheduled.
  bool around_its_scores(const Stage &as_written) {
    if (!matrix_units || (as_written.reduce != ReduceOp::Sum && as_written.reduce != ReduceOp::LogSumExp)) return false;
    // C as its kernel computes it: the elementwise stages drawn inline read in place
    // (a causal mask's select around the scores).
    Stage c = as_written;
    c.body = as_computed(c.body);
    for (const Load *l : collect<Load>(c.body)) {
      std::optional<size_t> at = stage_index(graph, l->buffer);
      if (!at || done.count(l->buffer)) continue;
      const Stage &p = graph.stages[*at];
      std::optional<std::map<std::string, std::string>> of = computed_inside(c, p);
      if (!of) continue;
      for (const Access &a : loads_of(p.body))
        if (const TensorDecl *t = graph.find_tensor(a.buffer);
            !t || !is_half(t->type) || (f16_matrices && t->type != DType::F16))
          return false;
      if (!chance(rng, kAroundItsScoresShare)) return false;
      const bool ruled = c.reduce == ReduceOp::LogSumExp ? rows_around(c, p, *of) : tiled_around(c, p, *of);
      if (ruled) done.insert(p.output);
      return ruled;
    }
    return false;
  }

  // A softmax-weighted sum (online_attention's softmax_sum; see sketch.h): a work-item
  // per 1 or 2 rows and all (or a half, a quarter) of the value's columns, its
  // accumulators in registers. The score's sum (q . k over the head) runs once a row
  // in each work-item, so work-items that share a row repeat it: few of them a row.
  // The row's operand of the score (q) in registers, the panels of the operands read
  // along j (k, v) in local memory, copied ahead.
  bool attention(const Stage &stage) {
    const std::string &s = stage.output;
    Builder::Mark mark = b.mark();
    std::vector<std::string> loops = b.loops(s);
    const Call *pair = stage.body.as<Call>();
    if (loops.size() < 2 || !pair) return false;
    const std::string lb = loops.back();  // the value's columns
    std::string la;                       // the rows: the innermost other loop the score uses
    const std::set<std::string> score_vars = vars_in(pair->args[0]);
    for (size_t i = 0; i + 1 < loops.size(); ++i)
      if (score_vars.count(loops[i]) && b.extent(s, loops[i]) >= 2) la = loops[i];
    if (la.empty()) return false;
    const int64_t ea = pow2_at_least(b.extent(s, la)), eb = b.extent(s, lb);
    const int64_t tb = std::min<int64_t>(pick(std::vector<int64_t>{1, 1, 1, 2, 4}, rng), pow2_at_least(eb));
    const int64_t pb = std::min<int64_t>((eb + tb - 1) / tb, kMaxPrivateElements / 4);
    const int64_t pa = pb <= 32 && chance(rng, 0.3) ? 2 : 1;
    int64_t ta = 1;
    for (int tries = 0; tries < 16; ++tries) {
      ta = pick(powers(least_group > 1 ? 32 : 1, std::min<int64_t>(256, ea)), rng);
      if (ta * tb <= max_group) break;
      ta = std::max<int64_t>(1, max_group / tb);
    }
    const std::string ao = b.fresh(la + "o"), ai = b.fresh(la + "i"), bo = b.fresh(lb + "o"), bi = b.fresh(lb + "i");
    std::string at = ai, ar, bt, br = bi;
    if (!b.split(s, la, ta * pa, ao, ai) || !b.split(s, lb, tb * pb, bo, bi)) return b.rollback(mark), false;
    if (pa > 1 && !b.split(s, ai, pa, at = b.fresh(la + "t"), ar = b.fresh(la + "r"))) return b.rollback(mark), false;
    if (tb > 1 && !b.split(s, bi, pb, bt = b.fresh(lb + "t"), br = b.fresh(lb + "r"))) return b.rollback(mark), false;
    if (!tile_order(s, loops, {la, lb}, {ao, bo, at, bt, ar, br})) return b.rollback(mark), false;
    const std::string thread = bt.empty() ? at : bt;
    if (!b.bind(s, ao, ForKind::GroupY) || !b.bind(s, bo, ForKind::GroupX) ||
        !b.bind(s, at, bt.empty() ? ForKind::LocalX : ForKind::LocalY) ||
        (!bt.empty() && !b.bind(s, bt, ForKind::LocalX)) || !b.step(PrimitiveKind::CacheWrite, s, {thread}))
      return b.rollback(mark), false;
    char shape[160];
    std::snprintf(shape, sizeof shape, "%s: attention, %lld rows x %lld columns per group, %lldx%lld per work-item",
                  s.c_str(), static_cast<long long>(ta * pa), static_cast<long long>(tb * pb),
                  static_cast<long long>(pa), static_cast<long long>(pb));
    std::string note = shape;
    // The operands read along j in local panels, those of a row in registers.
    const IterVar &j = stage.reduce_vars.front();
    const std::string jo = b.fresh(j.name + "o"), ji = b.fresh(j.name + "i");
    std::vector<std::string> panels;
    if (b.split(s, j.name, pick(std::vector<int64_t>{8, 8, 16, 16, 32}, rng), jo, ji)) {
      const std::vector<Access> reads = loads_of(stage.body);
      for (const std::string &buffer : operands(graph, stage)) {
        bool along_j = false;
        for (const Access &a : reads)
          for (const auto &vars : a.index_vars) along_j = along_j || (a.buffer == buffer && vars.count(j.name));
        const std::string cache = b.fresh(buffer + (along_j ? "_s" : "_r"));
        if (along_j ? chance(rng, 0.9) && b.cache_read(s, jo, buffer, MemoryScope::Local, cache)
                    : chance(rng, 0.8) && b.cache_read(s, thread, buffer, MemoryScope::Private, cache)) {
          note += ", " + buffer + (along_j ? " in local" : " in registers");
          if (along_j) panels.push_back(cache);
        }
      }
      bool ahead = false;
      if (async_copies && !panels.empty() && chance(rng, 0.7)) {
        const int64_t slots = pick(std::vector<int64_t>{2, 3, 4}, rng);
        if ((ahead = b.async_copy(s, jo, slots))) note += ", panels copied ahead (" + std::to_string(slots) + " slots)";
      }
      if (!ahead && chance(rng, 0.6))
        for (const std::string &cache : panels)
          if (b.layout(PrimitiveKind::Prefetch, s, cache, {})) note += ", " + cache + " prefetched";
    }
    for (const std::string &reg : {ar, br})
      if (!reg.empty()) b.step(PrimitiveKind::Unroll, s, {reg});
    for (size_t i = stage.reduce_vars.size() - stage.score_vars; i < stage.reduce_vars.size(); ++i)
      if (b.step(PrimitiveKind::Unroll, s, {stage.reduce_vars[i].name}))
        note += ", " + stage.reduce_vars[i].name + " unrolled";
    notes.push_back(note);
    return true;
  }

  // A work-group per output with cross_reduce.
  bool row_reduction(const Stage &stage) {
    Builder::Mark mark = b.mark();
    const int64_t length = extent_product(stage.reduce_vars);
    // Many rows: mostly 8 or more of a row's elements a work-item, so that the group's
    // tree of barriers does not outweigh its loads (attention's 262,144 rows of 1,024
    // on the H200: 0.68 ms a pass at 256 work-items a row, 0.5 at 32).
    const bool many_rows = extent_product(stage.spatial) >= 4096 && chance(rng, 0.7);
    const int64_t threads =
        pick(group_sizes(least_group, max_group, many_rows ? std::max<int64_t>(1, length / 8) : length), rng);
    if (!cross_reduce_rows(b, stage.output, threads, rng)) return b.rollback(mark), false;
    notes.push_back(stage.output + ": a work-group per output (" + std::to_string(threads) + ")");
    return true;
  }

  // A running total: its other spatial loops on work-groups, a group's work-items
  // scanning the row.
  bool running_total(const Stage &stage) {
    Builder::Mark mark = b.mark();
    std::vector<std::string> loops = b.loops(stage.output);
    if (loops.empty()) return false;
    const std::string along = loops.back();
    std::vector<std::string> rows(loops.begin(), loops.end() - 1);
    if (rows.size() > 3) {
      const std::string fused = b.fresh("rows");
      if (!b.fuse(stage.output, rows, fused)) return b.rollback(mark), false;
      rows = {fused};
    }
    const int64_t threads =
        pick(group_sizes(std::max<int64_t>(least_group, 2), max_group, stage.spatial.back().extent), rng);
    Primitive p;
    p.kind = PrimitiveKind::Scan;
    p.stage = stage.output;
    p.loops = {along};
    p.factors = {threads};
    p.results = {b.fresh("t")};
    if (!bind_rows(b, stage.output, rows) || threads < 2 || !b.apply(p)) return b.rollback(mark), false;
    notes.push_back(stage.output + ": a work-group per row scanning it (" + std::to_string(threads) + ")");
    return true;
  }

  // An elementwise output whose rows are reduced by earlier stages (softmax, layer
  // norm): the row statistics computed in its kernel, a work-group per row.
  bool row_chain(const Stage &consumer) {
    const std::string &c = consumer.output;
    std::vector<const Stage *> producers;
    size_t rows = 0;
    for (const Stage &p : graph.stages) {
      if (&p == &consumer) break;
      if (done.count(p.output) || pattern.at(p.output) != StagePattern::RowReduction) continue;
      const size_t k = p.spatial.size();
      if (k == 0 || k >= consumer.spatial.size() || k > 3 || (rows && k != rows)) continue;
      bool same = true;
      for (size_t i = 0; i < k; ++i) same = same && p.spatial[i].extent == consumer.spatial[i].extent;
      if (same) producers.push_back(&p), rows = k;
    }
    if (producers.empty()) return false;
    Builder::Mark mark = b.mark();
    int64_t length = 1;
    for (size_t i = rows; i < consumer.spatial.size(); ++i) length *= consumer.spatial[i].extent;
    if (vector_row_chain(consumer, producers, rows, length)) return true;
    const int64_t threads = pick(group_sizes(least_group, max_group, length), rng);
    for (const Stage *p : producers)
      if (!cross_reduce_rows(b, p->output, threads, rng)) return b.rollback(mark), false;
    std::vector<std::string> loops = b.loops(c);
    std::vector<std::string> row_loops(loops.begin(), loops.begin() + static_cast<long>(rows));
    std::vector<std::string> rest(loops.begin() + static_cast<long>(rows), loops.end());
    // Where the statistics are computed: the group's work-item loop striding the row,
    // or with one work-item per group, the innermost row loop.
    std::string thread = row_loops.back();
    if (threads == 1) {
      if (!bind_rows(b, c, row_loops)) return b.rollback(mark), false;
    } else {
      std::string along = rest[0];
      if (rest.size() > 1 && !b.fuse(c, rest, along = b.fresh("r"))) return b.rollback(mark), false;
      const std::string chunk = b.fresh(along + "j");
      thread = b.fresh("t");
      if (!b.split(c, along, threads, chunk, thread) || !b.step(PrimitiveKind::Reorder, c, {thread, chunk}) ||
          !bind_rows(b, c, row_loops) || !b.bind(c, thread, ForKind::LocalX))
        return b.rollback(mark), false;
      if (chance(rng, 0.7)) b.step(PrimitiveKind::Unroll, c, {chunk});
    }
    std::optional<std::string> note = statistics_at(producers, c, thread, threads);
    if (!note) return b.rollback(mark), false;
    if (chance(rng, 0.5))
      if (const std::string input = first_input(consumer);
          !input.empty() && b.cache_read(c, thread, input, MemoryScope::Private, b.fresh(input + "_r")))
        *note += ", " + input + " in registers";
    notes.push_back(*note);
    return true;
  }

  // The row statistics computed at the consumer's work-item loop `thread`, last first
  // (compute_at), and the chain's note; nullopt where one is refused (the caller rolls back).
  std::optional<std::string> statistics_at(const std::vector<const Stage *> &producers, const std::string &c,
                                           const std::string &thread, int64_t threads) {
    std::string names;
    for (auto p = producers.rbegin(); p != producers.rend(); ++p) {
      if (!b.compute_at((*p)->output, c, thread)) return std::nullopt;
      done.insert((*p)->output);
      names = (*p)->output + (names.empty() ? "" : ", ") + names;
    }
    return c + ": one kernel with " + names + ", a work-group per row (" + std::to_string(threads) + ")";
  }

  // The first of a stage's operands that is an input of the graph, or "".
  std::string first_input(const Stage &stage) const {
    for (const std::string &buffer : operands(graph, stage))
      if (graph.find_tensor(buffer)->role == TensorRole::Input) return buffer;
    return "";
  }

  // row_chain with the row in chunks of W elements, 16 bytes of the consumer's first
  // input (kVectorRowsShare): d = (j * T + t) * W + v in the output and in each
  // statistic's reduction alike, v vectorized in the output and the input copied to
  // registers at t. Only where the row is one loop, a multiple of W long, and each
  // statistic reduces it in one loop; false (nothing applied) otherwise.
  bool vector_row_chain(const Stage &consumer, const std::vector<const Stage *> &producers, size_t rows,
                        int64_t length) {
    const std::string &c = consumer.output, input = first_input(consumer);
    if (input.empty() || consumer.spatial.size() != rows + 1) return false;
    const int64_t width = 16 / dtype_bytes(graph.find_tensor(input)->type);
    if (length % width != 0 || length / width < 2) return false;
    for (const Stage *p : producers)
      if (p->reduce_vars.size() != 1 || p->reduce_vars[0].extent != length) return false;
    if (!chance(rng, kVectorRowsShare)) return false;
    Builder::Mark mark = b.mark();
    const int64_t threads = pick(group_sizes(least_group, max_group, length / width), rng);
    if (threads < 2) return false;
    for (const Stage *p : producers) {
      const std::string &s = p->output, chunks = b.fresh("c"), lanes = b.fresh("v");
      if (!b.split(s, b.loops(s, true)[0], width, chunks, lanes) || !bind_rows(b, s, b.loops(s)) ||
          !cross_reduce(b, s, chunks, threads))
        return b.rollback(mark), false;
      for (const std::string &l : b.loops(s, true)) b.step(PrimitiveKind::Unroll, s, {l});  // where short enough
    }
    const std::vector<std::string> loops = b.loops(c);
    const std::vector<std::string> row_loops(loops.begin(), loops.begin() + static_cast<long>(rows));
    const std::string chunks = b.fresh("c"), lanes = b.fresh("v"), chunk = b.fresh("cj"), thread = b.fresh("t");
    if (!b.split(c, loops[rows], width, chunks, lanes) || !b.split(c, chunks, threads, chunk, thread) ||
        !b.step(PrimitiveKind::Reorder, c, {thread, chunk, lanes}) || !bind_rows(b, c, row_loops) ||
        !b.bind(c, thread, ForKind::LocalX))
      return b.rollback(mark), false;
    b.step(PrimitiveKind::Vectorize, c, {lanes});
    b.step(PrimitiveKind::Unroll, c, {chunk});
    std::optional<std::string> note = statistics_at(producers, c, thread, threads);
    if (!note || !b.cache_read(c, thread, input, MemoryScope::Private, b.fresh(input + "_r")))
      return b.rollback(mark), false;
    notes.push_back(*note + ", " + input + " in registers, " + std::to_string(width) + "-element chunks");
    return true;
  }

  // The contraction an elementwise stage reads as its one temporary (a conv under
  // its bias and activation), or "".
  std::string epilogue_of(const Stage &stage) const {
    std::set<std::string> temps;
    for (const Access &a : loads_of(stage.body))
      if (graph.find_tensor(a.buffer)->role == TensorRole::Temp) temps.insert(a.buffer);
    if (temps.size() != 1 || pattern.at(*temps.begin()) != StagePattern::Contraction) return "";
    return *temps.begin();
  }

  Sketch draw() {
    for (const Stage &s : graph.stages) pattern[s.output] = classify_stage(s);
    for (const Stage &s : graph.stages)
      if (pattern[s.output] == StagePattern::Elementwise && graph.find_tensor(s.output)->role == TensorRole::Temp &&
          chance(rng, 0.9)) {
        Primitive p;
        p.kind = PrimitiveKind::Inline;
        p.stage = s.output;
        if (b.apply(p)) inlined.insert(s.output), done.insert(s.output);
      }
    if (!inlined.empty()) {
      std::string n;
      for (const Stage &s : graph.stages)
        if (inlined.count(s.output)) n += (n.empty() ? "inline " : ", ") + s.output;
      notes.push_back(n);
    }
    // Epilogues wait for their contraction's tiles, then run on its accumulators as
    // they are written back (reverse_inline), 8 draws in 10.
    std::vector<std::pair<const Stage *, std::string>> epilogues;
    for (auto it = graph.stages.rbegin(); it != graph.stages.rend(); ++it) {
      const Stage &s = *it;
      if (done.count(s.output)) continue;
      done.insert(s.output);
      if (pattern[s.output] == StagePattern::Elementwise) {
        std::string producer = epilogue_of(s);
        if (!producer.empty() && chance(rng, 0.8)) {
          epilogues.push_back({&s, producer});
          continue;
        }
      }
      bool ruled = around_its_scores(s);
      if (!ruled) switch (pattern[s.output]) {
          case StagePattern::Elementwise: ruled = chance(rng, 0.85) && row_chain(s); break;
          case StagePattern::Contraction:
            // On a device with matrix units, mostly a warp tile of its instructions.
            ruled = (matrix_units && chance(rng, 0.7) && matrix_tiled(s)) || (chance(rng, 0.9) && tiled(s));
            break;
          case StagePattern::RowReduction: ruled = chance(rng, 0.85) && row_reduction(s); break;
          case StagePattern::ColumnReduction: ruled = chance(rng, 0.6) && columns(s); break;
          case StagePattern::RunningTotal: ruled = chance(rng, 0.9) && running_total(s); break;
          case StagePattern::Attention: ruled = chance(rng, 0.9) && attention(s); break;
        }
      if (!ruled) per_output(s);
    }
    for (const auto &[s, producer] : epilogues) {
      Primitive p;
      p.kind = PrimitiveKind::ReverseInline;
      p.stage = s->output;
      if (b.apply(p))
        notes.push_back(s->output + ": in " + producer + "'s kernel");
      else
        per_output(*s);
    }
    std::string note;
    for (const std::string &n : notes) note += (note.empty() ? "" : "; ") + n;
    return Sketch{b.schedule(), note};
  }
};

}  // namespace

StagePattern classify_stage(const Stage &stage) {
  if (stage.reduce == ReduceOp::None) return StagePattern::Elementwise;
  if (stage.reduce == ReduceOp::SoftmaxSum) return StagePattern::Attention;
  // A running total along the last index (a sum, product, max or min: argmax takes
  // no range), however its body is spelled (its canonical form, as scan reads it; the
  // form computed only for a reduction over one variable whose body is not a select).
  const bool one_variable = !stage.spatial.empty() && stage.reduce_vars.size() == 1;
  const Expr body = one_variable && !stage.body.as<Select>() ? canonical(stage.body) : stage.body;
  if (const Select *guarded = body.as<Select>();
      guarded && one_variable &&
      running_total_form(guarded->condition, stage.reduce_vars[0].name, stage.reduce_vars[0].extent,
                         stage.spatial.back().name, stage.spatial.back().extent))
    return StagePattern::RunningTotal;
  std::set<std::string> spatial, reduction;
  for (const IterVar &v : stage.spatial) spatial.insert(v.name);
  for (const IterVar &v : stage.reduce_vars) reduction.insert(v.name);
  std::vector<Access> loads = loads_of(stage.body);
  // A contraction: two operands, one of which does not vary along some spatial loop,
  // so a tile of outputs reuses what it loads (matmul's a along j, conv's x along o).
  std::set<std::string> buffers;
  bool reuse = false;
  for (const Access &a : loads) {
    buffers.insert(a.buffer);
    if (a.index_vars.size() < 2) continue;
    std::set<std::string> used;
    for (const auto &vars : a.index_vars) used.insert(vars.begin(), vars.end());
    for (const std::string &s : spatial) reuse = reuse || !used.count(s);
  }
  if (stage.spatial.size() >= 2 && buffers.size() >= 2 && reuse && extent_product(stage.reduce_vars) >= 4)
    return StagePattern::Contraction;
  // A row: the reduction runs along the contiguous (last) index of the widest
  // operand, long enough to share among a group's work-items; or the output is one
  // value.
  const Access *widest = nullptr;
  for (const Access &a : loads)
    if (!widest || a.index_vars.size() > widest->index_vars.size()) widest = &a;
  bool contiguous = false;
  if (widest)
    for (const std::string &v : reduction) contiguous = contiguous || widest->runs_along(v);
  if (stage.spatial.empty() || (contiguous && extent_product(stage.reduce_vars) >= 32))
    return StagePattern::RowReduction;
  return StagePattern::ColumnReduction;
}

int64_t sketch_groups(const Stage &stage) {
  const int64_t outputs = extent_product(stage.spatial);
  switch (classify_stage(stage)) {
    case StagePattern::Contraction:
    case StagePattern::Attention: return std::max<int64_t>(1, outputs / 4096);
    case StagePattern::RowReduction:
    case StagePattern::RunningTotal: return outputs;
    default: return std::max<int64_t>(1, outputs / 256);
  }
}

std::optional<Rewrite> draw_rfactor(const Graph &graph, const Stage &stage, const runtime::DeviceInfo &device,
                                    Rng &rng) {
  if (stage.reduce == ReduceOp::None || stage.reduce == ReduceOp::ArgMax || stage.reduce == ReduceOp::ArgMin ||
      stage.reduce == ReduceOp::SoftmaxSum || classify_stage(stage) == StagePattern::RunningTotal)
    return std::nullopt;
  const int64_t units = runtime::compute_units_or_guess(device);
  const int64_t groups = sketch_groups(stage), points = extent_product(stage.reduce_vars);
  if (groups >= 2 * units || points < 1024) return std::nullopt;
  auto var =
      std::find_if(stage.reduce_vars.begin(), stage.reduce_vars.end(), [](const IterVar &v) { return v.extent >= 2; });
  if (var == stage.reduce_vars.end()) return std::nullopt;
  // Parts: from enough to give every unit two groups up to 16 a unit, at most one
  // a point of the variable, and 256 points or more in each.
  const int64_t most = std::max<int64_t>(1, std::min({16 * units / groups, var->extent, points / 256}));
  const int64_t parts = std::min(most, pick(powers(pow2_at_least((2 * units + groups - 1) / groups), most), rng));
  if (parts < 2) return std::nullopt;
  NameSet names = graph_names(graph);
  for (const Stage &s : graph.stages) reserve_vars(s, &names);
  Rewrite r;
  r.kind = RewriteKind::Rfactor;
  r.stage = stage.output;
  r.loop = var->name;
  r.factor = (var->extent + parts - 1) / parts;
  r.results = {names.fresh(stage.output + "_rf"), names.fresh(var->name + "o"), names.fresh(var->name + "i")};
  return r;
}

namespace {

// What finding a graph's rewrites found, kept: a search samples sketches of one
// graph thousands of times, and finding them tries every rule at every stage.
struct KnownRewrites {
  std::vector<Rewrite> cheaper;
  bool any = false;
  std::vector<Rewrite> attention;  // online_attention, where it applies
  // recompute of a 16-bit contraction read by a logsumexp and a sum, each draw's steps
  // (a mask between them first: the causal scores)
  std::vector<std::vector<Rewrite>> recompute;
  std::vector<Rewrite> softmax;  // online_softmax, where it applies
};

const KnownRewrites &known_rewrites(const Graph &graph) {
  static std::mutex mutex;
  static std::map<std::string, KnownRewrites> known;
  const std::string key = print_graph(graph);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it == known.end()) {
    KnownRewrites k{simplifying_rewrites(graph), !applicable_rewrites(graph).empty(), {}, {}, {}};
    for (const Stage &s : graph.stages) {
      Rewrite online{RewriteKind::OnlineAttention, s.output, {}, {}, 0, {}};
      std::string reason;
      if (s.reduce == ReduceOp::Sum && try_rewrite(graph, online, &reason)) k.attention.push_back(online);
      Rewrite lse{RewriteKind::OnlineSoftmax, s.output, {}, {}, 0, {}};
      if (s.reduce == ReduceOp::Sum && try_rewrite(graph, lse, &reason)) k.softmax.push_back(lse);
      // (a 16-bit contraction a logsumexp and a sum read: attention's scores; or the
      // elementwise temporary that alone reads it, a causal mask's, as the drawer
      // inlines it: that copied first, then the scores its copies read)
      const TensorDecl *t = graph.find_tensor(s.output);
      if (s.reduce != ReduceOp::Sum || !t || !is_half(t->type)) continue;
      auto read_by_both = [&](const std::string &name) {
        std::set<ReduceOp> readers;
        for (const Stage &r : graph.stages)
          if (reads_buffer(r.body, name)) readers.insert(r.reduce);
        return readers_of(graph, name) == 2 && readers == std::set<ReduceOp>{ReduceOp::Sum, ReduceOp::LogSumExp};
      };
      const Rewrite scores{RewriteKind::Recompute, s.output, {}, {}, 0, {}};
      if (read_by_both(s.output)) k.recompute.push_back({scores});
      if (readers_of(graph, s.output) != 1) continue;
      for (const Stage &m : graph.stages)
        if (m.reduce == ReduceOp::None && reads_buffer(m.body, s.output) &&
            graph.find_tensor(m.output)->role == TensorRole::Temp && read_by_both(m.output))
          k.recompute.push_back({Rewrite{RewriteKind::Recompute, m.output, {}, {}, 0, {}}, scores});
    }
    // Rewrites that barely change the work are not worth the search's draws.
    if (!k.cheaper.empty() &&
        graph_work(rewritten_graph(graph, Schedule{{}, k.cheaper})) * kRewriteWorthIt > graph_work(graph))
      k.cheaper.clear();
    it = known.emplace(key, std::move(k)).first;
  }
  return it->second;
}

}  // namespace

const std::vector<Rewrite> &cheaper_rewrites(const Graph &graph) { return known_rewrites(graph).cheaper; }

bool rewrites_apply(const Graph &graph) { return known_rewrites(graph).any; }

std::optional<Sketch> sample_sketch(const Graph &graph, const runtime::DeviceInfo &device, Rng &rng, int attempts,
                                    const std::vector<Rewrite> *rewrites) {
  const int64_t max_group = std::max<int64_t>(1, static_cast<int64_t>(device.max_work_group_size));
  const int64_t least_group = device.gpu ? 32 : 1;
  Schedule start;
  if (rewrites) {
    start.rewrites = *rewrites;
  } else if (const std::vector<Rewrite> &cheaper = cheaper_rewrites(graph);
             !cheaper.empty() && chance(rng, kRewriteShare)) {
    // (no draw where nothing rewrites: the sketches of such graphs are as they were)
    start.rewrites = cheaper;
  }
  Graph rewritten;
  try {
    rewritten = rewritten_graph(graph, start);
  } catch (const UserError &) {
    return std::nullopt;  // rewrites that do not apply here (another graph's)
  }
  if (!rewrites) {
    // A drawn rewrite, where it still applies to the graph drawn so far.
    auto take = [&](const Rewrite &r) {
      std::string reason;
      if (std::optional<Graph> next = try_rewrite(rewritten, r, &reason)) {
        rewritten = std::move(*next);
        start.rewrites.push_back(r);
      }
    };
    // A sum weighted by a softmax (attention) in one pass.
    // (no draw where it does not apply: such graphs' sketches are as they were)
    const std::vector<Rewrite> attention = known_rewrites(rewritten).attention;
    for (const Rewrite &online : attention)
      if (chance(rng, device.matrix_units ? kAttentionShareWithMatrixUnits : kAttentionShare)) take(online);
    // A row's maximum and sum of exponentials as one logsumexp (where the one pass
    // above has not taken them).
    if (device.gpu) {
      const std::vector<Rewrite> softmax = known_rewrites(rewritten).softmax;
      for (const Rewrite &lse : softmax)
        if (chance(rng, kOnlineSoftmaxShare)) take(lse);
    }
    // Scores that two stages read, each computing its own copy where it reads it
    // (attention in two passes; the consumers' rule above), where the matrix units take
    // their 16-bit contractions.
    if (device.matrix_units)
      for (const std::vector<Rewrite> &copies : known_rewrites(rewritten).recompute)
        if (chance(rng, kRecomputeShare))
          for (const Rewrite &r : copies) take(r);
    // Reductions with too few outputs for the device split across work-groups.
    std::vector<std::string> stages;
    for (const Stage &s : rewritten.stages) stages.push_back(s.output);
    for (const std::string &name : stages) {
      const Stage &stage = rewritten.stages[*stage_index(rewritten, name)];
      std::optional<Rewrite> split = draw_rfactor(rewritten, stage, device, rng);
      if (split && chance(rng, kRfactorShare)) take(*split);
    }
  }
  std::string rewrite_note;
  for (const Rewrite &r : start.rewrites) rewrite_note += print_rewrite(r) + "; ";
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Drawer drawer{rewritten,
                  least_group,
                  max_group,
                  device.async_copies,
                  device.matrix_units,
                  device.cooperative_matrices(),
                  rng,
                  Builder(lower(rewritten), unroll_budget(device)),
                  {},
                  {},
                  {},
                  {}};
    Sketch sketch = drawer.draw();
    sketch.schedule.rewrites = start.rewrites;
    sketch.note = rewrite_note + sketch.note;
    if (replay(graph, sketch.schedule, &device).program) return sketch;
  }
  return std::nullopt;
}

}  // namespace ks
