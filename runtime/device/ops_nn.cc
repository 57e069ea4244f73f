// Device registry entries of the normalizations and pools and their gradients (kernels/device/
// nn.h). Each reads attributes and dims exactly as its CPU entry does (runtime/cpu/ops_nn.cc,
// ops_grad_nn.cc: same defaults, same errors for bad attributes) and launches the kernels; pool
// geometry is validated by kernel_args.h PoolOutputDims.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "kernels/common/kernel_types.h"
#include "kernels/device/nn.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

// Input i has at least `min_rank` dims: kernel_args.h's CheckRank with the forward entries'
// wording (ops_nn.cc), the input named by number.
Status CheckInputRank(const KernelArgs& a, int i, size_t min_rank) {
  return CheckRank(a, a.in(i), fmt::format("input {}", i).c_str(), min_rank);
}

// Parameters and statistics are read by the kernels as float dtypes only.
Status CheckFloat(const KernelArgs& a, const TensorArg& t) {
  if (t.present && !IsFloat(t.dtype)) {
    return Unsupported("{}: dtype {} is not supported by the CUDA kernel", a.kernel().op(),
                       DTypeName(t.dtype));
  }
  return Status::Ok();
}

// How a LayerNorm parameter of `dims` broadcasts to the normalized dims (numpy rules, checked
// as the CPU's Expand checks them).
StatusOr<ParamMap> MapParam(const Dims& dims, const Dims& normalized) {
  ParamMap m;
  if (NumElements(dims) == NumElements(normalized)) return m;
  const size_t rank = normalized.size();
  if (dims.size() > rank)
    return InvalidInput("Expand: input rank {} exceeds output rank {}", dims.size(), rank);
  if (rank > 8) {
    return Unsupported(
        "LayerNormalization: a broadcast Scale or B over {} normalized dims (at "
        "most 8)",
        rank);
  }
  m.dense = false;
  m.rank = static_cast<int>(rank);
  const size_t pad = rank - dims.size();
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    const int64_t di = i >= pad ? dims[i - pad] : 1;
    if (di != normalized[i] && di != 1) {
      return InvalidInput("Expand: input dims [{}] do not broadcast to [{}]", fmt::join(dims, ","),
                          fmt::join(normalized, ","));
    }
    m.dims[i] = normalized[i];
    m.strides[i] = di == 1 ? 0 : stride;
    stride *= di;
  }
  return m;
}

Status RunLayerNorm(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.Int("axis"), rank, "LayerNormalization"));
  if (!a.has_in(1)) return InvalidInput("LayerNormalization: Scale is missing");
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(1)));
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(2)));
  LayerNormArgs p;
  p.dtype = x.dtype;
  p.param_dtype = a.in(1).dtype;
  p.stat_dtype = a.has_out(1) ? a.out(1).dtype : a.has_out(2) ? a.out(2).dtype : DType::kF32;
  A8_RETURN_IF_ERROR(CheckFloat(a, a.has_out(1) ? a.out(1) : a.out(2)));
  p.outer = NumElements(Dims(x.dims.begin(), x.dims.begin() + axis));
  p.inner = NumElements(Dims(x.dims.begin() + axis, x.dims.end()));
  p.epsilon = a.Float("epsilon");
  // Scale and B may broadcast to the normalized dims (the shape rule allows it).
  const Dims normalized(x.dims.begin() + axis, x.dims.end());
  A8_ASSIGN_OR_RETURN(p.scale_map, MapParam(a.in(1).dims, normalized));
  if (a.has_in(2)) {
    A8_ASSIGN_OR_RETURN(p.bias_map, MapParam(a.in(2).dims, normalized));
  }
  p.x = x.data;
  p.scale = a.in(1).data;
  p.bias = a.in_data(2);
  p.y = a.out(0).data;
  p.mean = a.out_data(1);
  p.inv_std_dev = a.out_data(2);
  return FromDev(LayerNorm(ctx, p));
}

// The operands every normalization gradient has: (dy, x, scale, ...) -> (dx?, dscale?, dbias?).
template <typename P>
void SetNormGradOperands(const KernelArgs& a, const TensorArg& x, P* p) {
  p->dy = a.in(0).data;
  p->x = x.data;
  p->scale = a.in(2).data;
  p->dx = a.out_data(0);
  p->dscale = a.out_data(1);
  p->dbias = a.out_data(2);
}

