// The gradient all-reduce kernels on a device backend (runtime/comm/communicator.h): the
// communicator is NCCL's (runtime/comm/comm_nccl.h), which queues the reduction on its own
// stream after the gradients are ready and makes the compute stream wait for it, so neither
// kernel blocks the host.
#include "runtime/comm/allreduce_kernels.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

Status AllReduceStart(const KernelArgs& a, DevCtx&) { return StartGradientAllReduce(a); }

Status AllReduceWait(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(WaitGradientAllReduce(a));
  return FromDev(CopyOnDevice(a.out(0).data, a.in(1).data, a.in(1).bytes(), ctx.stream));
}

}  // namespace

std::vector<DevKernelEntry> DeviceDistOps() {
  return {
      {"a8.AllReduceStart", kFloatTypes, 0, AllReduceStart,
       "NCCL all-reduce on its stream (nothing on one rank)"},
      {"a8.AllReduceWait", kFloatTypes, 1, AllReduceWait,
       "token: f32; the compute stream waits for the bucket; in place ok"},
  };
}

}  // namespace a8::A8_DEV_NS
