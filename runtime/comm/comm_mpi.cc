// The MPI communicator (communicator.h): Open MPI's nonblocking collectives, every wait polled
// against the collective timeout.
// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "kernels/common/float16.h"
#include "runtime/comm/comm_internal.h"

namespace a8 {
namespace {

bool EnvSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// f16 sum for the wire (MPI has no half type): adds in float, rounds once per pair.
void SumHalf(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    b[i] = FloatToHalfBits(HalfBitsToFloat(a[i]) + HalfBitsToFloat(b[i]));
  }
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size, double timeout_s, bool owns_mpi)
      : rank_(rank), size_(size), timeout_s_(timeout_s), owns_mpi_(owns_mpi) {
    MPI_Op_create(&SumHalf, /*commute=*/1, &half_sum_);
  }
  void MarkFailed() override { failed_ = true; }

  ~MpiCommunicator() override {
    MPI_Op_free(&half_sum_);
    if (!owns_mpi_) return;
    if (failed_) {
      // A peer is gone or stuck: MPI_Finalize would wait for it forever.
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return fmt::format("{} ranks over MPI (launched by mpirun)", size_);
  }

  Status StartAllReduce(int bucket, const std::vector<CommBuffer>& buffers, DType wire) override {
    Pending& p = pending_[bucket];
    if (p.active) return Internal("all-reduce of bucket {} started twice", bucket);
    p.buffers = buffers;
    p.wire = wire == DType::kF16 ? DType::kF16 : DType::kF32;
    int64_t total = 0;
    for (const CommBuffer& b : buffers) total += b.count;
    if (total > INT32_MAX)
      return Unsupported("bucket {}: {} elements (MPI counts are int)", bucket, total);
    A8_ASSIGN_OR_RETURN(
        p.staging, PackBucket(buffers, p.wire,
                              p.wire == DType::kF16 ? 1.0f / static_cast<float>(size_) : 1.0f));
    const int rc = p.wire == DType::kF16
                       ? MPI_Iallreduce(MPI_IN_PLACE, p.staging.data(), static_cast<int>(total),
                                        MPI_UINT16_T, half_sum_, MPI_COMM_WORLD, &p.request)
                       : MPI_Iallreduce(MPI_IN_PLACE, p.staging.data(), static_cast<int>(total),
                                        MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &p.request);
    if (rc != MPI_SUCCESS) return Fail(fmt::format("the all-reduce of gradient bucket {}", bucket));
    p.active = true;
    return Status::Ok();
  }

  Status WaitAllReduce(int bucket) override {
    auto it = pending_.find(bucket);
    if (it == pending_.end()) return Internal("bucket {} was never started", bucket);
    Pending& p = it->second;
    if (!p.active) return Status::Ok();
    A8_RETURN_IF_ERROR(
        WaitFor(&p.request, fmt::format("the all-reduce of gradient bucket {}", bucket)));
    p.active = false;
    // f32 on the wire carried the sum: the mean is taken here, in float, before rounding to the
    // buffer's dtype.
    return UnpackBucket(p.staging, p.wire,
                        p.wire == DType::kF16 ? 1.0f : 1.0f / static_cast<float>(size_), p.buffers);
  }

  void Progress() override {
    for (auto& [bucket, p] : pending_) {
      if (!p.active) continue;
      int done = 0;
      MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
      if (done) p.request = MPI_REQUEST_NULL;  // WaitFor sees a finished request
    }
  }

  Status Broadcast(void* data, int64_t bytes, int root, const std::string& what) override {
    auto* p = static_cast<uint8_t*>(data);
    // In chunks: MPI counts are int.
    constexpr int64_t kChunk = int64_t{1} << 30;
    for (int64_t off = 0; off < bytes; off += kChunk) {
      MPI_Request r;
      const int n = static_cast<int>(std::min(kChunk, bytes - off));
      if (MPI_Ibcast(p + off, n, MPI_BYTE, root, MPI_COMM_WORLD, &r) != MPI_SUCCESS) {
        return Fail(what);
      }
      A8_RETURN_IF_ERROR(WaitFor(&r, what));
    }
    return Status::Ok();
  }

  Status MinMax(uint64_t value, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                const std::string& what) override {
    std::vector<uint64_t> all(static_cast<size_t>(size_));
    MPI_Request r;
    if (MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &r) !=
        MPI_SUCCESS) {
      return Fail(what);
    }
    A8_RETURN_IF_ERROR(WaitFor(&r, what));
    *min_rank = *max_rank = 0;
    for (int i = 1; i < size_; ++i) {
      if (all[i] < all[*min_rank]) *min_rank = i;
      if (all[i] > all[*max_rank]) *max_rank = i;
    }
    *min = all[*min_rank];
    *max = all[*max_rank];
    return Status::Ok();
  }

  Status Barrier(const std::string& what) override {
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS) return Fail(what);
    return WaitFor(&r, what);
  }

 private:
  struct Pending {
    std::vector<CommBuffer> buffers;
    std::vector<uint8_t> staging;
    DType wire = DType::kF32;
    MPI_Request request = MPI_REQUEST_NULL;
    bool active = false;
  };

  Status Fail(const std::string& what) {
    failed_ = true;
    return Internal("rank {} of {}: {} failed in MPI", rank_, size_, what);
  }

  // Polls `r` until it completes or the collective timeout passes (the watchdog: a peer that
  // died or hangs never completes it).
  Status WaitFor(MPI_Request* r, const std::string& what) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    int spins = 0;
    while (true) {
      int done = 0;
      if (*r == MPI_REQUEST_NULL) return Status::Ok();
      if (MPI_Test(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return Fail(what);
      if (done) return Status::Ok();
      if (std::chrono::steady_clock::now() > deadline) {
        failed_ = true;
        return Internal(
            "rank {} of {}: {} did not complete within {:g} s (--collective-timeout): another "
            "rank died, hangs or runs a different step",
            rank_, size_, what, timeout_s_);
      }
      // Spin briefly, then yield the core: ranks often share cores with each other.
      if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  int rank_, size_;
  double timeout_s_;
  bool owns_mpi_;
  bool failed_ = false;
  MPI_Op half_sum_;
  std::map<int, Pending> pending_;
};

}  // namespace

Launcher DetectLauncher() {
  if (EnvSet("OMPI_COMM_WORLD_SIZE") || EnvSet("PMI_SIZE") || EnvSet("PMIX_RANK")) {
    return Launcher::kMpirun;
  }
  if (EnvSet("RANK") && EnvSet("WORLD_SIZE")) return Launcher::kTorchrun;
  return Launcher::kNone;
}

StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(double timeout_s) {
  if (!(timeout_s > 0)) {
    return InvalidInput("--collective-timeout: must be a positive number of seconds, got {:g}",
                        timeout_s);
  }
  switch (DetectLauncher()) {
    case Launcher::kNone:
      return std::unique_ptr<Communicator>();
    case Launcher::kTorchrun:
      return CreateTcpCommunicator(timeout_s);
    case Launcher::kMpirun:
      break;
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      return Internal("MPI_Init_thread failed");
    }
  }
  // Errors come back as codes (and become Status values), not as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<Communicator>(
      std::make_unique<MpiCommunicator>(rank, size, timeout_s, !initialized));
}

}  // namespace a8
