// The CPU backend. Every kernel runs through one of two registries:
//   - the CPU's own entries (registry.h, runtime/cpu/ops_*.cc), which wrap the hand-tuned kernels
//     of kernels/cpu/ (GEMM tiles, direct convolution, elementwise, softmax...);
//   - for every other op, the CUDA backend's entry (runtime/device/ops_*.cc) compiled for the
//     host (namespace a8::emu): the same attribute decoding and the same A8_HD math body as on
//     the GPU (kernels/device/*_impl.h), launched by the host ForEach over the CPU thread pool
//     (kernels/device/launch.h). So a family without a CPU fast path has one math body.
// GEMM-shaped work is split over the same pool (kernels/cpu/parallel.h). Results do not depend
// on the thread count.
//
// Two modes (kernels/cpu/kernel_mode.h): the fast one (the default of a800c-run: GEMMs through
// oneDNN, AMX/AVX-512 where the CPU has them, within each dtype's rounding of the reference) and
// the reference (--reference: bit-identical to cuda-emu). The library default is the reference,
// so tests that pin exact values keep them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_mode.h"
#include "runtime/core/backend.h"
#include "runtime/cpu/fast_norm_ops.h"
#include "runtime/cpu/registry.h"
#include "runtime/cpu/widened_operands.h"

namespace a8 {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(cpu::KernelMode mode = cpu::KernelMode::kReference);
  ~CpuBackend() override;
  std::string name() const override { return "cpu"; }
  // "fast kernels (GEMM: oneDNN 2.6.3 (bf16: brg:avx512_core_amx_bf16, ...))" or "reference
  // kernels": which implementation runs, for a800c-run's banner.
  std::string device() const override;
  // Resolves every kernel to a registry entry and checks its type operand's dtype; binds the
  // operands. Unsupported names the kernel index, its name and its node.
  Status Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) override;
  Status Run(int index, const StepInfo& step) override;
  // The fast mode reports every write to its PERSISTENT parameter, state and constant buffers
  // (registered as stable memory, kernels/cpu/stable_regions.h, so the GEMMs keep their weights
  // packed): kernel outputs, update copies, copies in and fills.
  Status RunSequence(int key, const std::vector<int>& kernels, const std::vector<Copy>& copies,
                     const StepInfo& step) override;
  void SetIntermediatesObserved(bool observed) override { observed_ = observed; }
  // How many buffers the last Prepare stores NHWC (channels_last.h; the fast mode only).
  int channels_last_buffers() const { return channels_last_buffers_; }
  Status CopyIn(uint8_t* dst, const void* src, uint64_t bytes) override;
  Status Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) override;

 private:
  struct Host;  // the host DevCtx of the shared bodies (cpu_backend.cc)
  // An operand of Kernel.tf32_inputs: its `n` floats are rounded to TF32 into `dst` (the
  // kernel's args point there) before each run.
  struct Tf32Operand {
    const float* src;
    float* dst;
    int64_t n;
  };
  struct Prepared {
    const CpuKernelEntry* entry;  // null: a shared body (`shared`)
    const void* shared;           // emu::DevKernelEntry
    KernelArgs args;
    std::vector<Tf32Operand> tf32;
    std::vector<std::pair<uint8_t*, size_t>> writes;  // outputs in stable regions: reported
    std::vector<WidenedOperand> widened;              // f16/bf16 operands run on f32 copies
    FastKernelFn fast = nullptr;  // the fast mode's own kernel instead of `shared`
  };
  cpu::KernelMode mode_;
  bool observed_ = false;  // SetIntermediatesObserved
  int channels_last_buffers_ = 0;
  std::vector<Prepared> kernels_;
  std::vector<float> tf32_scratch_;  // shared by the kernels' TF32 operands (one kernel at a time)
  std::vector<float> widened_scratch_;  // the same for their widened operands
  std::unique_ptr<Host> host_;
};

std::unique_ptr<Backend> MakeCpuBackend(cpu::KernelMode mode = cpu::KernelMode::kReference);

// Every op the CPU backend runs, sorted by op: its own entries (CpuKernelRegistry) and, for the
// other ops, the shared device entries wrapped to run on the host (each call with its own
// scratch memory; their note starts with "shared body"). For tests and --list-kernels: the
// backend itself keeps one host context for all its kernels.
const std::vector<CpuKernelEntry>& CpuBackendRegistry();
const CpuKernelEntry* FindCpuBackendKernel(const std::string& op);

}  // namespace a8
