// cache_read: the part of a global buffer that one iteration of a loop reads is
// first copied to local memory (by the work-items of the group together) or to
// private memory (by each work-item), and read from there.
//
// Algorithm, for `cache_read y.L b local -> b_s`:
//  1. Every read of b in L's body has an affine index (lets expanded). Variables
//     fixed during one iteration of L are the loops around L (L included) except,
//     for local memory, the local loops: those, and the loops inside L's body,
//     range over their extents. A let that is a digit of a ranging loop (g = lane / 4,
//     t = lane % 4: what fuse leaves) ranges too, as a loop of its own over the
//     digit's values; the box then covers every combination of digits, which the
//     loop's values are among. Per dimension, all reads share one fixed part F
//     and their ranging parts span [lo, hi] in steps of s (the gcd of the ranging
//     coefficients and of the reads' offsets): the box starts at F + lo and has
//     (hi - lo) / s + 1 elements, s apart. Where that span is mostly gaps and every
//     read indexes the dimension alike (d = (j * 256 + t) * 8 + v at each j and v:
//     64 elements of a span of 14,344), the dimension is in parts instead: one
//     dimension of the box per ranging variable, indexed by its value. L is a serial
//     loop, or the innermost local loop (then each work-item copies once, before its
//     work).
//  2. b_s is allocated with the box's shape; the copy `b_s[p] = b[F + lo + p * s]`
//     runs over the box's elements, element f = i * W + w for work-item w of W
//     (flat over the group's local loops; W = 1 for private memory). The copy reads
//     b with a pad of 0 where it had none: the box may reach past b's edges where
//     the reads it covers are guarded. A private copy of contiguous elements goes in
//     16-byte vectors (loops.h's copy_in_lanes), as async_copy's copies do.
//  3. Reads become b_s[(index - (F + lo)) / s], which uses only ranging variables (in
//     parts: b_s[.., j, v, ..]).
//  4. Local memory: a barrier after the copy (the group's work-items read each
//     other's elements) and one after the body (before the next copy overwrites).
#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include "ir/affine.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {

