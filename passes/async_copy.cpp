// async_copy: the local caches copied at the start of each iteration of a serial loop
// become a ring of S slots filled by asynchronous copies S - 1 iterations ahead, so
// the copies run while the group computes (CUTLASS's multistage main loop; PTX
// cp.async on NVIDIA's OpenCL, bench/results.md "fp32 GEMM"). Where `prefetch` stages
// the next iteration in registers, this needs none, and one barrier an iteration.
//
// Algorithm, for `async_copy y.L S`, L a serial loop of E iterations whose body is
// cache_read's: allocations of local caches, then `copies; barrier; work; barrier`:
//  1. Each cache X gets a leading dimension of S (its slots), allocated around L.
//  2. A copy becomes W lanes of consecutive elements a work-item (W = 4 of 4 bytes, 8
//     of 2) where that is the same copy in 16-byte pieces: its flat index f used only
//     as f / K and f % K with K a multiple of W, the elements a multiple of W a step
//     for every work-item, the lanes contiguous at both ends (the vector form says so)
//     and the read inside its buffer (its pad of 0 then dropped). Else it stays one
//     element a step (a 16-bit one then copied in place: cp.async copies no 2 bytes).
//  3. Before L: async_copy { the copies of iteration s into slot s } for s < S - 1.
//  4. L's body: `barrier local after_copies S - 2` (this iteration's slot has
//     landed, every work-item is past the previous iteration's work), then
//     async_copy { the copies of iteration L_ahead = min(L + S - 1, E - 1) (a let)
//     into slot (L + S - 1) % S }, then the work reading slot L % S. The slot written is the
//     one the previous iteration read; past the end it repeats the last iteration
//     into slots never read again (no branch: see prefetch.cpp on ptxas).
//  5. After L: `barrier local after_copies 0`, so no copy is under way when the
//     slots are filled again (L inside another loop) or the kernel ends.
// Run in order, the program computes what it did: each copy lands before the
// barrier that precedes the reads of its slot, and no slot is written while read.
#include "ir/bounds.h"
#include "ir/vector_form.h"
#include "ir/visitor.h"
#include "passes/loops.h"
#include "passes/names.h"
#include "passes/primitive_info.h"
#include "passes/primitives.h"

