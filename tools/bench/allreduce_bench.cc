// All-reduce bus bandwidth of a800c's communicator (runtime/comm), as nccl-tests measure it:
//
//   mpirun -np N build/bin/a8-allreduce-bench [--min-bytes 1024] [--max-bytes 67108864] [--iters
//   20]
//
// For each message size (powers of two, f32 elements), every rank starts and waits one bucket
// all-reduce of that size `iters` times after 3 warm-up rounds; the time is the slowest rank's
// (a barrier before, the max over ranks after). algbw = bytes / time; busbw = algbw * 2(n-1)/n,
// nccl-tests' formula for all-reduce (the bytes each rank's link carries in a ring). Rank 0
// prints one row per size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"

namespace {

int64_t Arg(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t min_bytes = Arg(argc, argv, "--min-bytes", 1024);
  const int64_t max_bytes = Arg(argc, argv, "--max-bytes", int64_t{64} << 20);
  const int iters = static_cast<int>(Arg(argc, argv, "--iters", 20));
  auto comm = a8::CreateCommunicator(300);
  if (!comm.ok() || *comm == nullptr) {
    std::fprintf(stderr, "a8-allreduce-bench: run under mpirun -np N (N >= 2)%s%s\n",
                 comm.ok() ? "" : ": ", comm.ok() ? "" : comm.status().message().c_str());
    return 2;
  }
  a8::Communicator& c = **comm;
  const int n = c.size();
  if (c.rank() == 0) {
    std::printf("# a800c MPI all-reduce, %d ranks, f32, %d iterations a size\n", n, iters);
    std::printf("%12s %12s %12s %12s\n", "bytes", "time_us", "algbw_GB/s", "busbw_GB/s");
  }
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int64_t count = bytes / 4;
    std::vector<float> buf(static_cast<size_t>(count), 1.0f);
    a8::CommBuffer b{reinterpret_cast<uint8_t*>(buf.data()), count, a8::DType::kF32};
    auto round = [&]() -> a8::Status {
      A8_RETURN_IF_ERROR(c.StartAllReduce(0, {b}, a8::DType::kF32));
      return c.WaitAllReduce(0);
    };
    for (int i = 0; i < 3; ++i) {
      if (!round().ok()) return 1;
    }
    if (!c.Barrier("bench barrier").ok()) return 1;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      a8::Status s = round();
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.message().c_str());
        return 1;
      }
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        iters;
    uint64_t lo = 0, hi = 0;
    int lo_rank = 0, hi_rank = 0;
    if (!c.MinMax(static_cast<uint64_t>(us * 1000), &lo, &hi, &lo_rank, &hi_rank, "bench").ok()) {
      return 1;
    }
    const double slowest_us = static_cast<double>(hi) / 1000;
    const double algbw = static_cast<double>(bytes) / (slowest_us * 1e3);
    const double busbw = algbw * 2.0 * (n - 1) / n;
    if (c.rank() == 0) {
      std::printf("%12lld %12.1f %12.3f %12.3f\n", static_cast<long long>(bytes), slowest_us, algbw,
                  busbw);
    }
  }
  return 0;
}
