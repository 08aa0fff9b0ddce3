// A short loop of 16-bit stores as one vector store.
#pragma once

#include "ir/loop_ir.h"

namespace ks {

/// Marks vectorized each innermost serial or unrolled loop of 2, 4 or 8 iterations
/// (outside the matrix loops) whose stores all go to global 16-bit tensors and whose
/// body has the vector form (ir/vector_form.h: each lane its own element, consecutive
/// along the last dimension). Two 16-bit stores are then one 4-byte store, where
/// the code generator can prove the offset aligned (a packed cvt under PTX), instead
/// of two 2-byte ones: the matrix tiles' write-back of their accumulator pairs
/// (cache_write's copy of `cc`), which a schedule cannot vectorize itself (its loop
/// is inside the tile's nest until cache_write copies it out). The 16-bit GEMM's
/// 128 x 128 tile at 4096^3 took 0.4903 ms with two-byte stores and 0.4652 with
/// four-byte ones on the H200 (bench/results.md, "Packed stores, ...").
/// The arithmetic is unchanged: each lane computes and rounds its own element.
Program pack_half_stores(const Program &program);

}  // namespace ks
