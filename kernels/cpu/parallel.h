// A minimal parallel-for over the machine's cores for the CPU kernels.
//
// Work is split only when there is enough of it (`items * cost_per_item` of at least
// kMinWorkPerChunk per chunk) to pay for a hand-off to another thread (microseconds); smaller
// loops run inline on the caller. A split loop is cut into up to ChunksPerThread() contiguous
// chunks per thread, claimed one at a time from an atomic counter by the caller and the pool's
// workers alike: the caller runs chunks until none is left unclaimed and then waits only for the
// chunks a worker has already started, so a worker that is descheduled (a busy machine) or asleep
// never stalls the loop; its share is run by whoever gets there first. The workers are a
// process-wide pool created on first use and kept for the life of the process; an idle worker
// polls for the next loop for a while, and that while adapts (see parallel.cc): it shrinks when
// polling does not pay (the loops' chunks were all claimed before the worker got to them, as on a
// machine whose other cores are busy) and grows back when it does; OMP_WAIT_POLICY=passive makes
// them sleep at once. Each output element is written by exactly one chunk, so results do not
// depend on the thread count. A ParallelFor inside a ParallelFor (or one issued while the pool is
// busy with another caller's loop, or in a forked child) runs inline, so the pool never
// deadlocks. OpenBLAS is set single-threaded (blas.h): the GEMMs are split over this pool too.
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

// Runs task(ctx, c) for every chunk c in [0, chunks) with up to `threads` threads (the caller
// among them) and returns when all have finished. Returns false, having run nothing, when the
// pool cannot take the job (called from a pool worker, or the pool is busy with another caller's
// loop); the caller then runs the loop itself.
bool PoolRun(int threads, int chunks, void (*task)(void* ctx, int chunk), void* ctx);

// How many chunks per thread a split loop is cut into (parallel.cc says why).
int ChunksPerThread();

}  // namespace internal

// Calls fn(begin, end) over a partition of [0, items).
template <typename F>
void ParallelFor(int64_t items, int64_t cost_per_item, F&& fn) {
  constexpr int64_t kMinWorkPerChunk = int64_t{1} << 15;
  if (items <= 0) return;
  const int64_t work = items * std::max<int64_t>(cost_per_item, 1);
  const int64_t max_chunks = std::max<int64_t>(work / kMinWorkPerChunk, 1);
  const int64_t threads = std::min<int64_t>({MaxThreads(), items, max_chunks});
  if (threads <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  const int64_t chunks =
      std::min<int64_t>({threads * internal::ChunksPerThread(), items, max_chunks, int64_t{4095}});
  struct Ctx {
    F* fn;
    int64_t items, chunk;
  } ctx{&fn, items, (items + chunks - 1) / chunks};
  auto task = [](void* p, int c) {
    Ctx& x = *static_cast<Ctx*>(p);
    const int64_t b = c * x.chunk, e = std::min(x.items, b + x.chunk);
    if (b < e) (*x.fn)(b, e);
  };
  if (!internal::PoolRun(static_cast<int>(threads), static_cast<int>(chunks), task, &ctx)) {
    fn(int64_t{0}, items);
  }
}

}  // namespace a8::cpu
