// The interface every runtime backend implements, and the view of memory it is given.
//
// The executor owns the memory: it allocates the PERSISTENT region and the ARENA once and binds
// every plan buffer to a pointer (`BufferPtrs`, indexed by buffer id). A backend resolves every
// kernel of the plan to an implementation in `Prepare`, before anything runs, so an unknown
// kernel or an unsupported dtype signature is an error naming the kernel up front; `Run(i)` then
// runs kernel i on the bound buffers. The plan outlives the backend's use of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"

namespace a8 {

class Communicator;

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
  // Runs kernel `index` (after a successful Prepare).
  virtual Status Run(int index, const StepInfo& step) = 0;
};

}  // namespace a8
