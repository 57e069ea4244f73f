// CPU registry entries of a800c's step control and updates (domain "a8", see registry.h), over
// kernels/cpu/optim.h. The ONNX ai.onnx.preview.training optimizers run the shared device entries
// (runtime/device/ops_loss_optim.cc) on the host.
#include "kernels/cpu/optim.h"
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

}  // namespace

std::vector<CpuKernelEntry> OptimizerKernels() {
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
  };
}

}  // namespace a8
