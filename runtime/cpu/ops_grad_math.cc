// CPU registry entries of the elementwise / shape gradient ops (see registry.h and
// kernels/cpu/grad_math.h).
#include "kernels/cpu/grad_math.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

using cpu::ActivationGradOp;

KernelFn ActivationGradFn(ActivationGradOp op) {
  return [op](const KernelArgs& a) -> Status {
    const std::string& name = a.kernel().op();
    cpu::ActivationGradAttrs at;
    ActivationGradOp g = op;
    if (op == ActivationGradOp::kLeakyRelu) at.alpha = a.Float("alpha", 0.01f);
    if (op == ActivationGradOp::kElu) at.alpha = a.Float("alpha", 1.0f);
    if (op == ActivationGradOp::kHardSigmoid) {
      at.alpha = a.Float("alpha", 0.2f);
      at.beta = a.Float("beta", 0.5f);
    }
    if (op == ActivationGradOp::kGelu) {
      const std::string approx = a.Str("approximate", "none");
      if (approx == "tanh") {
        g = ActivationGradOp::kGeluTanh;
      } else if (approx != "none") {
        return InvalidInput("{}: approximate: unknown value '{}'", name, approx);
      }
    }
    const TensorArg &dy = a.in(0), &z = a.in(1), &dx = a.out(0);
    if (dy.count() != dx.count() || z.count() != dx.count() || dy.dtype != z.dtype ||
        dy.dtype != dx.dtype) {
      return InvalidInput("{}: dy, the saved operand and dx must have the same type", name);
    }
    return cpu::ActivationGrad(g, dy.dtype, dx.count(), dy.data, z.data, dx.data, at);
  };
}

Status RunGatherGrad(const KernelArgs& a) {
  const TensorArg &dy = a.in(0), &idx = a.in(1), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.GatherGrad: dy and dx dtypes differ");
  return cpu::GatherGrad(dy.dtype, dy.dims, dy.data, a.Int("axis", 0), idx.dtype, idx.dims,
                         idx.data, dx.dims, dx.data);
}

Status RunSliceGrad(const KernelArgs& a) {
  const TensorArg &dy = a.in(0), &dx = a.out(0);
  if (dy.dtype != dx.dtype) return InvalidInput("a8.SliceGrad: dy and dx dtypes differ");
  return cpu::SliceGrad(dy.dtype, dy.dims, dy.data, a.Ints("starts"), a.Ints("steps"), dx.dims,
                        dx.data);
}

}  // namespace

void RegisterGradMathKernels(std::vector<CpuKernelEntry>* r) {
  const std::pair<const char*, ActivationGradOp> activations[] = {
      {"a8.ReluGrad", ActivationGradOp::kRelu},
      {"a8.SigmoidGrad", ActivationGradOp::kSigmoid},
      {"a8.TanhGrad", ActivationGradOp::kTanh},
      {"a8.LeakyReluGrad", ActivationGradOp::kLeakyRelu},
      {"a8.EluGrad", ActivationGradOp::kElu},
      {"a8.GeluGrad", ActivationGradOp::kGelu},
      {"a8.ErfGrad", ActivationGradOp::kErf},
      {"a8.SoftplusGrad", ActivationGradOp::kSoftplus},
      {"a8.HardSigmoidGrad", ActivationGradOp::kHardSigmoid},
  };
  for (const auto& [op, g] : activations) {
    r->push_back({op, kFloatTypes, 0, ActivationGradFn(g), "saved operand: same type as dy"});
  }
  r->push_back({"a8.GatherGrad", kFloatTypes, 0, RunGatherGrad, "indices: i64 or i32"});
  r->push_back({"a8.SliceGrad", kFloatTypes, 0, RunSliceGrad, ""});
}

}  // namespace a8
