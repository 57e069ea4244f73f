// The process-wide worker pool behind ParallelFor (see parallel.h).
#include "kernels/cpu/parallel.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace a8::cpu::internal {
namespace {

thread_local bool tls_in_pool_worker = false;

// How long a worker keeps polling for the next job, and the caller for the last chunk, before
// sleeping on a futex: 200 us, or 0 with OMP_WAIT_POLICY=passive (the OpenMP knob). A model step
// issues its parallel loops microseconds apart, so a short spin turns most hand-offs into a
// cache-line read instead of a futex wake-up and a reschedule: cnn at batch 32 on 2 idle cores
// of this VM, 0.51 ms passive, 0.19 ms with 50 us of spin, 0.165 ms with 200 us (an idle vCPU
// also wakes slowly); onnxruntime's pool and libgomp spin by default too.
// On oversubscribed cores it is the opposite (about 3x slower measured while a build ran): the
// spinning thread takes the core from the one that has the work; set OMP_WAIT_POLICY=passive.
std::chrono::microseconds SpinTime() {
  static const std::chrono::microseconds spin = [] {
    const char* env = std::getenv("OMP_WAIT_POLICY");
    return std::chrono::microseconds(env != nullptr && strcasecmp(env, "passive") == 0 ? 0 : 200);
  }();
  return spin;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `done` until it returns true or SpinTime() has passed; returns its last value.
template <typename F>
bool SpinUntil(F&& done) {
  const std::chrono::microseconds spin = SpinTime();
  if (spin.count() == 0) return done();
  const auto until = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    CpuRelax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
  }
}

// MaxThreads() - 1 workers, started once and never joined (the pool is leaked on purpose so no
// static destructor races a worker at exit). One job at a time: `run_mu_` is held by the caller
// for the whole job. A job is published by storing a new `job_` word (a sequence number and the
// job's thread count, after task_/ctx_); workers spin on it for a while, then sleep on `cv_`. A
// worker outside the thread count skips the job without reading task_/ctx_, which the caller may
// already be rewriting for the next one; the others are counted in pending_, so task_/ctx_ stay
// put until they finish. No wake-up is lost: whoever goes to sleep counts itself (seq_cst), then
// re-checks its condition under `mu_`; whoever changes the condition then notifies under `mu_`
// if it sees a sleeper.
class Pool {
 public:
  Pool() : workers_(std::min<int>(MaxThreads(), kCountMask) - 1), owner_pid_(getpid()) {
    for (int w = 0; w < workers_; ++w) std::thread([this, w] { Loop(w + 1); }).detach();
  }

  bool Run(int n, void (*task)(void*, int), void* ctx) {
    // A forked child (e.g. a death test) has none of the workers: it runs loops inline.
    if (tls_in_pool_worker || n - 1 > workers_ || getpid() != owner_pid_) return false;
    std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
    if (!run_lock.owns_lock()) return false;
    task_ = task;
    ctx_ = ctx;
    pending_.store(n - 1);
    job_.store(((job_.load() >> kCountBits) + 1) << kCountBits | static_cast<uint64_t>(n));
    if (sleeping_workers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
    task(ctx, 0);
    if (!SpinUntil([&] { return pending_.load() == 0; })) {
      std::unique_lock<std::mutex> lock(mu_);
      caller_sleeping_.store(true);
      done_cv_.wait(lock, [&] { return pending_.load() == 0; });
      caller_sleeping_.store(false);
    }
    return true;
  }

 private:
  void Loop(int index) {
    tls_in_pool_worker = true;
    uint64_t seen = 0;
    for (;;) {
      if (!SpinUntil([&] { return job_.load() != seen; })) {
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_workers_.fetch_add(1);
        cv_.wait(lock, [&] { return job_.load() != seen; });
        sleeping_workers_.fetch_sub(1);
      }
      seen = job_.load();
      if (static_cast<uint64_t>(index) >= (seen & kCountMask)) continue;
      task_(ctx_, index);
      if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_one();
      }
    }
  }

  const int workers_;
  const pid_t owner_pid_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  static constexpr int kCountBits = 16;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
  std::atomic<uint64_t> job_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  // Written by the caller before it publishes job_, read by the job's workers after they see it.
  void (*task_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace

bool PoolRun(int n, void (*task)(void* ctx, int t), void* ctx) {
  if (n <= 1) {
    if (n == 1) task(ctx, 0);
    return true;
  }
  static Pool* const pool = new Pool();
  return pool->Run(n, task, ctx);
}

}  // namespace a8::cpu::internal