namespace {

// A local copy of a 16-bit tensor keeps its format (half the bytes, and matrix fragments
// read two elements a word); registers hold values, f32.
DType cache_type(DType source, MemoryScope scope) { return scope == MemoryScope::Local ? source : value_type(source); }

struct Read {
  const Load *load;
  std::vector<Affine> index;
};

// Where value is v / c or v % c for a constant c > 0 and a loop v of the given
// extents: how many values it takes.
std::optional<int64_t> digit_extent(const Expr &value, const std::map<std::string, int64_t> &extents,
                                    const std::set<std::string> &ranging) {
  const Binary *b = value.as<Binary>();
  if (!b || (b->op != BinaryOp::Div && b->op != BinaryOp::Mod)) return std::nullopt;
  const Var *v = b->a.as<Var>();
  const IntImm *c = b->b.as<IntImm>();
  if (!v || !c || c->value <= 0 || !ranging.count(v->name) || !extents.count(v->name)) return std::nullopt;
  const int64_t e = extents.at(v->name);
  return b->op == BinaryOp::Div ? (e + c->value - 1) / c->value : std::min(e, c->value);
}

// The reads of a buffer inside L's body, as affine forms; the loops met inside, and
// the digits of ranging loops (digit_extent) as loops.
struct CollectReads : IRVisitor {
  const std::string &buffer;
  std::map<std::string, Affine> lets;
  std::map<std::string, int64_t> extents;  // of the ranging loops around L, then of those inside
  std::set<std::string> ranging;
  std::map<std::string, int64_t> inner_loops;
  std::vector<Read> reads;
  std::string failure;
  CollectReads(const std::string &buffer, std::map<std::string, Affine> lets, std::map<std::string, int64_t> extents,
               std::set<std::string> ranging)
      : buffer(buffer), lets(std::move(lets)), extents(std::move(extents)), ranging(std::move(ranging)) {}
  using IRVisitor::visit;
  void visit(const For *n) override {
    inner_loops[n->var] = extents[n->var] = n->extent;
    ranging.insert(n->var);
    IRVisitor::visit(n);
  }
  void visit(const LetStmt *n) override {
    if (auto a = affine_of(n->value, lets)) {
      lets[n->var] = *a;
    } else if (auto e = digit_extent(n->value, extents, ranging)) {
      lets[n->var] = Affine{{{n->var, 1}}, 0};
      inner_loops[n->var] = extents[n->var] = *e;
      ranging.insert(n->var);
    }
    IRVisitor::visit(n);
  }
  void visit(const Load *n) override {
    IRVisitor::visit(n);
    if (n->buffer != buffer) return;
    Read r{n, {}};
    for (const Expr &i : n->indices) {
      auto a = affine_of(i, lets);
      if (!a) {
        if (failure.empty()) failure = "an index of " + buffer + " is not affine in the loops";
        return;
      }
      r.index.push_back(*a);
    }
    reads.push_back(r);
  }
};

// Where body is another local copy's `allocate ... { copy; barrier; use; barrier }`,
// the same with `copy` first; else undefined.
Stmt join_copies(const Stmt &body, const Stmt &copy) {
  if (const Allocate *a = body.as<Allocate>()) {
    Stmt inner = join_copies(a->body, copy);
    return inner.defined() ? Allocate::make(a->buffer, a->type, a->shape, a->scope, inner) : Stmt();
  }
  const Seq *s = body.as<Seq>();
  if (!s || s->stmts.size() < 3) return Stmt();
  const Barrier *first = s->stmts[1].as<Barrier>(), *last = s->stmts.back().as<Barrier>();
  if (!first || !last || !s->stmts[0].as<For>()) return Stmt();
  std::vector<Stmt> stmts{copy};
  stmts.insert(stmts.end(), s->stmts.begin(), s->stmts.end());
  return Seq::make(stmts);
}

// The loops and lets from the kernel's top down to L, as step 1 sees them.
struct Around {
  std::map<std::string, Affine> lets;
  std::map<std::string, int64_t> extents;  // loops
  std::map<std::string, DType> types;      // loops, and lets outside L that are not affine but fixed
  std::set<std::string> ranging;
  // A let that depends on a ranging loop and is not affine in it: the loop. Such a
  // let may not stand for a fixed value (o = f / 8 % 8 with f = g * 32 + l takes
  // several values across the work-items of a group).
  std::map<std::string, std::string> varies_through;
  std::vector<std::pair<std::string, int64_t>> local_loops[3];  // by dimension

  bool has_local_loops() const { return !local_loops[0].empty() || !local_loops[1].empty() || !local_loops[2].empty(); }
  // The work-items of the group, each copying its share.
  int64_t workers() const {
    int64_t w = 1;
    for (int dim = 2; dim >= 0; --dim)
      for (const auto &[v, e] : local_loops[dim]) w *= e;
    return w;
  }
};

Around around_loop(const std::vector<Stmt> &path, MemoryScope scope) {
  Around out;
  std::set<std::string> varying;  // the ranging loops and the lets that depend on them
  for (const Stmt &s : path) {
    if (const For *f = s.as<For>()) {
      out.extents[f->var] = f->extent;
      out.types[f->var] = index_type_for(f->extent);
      if (is_local(f->kind)) out.local_loops[hardware_dim(f->kind)].push_back({f->var, f->extent});
      if (is_local(f->kind) && scope == MemoryScope::Local) out.ranging.insert(f->var), varying.insert(f->var);
    } else if (const LetStmt *l = s.as<LetStmt>()) {
      if (auto e = digit_extent(l->value, out.extents, out.ranging)) {
        out.lets[l->var] = Affine{{{l->var, 1}}, 0};
        out.extents[l->var] = *e;
        out.types[l->var] = l->value.type();
        out.ranging.insert(l->var);
        varying.insert(l->var);
        continue;
      }
      const bool varies = mentions(l->value, varying);
      if (varies) {
        varying.insert(l->var);
        for (const std::string &v : varying)
          if (v != l->var && mentions(l->value, {v})) {
            out.varies_through[l->var] = out.varies_through.count(v) ? out.varies_through[v] : v;
            break;
          }
      }
      if (auto a = affine_of(l->value, out.lets))
        out.lets[l->var] = *a;
      else if (!varies)
        out.types[l->var] = l->value.type();  // fixed during one iteration of L, like a loop outside it
    }
  }
  return out;
}

// A ranging variable of an index, its coefficient and extent: a dimension in parts has
// one of the cache's dimensions for each.
struct Part {
  std::string var;
  int64_t coeff, extent;
};

// Per dimension: the fixed part F all reads share, the span [lo, hi] of their ranging
// parts and the step s between the elements they read; or, where that span is mostly
// gaps (d = (j * 256 + t) * 8 + v read at every j and v of one t), the dimension in
// parts: a dimension of the cache per ranging variable, indexed by its value. shape is
// the cache's: one extent per plain dimension, one per part.
struct Box {
  std::vector<Affine> fixed;
  std::vector<int64_t> lo, hi, stride;
  std::vector<std::vector<Part>> parts;
  std::vector<int64_t> shape;
};

// The ranging terms of a read's index in dimension d (the variables of more than one
// value), the largest step first.
std::vector<Part> ranging_terms(const Read &read, size_t d, const Around &around) {
  std::vector<Part> terms;
  for (const auto &[v, c] : read.index[d].coeffs)
    if (around.ranging.count(v) && around.extents.count(v) && around.extents.at(v) > 1)
      terms.push_back({v, c, around.extents.at(v)});
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Part &a, const Part &b) { return std::abs(a.coeff) > std::abs(b.coeff); });
  return terms;
}