namespace ks {
namespace {

// Loads and stores of the caches get the slot as a new first index.
struct Slotted : IRMutator {
  const std::set<std::string> &caches;
  Expr slot;
  Slotted(const std::set<std::string> &caches, Expr slot) : caches(caches), slot(std::move(slot)) {}
  using IRMutator::visit;
  std::vector<Expr> with_slot(const std::vector<Expr> &indices) {
    std::vector<Expr> out{slot};
    for (const Expr &i : indices) out.push_back(mutate(i));
    return out;
  }
  Expr visit(const Load *n, const Expr &self) override {
    if (!caches.count(n->buffer)) return IRMutator::visit(n, self);
    return Load::make(n->type, n->buffer, with_slot(n->indices), n->pad);
  }
  Stmt visit(const Store *n, const Stmt &self) override {
    if (!caches.count(n->buffer)) return IRMutator::visit(n, self);
    return Store::make(n->buffer, with_slot(n->indices), mutate(n->value));
  }
};

// L's body as cache_read leaves it (loops.h's CacheReadBody), the copies each a loop
// into one local cache from a global buffer.
struct CopiedLoop : CacheReadBody {
  std::set<std::string> caches;  // the local ones the copies fill
  std::vector<const For *> copies;
};

std::optional<CopiedLoop> copied_loop(const Program &program, const For &l, const std::string &only,
                                      std::string *reason) {
  std::optional<CacheReadBody> body = cache_read_body(l.body);
  // The local allocations the copies fill are the ring's caches; others (the scores a
  // producer computed inside the loop writes, compute_at) stay one a loop's iteration.
  std::set<std::string> local;
  if (body)
    for (const Allocate *a : body->allocations)
      if (a->scope == MemoryScope::Local) local.insert(a->buffer);
  if (local.empty()) {
    *reason = "no local cache is copied at the start of each iteration of " + l.var + only;
    return std::nullopt;
  }
  CopiedLoop c{*body, {}, {}};
  const Seq *seq = c.seq;
  for (size_t s = 0; s < c.barrier; ++s) {
    const For *copy = seq->stmts[s].as<For>();
    const BufferUse use = copy ? buffers_used(seq->stmts[s]) : BufferUse{};
    if (!copy || use.written.size() != 1 || !local.count(*use.written.begin())) {
      *reason = "the statements before " + l.var + "'s first barrier are not copies into its local caches" + only;
      return std::nullopt;
    }
    for (const std::string &source : use.read)
      if (!program.find_buffer(source)) {
        *reason = *use.written.begin() + " is copied from " + source +
                  ", not from a global buffer (prefetch stages it in registers; async_copy copies from global "
                  "memory itself)";
        return std::nullopt;
      }
    c.copies.push_back(copy);
    c.caches.insert(*use.written.begin());
  }
  return c;
}

// The local memory the caches take in `slots` slots.
int64_t ring_bytes(const CopiedLoop &c, int64_t slots) {
  int64_t bytes = 0;
  for (const Allocate *a : c.allocations) {
    if (!c.caches.count(a->buffer)) continue;
    int64_t n = dtype_bytes(a->type) * slots;
    for (int64_t e : a->shape) n *= e;
    bytes += n;
  }
  return bytes;
}

}  // namespace

std::optional<Program> async_copy(const Program &program, const std::string &stage, const std::string &loop,
                                  int64_t slots, std::string *reason) {
  StageLoops where;
  const For *l = find_loop(program, stage, loop, &where, reason);
  if (!l) return std::nullopt;
  const Kernel &kernel = program.kernels[where.kernel];
  const std::string only =
      "; async_copy takes a serial loop whose iterations start by copying local caches "
      "(cache_read " +
      stage + "." + loop + " BUFFER local -> CACHE first)";
  if (l->kind != ForKind::Serial) {
    *reason = "loop " + loop + " is " + for_kind_name(l->kind) + only;
    return std::nullopt;
  }
  if (slots < 2) {
    *reason = std::to_string(slots) + " slot: a ring needs at least 2 (one read while the next lands)";
    return std::nullopt;
  }
  // More slots than iterations copy nothing more: as many as the iterations (at least
  // 2, so that a schedule drawn at large sizes holds at the check sizes' short loops).
  slots = std::max<int64_t>(2, std::min(slots, l->extent));
  std::optional<CopiedLoop> copied = copied_loop(program, *l, only, reason);
  if (!copied) return std::nullopt;
  const std::vector<const Allocate *> &allocations = copied->allocations;
  const std::set<std::string> &caches = copied->caches;
  const Seq *seq = copied->seq;
  const size_t barrier = copied->barrier;
  if (int64_t bytes = ring_bytes(*copied, slots); bytes > kMaxLocalBytes) {
    *reason = std::to_string(slots) + " slots of " + loop + "'s caches take " + std::to_string(bytes) +
              " bytes of local memory; at most " + std::to_string(kMaxLocalBytes);
    return std::nullopt;
  }

  NameSet names = kernel_names(program, kernel);
  // 2. Each copy in lanes where it can be.
  std::vector<Stmt> copy_stmts;
  const BoundsScope to_loop = ranges_on(path_to(kernel.body, loop));
  for (const For *copy : copied->copies) {
    std::optional<Stmt> wide = copy_in_lanes(program, *copy, to_loop, names);
    copy_stmts.push_back(wide ? *wide : Stmt(std::make_shared<For>(*copy)));
  }
  // The copies of iteration `at` into slot `slot`, under fresh names.
  const Expr lv = l->loop_var();
  auto copies_of = [&](const std::string &suffix, Expr at, Expr slot) {
    std::vector<Stmt> out;
    for (const Stmt &c : copy_stmts) {
      std::map<std::string, std::string> renamed;
      for (const std::string &n : names_in_kernel(Kernel{"", c})) renamed[n] = names.fresh(n + suffix);
      Slotted slotted(caches, slot);
      out.push_back(rename(slotted.mutate(substitute(c, {{loop, at}})), renamed));
    }
    return AsyncCopy::make(Seq::make(out));
  };
  const DType it = lv.type();
  std::vector<Stmt> before;
  for (int64_t s = 0; s + 1 < slots; ++s)
    before.push_back(copies_of("_s" + std::to_string(s), make_int(std::min(s, l->extent - 1), it), make_int(s, it)));
  // The iteration copied ahead, clamped, as a let: an index that reads it stays affine
  // in the copy's lanes.
  const Expr ahead = lv + make_int(slots - 1, it);
  const std::string ahead_var = names.fresh(loop + "_ahead");
  std::vector<Stmt> body{Barrier::make(MemoryScope::Local, slots - 2),
                         LetStmt::make(ahead_var, Binary::make(BinaryOp::Min, ahead, make_int(l->extent - 1, it)),
                                       copies_of("_ahead", Var::make(it, ahead_var), ahead % make_int(slots, it)))};
  Slotted reads(caches, lv % make_int(slots, it));
  for (size_t s = barrier + 1; s + 1 < seq->stmts.size(); ++s) body.push_back(reads.mutate(seq->stmts[s]));
  Stmt loop_body = Seq::make(body);
  for (auto a = allocations.rbegin(); a != allocations.rend(); ++a)
    if (!caches.count((*a)->buffer))
      loop_body = Allocate::make((*a)->buffer, (*a)->type, (*a)->shape, (*a)->scope, loop_body);
  Program out = replace_loop(program, where.kernel, loop, [&](const For *f) {
    std::vector<Stmt> all = before;
    all.push_back(For::make(f->var, f->extent, f->kind, loop_body));
    all.push_back(Barrier::make(MemoryScope::Local, 0));
    Stmt ring = Seq::make(all);
    for (auto a = allocations.rbegin(); a != allocations.rend(); ++a) {
      if (!caches.count((*a)->buffer)) continue;
      std::vector<int64_t> shape{slots};
      shape.insert(shape.end(), (*a)->shape.begin(), (*a)->shape.end());
      ring = Allocate::make((*a)->buffer, (*a)->type, shape, MemoryScope::Local, ring);
    }
    return ring;
  });
  if (!verified(out, reason)) return std::nullopt;
  return out;
}

namespace {

// Local copies at a serial loop's start copied ahead, in a ring of slots.
void draw_async_copy(StepDraw &d) {
  if (d.all.empty()) return;
  d.p.loops = {pick(d.all, d.rng)->var};
  d.p.factors = {std::uniform_int_distribution<int64_t>(2, 3)(d.rng)};
  d.next = async_copy(d.program, d.p.stage, d.p.loops[0], d.p.factors[0], &d.reason);
}

}  // namespace

// Drawn only where asked for (draw_cases 0): it needs a local cache_read first.
const PrimitiveInfo async_copy_primitive = {
    {{ArgKind::StageLoop}, {ArgKind::Factor}},
    "async_copy c.ko 2",
    "the local copies at the start of ko's iterations copied ahead, in a ring of 2 slots",
    [](const Program &program, const Primitive &p, std::string *reason) {
      return async_copy(program, p.stage, p.loops[0], p.factors[0], reason);
    },
    draw_async_copy,
    0};

}  // namespace ks
