// The interface every runtime backend implements, and the view of memory it is given.
//
// The executor owns the memory: it allocates the PERSISTENT region and the ARENA once and binds
// every plan buffer to a pointer (`BufferPtrs`, indexed by buffer id). A backend resolves every
// kernel of the plan to an implementation in `Prepare`, before anything runs, so an unknown
// kernel or an unsupported dtype signature is an error naming the kernel up front; `Run(i)` then
// runs kernel i on the bound buffers. The plan outlives the backend's use of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"

namespace a8 {

class Communicator;

// The clock of KernelSpan: the host's steady clock (CLOCK_MONOTONIC) in microseconds.
double SteadyNowUs();

// One kernel run as a trace shows it (a800c-run --trace, runtime/core/trace.h).
struct KernelSpan {
  int kernel = 0;
  double start_us = 0;  // the host's steady clock (CLOCK_MONOTONIC), microseconds
  double dur_us = 0;
  int64_t track = 0;  // the thread (CPU: its Linux thread id) or stream that ran it
};

// Times the kernels of a traced step. The executor calls Start(k) and Stop(k) around
// Backend::Run(k) and Collect() after the step's last kernel. A host backend reads the clock on
// the calling thread (the default, HostKernelTimer in backend.cc); a device backend records
// events on its stream and converts their elapsed times when the step is collected.
class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual void Start(int kernel) = 0;
  virtual void Stop(int kernel) = 0;
  // The spans since the last Collect, in the order run; waits for a device's work.
  virtual StatusOr<std::vector<KernelSpan>> Collect() = 0;
  // How the tracks are labelled ("thread", "CUDA stream").
  virtual std::string track_kind() const = 0;
};

// Per-step context a kernel may read (Dropout seeds its mask from the step).
struct StepInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  // An evaluation step of a training plan (its eval kernels only): BatchNormalization in training
  // mode normalizes with its running statistics and leaves them alone; Dropout passes through.
  bool eval = false;
  // The data-parallel communicator (runtime/comm), or null for one process: the gradient
  // all-reduce kernels then only average over one rank (a copy).
  Communicator* comm = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Resolves every kernel of `plan`; `buffers[id]` is the bound address of buffer id (null for
  // none). Errors: Unsupported naming the kernel ("kernel 3 'Foo:f32->f32' (node 'n'): no CPU
  // implementation of op 'Foo'").
  virtual Status Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) = 0;
  // Whether something outside the kernels reads intermediate buffers while a step runs
  // (--check-numerics, debug-precision, --numerics-stats: the executor says so before Prepare):
  // a backend then keeps every buffer in the plan's layout (the CPU backend's channels-last
  // activations, runtime/cpu/channels_last.h).
  virtual void SetIntermediatesObserved(bool observed) { (void)observed; }
  // Runs kernel `index` (after a successful Prepare).
  virtual Status Run(int index, const StepInfo& step) = 0;

  // One copy of `bytes` bytes from `src` to `dst`, both bound buffer addresses.
  struct Copy {
    uint8_t* dst;
    const uint8_t* src;
    uint64_t bytes;
  };
  // Runs kernels `kernels` in order and then `copies` as one sequence (a training step with its
  // state updates, or an evaluation step). `key` names the sequence: a backend may capture it
  // the first time and replay it after (the CUDA backend's CUDA graphs), so the same key must
  // always come with the same kernels and copies. The default runs the kernels one by one.
  virtual Status RunSequence(int key, const std::vector<int>& kernels,
                             const std::vector<Copy>& copies, const StepInfo& step);

  // ---- memory. The executor allocates the plan's regions and moves bytes through these. A
  // backend whose kernels read host memory (the CPU) keeps the defaults: host memory, memcpy.
  // A device backend allocates device memory (owned by the backend, freed with it); its copies
  // are ordered with its kernels, and CopyOut returns once the bytes are on the host.
  virtual bool host_memory() const { return true; }
  virtual StatusOr<uint8_t*> AllocateRegion(uint64_t bytes);
  virtual Status CopyIn(uint8_t* dst, const void* src, uint64_t bytes);
  virtual Status CopyOut(void* dst, const uint8_t* src, uint64_t bytes);
  virtual Status Fill(uint8_t* dst, uint8_t byte, uint64_t bytes);
  // Where the backend runs ("cpu", "NVIDIA H200 (sm_90, 139 GiB)"), for a800c-run's banner.
  virtual std::string device() const { return name(); }
  // Peak device memory this process allocated (0 for host memory).
  virtual uint64_t peak_device_bytes() const { return 0; }
  // A timer for traced steps (only made when tracing: an untraced step pays nothing).
  virtual StatusOr<std::unique_ptr<KernelTimer>> NewKernelTimer();
};

}  // namespace a8
