// Host work over a large buffer spread over the host's threads. An evaluation at the
// timed sizes handles every element of every output several times (random inputs,
// three comparisons): at gelu's 1.6 G elements on the H100's host that was 100 s an
// evaluation on one thread (with the reference widened to f64), against 5 ms of kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace ks {

/// The chunks are this many elements; results combined per chunk, in chunk order,
/// do not depend on the number of threads.
constexpr int64_t kParallelChunk = int64_t{1} << 20;

/// How many chunks [0, n) has: one result per chunk fits a vector of this size.
inline int64_t chunk_count(int64_t n) { return (n + kParallelChunk - 1) / kParallelChunk; }

/// Calls body(chunk, first, last) for each chunk [first, last) of [0, n), the chunks
/// shared round-robin among the host's threads (on this thread alone when there is
/// one chunk). body must only write what belongs to its chunk.
template <typename Body>
void for_chunks(int64_t n, Body body) {
  const int64_t chunks = chunk_count(n);
  auto work = [&](int64_t first_chunk, int64_t step) {
    for (int64_t c = first_chunk; c < chunks; c += step)
      body(c, c * kParallelChunk, std::min(n, (c + 1) * kParallelChunk));
  };
  const int64_t threads = std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
  for (std::thread &t : pool) t.join();
}

}  // namespace ks
