// A minimal parallel-for over the machine's cores for the CPU kernels.
//
// Work is split into at most MaxThreads() contiguous chunks, and only when there is enough of it
// (`items * cost_per_item` of at least kMinWorkPerThread per chunk) to pay for the handoff to
// another thread (microseconds); smaller loops run inline on the caller. The worker threads are a
// process-wide pool created on first use and kept for the life of the process, so a call costs a
// wake-up, not a thread start (idle threads poll for 200 us before sleeping, which pays on idle
// cores; OMP_WAIT_POLICY=passive makes them sleep at once, for oversubscribed machines; see
// parallel.cc). Each output element is written by
// exactly one chunk, so results do not depend on the thread count. A ParallelFor inside a
// ParallelFor (or one issued while the pool is busy with another caller's loop, or in a forked
// child) runs inline, so the pool never deadlocks. OpenBLAS is set single-threaded (blas.h): the
// GEMMs are split over this pool too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <thread>

namespace a8::cpu {

// The number of threads the kernels use: OMP_NUM_THREADS when it is set to a positive number
// (the usual knob, also honoured by the BLAS), else the hardware concurrency.
inline int MaxThreads() {
  static const int n = [] {
    if (const char* env = std::getenv("OMP_NUM_THREADS")) {
      int v = std::atoi(env);
      if (v > 0) return v;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

namespace internal {

// Runs task(ctx, t) for every t in [0, n) on the pool (t = 0 on the calling thread) and returns
// when all have finished. Returns false, having run nothing, when the pool cannot take the job
// (called from a pool worker, or the pool is busy); the caller then runs the loop itself.
bool PoolRun(int n, void (*task)(void* ctx, int t), void* ctx);

}  // namespace internal

// Calls fn(begin, end) over a partition of [0, items).
template <typename F>
void ParallelFor(int64_t items, int64_t cost_per_item, F&& fn) {
  constexpr int64_t kMinWorkPerThread = int64_t{1} << 15;
  if (items <= 0) return;
  const int64_t work = items * std::max<int64_t>(cost_per_item, 1);
  const int64_t threads =
      std::min<int64_t>({MaxThreads(), items, std::max<int64_t>(work / kMinWorkPerThread, 1)});
  if (threads <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  struct Ctx {
    F* fn;
    int64_t items, chunk;
  } ctx{&fn, items, (items + threads - 1) / threads};
  auto task = [](void* p, int t) {
    Ctx& c = *static_cast<Ctx*>(p);
    const int64_t b = t * c.chunk, e = std::min(c.items, b + c.chunk);
    if (b < e) (*c.fn)(b, e);
  };
  if (!internal::PoolRun(static_cast<int>(threads), task, &ctx)) fn(int64_t{0}, items);
}

}  // namespace a8::cpu
