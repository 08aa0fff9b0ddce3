// The vector form of a loop: when the iterations of a loop can run as the lanes of
// one vector operation per statement. The verifier checks it for every vectorized
// loop (so a later pass cannot break it unnoticed), `vectorize` reports its failure
// as the refusal, and the code generators read off it how to print each name.
//
// Lane l is iteration l. Running statement by statement over all lanes instead of
// iteration by iteration over all statements gives the same result when no lane
// reads what another lane writes. The rules guarantee that:
//  - the body holds only lets, guards, blocks and stores (no loops, allocations or
//    barriers); a guard is the same in every lane, or a tail guard `a < b` (from a
//    split that does not divide), a affine with stride 1 along the loop and b the
//    same in every lane: either every lane passes it, and the vector runs without
//    it, or the loop runs lane by lane;
//  - a varying access (one whose indices use the loop variable) walks the last
//    dimension with stride 1 (after expanding lets) and keeps the other indices the
//    same in every lane: a contiguous vector of the buffer, no padded reads;
//  - every store varies, and every access to a buffer the body stores to uses the
//    same indices as that store: each lane touches its own element only;
//  - varying values are f32 or i32 arithmetic (+ - * min max, / on f32, negation)
//    and builtins; the loop variable and the lets computed from it appear only in
//    indices. Casts, selects and comparisons of varying values are refused.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "ir/ir.h"

namespace ks {

/// The lane counts a vectorized loop may have (OpenCL C's and GLSL's vector sizes).
bool is_vector_width(int64_t lanes);

struct VectorForm {
  /// The loop variable and the lets computed from it: names that differ by lane.
  std::set<std::string> varying;
  /// The varying lets that hold vector values (the others are indices, printed at
  /// lane 0 alongside the loop variable, which is 0 there).
  std::set<std::string> vector_lets;
  /// Whether every lane passes every tail guard, in the variables outside the loop
  /// (undefined when there is no tail guard).
  Expr all_lanes_pass;
};

/// The vector form of the loop, or nullopt with *reason naming what breaks it.
std::optional<VectorForm> vector_form(const For &loop, std::string *reason);

}  // namespace ks
