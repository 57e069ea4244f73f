// Runs a validated plan on a backend.
//
// Memory: the PERSISTENT region (initialised from the plan's blob) and the ARENA are allocated
// once at Create, in host memory (64-byte aligned) for a host backend (the CPU) or by the
// backend in device memory (the CUDA backend, Backend::AllocateRegion); every buffer is bound to
// region base + offset, and bytes move through the backend (SetInput, ReadBuffer, WriteBuffer).
// A step copies the bound inputs into their arena buffers, runs the kernels in order and leaves
// the outputs in theirs (read them before the next step). Set every input before every step:
// the arena may reuse an input's bytes once its last reader has run. On a device backend a step
// is one Backend::RunSequence (the CUDA backend replays it as a CUDA graph) unless a check or
// poisoning needs the kernels one by one.
//
// Debug option `poison_freed`: before each step the whole arena is filled with 0xFF bytes
// (a NaN for every float type), and after each kernel the bytes of every ARENA buffer whose last
// use has passed are filled again, except bytes still owned by a live buffer that shares them
// through `alias_of`, graph outputs and the sources of training updates. A plan whose live
// ranges are right gives identical outputs with and without poisoning.
//
// Training plans (Plan.training): `Run` is one training step (forward, loss, backward, update):
// it runs every kernel, then copies each `updates` source into its PERSISTENT target, in order.
// `RunEval` runs only the forward kernels (`train.eval_kernels`) with StepInfo.eval set and
// changes no parameter or state. The step counter is the plan's i64 step buffer when it has one
// (so it travels with a checkpoint), else the number of training steps run.
//
// Option `check_numerics` (a800c-run --check-numerics): after each kernel, every float output
// (f32/f16/bf16/f64, arena or written in place into a persistent buffer) is scanned, and the
// first Inf/NaN stops the step with an Internal error naming the step, the kernel, its node and
// ONNX nodes, the op, the output buffer and its type, the element's index and value, and the
// loss scale the step runs with (1 without a scaler). With a dynamic loss scaler non-finite
// gradients are expected now and then (the scaler skips those updates), so a training step then
// checks only the forward kernels (train.eval_kernels) and, after the step, the parameters and
// state it updated (all but the control vector, whose gradient norm may be Inf on a skipped
// step). Without the option nothing is scanned.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan_file.h"
#include "runtime/core/backend.h"

namespace a8 {

class Tracer;

struct ExecutorOptions {
  bool poison_freed = false;
  uint64_t seed = 0;  // StepInfo::seed
  bool check_numerics = false;
  // Data parallel: the communicator the all-reduce kernels use (not owned; null for one
  // process). The executor lets pending collectives progress between kernels.
  Communicator* comm = nullptr;
  // a800c-run --trace (runtime/core/trace.h; not owned; null: no tracing, at no cost). The steps
  // it wants run kernel by kernel, timed by the backend's KernelTimer.
  Tracer* tracer = nullptr;
  // Called after every kernel `k` of a step or an evaluation (then the step runs kernel by
  // kernel): for tools that read intermediate buffers before the arena reuses them (a800c
  // debug-precision, --numerics-stats). An error stops the step with that error.
  std::function<Status(int k, const StepInfo& info)> after_kernel;
};

// Frees a host region: from the heap, or, for `mapped` > 0, a mapping of that many bytes.
struct AlignedFree {
  size_t mapped = 0;
  void operator()(uint8_t* p) const;
};
using AlignedBytes = std::unique_ptr<uint8_t[], AlignedFree>;

class Executor {
 public:
  // Takes a plan that ReadPlanFile/ValidatePlan accepted; also re-checks what memory safety
  // depends on (offsets and sizes inside their region, blob ranges) as an Internal error.
  static StatusOr<std::unique_ptr<Executor>> Create(PlanFile plan, std::unique_ptr<Backend> backend,
                                                    ExecutorOptions options = {});