Status RunLayerNormGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(1);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  A8_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.Int("axis"), rank, "LayerNorm"));
  LayerNormGradArgs p;
  p.dtype = x.dtype;
  p.param_dtype = a.in(2).dtype;
  p.stat_dtype = a.has_in(3) ? a.in(3).dtype : DType::kF32;
  p.outer = NumElements(Dims(x.dims.begin(), x.dims.begin() + axis));
  p.inner = NumElements(Dims(x.dims.begin() + axis, x.dims.end()));
  p.epsilon = a.Float("epsilon");
  if (!a.has_in(2)) return InvalidInput("{}: Scale is missing", a.kernel().op());
  if (a.in(2).count() != p.inner) {
    return Unsupported(
        "{}: Scale of {} elements for a normalized size of {} "
        "(broadcast Scale)",
        a.kernel().op(), a.in(2).count(), p.inner);
  }
  if (a.has_in(3) != a.has_in(4) || (a.has_in(4) && a.in(4).dtype != p.stat_dtype)) {
    return InvalidInput("{}: Mean and InvStdDev come together, of one dtype", a.kernel().op());
  }
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(2)));
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(3)));
  SetNormGradOperands(a, x, &p);
  p.mean = a.in_data(3);
  p.inv_std_dev = a.in_data(4);
  return FromDev(LayerNormGrad(ctx, p));
}

Status RunBatchNorm(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckInputRank(a, 0, 2));
  const TensorArg& x = a.in(0);
  for (int i = 1; i <= 4; ++i) {
    if (!a.has_in(i)) return InvalidInput("BatchNormalization: input {} is missing", i);
    A8_RETURN_IF_ERROR(CheckFloat(a, a.in(i)));
  }
  BatchNormArgs p;
  p.dtype = x.dtype;
  p.param_dtype = a.in(1).dtype;
  p.stat_dtype = a.in(3).dtype;
  p.batch = x.dims[0];
  p.channels = x.dims[1];
  p.spatial = NumElements(SpatialDims(x.dims));
  p.epsilon = a.Float("epsilon");
  p.momentum = a.Float("momentum");
  p.x = x.data;
  p.scale = a.in(1).data;
  p.bias = a.in(2).data;
  p.mean = a.in(3).data;
  p.var = a.in(4).data;
  p.y = a.out(0).data;
  if (a.Int("training_mode") == 0 || a.step.eval) {
    A8_RETURN_IF_ERROR(FromDev(BatchNormInference(ctx, p)));
    // An evaluation step of a training plan normalizes with the running statistics and leaves
    // them as they are: the running-stat outputs are copies of the inputs.
    for (int i = 1; i <= 2; ++i) {
      if (a.has_out(i) && a.out(i).data != a.in(i + 2).data) {
        if (a.out(i).bytes() != a.in(i + 2).bytes())
          return InvalidInput("BatchNormalization: running-stat output {} size differs", i);
        A8_RETURN_IF_ERROR(
            FromDev(CopyOnDevice(a.out(i).data, a.in(i + 2).data, a.out(i).bytes(), ctx.stream)));
      }
    }
    return Status::Ok();
  }
  p.running_mean_out = a.out_data(1);
  p.running_var_out = a.out_data(2);
  return FromDev(BatchNormTraining(ctx, p));
}

