// The gradient all-reduce kernels on a device backend (runtime/comm/communicator.h): the
// communicator is NCCL's (runtime/comm/comm_nccl.h), which queues the reduction on its own
// stream after the gradients are ready and makes the compute stream wait for it, so neither
// kernel blocks the host.
#include "runtime/comm/communicator.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// Whether this step reduces: every step, or with every=k (--accumulate=k) the update steps only.
// A host decision on the step: data-parallel steps run eagerly, never as a replayed graph
// (device_backend.cc), and on one process neither kernel communicates.
bool ReducesThisStep(const KernelArgs& a) {
  const int64_t every = a.Int("every", 1);
  return every <= 1 || (a.step.step + 1) % every == 0;
}

// a8.AllReduceStart(g_1..g_n){bucket, dtype, every} -> token.
Status AllReduceStart(const KernelArgs& a, DevCtx&) {
  Communicator* comm = a.step.comm;
  if (comm == nullptr || comm->size() == 1 || !ReducesThisStep(a)) return Status::Ok();
  std::vector<CommBuffer> buffers;
  for (int i = 0; i < a.num_inputs(); ++i) {
    const TensorArg& g = a.in(i);
    buffers.push_back({g.data, g.count(), g.dtype});
  }
  const DType wire = a.Str("dtype", "f32") == "f16" ? DType::kF16 : DType::kF32;
  return comm->StartAllReduce(static_cast<int>(a.Int("bucket", 0)), buffers, wire);
}

// a8.AllReduceWait(token, g){bucket, every} -> the mean of g over the ranks.
Status AllReduceWait(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& g = a.in(1);
  const TensorArg& y = a.out(0);
  if (g.dtype != y.dtype || g.count() != y.count())
    return InvalidInput("a8.AllReduceWait: output {} does not match the gradient {}",
                        DTypeName(y.dtype), DTypeName(g.dtype));
  Communicator* comm = a.step.comm;
  if (comm != nullptr && comm->size() > 1 && ReducesThisStep(a))
    A8_RETURN_IF_ERROR(comm->WaitAllReduce(static_cast<int>(a.Int("bucket", 0))));
  return FromDev(CopyOnDevice(y.data, g.data, g.bytes(), ctx.stream));
}

}  // namespace

void RegisterDeviceDistOps(std::vector<DevKernelEntry>* r) {
  r->push_back({"a8.AllReduceStart", kFloatTypes, 0, AllReduceStart,
                "NCCL all-reduce on its stream (nothing on one rank)"});
  r->push_back({"a8.AllReduceWait", kFloatTypes, 1, AllReduceWait,
                "token: f32; the compute stream waits for the bucket; in place ok"});
}

}  // namespace a8::A8_DEV_NS
