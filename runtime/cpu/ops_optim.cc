// CPU registry entries of the optimizer ops (see registry.h): a800c's step control and updates
// (domain "a8") and the ONNX ai.onnx.preview.training optimizers, over kernels/cpu/optim.h.
#include "kernels/cpu/optim.h"
#include "runtime/core/onnx_optim_attrs.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

Status RunTrainControl(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::TrainControlParams p, TrainControlOperands(a));
  cpu::TrainControlInputs in;
  in.step = *reinterpret_cast<const int64_t*>(a.in(0).data);
  in.updates = *reinterpret_cast<const float*>(a.in(1).data);
  if (a.has_in(2)) {
    in.has_sq_norm = true;
    in.sq_norm = *reinterpret_cast<const float*>(a.in(2).data);
  }
  if (a.has_in(3)) {
    in.has_found_inf = true;
    in.found_inf = *reinterpret_cast<const float*>(a.in(3).data);
  }
  return cpu::TrainControl(p, in, reinterpret_cast<float*>(a.out(0).data),
                           reinterpret_cast<int64_t*>(a.out(1).data),
                           reinterpret_cast<float*>(a.out(2).data));
}

Status RunGlobalNormSq(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const TensorList l, FloatsToScalarOperands(a));
  return cpu::GlobalNormSq(l.dtypes, l.counts, l.data, reinterpret_cast<float*>(a.out(0).data));
}

Status RunGradAccumulate(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.in(1), a.in(0), "g"));
  A8_RETURN_IF_ERROR(RequireSameCount(a, a.out(0), a.in(0), "acc_next"));
  A8_RETURN_IF_ERROR(RequireScalar(a, 2, DType::kI64, "step"));
  const int64_t step = *reinterpret_cast<const int64_t*>(a.in(2).data);
  return cpu::GradAccumulate(a.in(0).dtype, a.in(1).dtype, a.in(0).count(), a.Int("accumulate"),
                             step, a.in(0).data, a.in(1).data, a.out(0).data);
}

Status RunSgdUpdate(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::SgdParams p, SgdUpdateOperands(a));
  const TensorArg& param = a.in(0);
  const bool has_buf = a.has_in(3);
  return cpu::SgdUpdate(p, param.dtype, a.in(1).dtype, param.count(),
                        reinterpret_cast<const float*>(a.in(2).data), param.data, a.in(1).data,
                        has_buf ? a.in(3).data : nullptr, a.out(0).data,
                        has_buf ? a.out(1).data : nullptr);
}

Status RunAdamUpdate(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::AdamParams p, AdamUpdateOperands(a));
  const TensorArg& param = a.in(0);
  cpu::AdamExtras extras;
  extras.scale = reinterpret_cast<const float*>(a.in_data(5));
  extras.copy = a.out_data(3);
  if (extras.copy != nullptr) extras.copy_dtype = a.out(3).dtype;
  return cpu::AdamUpdate(p, param.dtype, a.in(1).dtype, param.count(),
                         reinterpret_cast<const float*>(a.in(2).data), param.data, a.in(1).data,
                         a.in(3).data, a.in(4).data, a.out(0).data, a.out(1).data, a.out(2).data,
                         extras);
}

// ---- loss scaling

Status RunUnscaleCheckFinite(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const int n, UnscaleCheckFiniteOperands(a));
  std::vector<DType> dtypes;
  std::vector<int64_t> counts;
  std::vector<const void*> grads;
  std::vector<float*> outs;
  for (int i = 0; i < n; ++i) {
    dtypes.push_back(a.in(1 + i).dtype);
    counts.push_back(a.in(1 + i).count());
    grads.push_back(a.in(1 + i).data);
    outs.push_back(reinterpret_cast<float*>(a.out(i).data));
  }
  return cpu::UnscaleCheckFinite(*reinterpret_cast<const float*>(a.in(0).data), dtypes, counts,
                                 grads, outs, reinterpret_cast<float*>(a.out(n).data));
}

Status RunCheckFinite(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const TensorList l, FloatsToScalarOperands(a));
  return cpu::UnscaleCheckFinite(1.0f, l.dtypes, l.counts, l.data, {},
                                 reinterpret_cast<float*>(a.out(0).data));
}

Status RunUpdateScale(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::UpdateScaleParams p, UpdateScaleOperands(a));
  return cpu::UpdateScale(p, *reinterpret_cast<const float*>(a.in(0).data),
                          *reinterpret_cast<const int32_t*>(a.in(1).data),
                          *reinterpret_cast<const float*>(a.in(2).data),
                          *reinterpret_cast<const int64_t*>(a.in(3).data),
                          reinterpret_cast<float*>(a.out(0).data),
                          reinterpret_cast<int32_t*>(a.out(1).data));
}

