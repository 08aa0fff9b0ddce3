// Random specs for the schedule fuzzer and the rewrites' property test: small operator
// graphs of the families the examples and KernelBench are made of, written as `.ks`
// text with size symbols, so that a fuzzer can set their sizes as it likes.
#pragma once

#include <random>
#include <string>

namespace ks {

/// A spec of one of the families below, chosen at random: elementwise chains with
/// broadcasting and selects; reductions of every kind (sum, max, min, prod,
/// logsumexp, argmax and argmin, ties among them) over one or two axes, read back by
/// a normalisation; contractions (matrix products, batched, either operand
/// transposed) with an epilogue; windows (convolutions and pools, strided, dilated,
/// padded with a value); running totals in every direction; gathers through an
/// integer input; and the rewrites' shapes (rewrite_pattern_spec). Sizes are symbols
/// (`where` gives small defaults, the check sizes).
std::string random_spec(std::mt19937 &rng);

/// The shapes the graph rewrites look for: contractions (GEMMs, plain and transposed
/// convolutions with random strides and padding) with scale and bias chains, sums,
/// means and windowed averages over their outputs, keepdim axes of extent 1 reduced
/// again, masked running totals in every written form, softmaxes read as softmaxes,
/// log-softmaxes and losses, attention (masked or not), constants and duplicated
/// stages. The rewrites' property test draws 300 of them.
std::string rewrite_pattern_spec(std::mt19937 &rng);

}  // namespace ks
