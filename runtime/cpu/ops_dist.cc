// CPU kernels of the data-parallel gradient all-reduce (runtime/comm/communicator.h).
#include <cstring>

#include "runtime/comm/communicator.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

// Whether this step reduces: every step, or with every=k (--accumulate=k) the update steps only.
bool ReducesThisStep(const KernelArgs& a) {
  const int64_t every = a.Int("every", 1);
  return every <= 1 || (a.step.step + 1) % every == 0;
}

// a8.AllReduceStart(g_1..g_n){bucket, dtype, every} -> token.
Status RunAllReduceStart(const KernelArgs& a) {
  Communicator* comm = a.step.comm;
  if (comm == nullptr || comm->size() == 1 || !ReducesThisStep(a)) return Status::Ok();
  std::vector<CommBuffer> buffers;
  for (int i = 0; i < a.num_inputs(); ++i) {
    const TensorArg& g = a.in(i);
    // The sum happens in g's own bytes: the plan keeps g alive, untouched, until its wait.
    buffers.push_back({g.data, g.count(), g.dtype});
  }
  const DType wire = a.Str("dtype", "f32") == "f16" ? DType::kF16 : DType::kF32;
  return comm->StartAllReduce(static_cast<int>(a.Int("bucket", 0)), buffers, wire);
}

// a8.AllReduceWait(token, g){bucket, every} -> the mean of g over the ranks.
Status RunAllReduceWait(const KernelArgs& a) {
  const TensorArg& g = a.in(1);
  const TensorArg& y = a.out(0);
  if (g.dtype != y.dtype || g.count() != y.count()) {
    return InvalidInput("a8.AllReduceWait: output {} does not match the gradient {}",
                        DTypeName(y.dtype), DTypeName(g.dtype));
  }
  Communicator* comm = a.step.comm;
  if (comm != nullptr && comm->size() > 1 && ReducesThisStep(a)) {
    // The mean lands in g's own bytes (communicator.h).
    A8_RETURN_IF_ERROR(comm->WaitAllReduce(static_cast<int>(a.Int("bucket", 0))));
  }
  if (y.data != g.data) std::memcpy(y.data, g.data, g.bytes());
  return Status::Ok();
}

}  // namespace

void RegisterDistKernels(std::vector<CpuKernelEntry>* r) {
  r->push_back({"a8.AllReduceStart", kFloatTypes, 0, RunAllReduceStart,
                "sums in place across the ranks of the run (nothing on one rank)"});
  r->push_back({"a8.AllReduceWait", kFloatTypes, 1, RunAllReduceWait,
                "token: f32; averages over the ranks; in place ok"});
}

}  // namespace a8
