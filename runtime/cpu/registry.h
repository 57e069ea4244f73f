// The CPU backend's kernel registry: one entry per op (the plan's Kernel.op), each wrapping the
// hand-tuned functions of kernels/cpu/kernels.h. Ops without an entry here run the shared device
// entries on the host (runtime/cpu/cpu_backend.h). The kernel ABI (TensorArg, KernelArgs, operand
// checks) is runtime/core/kernel_args.h.
//
// An entry declares the dtypes it takes for its "type operand" (input `type_input`, or output 0
// when type_input is -1) and a function that runs one kernel from `KernelArgs`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/core/kernel_args.h"

namespace a8 {

using KernelFn = std::function<Status(const KernelArgs&)>;

struct CpuKernelEntry {
  std::string op;
  std::vector<DType> types;  // the dtypes the type operand may have
  int type_input = 0;        // -1: output 0
  KernelFn fn;
  std::string note;  // other operands' dtypes, limits
};

// Every entry, sorted by op.
const std::vector<CpuKernelEntry>& CpuKernelRegistry();
const CpuKernelEntry* FindCpuKernel(const std::string& op);

// Each family's entries, the table of its ops_*.cc file (registry.cc gathers them).
std::vector<CpuKernelEntry> ElementwiseKernels();
std::vector<CpuKernelEntry> NnKernels();       // Gemm, conv, pool, norms, loss
std::vector<CpuKernelEntry> SoftmaxKernels();  // ops_softmax.cc: the fast path
// Internal ops (domain "a8"; CpuKernelEntry::op is qualified: "a8.ReluGrad").
std::vector<CpuKernelEntry> GradMathKernels();   // ops_grad_math.cc
std::vector<CpuKernelEntry> GradNnKernels();     // ops_grad_nn.cc: conv and pool gradients
std::vector<CpuKernelEntry> OptimizerKernels();  // ops_optim.cc
std::vector<CpuKernelEntry> DistKernels();       // ops_dist.cc: gradient all-reduce
std::vector<CpuKernelEntry> FusedKernels();      // ops_fused.cc: the fuse pass's ops

}  // namespace a8