// Dimension d in parts, where every read indexes it alike (the same offset, and ranging
// terms of the same steps and extents, whatever their variables' names) and that holds
// fewer elements than the span; else empty. A read's element in the cache is then its
// variables' values, part by part.
std::vector<Part> parts_of(const std::vector<Read> &reads, size_t d, const Around &around, int64_t span) {
  const std::vector<Part> parts = ranging_terms(reads[0], d, around);
  auto same = [](const Part &a, const Part &b) { return a.coeff == b.coeff && a.extent == b.extent; };
  for (const Read &read : reads) {
    const std::vector<Part> terms = ranging_terms(read, d, around);
    if (read.index[d].constant != reads[0].index[d].constant || terms.size() != parts.size() ||
        !std::equal(terms.begin(), terms.end(), parts.begin(), same))
      return {};
  }
  int64_t volume = 1;
  for (const Part &p : parts) volume *= p.extent;
  return parts.size() >= 2 && volume < span ? parts : std::vector<Part>{};
}

// One read's part of the box in dimension d: its fixed part, and the least and
// greatest of its ranging part; nullopt (with *reason) where an index uses a name
// that is neither.
std::optional<std::tuple<Affine, int64_t, int64_t>> read_span(const Read &read, size_t d, Around &around,
                                                              const std::string &buffer, int64_t *stride,
                                                              std::string *reason) {
  Affine f{{}, 0};
  int64_t min = read.index[d].constant, max = min;
  for (const auto &[v, c] : read.index[d].coeffs) {
    if (around.varies_through.count(v)) {
      *reason = "an index of " + buffer + " uses " + v + ", which takes several values across the group's " +
                "work-items (through local loop " + around.varies_through[v] + ") and is not affine in them: no " +
                "one box of " + buffer + " serves the group";
      return std::nullopt;
    }
    if (!around.types.count(v)) {
      *reason = "an index of " + buffer + " uses " + v + ", which is not affine in the loops";
      return std::nullopt;
    }
    if (around.ranging.count(v) && around.extents.count(v)) {
      (c < 0 ? min : max) += c * (around.extents[v] - 1);
      if (around.extents[v] > 1) *stride = std::gcd(*stride, std::abs(c));
    } else {
      f.coeffs[v] = c;
    }
  }
  return std::tuple{f, min, max};
}