// ---- ai.onnx.preview.training: (R, T, X_1..X_n, G_1..G_n, state groups) ->
// (X_new.., states..)

// Calls update(R, T, inputs of tensor i (X, G, states...), its outputs (X_new, states...)) for each
// of the n tensors, after checking the group layout.
template <typename F>
Status ForEachOnnxTensor(const KernelArgs& a, int groups, F&& update) {
  A8_RETURN_IF_ERROR(CheckOnnxOptimizerOperands(a, groups));
  const int tensors = a.num_inputs() - 2;
  const TensorArg& r = a.in(0);
  const double rate = r.dtype == DType::kF32 ? *reinterpret_cast<const float*>(r.data)
                                             : *reinterpret_cast<const double*>(r.data);
  const int64_t t = *reinterpret_cast<const int64_t*>(a.in(1).data);
  const int n = tensors / groups;
  for (int i = 0; i < n; ++i) {
    std::vector<const TensorArg*> ins, outs;
    for (int g = 0; g < groups; ++g) ins.push_back(&a.in(2 + g * n + i));
    for (int g = 0; g < groups - 1; ++g) outs.push_back(&a.out(g * n + i));
    A8_RETURN_IF_ERROR(update(rate, t, ins, outs));
  }
  return Status::Ok();
}

using Operands = std::vector<const TensorArg*>;

Status RunOnnxAdam(const KernelArgs& a) {
  const cpu::OnnxAdamParams p = DecodeOnnxAdam(a);
  return ForEachOnnxTensor(a, 4, [&](double r, int64_t t, const Operands& in, const Operands& out) {
    return cpu::OnnxAdam(p, in[0]->dtype, in[0]->count(), r, t, in[0]->data, in[1]->data,
                         in[2]->data, in[3]->data, out[0]->data, out[1]->data, out[2]->data);
  });
}

Status RunOnnxMomentum(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(const cpu::OnnxMomentumParams p, DecodeOnnxMomentum(a));
  return ForEachOnnxTensor(a, 3, [&](double r, int64_t t, const Operands& in, const Operands& out) {
    return cpu::OnnxMomentum(p, in[0]->dtype, in[0]->count(), r, t, in[0]->data, in[1]->data,
                             in[2]->data, out[0]->data, out[1]->data);
  });
}

Status RunOnnxAdagrad(const KernelArgs& a) {
  const cpu::OnnxAdagradParams p = DecodeOnnxAdagrad(a);
  return ForEachOnnxTensor(a, 3, [&](double r, int64_t t, const Operands& in, const Operands& out) {
    return cpu::OnnxAdagrad(p, in[0]->dtype, in[0]->count(), r, t, in[0]->data, in[1]->data,
                            in[2]->data, out[0]->data, out[1]->data);
  });
}

}  // namespace

std::vector<CpuKernelEntry> OptimizerKernels() {
  static const std::vector<DType> kOnnxFloat = {DType::kF32, DType::kF64};
  return {
      {"a8.TrainControl",
       {DType::kI64},
       0,
       RunTrainControl,
       "updates, sq_norm, found_inf, ctl: f32"},
      {"a8.GlobalNormSq", kFloatTypes, 0, RunGlobalNormSq, "sum in double; out: f32"},
      {"a8.GradAccumulate", kFloatTypes, 0, RunGradAccumulate, "g: any float"},
      {"a8.SgdUpdate", kFloatTypes, 0, RunSgdUpdate, "grad: any float; in place ok"},
      {"a8.AdamUpdate", kFloatTypes, 0, RunAdamUpdate,
       "grad: any float; in place ok; scale: unscales the grad; copy_next: f16/bf16"},
      {"a8.UnscaleCheckFinite", kFloatTypes, 1, RunUnscaleCheckFinite,
       "scale and outputs: f32; in place ok"},
      {"a8.CheckFinite", kFloatTypes, 0, RunCheckFinite, "found_inf: f32"},
      {"a8.UpdateScale", {DType::kF32}, 0, RunUpdateScale, "tracker: i32, step: i64"},
      {"ai.onnx.preview.training.Adam", kOnnxFloat, 2, RunOnnxAdam, "R: f32/f64"},
      {"ai.onnx.preview.training.Momentum", kOnnxFloat, 2, RunOnnxMomentum, "R: f32/f64"},
      {"ai.onnx.preview.training.Adagrad", kOnnxFloat, 2, RunOnnxAdagrad, "R: f32/f64"},
  };
}

}  // namespace a8