  const plan::Plan& plan() const { return file_.plan; }
  const PlanFile& file() const { return file_; }
  const Backend& backend() const { return *backend_; }

  // The buffer bound to input / output `name`, or null.
  const plan::Buffer* FindInput(const std::string& name) const;
  const plan::Buffer* FindOutput(const std::string& name) const;

  // Copies `bytes` bytes into input `name`; InvalidInput when the name or the size is wrong.
  Status SetInput(const std::string& name, const void* data, size_t bytes);
  // The address of buffer `id`. It is host memory only where backend().host_memory(); use
  // ReadBuffer / WriteBuffer to work with any backend.
  uint8_t* BufferData(int id) const { return ptrs_[id]; }
  // Copies all of buffer `id`'s bytes to `dst` / from `src` (ordered after queued kernels).
  Status ReadBuffer(int id, void* dst) const;
  Status WriteBuffer(int id, const void* src);

  // Runs one step (a training step for a training plan).
  Status Run();
  // Training plans: runs the evaluation kernels once, on the inputs as set; no update.
  Status RunEval();

  // Steps run by this executor (training steps; evaluation steps do not count).
  int64_t steps_run() const { return step_; }
  // The training step counter: the step buffer's value when the plan has one, else steps_run().
  int64_t step() const;
  // Sets the counter a resumed run continues from (a plan without a step buffer; with one, the
  // checkpoint restores the buffer itself).
  void set_steps_run(int64_t step) { step_ = step; }
  // The seed kernels see (StepInfo::seed): a resumed run takes its checkpoint's.
  uint64_t seed() const { return options_.seed; }
  void set_seed(uint64_t seed) { options_.seed = seed; }

  // The PARAMETER and STATE buffers, in id order: what a checkpoint holds.
  const std::vector<int>& checkpoint_buffers() const { return checkpoint_buffers_; }

 private:
  Executor() = default;
  Status ValidateTraining() const;
  void PoisonArenaExceptInputs();
  void Poison(int after_kernel);
  Status RunKernel(int k, const StepInfo& info, KernelTimer* timer = nullptr);
  // A traced step's kernels and updates (executor_trace.cc).
  Status RunTraced(const StepInfo& info);
  // Whether this step must run kernel by kernel (checks, poisoning, host-driven collectives)
  // rather than as one backend sequence.
  bool PerKernel(const StepInfo& info) const;
  // Backend::RunSequence keys.
  static constexpr int kNoCapture = -1, kStepSequence = 0, kEvalSequence = 1;
  // check_numerics: Create's tables, and the scans after a kernel and after a step's updates.
  void PlanNumericsChecks();
  double LossScale() const;
  Status CheckKernelOutputs(int k, const StepInfo& info) const;
  Status CheckUpdatedState(const StepInfo& info) const;

  PlanFile file_;
  std::unique_ptr<Backend> backend_;
  ExecutorOptions options_;
  AlignedBytes persistent_, arena_;  // host memory (host backends only)
  uint8_t* persistent_base_ = nullptr;
  uint8_t* arena_base_ = nullptr;
  std::vector<int> all_kernels_, eval_kernels_;
  std::vector<Backend::Copy> update_copies_;
  std::vector<uint8_t*> ptrs_;
  std::vector<int> alias_root_;
  std::vector<std::vector<int>> dies_after_;  // per kernel: ARENA buffers to poison
  std::vector<bool> live_to_end_;             // graph outputs and update sources
  std::vector<int> checkpoint_buffers_;
  std::vector<bool> check_in_step_;    // per kernel: scanned by a (training) step
  std::vector<int> check_after_step_;  // update targets scanned after a step's updates
  bool dynamic_scaler_ = false;
  double step_scale_ = 1;               // the loss scale the running step started with
  std::unique_ptr<KernelTimer> timer_;  // tracing only
  int64_t step_ = 0;
};

}  // namespace a8
