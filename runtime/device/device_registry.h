// The CUDA backend's kernel registry (and its host emulation's: the same sources, compiled once
// per namespace, see kernels/device/device.h). One entry per plan op, like the CPU registry
// (runtime/cpu/registry.h); both take the KernelArgs of runtime/core/kernel_args.h. TensorArg::data
// is device memory here, and only TensorArg::host (CONSTANT buffers) may be read by host code.
//
// An entry's function runs on the host: it reads the kernel's attributes and dims, and launches
// device work on ctx.stream. Rules for entry functions, so that a step can be captured once as a
// CUDA graph and replayed:
//   - never read or write TensorArg::data on the host (no host sync inside a step); scalar
//     operands that are not CONSTANT are read by the device code;
//   - the step and seed come from ctx.step (device memory), not KernelArgs::step, which is only
//     valid for `eval` (fixed per captured sequence);
//   - the same launches every step for the same kernel (no data-dependent host branching).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/device/device.h"
#include "kernels/device/host_status.h"  // FromDev
#include "kernels/device/loss_optim.h"
#include "runtime/core/kernel_args.h"

namespace a8::A8_DEV_NS {

using DevKernelFn = Status (*)(const KernelArgs&, DevCtx&);

struct DevKernelEntry {
  std::string op;            // qualified, as in the plan ("Add", "a8.ReluGrad")
  std::vector<DType> types;  // dtypes the type operand may have
  int type_input = 0;        // -1: output 0
  DevKernelFn fn = nullptr;
  std::string note;
};

// Every entry, sorted by op.
const std::vector<DevKernelEntry>& DeviceKernelRegistry();
const DevKernelEntry* FindDeviceKernel(const std::string& op);

// The values of integer input `i` (absent or empty: none), read on the host: the operand must be
// a CONSTANT buffer with a host copy (Unsupported naming the op otherwise).
StatusOr<std::vector<int64_t>> HostInts(const KernelArgs& a, int i);

// The bytes of `t` that host code may read, to name the element at fault where a kernel could only
// raise DevErr: a CONSTANT buffer's host copy, else the data itself where device memory is host
// memory (MemoryIsHost: the emulation, and the CPU backend running these entries); null on a GPU
// for an operand computed or fed during the step.
const uint8_t* HostBytes(const TensorArg& t);

// The position of string attribute `name` among `values` (absent: the first), for the kernels'
// enums listed in the same order; InvalidInput "`op`: unknown `name` 'value' (a, b or c)" when it
// is none of them.
StatusOr<int> AttrChoice(const KernelArgs& a, const char* op, const char* name,
                         std::initializer_list<const char*> values);

// The LossShape of loss params (runtime/core/kernel_args.h LossParamsFromKernel); Unsupported
// naming `op` for labels that are neither i32 nor i64.
StatusOr<LossShape> LossShapeFrom(const a8::LossParams& lp, const char* op);

// Each family's entries, the table of its ops_*.cc file (device_registry.cc gathers them).
std::vector<DevKernelEntry> DeviceElementwiseOps();
std::vector<DevKernelEntry> DeviceMovementOps();
std::vector<DevKernelEntry> DeviceReduceOps();
std::vector<DevKernelEntry> DeviceNnOps();  // norms, pools
std::vector<DevKernelEntry> DeviceLossOptimOps();
std::vector<DevKernelEntry> DeviceGemmConvOps();
std::vector<DevKernelEntry> DeviceDistOps();
std::vector<DevKernelEntry> DeviceGatherNdOps();    // GatherND, a8.GatherNDGrad
std::vector<DevKernelEntry> DeviceScatterOps();     // ScatterND, ScatterElements, TopK
std::vector<DevKernelEntry> DeviceGridSampleOps();  // GridSample, Col2Im, DeformConv, gradients
std::vector<DevKernelEntry> DeviceLinalgOps();      // Det, a8.DetGrad
std::vector<DevKernelEntry> DeviceRoiPoolOps();     // MaxUnpool, RoiAlign, gradients
std::vector<DevKernelEntry> DeviceRandomOps();
std::vector<DevKernelEntry> DeviceAttentionOps();  // a8.FusedAttention, a8.FusedAttentionGrad

}  // namespace a8::A8_DEV_NS
