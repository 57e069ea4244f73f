// The CUDA backend (namespace a8::cuda) and its host emulation (a8::emu, backend "cuda-emu"):
// one source, compiled once per namespace (kernels/device/device.h).
//
// Memory: the executor's two regions (persistent, arena) are one device allocation each, made
// once; parameters are uploaded once at start. Kernels run in plan order on one stream. A step
// (Backend::RunSequence) is captured as one CUDA graph the second time it runs (the first, eager
// run sizes the scratch memory and the cuBLASLt/cuDNN algorithm caches) and replayed from then
// on: the step counter and seed reach the kernels through a device copy of StepDev that is the
// graph's first node, so a replay needs no host work but the launch. The host emulation runs
// every sequence eagerly (it has no graphs).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/device/blas.h"
#include "runtime/core/backend.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {

struct DeviceBackendOptions {
  bool graphs = true;  // capture and replay whole steps (CUDA only)
};

class DeviceBackend : public Backend {
 public:
  // An error (no GPU, no driver) when the device cannot be used.
  static StatusOr<std::unique_ptr<DeviceBackend>> Create(DeviceBackendOptions options = {});
  ~DeviceBackend() override;

  std::string name() const override;
  std::string device() const override;
  bool host_memory() const override { return false; }
  uint64_t peak_device_bytes() const override;
  // Kernel spans from events on the stream (device_timer.cc).
  StatusOr<std::unique_ptr<KernelTimer>> NewKernelTimer() override;

  Status Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) override;
  Status Run(int index, const StepInfo& step) override;
  Status RunSequence(int key, const std::vector<int>& kernels, const std::vector<Copy>& copies,
                     const StepInfo& step) override;

  StatusOr<uint8_t*> AllocateRegion(uint64_t bytes) override;
  Status CopyIn(uint8_t* dst, const void* src, uint64_t bytes) override;
  Status CopyOut(void* dst, const uint8_t* src, uint64_t bytes) override;
  Status Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) override;

  // How many sequence runs were graph replays (tests: graph replay vs eager).
  int64_t graph_replays() const { return graph_replays_; }

 private:
  DeviceBackend() = default;
  Status SetStep(const StepInfo& step);
  // Data parallel: hands the compute stream to the NCCL communicator (once).
  Status AttachComm(const StepInfo& step);
  // Waits for the step's work; reports a failed collective.
  Status EndOfStep(const StepInfo& step);
  Status RunEager(const std::vector<int>& kernels, const std::vector<Copy>& copies,
                  const StepInfo& step);

  struct Prepared {
    const DevKernelEntry* entry;
    KernelArgs args;
    bool tf32;  // Kernel.tf32_inputs is not empty: its GEMMs/convolutions may use TF32
  };
  struct Sequence {
    int runs = 0;
    void* graph = nullptr;
  };

  DeviceBackendOptions options_;
  void* stream_ = nullptr;
  StepDev* step_dev_ = nullptr;    // device
  StepDev* step_host_ = nullptr;   // pinned host, copied to step_dev_ at the start of a sequence
  int32_t* error_dev_ = nullptr;   // DevCtx::error_word, zeroed at the start of a sequence
  int32_t* error_host_ = nullptr;  // pinned host, read after a sequence
  std::unique_ptr<BlasEngine> blas_;
  DevCtx ctx_;
  std::vector<void*> regions_;
  std::vector<Prepared> kernels_;
  std::vector<std::vector<uint8_t>> const_host_;  // host copies of small CONSTANT buffers
  std::vector<Sequence> sequences_;               // by key
  int64_t graph_replays_ = 0;
  Communicator* attached_comm_ = nullptr;
};

}  // namespace a8::A8_DEV_NS

namespace a8 {
// The CUDA backend; an error naming the reason when this build or this machine has none.
StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(bool graphs = true);
// The host emulation of the CUDA backend ("cuda-emu": the CUDA kernels' code run on the CPU).
StatusOr<std::unique_ptr<Backend>> MakeCudaEmuBackend();
}  // namespace a8
