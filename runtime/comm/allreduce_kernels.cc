#include "runtime/comm/allreduce_kernels.h"

#include <vector>

#include "runtime/comm/communicator.h"

namespace a8 {
namespace {

// Whether this step reduces: every step, or with every=k (--accumulate=k) the update steps only.
// A host decision on the step: data-parallel steps run eagerly on a device backend, never as a
// replayed graph (device_backend.cc).
bool ReducesThisStep(const KernelArgs& a) {
  const int64_t every = a.Int("every", 1);
  return every <= 1 || (a.step.step + 1) % every == 0;
}

}  // namespace

Status StartGradientAllReduce(const KernelArgs& a) {
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

Status WaitGradientAllReduce(const KernelArgs& a) {
  const TensorArg& g = a.in(1);
  const TensorArg& y = a.out(0);
  if (g.dtype != y.dtype || g.count() != y.count()) {
    return InvalidInput("a8.AllReduceWait: output {} does not match the gradient {}",
                        DTypeName(y.dtype), DTypeName(g.dtype));
  }
  Communicator* comm = a.step.comm;
  if (comm != nullptr && comm->size() > 1 && ReducesThisStep(a))
    return comm->WaitAllReduce(static_cast<int>(a.Int("bucket", 0)));
  return Status::Ok();
}

}  // namespace a8
