// CPU registry entries: Gemm, MatMul, Conv, ConvTranspose, pooling. The normalizations
// (BatchNormalization, LayerNormalization, InstanceNormalization) and the losses run the shared
// device bodies (kernels/device/nn_norm_impl.h, nn_layer_norm_impl.h, loss_optim_impl.h) through
// the CPU backend's host launch (cpu_backend.h).
#include <cstring>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/device/movement_setup.h"
#include "kernels/emu/run_on_host.h"
#include "runtime/cpu/registry.h"

namespace a8 {
namespace {

// Input i has at least `min_rank` dims (registry.h's CheckRank, naming the input by number).
Status CheckRank(const KernelArgs& a, int i, size_t min_rank) {
  return ::a8::CheckRank(a, a.in(i), fmt::format("input {}", i).c_str(), min_rank);
}

// x (2-D) transposed into y, by the shared movement kernel on the host.
Status TransposeOnHost(DType t, const TensorArg& x, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& ctx) {
    return emu::movement::Transpose(ctx, t, x.dims, {1, 0}, x.data, y, x.count());
  });
}

// Integer Gemm (the kernels' Gemm is float only): transposes, MatMul, then alpha and beta * C
// applied in the integer type (alpha and beta converted like a Cast), wrapping.
Status IntGemm(const KernelArgs& a, const cpu::GemmParams& p) {
  DType t = p.dtype;
  size_t es = DTypeSize(t);
  std::vector<uint8_t> at, bt;
  const void* ap = a.in(0).data;
  const void* bp = a.in(1).data;
  if (p.trans_a) {
    at.resize(a.in(0).bytes());
    A8_RETURN_IF_ERROR(TransposeOnHost(t, a.in(0), at.data()));
    ap = at.data();
  }
  if (p.trans_b) {
    bt.resize(a.in(1).bytes());
    A8_RETURN_IF_ERROR(TransposeOnHost(t, a.in(1), bt.data()));
    bp = bt.data();
  }
  cpu::Dims yd = {p.m, p.n};
  void* y = a.out(0).data;
  A8_RETURN_IF_ERROR(cpu::MatMul(t, {p.m, p.k}, ap, {p.k, p.n}, bp, y));
  std::vector<uint8_t> tmp(static_cast<size_t>(p.m * p.n) * es), tmp2(tmp.size());
  auto scale = [&](float f, void* data) -> Status {
    if (f == 1.0f) return Status::Ok();
    uint8_t s[8];
    A8_RETURN_IF_ERROR(cpu::Cast(DType::kF32, t, 1, &f, s));
    std::memcpy(tmp2.data(), data, tmp2.size());
    return cpu::Binary(cpu::BinaryOp::kMul, t, yd, tmp2.data(), t, {}, s, data);
  };
  A8_RETURN_IF_ERROR(scale(p.alpha, y));
  if (a.has_in(2) && p.beta != 0.0f) {
    A8_RETURN_IF_ERROR(emu::RunOnHost([&](emu::DevCtx& ctx) {
      return emu::movement::Expand(ctx, t, p.c_dims, a.in(2).data, yd, tmp.data(), p.m * p.n);
    }));
    A8_RETURN_IF_ERROR(scale(p.beta, tmp.data()));
    std::memcpy(tmp2.data(), y, tmp2.size());
    A8_RETURN_IF_ERROR(cpu::Binary(cpu::BinaryOp::kAdd, t, yd, tmp2.data(), t, yd, tmp.data(), y));
  }
  return Status::Ok();
}

Status RunGemm(const KernelArgs& a) {
  if (a.in(0).dims.size() != 2 || a.in(1).dims.size() != 2)
    return InvalidInput("Gemm: A and B must be 2-D");
  cpu::GemmParams p;
  p.dtype = a.in(0).dtype;
  p.trans_a = a.Int("transA") != 0;
  p.trans_b = a.Int("transB") != 0;
  p.alpha = a.Float("alpha");
  p.beta = a.Float("beta");
  p.m = p.trans_a ? a.in(0).dims[1] : a.in(0).dims[0];
  p.k = p.trans_a ? a.in(0).dims[0] : a.in(0).dims[1];
  p.n = p.trans_b ? a.in(1).dims[0] : a.in(1).dims[1];
  const void* c = nullptr;
  if (a.has_in(2)) {
    p.c_dims = a.in(2).dims;
    c = a.in(2).data;
  }
  if (!IsFloat(p.dtype)) return IntGemm(a, p);
  return cpu::Gemm(p, a.in(0).data, a.in(1).data, c, a.out(0).data);
}

