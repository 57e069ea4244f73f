// The NCCL communicator (comm_nccl.h).
//
// Wire dtypes: NCCL's ncclAvg pre-multiplies every rank's contribution by 1/N in the reduced
// dtype before summing (PreMulSum), so an f16 reduction cannot overflow where the mean does not;
// that is the "pre-divide by world size". A gradient already in the wire dtype is
// averaged in its own bytes. Otherwise it is converted on the comm stream into a device staging
// buffer (allocated once per bucket) with the kernels of kernels/cuda/cast_kernels.h, averaged
// there and converted back: f32 gradients on an f16 wire, and f16 or bf16 gradients on an f32
// wire. Two cases keep their own dtype: bf16 gradients on an f16 wire are averaged in bf16 (as
// few bytes, and bf16 has f32's range), and f64 gradients (the gradient checks' dtype) are
// averaged in f64. An f32 gradient on an f16 wire is divided by N while it is converted (one
// rounding of g / N, as the MPI communicator does) and then summed, so a loss-scaled gradient
// beyond f16's range (65504) whose mean is in range does not become Inf.
//
// Locks: `mu_` guards the bucket table's in-flight state and the remembered error; `nccl_mu_`
// serialises the calls on the NCCL communicator (an enqueue against the watchdog's abort). No
// lock is held across a CUDA call that can wait for the GPU (cudaFree, a full launch queue), so
// the watchdog can always abort a communicator whose kernels hang; the NCCL calls made under
// nccl_mu_ return at once in non-blocking mode (NCCL launches from its own thread) and their
// ncclInProgress is polled against the timeout.
#include "runtime/comm/comm_nccl.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nccl.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "kernels/cuda/cast_kernels.h"

namespace a8 {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watchdog looks at the in-flight buckets and NCCL's asynchronous error: a fault
// is reported well within any sensible timeout, and a look costs a few event queries.
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(20);
// Staging regions start on this boundary (NCCL and the cast kernels like aligned buffers).
constexpr size_t kStagingAlign = 256;

Status CudaCheck(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::Ok();
  return Internal("{}: CUDA error {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

std::string BucketName(int bucket) {
  return fmt::format("the all-reduce of gradient bucket {}", bucket);
}

StatusOr<ncclDataType_t> NcclType(DType t) {
  switch (t) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF64:
      return ncclFloat64;
    default:
      return Unsupported("NCCL all-reduce of {} gradients", DTypeName(t));
  }
}

// The dtype a gradient of `dtype` is averaged in for `wire` (see the file comment).
DType ReduceDType(DType dtype, DType wire) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
      return wire == DType::kF16 ? DType::kF16 : DType::kF32;
    case DType::kBF16:
      return wire == DType::kF16 ? DType::kBF16 : DType::kF32;
    default:
      return dtype;
  }
}

// Converts `n` elements from `from` to `to` on `stream`: the pairs ReduceDType produces.
Status Convert(const void* in, DType from, void* out, DType to, int64_t n, cudaStream_t stream,
               const std::string& what) {
  cudaError_t e = cudaErrorInvalidValue;
  if (from == DType::kF32 && to == DType::kF16) {
    e = cuda::CastF32ToF16(static_cast<const float*>(in), static_cast<uint16_t*>(out), n, stream);
  } else if (from == DType::kF16 && to == DType::kF32) {
    e = cuda::CastF16ToF32(static_cast<const uint16_t*>(in), static_cast<float*>(out), n, stream);
  } else if (from == DType::kBF16 && to == DType::kF32) {
    e = cuda::CastBF16ToF32(static_cast<const uint16_t*>(in), static_cast<float*>(out), n, stream);
  } else if (from == DType::kF32 && to == DType::kBF16) {
    e = cuda::CastF32ToBF16(static_cast<const float*>(in), static_cast<uint16_t*>(out), n, stream);
  } else {
    return Internal("{}: no conversion from {} to {}", what, DTypeName(from), DTypeName(to));
  }
  return CudaCheck(e, what);
}

// A local-rank environment variable: -1 when unset, an error when it is not a number.
StatusOr<int> EnvIndex(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || x < 0 || x > INT_MAX) {
    return InvalidInput("{}={}: not a local rank (a non-negative integer)", name, v);
  }
  return static_cast<int>(x);
}