std::optional<Box> box_of(const std::vector<Read> &reads, Around &around, const std::string &buffer,
                          const std::string &loop, size_t rank, std::string *reason) {
  Box box{std::vector<Affine>(rank),     std::vector<int64_t>(rank),           std::vector<int64_t>(rank),
          std::vector<int64_t>(rank, 0), std::vector<std::vector<Part>>(rank), {}};
  for (size_t r = 0; r < reads.size(); ++r) {
    const Read &read = reads[r];
    if (read.load->pad != reads[0].load->pad) {
      *reason = "reads of " + buffer + " in loop " + loop + " pad differently";
      return std::nullopt;
    }
    for (size_t d = 0; d < rank; ++d) {
      auto span = read_span(read, d, around, buffer, &box.stride[d], reason);
      if (!span) return std::nullopt;
      const auto &[f, min, max] = *span;
      if (r == 0) {
        box.fixed[d] = f;
        box.lo[d] = min;
        box.hi[d] = max;
      } else if (f.coeffs != box.fixed[d].coeffs) {
        *reason = "reads of " + buffer + " in loop " + loop + " do not move together in dimension " +
                  std::to_string(d) + ", so no one box covers them";
        return std::nullopt;
      } else {
        box.stride[d] = std::gcd(box.stride[d], std::abs(read.index[d].constant - reads[0].index[d].constant));
        box.lo[d] = std::min(box.lo[d], min);
        box.hi[d] = std::max(box.hi[d], max);
      }
    }
  }
  for (size_t d = 0; d < rank; ++d) {
    if (box.stride[d] == 0) box.stride[d] = 1;
    const int64_t span = (box.hi[d] - box.lo[d]) / box.stride[d] + 1;
    box.parts[d] = parts_of(reads, d, around, span);
    if (box.parts[d].empty())
      box.shape.push_back(span);
    else
      box.lo[d] = reads[0].index[d].constant;  // the origin: each part adds coefficient x value
    for (const Part &p : box.parts[d]) box.shape.push_back(p.extent);
  }
  return box;
}

// Whether the box fits the memory it goes to; else *reason says by how much not.
bool fits(const Box &box, const TensorDecl &source, MemoryScope scope, std::string *reason) {
  const int64_t volume = shape_numel(box.shape);
  if (scope == MemoryScope::Private && volume > kMaxPrivateElements) {
    *reason = "the box of " + source.name + " has " + std::to_string(volume) +
              " elements; private caches hold at most " + std::to_string(kMaxPrivateElements);
    return false;
  }
  if (scope == MemoryScope::Local && volume * dtype_bytes(cache_type(source.type, scope)) > kMaxLocalBytes) {
    *reason = "the box of " + source.name + " needs " +
              std::to_string(volume * dtype_bytes(cache_type(source.type, scope))) +
              " bytes of local memory; at most " + std::to_string(kMaxLocalBytes);
    return false;
  }
  return true;
}

// Step 2: the copy `cache[p] = source[F + lo + p * s]`, element f = i * W + w for
// work-item w of W, its coordinates by / and %.
Stmt copy_loop(const Box &box, const Around &around, const TensorDecl &source, double pad, MemoryScope scope,
               const std::string &cache, NameSet &names) {
  const size_t rank = box.fixed.size();
  const int64_t volume = shape_numel(box.shape);
  const int64_t workers = scope == MemoryScope::Local ? around.workers() : 1;
  // The copy's flat element numbers run to steps * workers, past the volume where the
  // work-items do not divide it: the index type must hold both.
  const int64_t steps = (volume + workers - 1) / workers;
  const DType index = index_type_for(std::max(volume, steps * workers));
  const std::string step = names.fresh(cache + "_i"), flat = names.fresh(cache + "_f");
  Expr worker;
  if (scope == MemoryScope::Local)
    for (int dim = 2; dim >= 0; --dim)
      for (const auto &[v, e] : around.local_loops[dim]) {
        Expr w = cast_to(index, Var::make(index_type_for(e), v));
        worker = worker.defined() ? worker * make_int(e, index) + w : w;
      }
  Expr f = Var::make(index, flat);
  std::vector<Expr> coords(box.shape.size()), source_index(rank);
  size_t k = box.shape.size();  // the cache's dimension, counted down with the box's
  int64_t below = 1;            // elements of the box per step of cache dimension k
  auto coordinate = [&] {
    --k;
    Expr c = below == 1 ? f : f / make_int(below, index);
    if (k > 0) c = c % make_int(box.shape[k], index);
    below *= box.shape[k];
    return coords[k] = c;
  };
  for (size_t d = rank; d-- > 0;) {
    Affine o = box.fixed[d];  // the box's origin, in the fixed variables
    o.constant = box.lo[d];
    const DType t = index_type_for(source.shape[d]);
    source_index[d] = affine_expr(o, around.types, t);
    if (box.parts[d].empty()) {
      const Expr c = coordinate();
      source_index[d] =
          source_index[d] + (box.stride[d] == 1 ? cast_to(t, c) : cast_to(t, c) * make_int(box.stride[d], t));
    }
    for (auto p = box.parts[d].rbegin(); p != box.parts[d].rend(); ++p)
      source_index[d] = source_index[d] +
                        (p->coeff == 1 ? cast_to(t, coordinate()) : cast_to(t, coordinate()) * make_int(p->coeff, t));
  }
  Stmt copy = Store::make(cache, coords, Load::make(source.type, source.name, source_index, pad));
  if (steps * workers != volume) copy = IfThenElse::make(f < make_int(volume, index), copy);
  Expr element = cast_to(index, Var::make(index_type_for(steps), step));
  if (worker.defined()) element = element * make_int(workers, index) + worker;
  copy = LetStmt::make(flat, element, copy);
  // Unrolled where the limit allows: a private copy needs constant indices to live in registers.
  return For::make(step, steps, steps <= kMaxUnroll ? ForKind::Unrolled : ForKind::Serial, copy);
}

