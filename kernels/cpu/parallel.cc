// The process-wide worker pool behind ParallelFor (see parallel.h).
#include "kernels/cpu/parallel.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <unistd.h>

namespace a8::cpu::internal {
namespace {

thread_local bool tls_in_pool_worker = false;

// MaxThreads() - 1 workers, started once and never joined (the pool is leaked on purpose so no
// static destructor races a worker at exit). One job at a time: `run_mu_` is held by the caller
// for the whole job; workers wait on `cv_` for a new generation.
class Pool {
 public:
  Pool() : workers_(MaxThreads() - 1), owner_pid_(getpid()) {
    for (int w = 0; w < workers_; ++w) std::thread([this, w] { Loop(w + 1); }).detach();
  }

  bool Run(int n, void (*task)(void*, int), void* ctx) {
    // A forked child (e.g. a death test) has none of the workers: it runs loops inline.
    if (tls_in_pool_worker || n - 1 > workers_ || getpid() != owner_pid_) return false;
    std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
    if (!run_lock.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = task;
      ctx_ = ctx;
      n_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    cv_.notify_all();
    task(ctx, 0);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    return true;
  }

 private:
  void Loop(int index) {
    tls_in_pool_worker = true;
    uint64_t seen = 0;
    for (;;) {
      void (*task)(void*, int);
      void* ctx;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (index >= n_) continue;
        task = task_;
        ctx = ctx_;
      }
      task(ctx, index);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  const int workers_;
  const pid_t owner_pid_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  uint64_t generation_ = 0;
  void (*task_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int n_ = 0;
  int pending_ = 0;
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
