// Collectives between the processes of a data-parallel run (DESIGN.md "runtime"): one interface,
// MPI on the CPU backend under mpirun (comm_mpi.cc), TCP for torchrun-style launches
// (comm_tcp.cc), NCCL on the CUDA backend (not yet).
//
// The plan's gradient buckets reach it through two kernels: a8.AllReduceStart(g_1..g_n) starts
// summing bucket b's gradients in place across ranks as soon as backward has produced them, and
// a8.AllReduceWait(token, g_i) waits for bucket b and reads g_i averaged over the ranks. The
// executor calls Progress() between kernels so that a nonblocking reduction advances while
// backward runs (Open MPI has no progress thread by default).
//
// Every wait is bounded by the collective timeout: a rank that died or hangs makes the others
// fail with an error naming the collective and the rank (when known), never hang.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

// One tensor of a bucket: `count` elements of `dtype` at `data` (reduced in place).
struct CommBuffer {
  void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::kF32;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "MPI (launched by mpirun)", for the one line a800c-run prints.
  virtual std::string description() const = 0;

  // Starts averaging `buffers` in place across ranks as bucket `bucket`; `wire` is the dtype on
  // the wire (f32, or f16 to halve the bytes: then each rank pre-divides by size() so the sum
  // cannot overflow where the mean does not). A bucket must be waited for before it starts again.
  virtual Status StartAllReduce(int bucket, const std::vector<CommBuffer>& buffers, DType wire) = 0;
  // Waits (within the timeout) for bucket `bucket`; afterwards its buffers hold the mean over the
  // ranks, rounded once to their own dtype (an FP16 gradient never holds the sum, which could
  // overflow where the mean does not). Waiting again for a finished bucket returns at once.
  virtual Status WaitAllReduce(int bucket) = 0;
  // Lets nonblocking collectives advance; cheap when nothing is pending.
  virtual void Progress() = 0;

  // Blocking collectives of the run's start and end, all bounded by the timeout.
  virtual Status Broadcast(void* data, int64_t bytes, int root, const std::string& what) = 0;
  // The largest and smallest of `value` over the ranks, and a rank holding each.
  virtual Status MinMax(uint64_t value, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                        const std::string& what) = 0;
  virtual Status Barrier(const std::string& what) = 0;

  // A fault seen elsewhere (the NCCL communicator this one bootstraps): the destructor must not
  // wait for the other ranks.
  virtual void MarkFailed() {}
};

// How the process was launched, from the environment: mpirun (Open MPI's OMPI_COMM_WORLD_*,
// or PMI_* / PMIX_RANK), torchrun-style RANK/WORLD_SIZE, or neither (one process).
enum class Launcher { kNone, kMpirun, kTorchrun };
Launcher DetectLauncher();

// The communicator of this run: nullptr for one process (no launcher, or a launcher with one
// rank), MPI under mpirun, TCP (rank 0 at MASTER_ADDR:MASTER_PORT) for torchrun-style
// launches. `timeout_s` bounds every collective, the TCP connection included.
StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(double timeout_s);

}  // namespace a8
