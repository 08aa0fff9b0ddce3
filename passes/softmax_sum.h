// The loop form of a softmax_sum (ir/graph.h: y = sum(j) softmax(score)[j] * value[j]),
// which lowering writes for one output element and cache_write for a register tile.
//
// One pass over j, as flash attention computes it: a running maximum M, a sum S of
// exp(x - M) and an accumulator A of exp(x - M) * value, both rescaled by
// exp(M - x) when a score x exceeds M (a branch: after the first few scores of a row
// the maximum rarely grows, so most steps pay one exp and no rescale); the result is
// A / S. M starts at the lowest finite float, so a score of -inf (a masked one) adds
// exp(-inf) = 0 and never makes a NaN; a row of nothing but -inf gives 0 / 0, as a
// softmax of it does.
//
// In a tile the row state (M, S, the score being summed and its weight P) is kept per
// row, the loops the score depends on, and A per element: the score's sum and its
// exponentials run once a row, not once an element (attention's head dimension).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/names.h"

namespace ks {

struct SoftmaxSumForm {
  // Private buffers and lets, by role.
  std::string maximum, total, acc, score, weight, x, rescale;
  DType value_type = DType::F32;  // the output's; M and the exponentials
  DType acc_type = DType::F32;    // S, A and the score's sum (f64 in the reference)
  Expr term;                      // the score's summand (the score, with no score variables)
  Expr scale;                     // a constant factor of every summand, applied once to the sum (or undefined)
  Expr value;
  std::vector<Stmt> score_layers;  // the score's sum: loops, lets and guards around its update
  // Where a register tile lies around the form (cache_write); empty for one element.
  // The accumulation keeps the tile's loops as they were; every other nest is a copy
  // with fresh names, its loops of kind copies (unrolled where the tile is small:
  // registers need constant indices).
  std::vector<Stmt> row_layers;    // the tile's loops that the score depends on, with their lets
  std::vector<Stmt> value_layers;  // the rest of the tile, inside a row
  std::vector<Stmt> tile_layers;   // the whole tile, as it was
  ForKind copies = ForKind::Unrolled;
  std::vector<int64_t> row_shape{1}, tile_shape{1};
  std::vector<Expr> row_index{}, tile_index{};  // empty: [0]
  NameSet *names = nullptr;                      // for the copies' names
};

/// The initialisation: M, S and A allocated around init; the caller puts the
/// reduction's loops around step() between them and the write-back.
Stmt softmax_sum_block(const SoftmaxSumForm &form, Stmt reduction, const std::string &output,
                       const std::vector<Expr> &output_index);
/// One step of the reduction's outer loops: the score's sum, the running statistics,
/// the accumulation.
Stmt softmax_sum_step(const SoftmaxSumForm &form);

/// Reads back the form lowering wrote (block: the stage's block's body): the names,
/// types, term, value and score layers, and the reduction's outer layers around the step
/// into *reduction_layers; false where the block is not a softmax_sum's untiled form.
bool read_softmax_sum(const Stmt &block_body, SoftmaxSumForm *form, std::vector<Stmt> *reduction_layers,
                      std::string *output, std::vector<Expr> *output_index);

}  // namespace ks
