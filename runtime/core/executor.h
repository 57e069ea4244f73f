// Runs a validated plan on a backend.
//
// Memory: the PERSISTENT region (initialised from the plan's blob) and the ARENA are allocated
// once, 64-byte aligned, at Create; every buffer is bound to region base + offset. A step copies
// the bound inputs into their arena buffers, runs the kernels in order and leaves the outputs in
// theirs (read them through BufferData before the next step). Set every input before every
// step: the arena may reuse an input's bytes once its last reader has run.
//
// Debug option `poison_freed`: before each step the whole arena is filled with 0xFF bytes
// (a NaN for every float type), and after each kernel the bytes of every ARENA buffer whose last
// use has passed are filled again, except bytes still owned by a live buffer that shares them
// through `alias_of` and graph outputs. A plan whose live ranges are right gives identical
// outputs with and without poisoning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan_file.h"
#include "runtime/core/backend.h"

namespace a8 {

struct ExecutorOptions {
  bool poison_freed = false;
  uint64_t seed = 0;  // StepInfo::seed
};

struct AlignedFree {
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
  const Backend& backend() const { return *backend_; }

  // The buffer bound to input / output `name`, or null.
  const plan::Buffer* FindInput(const std::string& name) const;
  const plan::Buffer* FindOutput(const std::string& name) const;

  // Copies `bytes` bytes into input `name`; InvalidInput when the name or the size is wrong.
  Status SetInput(const std::string& name, const void* data, size_t bytes);
  // The address of buffer `id` (for filling inputs in place or reading outputs).
  uint8_t* BufferData(int id) const { return ptrs_[id]; }

  // Runs one step.
  Status Run();

  int64_t steps_run() const { return step_; }

 private:
  Executor() = default;
  void Poison(int after_kernel);

  PlanFile file_;
  std::unique_ptr<Backend> backend_;
  ExecutorOptions options_;
  AlignedBytes persistent_, arena_;
  std::vector<uint8_t*> ptrs_;
  std::vector<int> alias_root_;
  std::vector<std::vector<int>> dies_after_;  // per kernel: ARENA buffers to poison
  int64_t step_ = 0;
};

}  // namespace a8
