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

// Registration, one function per family (registry.cc calls them in order).
void RegisterElementwiseKernels(std::vector<CpuKernelEntry>* r);
void RegisterNnKernels(std::vector<CpuKernelEntry>* r);  // Gemm, conv, pool, norms, loss
void RegisterReduceKernels(std::vector<CpuKernelEntry>* r);
void RegisterMovementKernels(std::vector<CpuKernelEntry>* r);  // incl. reshape-likes, Shape
// Internal ops (domain "a8"; CpuKernelEntry::op is qualified: "a8.ReluGrad").
void RegisterGradMathKernels(std::vector<CpuKernelEntry>* r);  // ops_grad_math.cc
void RegisterGradNnKernels(std::vector<CpuKernelEntry>* r);    // ops_grad_nn.cc (and a8 losses)
void RegisterOptimizerKernels(std::vector<CpuKernelEntry>* r);
void RegisterDistKernels(
    std::vector<CpuKernelEntry>* r);  // ops_dist.cc: gradient all-reduce  // ops_optim.cc
void RegisterFusedKernels(std::vector<CpuKernelEntry>* r);  // ops_fused.cc: the fuse pass's ops

}  // namespace a8
