// The CPU backend: runs every kernel through the registry (registry.h), which wraps the
// reference kernels of kernels/cpu/. GEMM-shaped work uses OpenBLAS's threads (all cores by
// default, OPENBLAS_NUM_THREADS to change it); other kernels split independent outputs over
// threads (kernels/cpu/parallel.h). Results do not depend on the thread count.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/backend.h"
#include "runtime/cpu/registry.h"

namespace a8 {

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  // Resolves every kernel to a registry entry and checks its type operand's dtype; binds the
  // operands. Unsupported names the kernel index, its name and its node.
  Status Prepare(const plan::Plan& plan, const std::vector<uint8_t*>& buffers) override;
  Status Run(int index, const StepInfo& step) override;

 private:
  struct Prepared {
    const CpuKernelEntry* entry;
    KernelArgs args;
  };
  std::vector<Prepared> kernels_;
};

std::unique_ptr<Backend> MakeCpuBackend();

}  // namespace a8