Status RunBatchNormGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(1);
  A8_RETURN_IF_ERROR(CheckRank(a, x, "x", 1));
  BatchNormGradArgs p;
  p.dtype = x.dtype;
  p.param_dtype = a.in(2).dtype;
  p.stat_dtype = a.has_in(3) ? a.in(3).dtype : p.param_dtype;
  p.batch = x.dims[0];
  p.channels = x.dims.size() > 1 ? x.dims[1] : 1;
  p.spatial = NumElements(SpatialDims(x.dims));
  p.epsilon = a.Float("epsilon");
  const char* op = "a8.BatchNormalizationGrad";
  p.mean = a.in_data(3);
  p.var = a.in_data(4);
  p.dmean = a.out_data(3);
  p.dvar = a.out_data(4);
  const bool training = p.mean == nullptr || p.var == nullptr;
  if (training && (p.dmean != nullptr || p.dvar != nullptr))
    return InvalidInput("{}: dmean/dvar need the inference-mode statistics", op);
  if (!a.has_in(2)) return InvalidInput("{}: scale is missing", op);
  for (const TensorArg* t : {&a.in(2), &a.in(3), &a.in(4), &a.out(1), &a.out(3)})
    A8_RETURN_IF_ERROR(CheckFloat(a, *t));
  SetNormGradOperands(a, x, &p);
  return FromDev(BatchNormGrad(ctx, p));
}

StatusOr<InstanceNormArgs> InstanceNormArgsOf(const KernelArgs& a, const TensorArg& x,
                                              int scale_input) {
  InstanceNormArgs p;
  p.dtype = x.dtype;
  p.param_dtype = a.in(scale_input).dtype;
  p.batch = x.dims[0];
  p.channels = x.dims[1];
  p.spatial = NumElements(SpatialDims(x.dims));
  p.epsilon = a.Float("epsilon");
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(scale_input)));
  return p;
}

Status RunInstanceNorm(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckInputRank(a, 0, 2));
  if (!a.has_in(1) || !a.has_in(2))
    return InvalidInput("InstanceNormalization: scale or B is missing");
  A8_ASSIGN_OR_RETURN(InstanceNormArgs p, InstanceNormArgsOf(a, a.in(0), 1));
  A8_RETURN_IF_ERROR(CheckFloat(a, a.in(2)));
  p.x = a.in(0).data;
  p.scale = a.in(1).data;
  p.bias = a.in(2).data;
  p.y = a.out(0).data;
  return FromDev(InstanceNorm(ctx, p));
}

Status RunInstanceNormGrad(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& x = a.in(1);
  A8_RETURN_IF_ERROR(CheckRank(a, x, "x", 3));
  if (!a.has_in(2)) return InvalidInput("a8.InstanceNormalizationGrad: scale is missing");
  A8_ASSIGN_OR_RETURN(InstanceNormArgs p, InstanceNormArgsOf(a, x, 2));
  A8_RETURN_IF_ERROR(CheckFloat(a, a.out(1)));
  SetNormGradOperands(a, x, &p);
  return FromDev(InstanceNormGrad(ctx, p));
}

// The pool geometry of input `x_dims` (validated, with the CPU's errors, by
// PoolOutputDims), spatial dims padded to 3 with leading 1s as the kernels take them.
StatusOr<PoolArgs> PoolArgsOf(const KernelArgs& a, const Dims& x_dims, DType dtype,
                              Dims* out_spatial) {
  const PoolParams cp = PoolParamsFromKernel(a, x_dims, dtype);
  A8_ASSIGN_OR_RETURN(*out_spatial, PoolOutputDims(cp));
  PoolArgs p;
  p.dtype = dtype;
  p.planes = cp.batch * cp.channels;
  p.count_include_pad = cp.count_include_pad;
  p.column_major_indices = cp.column_major_indices;
  const size_t r = cp.in_spatial.size();
  for (size_t i = 0; i < r; ++i) {
    const size_t j = 3 - r + i;
    p.in[j] = cp.in_spatial[i];
    p.out[j] = (*out_spatial)[i];
    p.k[j] = cp.kernel[i];
    p.s[j] = cp.strides.empty() ? 1 : cp.strides[i];
    p.d[j] = cp.dilations.empty() ? 1 : cp.dilations[i];
    p.pb[j] = cp.pads.empty() ? 0 : cp.pads[i];
    p.pe[j] = cp.pads.empty() ? 0 : cp.pads[r + i];
  }
  p.in_size = p.in[0] * p.in[1] * p.in[2];
  p.out_size = p.out[0] * p.out[1] * p.out[2];
  return p;
}

// Pool args of a forward entry: X (input 0) -> Y.
StatusOr<PoolArgs> PoolForwardArgsOf(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckInputRank(a, 0, 3));
  Dims out;
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolArgsOf(a, a.in(0).dims, a.in(0).dtype, &out));
  p.x = a.in(0).data;
  p.y = a.out(0).data;
  return p;
}

