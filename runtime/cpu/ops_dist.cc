// CPU kernels of the data-parallel gradient all-reduce (runtime/comm/allreduce_kernels.h).
#include <cstring>

#include "runtime/comm/allreduce_kernels.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

Status RunAllReduceWait(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(WaitGradientAllReduce(a));
  if (a.out(0).data != a.in(1).data) std::memcpy(a.out(0).data, a.in(1).data, a.in(1).bytes());
  return Status::Ok();
}

}  // namespace

std::vector<CpuKernelEntry> DistKernels() {
  return {
      {"a8.AllReduceStart", kFloatTypes, 0, StartGradientAllReduce,
       "sums in place across the ranks of the run (nothing on one rank)"},
      {"a8.AllReduceWait", kFloatTypes, 1, RunAllReduceWait,
       "token: f32; averages over the ranks; in place ok"},
  };
}

}  // namespace a8
