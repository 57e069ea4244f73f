// The ParallelFor pool: every item runs exactly once, whether the workers are spinning (calls
// back to back) or asleep (calls further apart than the spin), from nested loops and from
// concurrent callers (which run inline); and a worker stalled inside its chunk does not keep the
// caller from running every chunk nobody has started.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace a8::cpu {
namespace {

// Runs one ParallelFor over `items` (each costing enough to be split) and checks the cover.
void ExpectEachItemOnce(int64_t items) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(items));
  ParallelFor(items, int64_t{1} << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < items; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i << "/" << items;
}

TEST(CpuParallelForTest, BackToBackCallsCoverEveryItemOnce) {
  for (int round = 0; round < 2000; ++round) ExpectEachItemOnce(1 + round % 37);
}

TEST(CpuParallelForTest, CallsAfterTheWorkersSleepCoverEveryItemOnce) {
  for (int round = 0; round < 20; ++round) {
    ExpectEachItemOnce(3 + round);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin: workers sleep
  }
}

TEST(CpuParallelForTest, NestedAndConcurrentCallsRunInline) {
  std::atomic<int64_t> sum{0};
  ParallelFor(8, int64_t{1} << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      ParallelFor(5, int64_t{1} << 15, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j) sum.fetch_add(i * 5 + j);
      });
    }
  });
  EXPECT_EQ(sum.load(), 39 * 40 / 2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 300; ++round) {
        std::vector<std::atomic<int>> hits(17);
        ParallelFor(17, int64_t{1} << 15, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (auto& h : hits) failures += h.load() != 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// Every chunk a pool worker starts blocks until all the other chunks are done: the job can only
// finish if the caller runs every chunk that no worker has claimed (a worker holds at most the
// one chunk it is stuck in). A pool that gave each thread a fixed share would wait forever for
// the blocked workers' other chunks; the wait is bounded (30 s, counted as a failure) so the test
// fails instead of hanging. Calls the pool directly, with 8 chunks per thread.
TEST(CpuParallelForTest, CallerRunsTheChunksStalledWorkersHaveNotClaimed) {
  struct Job {
    std::thread::id caller;
    int chunks;
    std::atomic<int> caller_done{0}, held_by_workers{0}, timeouts{0};
    std::vector<std::atomic<int>> hits;
  };
  for (int round = 0; round < 50; ++round) {
    Job job;
    job.caller = std::this_thread::get_id();
    job.chunks = 8 * MaxThreads();
    job.hits = std::vector<std::atomic<int>>(static_cast<size_t>(job.chunks));
    auto task = [](void* p, int c) {
      Job& j = *static_cast<Job*>(p);
      const bool on_caller = std::this_thread::get_id() == j.caller;
      if (!on_caller) {
        ++j.held_by_workers;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (j.caller_done.load() + j.held_by_workers.load() < j.chunks) {
          if (std::chrono::steady_clock::now() > give_up) {
            ++j.timeouts;
            break;
          }
          std::this_thread::yield();
        }
      }
      j.hits[c].fetch_add(1);
      if (on_caller) ++j.caller_done;
    };
    ASSERT_TRUE(internal::PoolRun(MaxThreads(), job.chunks, task, &job));
    ASSERT_EQ(job.timeouts.load(), 0) << "round " << round;
    for (int c = 0; c < job.chunks; ++c) ASSERT_EQ(job.hits[c].load(), 1) << "chunk " << c;
  }
}

}  // namespace
}  // namespace a8::cpu
