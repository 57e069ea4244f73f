// The process-wide worker pool behind ParallelFor (see parallel.h).
#include "kernels/cpu/parallel.h"

#include <sched.h>
#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace a8::cpu::internal {
namespace {

thread_local bool tls_in_pool_worker = false;

using Clock = std::chrono::steady_clock;
using Micros = std::chrono::microseconds;

// The most a worker polls for the next loop before sleeping on a futex: 200 us, or 0 with
// OMP_WAIT_POLICY=passive (the OpenMP knob). A model step issues its parallel loops microseconds
// apart, so on idle cores a short poll turns most hand-offs into a cache-line read instead of a
// futex wake-up and a reschedule (cnn at batch 32 on 2 idle cores of this VM: 0.51 ms passive,
// 0.165 ms with 200 us of spin). On a busy machine polling takes the core from the thread that
// has the work, so each worker adapts its own poll below this bound (Worker::Loop).
Micros MaxSpin() {
  static const Micros spin = [] {
    const char* env = std::getenv("OMP_WAIT_POLICY");
    return Micros(env != nullptr && strcasecmp(env, "passive") == 0 ? 0 : 200);
  }();
  return spin;
}

// Whether workers adapt their poll (below); A8_CPU_POOL_ADAPTIVE=0 keeps it at MaxSpin(), to
// measure what the adaptation buys (tools/bench/pool_oversubscribed.py).
bool Adaptive() {
  static const bool adaptive = [] {
    const char* env = std::getenv("A8_CPU_POOL_ADAPTIVE");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return adaptive;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `done` until it returns true or `spin` has passed; returns its last value. Every few
// hundred polls it yields the core, so that on an oversubscribed core a thread with work to do
// (the caller, or a worker holding a chunk) gets to run instead of the poller.
template <typename F>
bool SpinUntil(Micros spin, F&& done) {
  if (spin.count() <= 0) return done();
  const auto until = Clock::now() + spin;
  for (int i = 1;; ++i) {
    if (done()) return true;
    CpuRelax();
    if ((i & 63) == 0) {
      if (Clock::now() >= until) return done();
      if ((i & 511) == 0) sched_yield();
    }
  }
}

// The job word packs, so that one compare-and-swap claims a chunk of the current job and no
// other: a sequence number (bits 36-63, so a stale claim of an earlier job never succeeds), the
// job's thread count (bits 24-35: workers at or above it stay out), its chunk count (bits 12-23)
// and the next unclaimed chunk (bits 0-11).
constexpr int kFieldBits = 12;
constexpr uint64_t kFieldMask = (uint64_t{1} << kFieldBits) - 1;
inline uint64_t NextChunk(uint64_t w) { return w & kFieldMask; }
inline uint64_t Chunks(uint64_t w) { return (w >> kFieldBits) & kFieldMask; }
inline uint64_t Threads(uint64_t w) { return (w >> (2 * kFieldBits)) & kFieldMask; }
inline uint64_t Seq(uint64_t w) { return w >> (3 * kFieldBits); }
inline bool Claimable(uint64_t w, int index) {
  return NextChunk(w) < Chunks(w) && static_cast<uint64_t>(index) < Threads(w);
}

// MaxThreads() - 1 workers, started once and never joined (the pool is leaked on purpose so no
// static destructor races a worker at exit). One job at a time: `run_mu_` is held by the caller
// for the whole job. The caller writes task_/ctx_ and remaining_, then publishes the job word;
// the caller and the workers claim chunks by compare-and-swap on it. A successful claim means the
// job has an unfinished chunk (the claimed one), so the caller is still inside Run and
// task_/ctx_ are those of the claimed job. The caller runs chunks until none is left unclaimed,
// then waits for remaining_ to reach 0: only for chunks that are already running. No wake-up is
// lost: whoever goes to sleep counts itself (seq_cst), then re-checks its condition under `mu_`;
// whoever changes the condition then notifies under `mu_` if it sees a sleeper.
class Pool {
 public:
  Pool()
      : workers_(std::min<int>(MaxThreads(), static_cast<int>(kFieldMask)) - 1),
        owner_pid_(getpid()) {
    for (int w = 0; w < workers_; ++w) std::thread([this, w] { Loop(w + 1); }).detach();
  }

  bool Run(int threads, int chunks, void (*task)(void*, int), void* ctx) {
    // A forked child (e.g. a death test) has none of the workers: it runs loops inline.
    if (tls_in_pool_worker || getpid() != owner_pid_ || workers_ < 1 ||
        static_cast<uint64_t>(chunks) > kFieldMask) {
      return false;
    }
    std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
    if (!run_lock.owns_lock()) return false;
    threads = std::min(threads, workers_ + 1);
    task_ = task;
    ctx_ = ctx;
    remaining_.store(chunks, std::memory_order_relaxed);
    const uint64_t seq = Seq(job_.load(std::memory_order_relaxed)) + 1;
    job_.store(seq << (3 * kFieldBits) | static_cast<uint64_t>(threads) << (2 * kFieldBits) |
               static_cast<uint64_t>(chunks) << kFieldBits);
    if (sleeping_workers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    RunChunks(0);
    // Only chunks that a worker has started are left: their worker is running them, so poll
    // briefly (yielding, in case it shares this core), then sleep.
    if (!SpinUntil(MaxSpin(), [&] { return remaining_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mu_);
      caller_sleeping_.store(true);
      done_cv_.wait(lock, [&] { return remaining_.load() == 0; });
      caller_sleeping_.store(false);
    }
    return true;
  }

 private:
  // Claims and runs chunks of the current job until none is left for thread `index`; returns how
  // many it ran.
  int RunChunks(int index) {
    int ran = 0;
    uint64_t w = job_.load(std::memory_order_acquire);
    while (Claimable(w, index)) {
      if (!job_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        continue;  // w was reloaded
      }
      task_(ctx_, static_cast<int>(NextChunk(w)));
      ++ran;
      if (remaining_.fetch_sub(1) == 1 && index != 0 && caller_sleeping_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_one();
      }
      w = job_.load(std::memory_order_acquire);
    }
    return ran;
  }

  // A worker's poll adapts to whether it pays: a job found while polling that left the worker a
  // chunk doubles the poll (up to MaxSpin()); one whose chunks were all claimed before the worker
  // got to them (the caller was faster: the machine is busy, or the loop too small to share)
  // halves it, as does a poll that ran out with no job. After a sleep the worker starts probing
  // again from kMinSpin when the job it was woken for left it a chunk.
  void Loop(int index) {
    tls_in_pool_worker = true;
    constexpr Micros kMinSpin(8);
    Micros spin = MaxSpin();
    uint64_t seen = job_.load();
    for (;;) {
      auto changed = [&] { return Seq(job_.load(std::memory_order_acquire)) != Seq(seen); };
      const bool polled = SpinUntil(spin, changed);
      if (!polled) {
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_workers_.fetch_add(1);
        cv_.wait(lock, changed);
        sleeping_workers_.fetch_sub(1);
      }
      seen = job_.load(std::memory_order_acquire);
      const int ran = RunChunks(index);
      if (Threads(seen) <= static_cast<uint64_t>(index)) continue;  // not this worker's job
      if (!Adaptive()) continue;
      if (polled) {
        spin = ran > 0 ? std::min(MaxSpin(), spin * 2) : spin / 2;
      } else {
        spin = ran > 0 ? std::min(MaxSpin(), std::max(spin, kMinSpin)) : spin / 2;
      }
    }
  }

  const int workers_;
  const pid_t owner_pid_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::atomic<uint64_t> job_{0};
  std::atomic<int> remaining_{0};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  // Written by the caller before it publishes job_, read after a successful claim.
  void (*task_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace

// More chunks than threads let a thread that gets there first take more of a late thread's
// share, but each chunk also repeats its kernel's set-up (a GEMM packs its B panel per chunk),
// and measured with one core busy (tools/bench/README.md, pool_oversubscribed.py) one chunk per
// thread was fastest: cnn 4.9 ms at two threads against 33.7 ms with four chunks per thread. A
// late worker's chunk is still run by the caller when the worker has not started it.
// A8_CPU_CHUNKS_PER_THREAD overrides the default (for the bench).
int ChunksPerThread() {
  static const int n = [] {
    if (const char* env = std::getenv("A8_CPU_CHUNKS_PER_THREAD")) {
      const int v = std::atoi(env);
      if (v > 0 && v <= 64) return v;
    }
    return 1;
  }();
  return n;
}

bool PoolRun(int threads, int chunks, void (*task)(void* ctx, int chunk), void* ctx) {
  if (chunks <= 0) return true;
  if (threads <= 1 || chunks == 1) {
    for (int c = 0; c < chunks; ++c) task(ctx, c);
    return true;
  }
  static Pool* const pool = new Pool();
  return pool->Run(threads, chunks, task, ctx);
}

}  // namespace a8::cpu::internal
