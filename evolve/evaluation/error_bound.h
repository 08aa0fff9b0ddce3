// How far an honest program of a graph may be from the graph's exact value, element by
// element: a rounding-error bound computed beside the reference, so that a check
// follows the arithmetic of what it checks instead of one sample of another kernel's
// error.
//
// An honest program here: every float operation rounds to nearest in its type (unit
// roundoff U: 2^-24 for f32, 2^-53 for f64), a result below the smallest normal may
// flush to zero, each builtin is as accurate as both OpenCL C 1.2 and Vulkan's GLSL
// require (the looser of the two, with the project's own GLSL spellings: erf by
// Abramowitz and Stegun's 7.1.26), an intermediate may be stored (rounded) or kept in
// registers, and a reduction may combine its terms in any order. For every element of
// every tensor, the bound is:
//  - elementwise: the operands' bounds carried through the operation (|b| E_a + |a| E_b
//    + E_a E_b for a product; a builtin's Lipschitz constant, or for exp, log, sqrt,
//    rsqrt and division the exact range over the argument's interval), plus the
//    operation's own rounding, U |v| (the builtins': their ulps, about 2U |v| each)
//    and the flush to zero (the smallest normal);
//  - where a comparison's operands are within their bounds of each other, the
//    comparison may go either way: a select then takes either side (its bound: the
//    larger side's plus their difference), and an integer made from it is unknown
//    (bound infinity: anything but NaN passes there);
//  - a sum of n terms t_k: the terms' bounds added, plus the rounding of its partial
//    sums, plus the terms too small to survive them. For the terms in a random order
//    the partial sums s_k have sum_k s_k^2 = n (2 T1^2 + T2) / 6 in expectation
//    (T1 = sum t, T2 = sum t^2); each rounds by at most U |s_k|, evenly and
//    independently, so eight standard deviations are 8 U sqrt(n (2 T1^2 + T2) / 18).
//    Round to nearest is unbiased only for terms whose low bits vary against the
//    partial sum's (taken as |y| (k + 1) / n for the k-th of n): one below U times it
//    (half its ulp) is dropped whole, every time (a million positive squares summed in
//    a row lose 1e-3 of their sum so), so such terms count in full; and a term within
//    16 U of itself of the term before it (the same value again: a bias over a
//    zero-padded region, a broadcast value) rounds as that one did, so each such
//    step counts U |s_k|, |s_k| at most the sum of the terms' magnitudes (the fuzzer
//    met a mean over 961 terms, most of them one bias, off by 1.6 times the random
//    bound, and one whose padded convolution's terms came first, its partial sums
//    far past the mean, off by 1760U);
//  - a product: the factors' relative bounds added, and 8 U sqrt(n / 3) relative;
//    max and min: the largest bound of a term; logsumexp: the largest bound of a term
//    plus the rounding of its sum of exponentials, as a sum's, relative to the sum,
//    and of its online steps (each rounds at the magnitude of the partial log-sum;
//    a step whose term equals the one before rounds as that one did, in full);
//    softmax_sum (online_attention's): the bound of the two passes it stands for,
//    plus its rescalings' roundings;
//  - every stored value adds its own rounding; an infinity (a mask) is exact; a computed
//    16-bit value within its bound of the format's largest finite value is unknown
//    (infinite: the device may store that, the reference an infinity, or the other way).
// A candidate with rewrites is held to the bound of the graph its rewrites left: the
// same values in real arithmetic, rounded differently (online_softmax stores the
// log-sum-exp, as large as the logits, which the two-pass softmax never does).
// Integers are exact unless made from floats whose comparison may flip; argmax and
// argmin are exact except where another term is within both bounds of the extreme one
// (there any index passes); a tie of exact terms (inputs) is checked: the first index.
//
// The bound is first order and probabilistic in one place only (the partial sums'
// rounding, 8 sigma); dropping one term of a sum moves it by that term, which is
// caught wherever the term is larger than the bound (check sizes: always; a million
// terms of mixed signs: a term of magnitude 8 of values to 16). A kernel that rounds
// products to TF32 (U = 2^-11) exceeds it, unless the user asked for TF32 (below).
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/matrix_tile.h"

namespace ks {

/// A graph with the bound of each of its tensors as a tensor of its own.
struct ErrorBounds {
  /// The graph's stages, each followed by the stages that compute its bound (f32,
  /// the tensor's shape). The bound of an output is an output too.
  Graph graph;
  /// A tensor's bound tensor; a tensor without one is exact (an input, an integer
  /// whose comparisons cannot flip, a max of exact values).
  std::map<std::string, std::string> bound_of;
};

/// graph with the bounds above added (verified). In TF32 (the user's word: tensorize's
/// matrix loops in plain TF32), a sum whose term is a product takes each factor
/// rounded to TF32 (U = 2^-11) before it multiplies: the term's bound grows by
/// (2 2^-11 + 2^-22) |t|, added in full (a rounding of the inputs, not random over
/// the sum). Every other operation keeps f32's.
ErrorBounds with_error_bounds(const Graph &graph, Precision precision = Precision::F32);

/// The unit roundoff of a float type: 2^-24 for f32, 2^-53 for f64.
double unit_roundoff(DType type);

}  // namespace ks
