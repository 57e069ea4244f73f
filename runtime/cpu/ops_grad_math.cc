// CPU registry entries of the elementwise / shape gradient ops (see registry.h and
// kernels/cpu/grad_math.h).
#include "kernels/cpu/grad_math.h"
#include "runtime/core/elementwise_entries.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

using cpu::ActivationGradOp;

KernelFn ActivationGradFn(ActivationGradOp op) {
  return [op](const KernelArgs& a) -> Status {
    const std::string& name = a.kernel().op();
    A8_ASSIGN_OR_RETURN(ActivationGradOp g, ResolveUnaryVariant(a, op));
    const TensorArg &dy = a.in(0), &z = a.in(1), &dx = a.out(0);
    if (dy.count() != dx.count() || z.count() != dx.count() || dy.dtype != z.dtype ||
        dy.dtype != dx.dtype) {
      return InvalidInput("{}: dy, the saved operand and dx must have the same type", name);
    }
    return cpu::ActivationGrad(g, dy.dtype, dx.count(), dy.data, z.data, dx.data,
                               DecodeUnaryAttrs(a, ForwardOpOf(name)));
  };
}

Status RunGatherGrad(const KernelArgs& a) {
  const TensorArg &dy = a.in(0), &idx = a.in(1), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.GatherGrad: dy and dx dtypes differ");
  return cpu::GatherGrad(dy.dtype, dy.dims, dy.data, a.Int("axis"), idx.dtype, idx.dims, idx.data,
                         dx.dims, dx.data);
}

}  // namespace

std::vector<CpuKernelEntry> GradMathKernels() {
  std::vector<CpuKernelEntry> r;
  for (const ActGradEntry& g : ActGradEntries()) {
    r.push_back({g.op, kFloatTypes, 0, ActivationGradFn(g.kind), "saved operand: same type as dy"});
  }
  r.push_back({"a8.GatherGrad", kFloatTypes, 0, RunGatherGrad, "indices: i64 or i32"});
  return r;
}

}  // namespace a8