// Step 3: the reads of the box read the cache instead, at indices in the ranging
// variables alone.
struct Redirect : IRMutator {
  const std::string &cache;
  std::map<const Load *, const Read *> index;  // each read's affine index, from step 1
  const Box &box;
  const Around &around;
  const std::map<std::string, DType> &types;
  Redirect(const std::string &cache, const std::vector<Read> &reads, const Box &box, const Around &around)
      : cache(cache), box(box), around(around), types(around.types) {
    for (const Read &r : reads) index[r.load] = &r;
  }
  using IRMutator::visit;
  Expr visit(const Load *n, const Expr &self) override {
    auto it = index.find(n);
    if (it == index.end()) return IRMutator::visit(n, self);
    std::vector<Expr> indices;
    for (size_t d = 0; d < n->indices.size(); ++d) {
      if (!box.parts[d].empty()) {
        for (const Part &p : ranging_terms(*it->second, d, around))
          indices.push_back(affine_expr(Affine{{{p.var, 1}}, 0}, types, DType::I32));
        continue;
      }
      Affine a = it->second->index[d];
      for (const auto &[v, c] : box.fixed[d].coeffs) a.coeffs.erase(v);
      a.constant -= box.lo[d];
      for (auto &[v, c] : a.coeffs) c /= box.stride[d];
      a.constant /= box.stride[d];
      indices.push_back(affine_expr(a, types, DType::I32));
    }
    return Load::make(n->type, cache, indices);
  }
};

// The buffer to cache, where L may hold a copy of it and the cache's name is free;
// else nullptr with *reason.
const TensorDecl *cacheable(const Program &program, const Kernel &kernel, const For &at, const std::string &buffer,
                            MemoryScope scope, const std::string &cache, std::string *reason) {
  if (scope == MemoryScope::Global) {
    *reason = "a cache lives in local or private memory";
    return nullptr;
  }
  const bool bound = is_group(at.kind) || is_local(at.kind);
  if (at.kind == ForKind::Vectorized || is_group(at.kind) || (bound && has_bound_loop(at.body))) {
    *reason = "loop " + at.var + " is " + for_kind_name(at.kind) +
              "; the copy goes in a serial loop or the innermost local loop";
    return nullptr;
  }
  const TensorDecl *source = program.find_buffer(buffer);
  if (!source) {
    *reason = "no global buffer named " + buffer;
    return nullptr;
  }
  for (const std::string &w : kernel_written_buffers(kernel))
    if (w == buffer) {
      *reason = "kernel " + kernel.name + " writes " + buffer + "; only what it just reads can be cached";
      return nullptr;
    }
  return name_is_free(program, kernel, cache, reason) ? source : nullptr;
}

}  // namespace