// The bootstrap of a world of one process: nothing to exchange.
class SingleProcess : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string description() const override { return "one process"; }
  Status StartAllReduce(int, const std::vector<CommBuffer>&, DType) override {
    return Status::Ok();
  }
  Status WaitAllReduce(int) override { return Status::Ok(); }
  void Progress() override {}
  Status Broadcast(void*, int64_t, int, const std::string&) override { return Status::Ok(); }
  Status MinMax(uint64_t value, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                const std::string&) override {
    *min = *max = value;
    *min_rank = *max_rank = 0;
    return Status::Ok();
  }
  Status Barrier(const std::string&) override { return Status::Ok(); }
};

class NcclCommImpl final : public NcclCommunicator {
 public:
  NcclCommImpl(std::unique_ptr<Communicator> bootstrap, int device, double timeout_s)
      : bootstrap_(std::move(bootstrap)),
        rank_(bootstrap_->rank()),
        size_(bootstrap_->size()),
        device_(device),
        timeout_(
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s))),
        timeout_s_(timeout_s) {}

  ~NcclCommImpl() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    // The bootstrap (MPI) must not wait for peers in its own shutdown after a fault.
    if (failed_.load() && bootstrap_ != nullptr) bootstrap_->MarkFailed();
    {
      std::lock_guard<std::mutex> l(nccl_mu_);
      if (comm_ != nullptr) {
        if (failed_.load() || !Finalize()) ncclCommAbort(comm_);
        comm_ = nullptr;
      }
    }
    // After the flush (or the abort) no NCCL kernel reads the staging buffers any more.
    for (auto& [id, b] : buckets_) {
      if (b.ready != nullptr) cudaEventDestroy(b.ready);
      if (b.done != nullptr) cudaEventDestroy(b.done);
      if (b.staging != nullptr) cudaFree(b.staging);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // The comm stream, NCCL's unique id from rank 0, the NCCL communicator (initialisation bounded
  // by the timeout), then the watchdog.
  Status Init() {
    A8_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(device_), fmt::format("selecting GPU {}", device_)));
    int least = 0, greatest = 0;
    A8_RETURN_IF_ERROR(CudaCheck(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                                 "querying stream priorities"));
    // Non-blocking: no implicit ordering with the legacy default stream; the highest priority so
    // that the all-reduce's kernels are not starved by backward's.
    A8_RETURN_IF_ERROR(
        CudaCheck(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest),
                  "creating the NCCL stream"));
    ncclUniqueId id{};
    if (rank_ == 0) A8_RETURN_IF_ERROR(NcclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    A8_RETURN_IF_ERROR(bootstrap_->Broadcast(&id, sizeof(id), 0, "the NCCL unique id"));

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every call returns at once; we poll, bounded by the timeout
    const std::string what = "the NCCL initialisation";
    {
      std::lock_guard<std::mutex> l(nccl_mu_);
      ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
      A8_RETURN_IF_ERROR(SettleLocked(r, what));
    }
    watchdog_ = std::thread([this] { Watch(); });
    return Status::Ok();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    int version = 0;
    ncclGetVersion(&version);
    return fmt::format("{} ranks over NCCL {}.{} (GPU {} here; bootstrap: {})", size_,
                       version / 10000, version / 100 % 100, device_, bootstrap_->description());
  }
  void SetComputeStream(cudaStream_t stream) override { compute_ = stream; }
  int device() const override { return device_; }

  Status Health() override {
    if (!failed_.load()) return Status::Ok();
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }

  Status StartAllReduce(int bucket, const std::vector<CommBuffer>& buffers, DType wire) override {
    A8_RETURN_IF_ERROR(Health());
    Bucket* b = nullptr;
    {
      std::lock_guard<std::mutex> l(mu_);  // the watchdog walks the table
      b = &buckets_[bucket];
    }
    if (b->started) return Internal("all-reduce of bucket {} started twice", bucket);
    const std::string what = BucketName(bucket);
    Status s = Enqueue(buffers, wire, b, what);
    if (!s.ok()) return Fail(s);
    {
      std::lock_guard<std::mutex> l(mu_);
      b->in_flight = true;
      b->since = Clock::now();
    }
    b->started = true;
    return Status::Ok();
  }

  Status WaitAllReduce(int bucket) override {
    A8_RETURN_IF_ERROR(Health());
    // Only this thread inserts into the table, so it may read it without the lock.
    auto it = buckets_.find(bucket);
    if (it == buckets_.end()) return Internal("bucket {} was never started", bucket);
    Bucket& b = it->second;
    if (!b.started) return Status::Ok();
    b.started = false;
    // The compute stream, not the host, waits: backward's remaining kernels are already queued.
    Status s = CudaCheck(cudaStreamWaitEvent(compute_, b.done, 0), BucketName(bucket));
    return s.ok() ? s : Fail(s);
  }

  // The watchdog does the polling: NCCL progresses on the GPU and in its own proxy thread.
  void Progress() override {}

  Status Broadcast(void* data, int64_t bytes, int root, const std::string& what) override {
    A8_RETURN_IF_ERROR(Health());
    return bootstrap_->Broadcast(data, bytes, root, what);
  }
  Status MinMax(uint64_t value, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                const std::string& what) override {
    A8_RETURN_IF_ERROR(Health());
    return bootstrap_->MinMax(value, min, max, min_rank, max_rank, what);
  }
  Status Barrier(const std::string& what) override {
    A8_RETURN_IF_ERROR(Health());
    return bootstrap_->Barrier(what);
  }

 private:
  struct Bucket {
    // Where each buffer is averaged (its own bytes or its staging region) and in which dtype.
    std::vector<CommBuffer> reduced;
    std::vector<ncclDataType_t> types;
    void* staging = nullptr;
    size_t staging_bytes = 0;
    cudaEvent_t ready = nullptr;  // on the compute stream: the gradients exist
    cudaEvent_t done = nullptr;   // on the comm stream: the means are in the gradients
    bool started = false;         // started and not yet waited for (communicator.h's rule)
    bool in_flight = false;       // `done` not yet seen complete (the watchdog's; under mu_)
    Clock::time_point since;      // the last start (under mu_)
  };

  // Everything a start enqueues: conversions in, the grouped all-reduce, conversions out, and
  // the done event, all on the comm stream after the compute stream's ready event.
  Status Enqueue(const std::vector<CommBuffer>& buffers, DType wire, Bucket* b,
                 const std::string& what) {
    A8_RETURN_IF_ERROR(Layout(buffers, wire, b, what));
    A8_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(b->ready, compute_), what));
    A8_RETURN_IF_ERROR(CudaCheck(cudaStreamWaitEvent(stream_, b->ready, 0), what));
    // f32 -> f16 staging is pre-divided by the rank count and summed; the rest averaged.
    std::vector<bool> prescaled(buffers.size(), false);
    for (size_t i = 0; i < buffers.size(); ++i) {
      const CommBuffer& from = buffers[i];
      const CommBuffer& to = b->reduced[i];
      if (to.data == from.data || from.count == 0) continue;
      if (from.dtype == DType::kF32 && to.dtype == DType::kF16) {
        prescaled[i] = true;
        A8_RETURN_IF_ERROR(
            CudaCheck(cuda::CastF32ToF16Scaled(static_cast<const float*>(from.data),
                                               static_cast<uint16_t*>(to.data), from.count,
                                               1.0f / static_cast<float>(size_), stream_),
                      what));
        continue;
      }
      A8_RETURN_IF_ERROR(
          Convert(from.data, from.dtype, to.data, to.dtype, from.count, stream_, what));
    }
    {
      std::lock_guard<std::mutex> l(nccl_mu_);
      if (comm_ == nullptr) return Internal("{}: the NCCL communicator was aborted", what);
      ncclResult_t r = ncclGroupStart();
      for (size_t i = 0; i < b->reduced.size(); ++i) {
        const CommBuffer& c = b->reduced[i];
        if (r != ncclSuccess || c.count == 0) continue;
        r = ncclAllReduce(c.data, c.data, static_cast<size_t>(c.count), b->types[i],
                          prescaled[i] ? ncclSum : ncclAvg, comm_, stream_);
        if (r == ncclInProgress) r = ncclSuccess;  // non-blocking: deferred to the group's end
      }
      // Always paired with the start, even after a failed call, or NCCL's group state leaks.
      const ncclResult_t end = ncclGroupEnd();
      if (r == ncclSuccess) r = end;
      A8_RETURN_IF_ERROR(SettleLocked(r, what));
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      const CommBuffer& to = buffers[i];
      const CommBuffer& from = b->reduced[i];
      if (to.data == from.data || to.count == 0) continue;
      A8_RETURN_IF_ERROR(
          Convert(from.data, from.dtype, to.data, to.dtype, to.count, stream_, what));
    }
    return CudaCheck(cudaEventRecord(b->done, stream_), what);
  }

  // Decides where each buffer is averaged, grows the bucket's staging buffer when needed (once,
  // in practice: a bucket holds the same gradients every step) and creates its events.
  Status Layout(const std::vector<CommBuffer>& buffers, DType wire, Bucket* b,
                const std::string& what) {
    if (wire != DType::kF32 && wire != DType::kF16) {
      return Unsupported("{}: wire dtype {} (f32 or f16)", what, DTypeName(wire));
    }
    size_t bytes = 0;
    std::vector<size_t> offsets;
    for (const CommBuffer& g : buffers) {
      A8_RETURN_IF_ERROR(NcclType(g.dtype).status());
      const DType r = ReduceDType(g.dtype, wire);
      offsets.push_back(bytes);
      if (r != g.dtype) {
        bytes += (static_cast<size_t>(g.count) * DTypeSize(r) + kStagingAlign - 1) / kStagingAlign *
                 kStagingAlign;
      }
    }
    if (bytes > b->staging_bytes) {
      if (b->staging != nullptr) {
        // cudaFree waits for the GPU, so an earlier all-reduce still using it has finished.
        A8_RETURN_IF_ERROR(CudaCheck(cudaFree(b->staging), what));
        b->staging = nullptr;
        b->staging_bytes = 0;
      }
      A8_RETURN_IF_ERROR(CudaCheck(cudaMalloc(&b->staging, bytes),
                                   fmt::format("{}: allocating {} bytes of staging", what, bytes)));
      b->staging_bytes = bytes;
    }
    b->reduced.clear();
    b->types.clear();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const CommBuffer& g = buffers[i];
      const DType r = ReduceDType(g.dtype, wire);
      void* at = r == g.dtype ? g.data : static_cast<uint8_t*>(b->staging) + offsets[i];
      b->reduced.push_back({at, g.count, r});
      A8_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(r));
      b->types.push_back(type);
    }
    for (cudaEvent_t* e : {&b->ready, &b->done}) {
      if (*e == nullptr) {
        A8_RETURN_IF_ERROR(CudaCheck(cudaEventCreateWithFlags(e, cudaEventDisableTiming), what));
      }
    }
    return Status::Ok();
  }

  Status NcclCheck(ncclResult_t r, const std::string& what) const {
    if (r == ncclSuccess) return Status::Ok();
    const char* last = comm_ != nullptr ? ncclGetLastError(comm_) : ncclGetLastError(nullptr);
    const bool has_last = last != nullptr && *last != '\0';
    return Internal("rank {} of {}: {} failed in NCCL: {}{}{}", rank_, size_, what,
                    ncclGetErrorString(r), has_last ? ": " : "", has_last ? last : "");
  }

  Status TimedOut(const std::string& what) const {
    return Internal(
        "rank {} of {}: {} did not complete within {:g} s (--collective-timeout): another rank "
        "died, hangs or runs a different step; the NCCL communicator was aborted",
        rank_, size_, what, timeout_s_);
  }

  // Waits (bounded by the timeout) until a non-blocking NCCL call's ncclInProgress turns into
  // its result; a failure or the timeout aborts the communicator. The caller holds nccl_mu_.
  Status SettleLocked(ncclResult_t r, const std::string& what) {
    const auto deadline = Clock::now() + timeout_;
    while (r == ncclInProgress && comm_ != nullptr) {
      if (Clock::now() > deadline) return AbortLocked(TimedOut(what));
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      if (ncclCommGetAsyncError(comm_, &r) != ncclSuccess) r = ncclInternalError;
    }
    if (r == ncclSuccess) return Status::Ok();
    return AbortLocked(NcclCheck(r, what));
  }

  // Remembers the first error, aborts the communicator, and returns `error`. The caller holds
  // nccl_mu_ (lock order: nccl_mu_, then mu_).
  Status AbortLocked(Status error) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (error_.ok()) error_ = error;
    }
    failed_.store(true);
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    return error;
  }
  Status Fail(Status error) {
    std::lock_guard<std::mutex> l(nccl_mu_);
    return AbortLocked(std::move(error));
  }

  // Flushes the communicator before ncclCommDestroy, bounded by the timeout (a peer gone after
  // the last collective must not hang the exit). False: abort instead. Holds nccl_mu_.
  bool Finalize() {
    ncclResult_t r = ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + timeout_;
    while (r == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (ncclCommGetAsyncError(comm_, &r) != ncclSuccess) r = ncclInternalError;
    }
    if (r != ncclSuccess) return false;
    ncclCommDestroy(comm_);
    comm_ = nullptr;
    return true;
  }

  // The watchdog thread (see comm_nccl.h): until the destructor stops it or a fault is found.
  void Watch() {
    cudaSetDevice(device_);  // event queries and the abort act on this rank's GPU
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      stop_cv_.wait_for(l, kWatchdogPeriod, [this] { return stop_; });
      if (stop_) return;
      if (failed_.load()) continue;
      Status fault;
      std::vector<int> in_flight;
      for (auto& [id, b] : buckets_) {
        if (!b.in_flight) continue;
        const cudaError_t e = cudaEventQuery(b.done);
        if (e == cudaSuccess) {
          b.in_flight = false;
        } else if (e != cudaErrorNotReady) {
          fault = CudaCheck(e, fmt::format("rank {} of {}: {}", rank_, size_, BucketName(id)));
        } else if (Clock::now() - b.since > timeout_) {
          fault = TimedOut(BucketName(id));
        } else {
          in_flight.push_back(id);
        }
        if (!fault.ok()) break;
      }
      l.unlock();
      if (fault.ok()) fault = AsyncError(in_flight);
      // Remembered: the next call on the communicator returns it.
      if (!fault.ok()) (void)Fail(fault);
      l.lock();
    }
  }

  // NCCL's asynchronous error (a dead peer, a network failure), naming the buckets in flight.
  // Skipped while an enqueue holds the communicator: that one polls the same error itself.
  Status AsyncError(const std::vector<int>& in_flight) {
    std::unique_lock<std::mutex> l(nccl_mu_, std::try_to_lock);
    if (!l.owns_lock() || comm_ == nullptr) return Status::Ok();
    ncclResult_t r = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &r) != ncclSuccess) r = ncclInternalError;
    if (r == ncclSuccess || r == ncclInProgress) return Status::Ok();
    std::string what = "the NCCL communicator";
    if (!in_flight.empty()) {
      what = fmt::format("the all-reduce of gradient bucket{} {}", in_flight.size() > 1 ? "s" : "",
                         fmt::join(in_flight, ", "));
    }
    return NcclCheck(r, what);
  }

  // Declared first, destroyed last: the NCCL communicator is gone before its bootstrap.
  std::unique_ptr<Communicator> bootstrap_;
  const int rank_, size_, device_;
  const Clock::duration timeout_;
  const double timeout_s_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t stream_ = nullptr;

  std::mutex nccl_mu_;
  ncclComm_t comm_ = nullptr;  // under nccl_mu_; nullptr once aborted or destroyed

  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;                // under mu_
  std::map<int, Bucket> buckets_;    // inserted under mu_ (the watchdog walks it)
  Status error_;                     // under mu_: the first fault
  std::atomic<bool> failed_{false};  // error_ is set: a cheap check for every call
  std::thread watchdog_;
};