Status RunMatMul(const KernelArgs& a) {
  return cpu::MatMul(a.in(0).dtype, a.in(0).dims, a.in(0).data, a.in(1).dims, a.in(1).data,
                     a.out(0).data);
}

Status RunConv(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::ConvParams p, ConvParamsOf(a, false));
  const cpu::internal::ConvLayouts layouts{a.in(0).channels_last, a.out(0).channels_last, false};
  if (layouts.any()) {
    return cpu::FusedConvChannelsLast(p, layouts, false, a.in(0).data, a.in(1).data, a.in_data(2),
                                      nullptr, a.out(0).data);
  }
  return cpu::Conv(p, a.in(0).data, a.in(1).data, a.has_in(2) ? a.in(2).data : nullptr,
                   a.out(0).data);
}

Status RunConvTranspose(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::ConvParams p, ConvParamsOf(a, true));
  return cpu::ConvTranspose(p, a.in(0).data, a.in(1).data, a.has_in(2) ? a.in(2).data : nullptr,
                            a.out(0).data);
}

StatusOr<cpu::PoolParams> PoolParamsOf(const KernelArgs& a) {
  A8_RETURN_IF_ERROR(CheckRank(a, 0, 3));
  return PoolParamsFromKernel(a, a.in(0).dims, a.in(0).dtype);
}

Status RunMaxPool(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::PoolParams p, PoolParamsOf(a));
  int64_t* idx = a.has_out(1) ? reinterpret_cast<int64_t*>(a.out(1).data) : nullptr;
  if (a.in(0).channels_last) return cpu::MaxPoolChannelsLast(p, a.in(0).data, a.out(0).data);
  return cpu::MaxPool(p, a.in(0).data, a.out(0).data, idx);
}

Status RunAveragePool(const KernelArgs& a) {
  A8_ASSIGN_OR_RETURN(cpu::PoolParams p, PoolParamsOf(a));
  return cpu::AveragePool(p, a.in(0).data, a.out(0).data);
}

KernelFn GlobalPoolFn(bool max) {
  return [max](const KernelArgs& a) -> Status {
    A8_RETURN_IF_ERROR(CheckRank(a, 0, 2));
    const TensorArg& x = a.in(0);
    int64_t spatial = cpu::NumElements(SpatialDims(x.dims));
    if (x.channels_last) {
      return cpu::GlobalPoolChannelsLast(max, x.dtype, x.dims[0], x.dims[1], spatial, x.data,
                                         a.out(0).data);
    }
    return max ? cpu::GlobalMaxPool(x.dtype, x.dims[0], x.dims[1], spatial, x.data, a.out(0).data)
               : cpu::GlobalAveragePool(x.dtype, x.dims[0], x.dims[1], spatial, x.data,
                                        a.out(0).data);
  };
}

}  // namespace

std::vector<CpuKernelEntry> NnKernels() {
  static const std::vector<DType> kMatMulTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                  DType::kF64, DType::kI64, DType::kI32};
  static const std::vector<DType> kMaxPoolTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                   DType::kF64, DType::kI8,  DType::kU8};
  return {
      {"Gemm", kMatMulTypes, 0, RunGemm,
       "float types: oneDNN (fast), OpenBLAS (--reference); C optional"},
      {"MatMul", kMatMulTypes, 0, RunMatMul, "float types: oneDNN (fast), OpenBLAS (--reference)"},
      {"Conv", kFloatTypes, 0, RunConv, "1-3 spatial dims, im2col + GEMM"},
      {"ConvTranspose", kFloatTypes, 0, RunConvTranspose, "explicit pads"},
      {"MaxPool", kMaxPoolTypes, 0, RunMaxPool, "Indices: i64"},
      {"AveragePool", kFloatTypes, 0, RunAveragePool, ""},
      {"GlobalAveragePool", kFloatTypes, 0, GlobalPoolFn(false), ""},
      {"GlobalMaxPool", kFloatTypes, 0, GlobalPoolFn(true), ""},
  };
}

}  // namespace a8