std::optional<Program> cache_read(const Program &program, const std::string &stage, const std::string &loop,
                                  const std::string &buffer, MemoryScope scope, const std::string &cache,
                                  std::string *reason) {
  StageLoops where;
  const For *at = find_loop(program, stage, loop, &where, reason);
  if (!at) return std::nullopt;
  const Kernel &kernel = program.kernels[where.kernel];
  const TensorDecl *source = cacheable(program, kernel, *at, buffer, scope, cache, reason);
  if (!source) return std::nullopt;

  // 1. The box.
  const std::vector<Stmt> path = path_to(kernel.body, loop);
  Around around = around_loop(path, scope);
  if (scope == MemoryScope::Local && !around.has_local_loops()) {
    *reason =
        "no local loop encloses " + loop + ": a local copy is shared by the work-items of a group, so bind them first";
    return std::nullopt;
  }
  CollectReads reads(buffer, around.lets, around.extents, around.ranging);
  reads.dispatch(at->body);
  for (const auto &[v, e] : reads.inner_loops) {
    around.extents[v] = e;
    if (!around.types.count(v)) around.types[v] = index_type_for(e);
    around.ranging.insert(v);
  }
  if (!reads.failure.empty()) {
    *reason = reads.failure;
    return std::nullopt;
  }
  if (reads.reads.empty()) {
    *reason = "loop " + loop + " of " + stage + " does not read " + buffer;
    return std::nullopt;
  }
  std::optional<Box> box = box_of(reads.reads, around, buffer, loop, source->shape.size(), reason);
  if (!box || !fits(*box, *source, scope, reason)) return std::nullopt;

  // 2. The copy.
  NameSet names = kernel_names(program, kernel);
  names.reserve(cache);
  Stmt copy = copy_loop(*box, around, *source, reads.reads[0].load->pad.value_or(0.0), scope, cache, names);
  // A private copy of contiguous elements in 16-byte vectors (a local one stays element by
  // element: its work-items' steps interleave).
  if (scope == MemoryScope::Private)
    if (auto wide = copy_in_lanes(program, *copy.as<For>(), ranges_on(path), names)) copy = *wide;

  // 3. Reads from the cache.
  const Stmt body = Redirect(cache, reads.reads, *box, around).mutate(at->body);

  // 4. Barriers around the use of a shared copy; copies at one loop share them.
  Stmt cached;
  if (scope == MemoryScope::Private)
    cached = Seq::make({copy, body});
  else if (!(cached = join_copies(body, copy)).defined())
    cached = is_local(at->kind)
                 ? Seq::make({copy, Barrier::make(MemoryScope::Local), body})
                 : Seq::make({copy, Barrier::make(MemoryScope::Local), body, Barrier::make(MemoryScope::Local)});
  cached = Allocate::make(cache, cache_type(source->type, scope), box->shape, scope, cached);
  Program out = replace_loop(program, where.kernel, loop,
                             [&](const For *l) { return For::make(l->var, l->extent, l->kind, cached); });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// What one iteration of a loop reads of a buffer, cached.
void draw_cache_read(StepDraw &d) {
  if (d.all.empty()) return;
  std::vector<std::string> read = kernel_buffers(d.program, d.program.kernels[d.loops.kernel]);
  if (read.empty()) return;
  d.p.loops = {pick(d.all, d.rng)->var};
  d.p.buffer = pick(read, d.rng);
  d.p.memory = std::uniform_int_distribution<int>(0, 1)(d.rng) ? MemoryScope::Local : MemoryScope::Private;
  d.p.results = {d.fresh_name()};
  d.next = cache_read(d.program, d.p.stage, d.p.loops[0], d.p.buffer, d.p.memory, d.p.results[0], &d.reason);
  if (d.next && d.group_too_large(*d.next)) d.next.reset();
}

}  // namespace

const PrimitiveInfo cache_read_primitive = {{{ArgKind::StageLoop},
                                             {ArgKind::Buffer, "the buffer to cache"},
                                             {ArgKind::Memory},
                                             {ArgKind::Arrow, "before the cache's name"},
                                             {ArgKind::Result, "the cache's name"}},
                                            "cache_read c.ko a local -> a_s",
                                            "the box of a that one iteration of ko reads, copied to a_s",
                                            [](const Program &program, const Primitive &p, std::string *reason) {
                                              return cache_read(program, p.stage, p.loops[0], p.buffer, p.memory,
                                                                p.results[0], reason);
                                            },
                                            draw_cache_read};

}  // namespace ks