// This process's GPU: LOCAL_RANK, else Open MPI's local rank, else rank modulo the GPUs.
StatusOr<int> PickDevice(int rank) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return InvalidInput("NCCL needs a CUDA GPU, and this machine has none visible ({})",
                        e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  }
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    A8_ASSIGN_OR_RETURN(const int local, EnvIndex(name));
    if (local < 0) continue;
    if (local >= count) {
      return InvalidInput(
          "{}={} but this machine has {} GPU{} (one GPU per local rank: start at most {} ranks "
          "per machine, or set CUDA_VISIBLE_DEVICES)",
          name, local, count, count == 1 ? "" : "s", count);
    }
    return local;
  }
  return rank % count;
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    std::unique_ptr<Communicator> bootstrap, double timeout_s) {
  if (!(timeout_s > 0)) {
    return InvalidInput("--collective-timeout: must be a positive number of seconds, got {:g}",
                        timeout_s);
  }
  if (bootstrap == nullptr) bootstrap = std::make_unique<SingleProcess>();
  A8_ASSIGN_OR_RETURN(const int device, PickDevice(bootstrap->rank()));
  auto comm = std::make_unique<NcclCommImpl>(std::move(bootstrap), device, timeout_s);
  A8_RETURN_IF_ERROR(comm->Init());
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace a8
