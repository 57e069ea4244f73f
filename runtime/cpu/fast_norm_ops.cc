#include "runtime/cpu/fast_norm_ops.h"

#include <cstring>

#include "kernels/common/kernel_types.h"
#include "kernels/cpu/batch_norm_fast.h"
#include "kernels/cpu/layer_norm_fast.h"

namespace a8 {
namespace {

bool IsNormData(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Operand i of `side` is absent, or present, f32, with `count` elements.
bool AbsentOrF32Of(const std::vector<TensorArg>& side, size_t i, int64_t count) {
  if (i >= side.size() || !side[i].present) return true;
  return side[i].dtype == DType::kF32 && side[i].count() == count;
}

float* OutF32OrNull(const KernelArgs& a, int i) {
  return a.has_out(i) ? reinterpret_cast<float*>(a.out(i).data) : nullptr;
}

const float* InF32(const KernelArgs& a, int i) {
  return reinterpret_cast<const float*>(a.in(i).data);
}

// What the forward and the gradient kernel's arguments share: X [N, C, spatial...] and epsilon.
template <typename Args>
void SetBatchNormShape(const KernelArgs& a, const TensorArg& x, Args* p) {
  p->dtype = x.dtype;
  p->batch = x.dims[0];
  p->channels = x.dims[1];
  p->spatial = 1;
  for (size_t i = 2; i < x.dims.size(); ++i) p->spatial *= x.dims[i];
  p->epsilon = a.Float("epsilon");
}

Status RunBatchNormFast(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  cpu::BatchNormFastArgs p;
  SetBatchNormShape(a, x, &p);
  p.momentum = a.Float("momentum");
  p.training = a.Int("training_mode") != 0 && !a.step.eval;
  p.x = x.data;
  p.scale = InF32(a, 1);
  p.bias = InF32(a, 2);
  p.mean = InF32(a, 3);
  p.var = InF32(a, 4);
  p.y = a.out(0).data;
  if (p.training) {
    p.running_mean_out = OutF32OrNull(a, 1);
    p.running_var_out = OutF32OrNull(a, 2);
    return cpu::BatchNormFast(p);
  }
  A8_RETURN_IF_ERROR(cpu::BatchNormFast(p));
  // An evaluation step of a training plan leaves the running statistics as they are (the
  // shared entry's rule): the running-stat outputs are copies of the inputs.
  for (int i = 1; i <= 2; ++i) {
    if (a.has_out(i) && a.out(i).data != a.in(i + 2).data) {
      if (a.out(i).bytes() != a.in(i + 2).bytes())
        return InvalidInput("BatchNormalization: running-stat output {} size differs", i);
      std::memcpy(a.out(i).data, a.in(i + 2).data, a.out(i).bytes());
    }
  }
  return Status::Ok();
}

Status RunBatchNormGradFast(const KernelArgs& a) {
  const TensorArg& x = a.in(1);
  cpu::BatchNormGradFastArgs p;
  SetBatchNormShape(a, x, &p);
  p.dy = a.in(0).data;
  p.x = x.data;
  p.scale = InF32(a, 2);
  p.dx = a.has_out(0) ? a.out(0).data : nullptr;
  p.dscale = OutF32OrNull(a, 1);
  p.dbias = OutF32OrNull(a, 2);
  return cpu::BatchNormGradFast(p);
}

// A LayerNormalization(-Grad)'s rows over x: `outer` rows of the `inner` elements from `axis` on.
Status LayerNormRows(const KernelArgs& a, const TensorArg& x, int64_t* outer, int64_t* inner) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(const int64_t axis,
                      NormalizeAxis(a.Int("axis"), rank, a.kernel().op().c_str()));
  *outer = NumElements(Dims(x.dims.begin(), x.dims.begin() + axis));
  *inner = NumElements(Dims(x.dims.begin() + axis, x.dims.end()));
  return Status::Ok();
}

// What the forward and the gradient kernel's arguments share: x's dtype, its rows, epsilon.
template <typename Args>
Status SetLayerNormShape(const KernelArgs& a, const TensorArg& x, Args* p) {
  p->dtype = x.dtype;
  p->epsilon = a.Float("epsilon");
  return LayerNormRows(a, x, &p->outer, &p->inner);
}

Status RunLayerNormFast(const KernelArgs& a) {
  const TensorArg& x = a.in(0);
  cpu::LayerNormFastArgs p;
  A8_RETURN_IF_ERROR(SetLayerNormShape(a, x, &p));
  p.x = x.data;
  p.scale = InF32(a, 1);
  p.bias = a.has_in(2) ? InF32(a, 2) : nullptr;
  p.y = a.out(0).data;
  p.mean = OutF32OrNull(a, 1);
  p.inv_std_dev = OutF32OrNull(a, 2);
  return cpu::LayerNormFast(p);
}

Status RunLayerNormGradFast(const KernelArgs& a) {
  const TensorArg& x = a.in(1);
  cpu::LayerNormGradFastArgs p;
  A8_RETURN_IF_ERROR(SetLayerNormShape(a, x, &p));
  p.dy = a.in(0).data;
  p.x = x.data;
  p.scale = InF32(a, 2);
  p.mean = a.has_in(3) ? InF32(a, 3) : nullptr;
  p.inv_std_dev = a.has_in(4) ? InF32(a, 4) : nullptr;
  p.dx = a.has_out(0) ? a.out(0).data : nullptr;
  p.dscale = OutF32OrNull(a, 1);
  p.dbias = OutF32OrNull(a, 2);
  return cpu::LayerNormGradFast(p);
}

// The rows (LayerNormRows) of a LayerNormalization(-Grad) kernel bound to these operands, or
// false.
bool LayerNormRowsOf(const plan::Kernel& kern, const std::vector<TensorArg>& in,
                     const std::vector<TensorArg>& out, const TensorArg& x, int64_t* outer,
                     int64_t* inner) {
  const KernelArgs a(&kern, in, out, {});
  return LayerNormRows(a, x, outer, inner).ok() && *inner > 0;
}

}  // namespace

FastKernelFn FindFastNormKernel(const plan::Kernel& kern, const std::vector<TensorArg>& in,
                                const std::vector<TensorArg>& out) {
  if (kern.op() == "BatchNormalization") {
    // X (rank >= 2), scale, B, mean, var all present; Y like X; the rest f32.
    if (in.size() < 5 || out.empty() || !out[0].present) return nullptr;
    for (size_t i = 0; i < 5; ++i)
      if (!in[i].present) return nullptr;
    if (in[0].dims.size() < 2 || !IsNormData(in[0].dtype) || out[0].dtype != in[0].dtype ||
        out[0].dims != in[0].dims)
      return nullptr;
    for (size_t i = 1; i < 5; ++i)
      if (in[i].dtype != DType::kF32 || in[i].count() != in[0].dims[1]) return nullptr;
    for (size_t i = 1; i < 3; ++i)
      if (!AbsentOrF32Of(out, i, in[0].dims[1])) return nullptr;
    if (out.size() > 3) return nullptr;
    return &RunBatchNormFast;
  }
  if (kern.op() == "a8.BatchNormalizationGrad") {
    // dy, x (rank >= 2, one dtype), scale f32; no running statistics (the training-mode
    // backward); dx like x, dscale and dbias f32, no dmean/dvar.
    if (in.size() < 3 || in.size() > 5) return nullptr;
    for (size_t i = 3; i < in.size(); ++i)
      if (in[i].present) return nullptr;
    for (size_t i = 0; i < 3; ++i)
      if (!in[i].present) return nullptr;
    const TensorArg& x = in[1];
    if (x.dims.size() < 2 || !IsNormData(x.dtype) || in[0].dtype != x.dtype ||
        in[0].dims != x.dims || in[2].dtype != DType::kF32 || in[2].count() != x.dims[1])
      return nullptr;
    if (!out.empty() && out[0].present && (out[0].dtype != x.dtype || out[0].dims != x.dims))
      return nullptr;
    for (size_t i = 1; i < out.size(); ++i) {
      if (!out[i].present) continue;
      if (i > 2 || out[i].dtype != DType::kF32 || out[i].count() != x.dims[1]) return nullptr;
    }
    return &RunBatchNormGradFast;
  }
  if (kern.op() == "LayerNormalization") {
    // X f32/f16/bf16; Scale f32 of the normalized size (no broadcast Scale or B); Y like X;
    // Mean and InvStdDev absent or f32 of one element a row.
    if (in.size() < 2 || in.size() > 3 || out.empty() || out.size() > 3 || !in[0].present ||
        !in[1].present || !out[0].present)
      return nullptr;
    const TensorArg& x = in[0];
    int64_t outer, inner;
    if (!LayerNormRowsOf(kern, in, out, x, &outer, &inner) || !IsNormData(x.dtype) ||
        out[0].dtype != x.dtype || out[0].dims != x.dims || in[1].dtype != DType::kF32 ||
        in[1].count() != inner || !AbsentOrF32Of(in, 2, inner))
      return nullptr;
    for (size_t i = 1; i < out.size(); ++i)
      if (!AbsentOrF32Of(out, i, outer)) return nullptr;
    return &RunLayerNormFast;
  }
  if (kern.op() == "a8.LayerNormalizationGrad") {
    // dy, x (one dtype and dims), scale f32 of the normalized size, Mean and InvStdDev both
    // absent or both f32 of one element a row; dx like x, dscale and dbias f32.
    if (in.size() < 3 || in.size() > 5 || out.size() > 3) return nullptr;
    for (size_t i = 0; i < 3; ++i)
      if (!in[i].present) return nullptr;
    const TensorArg& x = in[1];
    int64_t outer, inner;
    if (!LayerNormRowsOf(kern, in, out, x, &outer, &inner) || !IsNormData(x.dtype) ||
        in[0].dtype != x.dtype || in[0].dims != x.dims || in[2].dtype != DType::kF32 ||
        in[2].count() != inner)
      return nullptr;
    const bool mean = in.size() > 3 && in[3].present, inv = in.size() > 4 && in[4].present;
    if (mean != inv || !AbsentOrF32Of(in, 3, outer) || !AbsentOrF32Of(in, 4, outer)) return nullptr;
    if (!out.empty() && out[0].present && (out[0].dtype != x.dtype || out[0].dims != x.dims))
      return nullptr;
    for (size_t i = 1; i < out.size(); ++i)
      if (!AbsentOrF32Of(out, i, inner)) return nullptr;
    return &RunLayerNormGradFast;
  }
  return nullptr;
}

}  // namespace a8
