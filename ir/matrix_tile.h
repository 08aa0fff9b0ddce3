// The matrix-unit form of a loop: when a warp may run a loop nest of multiply-adds
// as NVIDIA's warp-wide matrix instruction mma.sync.m16n8k8 (D[16x8] += A[16x8] *
// B[8x8], TF32 operands, f32 accumulators). The verifier checks it for every loop of
// kind `matrix` (tensorize makes them), tensorize reports its failure as the
// refusal, and the OpenCL printer writes the instructions from it.
//
// The loop's body is exactly a nest of loops, lets and conditions on the reduction's
// edge around one store `acc[p] = acc[p] + A * B * S` into a private
// accumulator (a condition's failing k points become zero operands, which add
// nothing), where S, the scale, is the product's other factors (none, a constant,
// 1 / total[i]: x / d is read as x times 1 / d) and no k loop reads it: the
// instructions sum A B, and S multiplies the sum where it is added to the
// accumulator (attention's scores scaled by 1 / sqrt(D), its weights divided by
// their row's total). A and B are f32 loads or expressions of loads (exp(s[..] -
// lse[..])), computed as the fragments are loaded. Its loops are
// classed by what reads them: a loop A's and B's indices both use is a k loop (the
// instruction's reduction), one only A's uses an m loop, one only B's an n loop.
// The work-item's lane is the kernel's local.x loop, of 32 work-items (one warp);
// g = lane / 4 and t = lane % 4 are the PTX ISA's names. The instruction's
// fragments ("Matrix Fragments for mma.m16n8k8"): lane (g, t) holds
//   a0 A[g][t]  a1 A[g+8][t]  a2 A[g][t+4]  a3 A[g+8][t+4]
//   b0 B[t][g]  b1 B[t+4][g]
//   c0 C[g][2t] c1 C[g][2t+1] c2 C[g+8][2t] c3 C[g+8][2t+1]
// so the nest is one instruction per step of 8 k-points for each m tile and n tile
// when:
//  - one m loop h of 2 iterations gives rows g and g + 8, one n loop c of 2
//    columns 2t and 2t + 1 (the innermost such loops); the other m loops number the
//    m tiles, the other n loops the n tiles;
//  - the indices of A's loads depend on the lane through g alone and B's through t alone (then
//    row g + 8h of a tile is the same row whichever lane reads it, and so is column
//    2t + c), checked by evaluating both over every lane, m, n and k point, at the
//    loops around the nest at zero, at their last values and at two more points;
//  - p depends on neither the lane nor k, and tells every (m, n) point apart.
// The sum then holds exactly the nest's products; only their order and rounding
// differ, which the precision forms (codegen) bound. k points are numbered in the
// nest's order (the innermost k loop fastest), 8 to an instruction step; any
// numbering of a step's points as the instruction's k slots gives the same sum as
// long as A and B share it, and slot s is point 2 (s % 4) + s / 4: a lane's two
// slots t and t + 4 are then neighbours (a0 and a2 of one row one 8-byte load where
// the panel's rows run along k).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ks {

/// The arithmetic a matrix loop's f32 products may use. F32 (the default): fp32-
/// accurate, as 3xTF32 (each operand a TF32 high part plus a TF32 residual; the two
/// small products first, then the large one, into accumulators that start from zero
/// and are added to the f32 accumulator every kMatrixRunPoints k points). TF32: one
/// product of the rounded operands, about 1e-3 relative; only where the user asks.
enum class Precision { F32, TF32 };
const char *precision_name(Precision precision);  // "fp32", "tf32"
std::optional<Precision> parse_precision(const std::string &name);

/// The k points the matrix unit sums before the sum is added to the f32 accumulator
/// (the code generator's runs). The unit's own additions truncate, so its error grows
/// with the run; at 64 the 3xTF32 GEMM is more accurate than an fp32 FMA tile and 5%
/// faster than with a run of one 16-point panel (H200; bench/results.md, "Matrix units").
constexpr int64_t kMatrixRunPoints = 64;

