// The registry of schedule primitives: what the schedule language, the pipeline and
// the search know of each, from one descriptor. passes/primitives.def lists them;
// each descriptor (`split_primitive`) sits beside its transformation (passes/split.cpp)
// and gives its arguments as written (from which the parser, the printer and the
// error messages come), how it applies, how the search draws a random application of
// it, and a line of documentation (`ksmith primitives` prints them).
//
// Adding a primitive: a line in primitives.def, and one source with the
// transformation and its descriptor (and that source in CMakeLists.txt).
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "passes/loops.h"
#include "passes/schedule.h"

namespace ks {

/// The search's random number generator: its state prints and parses as text (the
/// run database keeps it), and the same seed gives the same stream everywhere.
using Rng = std::mt19937_64;

/// One of items (not empty), uniformly: the draw every proposer makes.
template <typename T>
const T &pick(const std::vector<T> &items, Rng &rng) {
  return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

/// One argument of a primitive as written, and the field of Primitive it fills.
enum class ArgKind {
  Stage,         // y        -> stage
  StageLoop,     // y.m      -> stage, loops
  StageBuffer,   // c.a_s    -> stage, buffer
  ConsumerLoop,  // y.t      -> consumer, loops (compute_at's)
  Loop,          // m        -> loops
  Loops,         // m n ...  -> loops (up to `->`, the next line or a `stage.` name)
  Buffer,        // a        -> buffer
  Factor,        // 64       -> factors (a positive integer)
  Memory,        // local    -> memory (local or private)
  Binding,       // group.y  -> binding (group.x/y/z, local.x/y/z)
  Arrow,         // ->
  Result,        // mo       -> results (a name the step introduces)
};

struct PrimitiveArg {
  ArgKind kind;
  /// What the parser says it expected: a Stage, Loop, Buffer or Result ("the outer
  /// loop's name"; a Stage's default is "a stage name"); what follows an Arrow ("before
  /// the names of the new loops"); what Loops needs at least ("at least two loops").
  const char *what = nullptr;
  int least = 0;  // Loops: how many at least
};

/// What a drawer works on: the program as the schedule so far left it, a stage drawn
/// from it and that stage's loops, and the step being drawn (its kind and stage set).
/// The drawer fills in the step and sets `next` to the program it makes (unset where
/// the primitive refused or does not apply); steps it needs first (binds before a
/// cross_reduce) go in `before`.
struct StepDraw {
  const Program &program;
  Rng &rng;
  int64_t max_group;                       // work-items a group may have
  int64_t max_copies;                      // copies of the innermost body an unroll may make
  const std::vector<std::string> &stages;  // every stage (compute_at's consumers)
  const StageLoops &loops;                 // the stage's
  std::vector<const For *> all;            // the stage's loops, outer then inner
  Primitive p;
  std::optional<Program> next;
  std::vector<Primitive> before;
  std::string reason;

  StepDraw(const Program &program, Rng &rng, int64_t max_group, int64_t max_copies,
           const std::vector<std::string> &stages, const StageLoops &loops, PrimitiveKind kind,
           const std::string &stage);
  /// A loop or buffer name: t0, t1, ... skipping those the program uses.
  std::string fresh_name();
  /// Whether a kernel of `program` has more work-items in a group than max_group.
  bool group_too_large(const Program &program) const;
  /// The stage's loop bound to kind in *program, the step appended to *steps; false
  /// (nothing changed) where bind refuses.
  bool bind(Program *program, const std::string &stage, const std::string &loop, ForKind kind,
            std::vector<Primitive> *steps) const;
  /// The stage's first `count` spatial loops (three at most) bound to work-groups x,
  /// y, z in *program, the steps in *steps; false where bind refuses one.
  bool bind_to_groups(size_t count, Program *program, std::vector<Primitive> *steps) const;
  /// A local panel of the stage's kernel (of at least `spread` dimensions of more than
  /// one element) drawn into p.buffer; false where it has none.
  bool draw_panel(size_t spread = 0);

 private:
  NameSet used_;
  int fresh_ = 0;
};

/// A primitive's descriptor.
struct PrimitiveInfo {
  std::vector<PrimitiveArg> args;  // after the name, in order
  const char *example;             // "split y.m 64 -> mo mi"
  const char *doc;                 // what the example does, a line
  /// The transformation, or nullopt with *reason saying why it refuses.
  std::optional<Program> (*apply)(const Program &program, const Primitive &step, std::string *reason);
  /// A random application on d.program (see StepDraw).
  void (*draw)(StepDraw &d);
  /// Its cases among the random-step generator's: the commonest steps of real
  /// schedules (split, reorder, bind) have two. 0: drawn only where asked for by
  /// kind (a step the property tests' random schedules keep out).
  int draw_cases = 1;
};

/// The descriptor of a kind.
const PrimitiveInfo &primitive_info(PrimitiveKind kind);
/// Every kind, in primitives.def's order.
const std::vector<PrimitiveKind> &all_primitive_kinds();
/// The kind of a name as written ("cross_reduce"); nullopt where none has it.
std::optional<PrimitiveKind> parse_primitive_kind(const std::string &name);

#define PRIMITIVE(Kind, name) extern const PrimitiveInfo name##_primitive;
#include "passes/primitives.def"

}  // namespace ks
