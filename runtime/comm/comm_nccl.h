// The NCCL communicator of the CUDA backend (communicator.h, issue 7): gradient buckets are
// averaged in GPU memory by NCCL on a communication stream of its own, overlapping backward.
//
// Built over a BOOTSTRAP communicator (MPI under mpirun, TCP for torchrun-style launches), which
// it owns: the bootstrap carries NCCL's unique id from rank 0 to the others (as nccl-tests do
// over MPI) and still does the host-memory collectives of the run's start and end (Broadcast,
// MinMax, Barrier), to which this class delegates.
//
// Streams: StartAllReduce records an event on the backend's compute stream and the comm stream
// waits for it, so the all-reduce sees the finished gradients without the host waiting;
// WaitAllReduce makes the compute stream wait for the bucket's done event, again without the
// host waiting. The only host-side blocking is bounded: NCCL runs in its non-blocking mode
// (config.blocking = 0), and initialisation and every enqueue are polled against the timeout.
//
// Faults: a watchdog thread polls the in-flight buckets and NCCL's asynchronous error. A bucket
// in flight longer than the collective timeout, or an NCCL error (a dead peer shows up as one),
// makes it abort the NCCL communicator (ncclCommAbort: NCCL's kernels exit, so the streams and a
// host blocked on them move on) and remember an error naming the bucket and the rank; the next
// StartAllReduce, WaitAllReduce or Progress returns it.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "runtime/comm/communicator.h"

namespace a8 {

class NcclCommunicator : public Communicator {
 public:
  // The CUDA backend's stream: the all-reduces start after the work enqueued on it and the
  // waits enqueue on it. Set before the first StartAllReduce (the default is the legacy default
  // stream, nullptr).
  virtual void SetComputeStream(cudaStream_t stream) = 0;
  // The CUDA device of this rank (already current on the creating thread).
  virtual int device() const = 0;
  // Ok, or the error of a failed collective. WaitAllReduce does not block the host, so a bucket
  // can fail after its wait returned; the backend checks this after it synchronises at the end
  // of a step, before it trusts the step's results (or writes a checkpoint).
  virtual Status Health() = 0;
};

// One GPU per local rank: LOCAL_RANK, else OMPI_COMM_WORLD_LOCAL_RANK, else rank % the device
// count; made current with cudaSetDevice before NCCL initialises. `bootstrap` is the run's
// MPI or TCP communicator (owned from here on); nullptr means a world of one process (what
// CreateCommunicator returns without a launcher). `timeout_s` bounds the initialisation,
// every all-reduce (the watchdog) and the final flush. Errors: no GPU, fewer GPUs than local
// ranks, an NCCL or CUDA failure, or a peer that does not join within the timeout.
StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    std::unique_ptr<Communicator> bootstrap, double timeout_s);

}  // namespace a8