Status RunMaxPool(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolForwardArgsOf(a));
  p.indices = a.has_out(1) ? reinterpret_cast<int64_t*>(a.out(1).data) : nullptr;
  return FromDev(MaxPool(ctx, p));
}

Status RunAveragePool(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolForwardArgsOf(a));
  return FromDev(AveragePool(ctx, p));
}

// Pool args of the forward whose input is `x_dims`; dY (input 0) must have its output dims.
StatusOr<PoolArgs> PoolGradArgsOf(const KernelArgs& a, const Dims& x_dims) {
  Dims out;
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolArgsOf(a, x_dims, a.in(0).dtype, &out));
  if (SpatialDims(a.in(0).dims) != out) {
    return InvalidInput("{}: dY has spatial dims of rank {} that are not the pooled output",
                        a.kernel().op(), a.in(0).dims.size());
  }
  p.dy = a.in(0).data;
  p.dx = a.out(0).data;
  return p;
}

Status RunMaxPoolGrad(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.in(1), "x", 3));
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolGradArgsOf(a, a.in(1).dims));
  p.x = a.in(1).data;
  return FromDev(MaxPoolGrad(ctx, p));
}

Status RunAveragePoolGrad(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckRank(a, a.out(0), "dX", 3));
  A8_ASSIGN_OR_RETURN(PoolArgs p, PoolGradArgsOf(a, a.out(0).dims));
  return FromDev(AveragePoolGrad(ctx, p));
}

template <bool kMax>
Status RunGlobalPool(const KernelArgs& a, DevCtx& ctx) {
  A8_RETURN_IF_ERROR(CheckInputRank(a, 0, 2));
  const TensorArg& x = a.in(0);
  const int64_t spatial = NumElements(SpatialDims(x.dims));
  const int64_t planes = x.dims[0] * x.dims[1];
  return FromDev(kMax ? GlobalMaxPool(ctx, x.dtype, planes, spatial, x.data, a.out(0).data)
                      : GlobalAveragePool(ctx, x.dtype, planes, spatial, x.data, a.out(0).data));
}

}  // namespace

std::vector<DevKernelEntry> DeviceNnOps() {
  static const std::vector<DType> kMaxPoolTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                   DType::kF64, DType::kI8,  DType::kU8};
  return {
      {"MaxPool", kMaxPoolTypes, 0, RunMaxPool, "Indices: i64; one thread per output"},
      {"AveragePool", kFloatTypes, 0, RunAveragePool, "one thread per output"},
      {"GlobalAveragePool", kFloatTypes, 0, RunGlobalPool<false>, "thread per plane"},
      {"GlobalMaxPool", kFloatTypes, 0, RunGlobalPool<true>, "thread per plane"},
      {"BatchNormalization", kFloatTypes, 0, RunBatchNorm,
       "scale/bias and statistics: own float dtypes; training_mode; thread per channel "
       "for the statistics"},
      {"LayerNormalization", kFloatTypes, 0, RunLayerNorm,
       "scale/bias: own float dtype; Mean/InvStdDev: stash dtype; thread per row for "
       "the statistics"},
      {"InstanceNormalization", kFloatTypes, 0, RunInstanceNorm,
       "scale/bias: own float dtype; thread per plane for the statistics"},
      {"a8.MaxPoolGrad", kFloatTypes, 0, RunMaxPoolGrad,
       "one thread per input element gathering its windows (deterministic)"},
      {"a8.AveragePoolGrad", kFloatTypes, 0, RunAveragePoolGrad,
       "one thread per input element gathering its windows (deterministic)"},
      {"a8.BatchNormalizationGrad", kFloatTypes, 0, RunBatchNormGrad,
       "scale and statistics: own float dtypes"},
      {"a8.LayerNormalizationGrad", kFloatTypes, 0, RunLayerNormGrad,
       "Mean/InvStdDev optional (recomputed)"},
      {"a8.InstanceNormalizationGrad", kFloatTypes, 0, RunInstanceNormGrad,
       "scale: own float dtype"},
  };
}

}  // namespace a8::A8_DEV_NS