struct MatrixTile {
  struct Loop {
    std::string var;
    int64_t extent;
  };
  std::vector<Loop> k, m, n;  // outer to inner; m without h, n without c
  std::string h, c;           // the m loop of rows g, g + 8 and the n loop of columns 2t, 2t + 1
  std::string lane;           // the local.x loop
  std::string acc;            // the private accumulator
  // The operands as written in the nest: loads, or f32 expressions of loads
  // (attention's weights exp(s[i, j] - lse[i])), computed as each fragment register
  // is loaded; then with every let expanded.
  Expr a, b;
  Expr a_value, b_value;
  std::vector<Expr> acc_index;  // likewise
  // The conditions around the store (a reduction's edge: they use k and the loops
  // around alone), undefined where none: the fragments read 0 where they fail.
  Expr guard;
  Expr scale;  // S, every let expanded; undefined where the product is A B alone
  // F32: the f32 form above (mma.sync.m16n8k8 on TF32 parts). F16 or BF16 where A's
  // and B's values are all exact in that format (with_half_operands): the instruction
  // is mma.sync.m16n8k16 on it, whose products are exact, f32 accumulators alike.
  // Its fragments ("Matrix Fragments for mma.m16n8k16 with floating point type"):
  //   a0..a7: A[g + 8 ((e / 2) % 2)][slot 2t + e % 2 + 8 (e / 4)]
  //   b0..b3: B[slot 2t + e % 2 + 8 (e / 2)][g]
  // and slot 2t + j + 8u is point 4t + j + 2u: a lane's four slots of a row are
  // neighbours (one 16-byte load where the panel's rows run along k).
  DType operands = DType::F32;

  int64_t step_points() const { return operands == DType::F32 ? 8 : 16; }  // k points an instruction sums
  int64_t steps() const;    // instruction steps: k points / step_points()
  int64_t m_tiles() const;  // instructions along m and n
  int64_t n_tiles() const;

  /// Fragment register q (0..3) of A for m tile `tile` at step `step`, as the
  /// work-item whose lane is `lane` loads it: A[g + 8 (q % 2)][slot t + 4 (q / 2)];
  /// with 16-bit operands element q (0..7) of the four registers, as above.
  Expr a_fragment(const Expr &lane, const Expr &tile, const Expr &q, const Expr &step) const;
  /// Fragment register q (0, 1) of B for n tile `tile`: B[slot t + 4q][g]; with
  /// 16-bit operands element q (0..3).
  Expr b_fragment(const Expr &lane, const Expr &tile, const Expr &q, const Expr &step) const;
  /// A at row `row` (0..15) of m tile `tile` and k point `point` (0..step_points() - 1)
  /// of step `step`, and B at that point and column `column` (0..7) of n tile `tile`:
  /// the operands by their place in the instruction, not by a lane's fragment (what a
  /// cooperative matrix loads from memory as a whole), without the guard. Points in
  /// the nest's order.
  Expr a_at(int64_t tile, int64_t row, int64_t point, const Expr &step) const;
  Expr b_at(int64_t tile, int64_t point, int64_t column, const Expr &step) const;
  /// The guard at that point (it reads k and the loops around alone); undefined where none.
  Expr guard_at(int64_t point, const Expr &step) const;
  /// The accumulator's indices for register r (0..3) of the instruction of m tile
  /// mt and n tile nt: row half r / 2, column r % 2.
  std::vector<Expr> acc_at(int64_t mt, int64_t nt, int r) const;
  /// S at that register (the lane's own rows and columns); undefined where none.
  Expr scale_at(int64_t mt, int64_t nt, int r) const;

 private:
  std::map<std::string, Expr> register_values(int64_t mt, int64_t nt, int r) const;
  // The k loops' values at k point `point` of step `step`.
  std::map<std::string, Expr> point_values(int64_t point, const Expr &step) const;
  Expr guarded(const Expr &load, const std::map<std::string, Expr> &values) const;
};

/// Whether body holds a matrix loop (tensorize's).
bool has_matrix_loop(const Stmt &body);

/// The matrix-unit form of `loop` inside a kernel's body, or nullopt with *reason
/// naming what breaks it.
std::optional<MatrixTile> matrix_tile(const Stmt &kernel_body, const For &loop, std::string *reason);

/// tile with `operands` set: the 16-bit format A's and B's values are all exact in
/// (loads of tensors stored in it, of the kernel's local and private copies of them,
/// zeros, values rounded to it: `bf16(exp(s - lse))`), where they share one and the k
/// points are a multiple of 16; else F32. storage: a buffer's element type (a 16-bit
/// tensor's load is an f32 value).
MatrixTile with_half_operands(MatrixTile tile, const Stmt &kernel_body,
                              const std::function<DType(const std::string &)> &storage);

}  // namespace ks
