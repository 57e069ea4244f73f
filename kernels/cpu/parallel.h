// A minimal parallel-for over the machine's cores for the CPU kernels.
//
// Work is split into at most hardware_concurrency contiguous chunks, and only when there is
// enough of it (`items * cost_per_item` above a threshold) to pay for starting threads. Each
// output element is written by exactly one chunk, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace a8::cpu {

inline int MaxThreads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

// Calls fn(begin, end) over a partition of [0, items).
template <typename F>
void ParallelFor(int64_t items, int64_t cost_per_item, F&& fn) {
  constexpr int64_t kMinWorkPerThread = int64_t{1} << 16;
  if (items <= 0) return;
  int64_t work = items * std::max<int64_t>(cost_per_item, 1);
  int64_t threads =
      std::min<int64_t>({MaxThreads(), items, std::max<int64_t>(work / kMinWorkPerThread, 1)});
  if (threads <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  int64_t chunk = (items + threads - 1) / threads;
  for (int64_t t = 1; t < threads; ++t) {
    int64_t b = t * chunk, e = std::min(items, b + chunk);
    if (b < e) pool.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(int64_t{0}, std::min(items, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace a8::cpu
