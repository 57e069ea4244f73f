// Device entries of the GEMM / convolution family: Gemm, MatMul, Conv, ConvTranspose,
// a8.ConvGradFilter, a8.FusedMatMul. Each reads its attributes and dims as the CPU entry does
// (runtime/cpu/ops_nn.cc, ops_grad_nn.cc, ops_fused.cc: same defaults and messages; conv
// geometry through kernel_args.h ConvOutputDims) and describes the work to the BLAS
// engine (kernels/device/blas.h) as row-major strided-batched GEMMs and convolutions. Integer
// products are plain device kernels (kernels/device/gemm_conv.h).
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "kernels/common/fused_elementwise.h"
#include "kernels/common/kernel_types.h"
#include "kernels/common/matmul_shape.h"
#include "kernels/device/elementwise.h"
#include "kernels/device/gemm_conv.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

Status CheckOutDims(const KernelArgs& a, const Dims& want) {
  if (a.out(0).dims != want)
    return InvalidInput("{}: output dims [{}] are not the computed [{}]", a.kernel().op(),
                        fmt::join(a.out(0).dims, ","), fmt::join(want, ","));
  return Status::Ok();
}

Status Run(DevCtx& ctx, const GemmDesc& d) { return FromDev(ctx.blas->Gemm(ctx, d)); }

// C = op(A) op(B) of one dtype on dense row-major operands, A [m, k] ([k, m] transposed), B [k, n]
// ([n, k] transposed) and C [m, n]: the leading dims follow (alpha 1, beta 0, one batch).
GemmDesc DenseGemm(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   const void* a, const void* b, void* c) {
  GemmDesc g;
  g.a_type = g.b_type = g.c_type = dtype;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = trans_a ? m : k;
  g.ldb = trans_b ? k : n;
  g.ldc = n;
  g.a = a;
  g.b = b;
  g.c = c;
  return g;
}

// ---- MatMul

// Per output batch dim, the element stride of an operand with batch dims `in` (right-aligned)
// whose matrices have `matrix` elements; 0 where it broadcasts.
Dims BatchStrides(const Dims& out, const Dims& in, int64_t matrix) {
  Dims s(out.size(), 0);
  int64_t stride = matrix;
  for (size_t i = out.size(), j = in.size(); i-- > 0;) {
    if (j == 0) break;
    --j;
    if (in[j] != 1) s[i] = stride;
    stride *= in[j];
  }
  return s;
}

// One output batch dim after coalescing.
struct BatchDim {
  int64_t size, a_stride, b_stride, y_stride;
};

Status MatMul(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  A8_ASSIGN_OR_RETURN(MatMulShape s, ResolveMatMul(x.dims, w.dims));
  A8_RETURN_IF_ERROR(CheckOutDims(a, s.out_dims));
  if (w.dtype != x.dtype || y.dtype != x.dtype)
    return InvalidInput("MatMul: operands of different dtypes");
  const Dims as = BatchStrides(s.out_batch, s.a_batch, s.m * s.k);
  const Dims bs = BatchStrides(s.out_batch, s.b_batch, s.k * s.n);
  if (!IsFloat(x.dtype)) {
    if (s.out_batch.size() > static_cast<size_t>(kMaxBatchRank))
      return Unsupported("MatMul: {} batch dims (the CUDA kernel takes {})", s.out_batch.size(),
                         kMaxBatchRank);
    IntMatMulParams p;
    p.dtype = x.dtype;
    p.batch_rank = static_cast<int>(s.out_batch.size());
    for (int i = 0; i < p.batch_rank; ++i) {
      p.batch_dims[i] = s.out_batch[i];
      p.a_batch_strides[i] = as[i];
      p.b_batch_strides[i] = bs[i];
    }
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.a = x.data;
    p.b = w.data;
    p.y = y.data;
    return FromDev(IntMatMul(ctx, p));
  }
  // Coalesce the batch dims: drop 1s, merge neighbours both operands walk contiguously. The
  // innermost is the GEMM's strided batch, the others a host loop.
  std::vector<BatchDim> dims;
  int64_t y_stride = s.m * s.n;
  for (size_t i = s.out_batch.size(); i-- > 0;) {
    const int64_t d = s.out_batch[i];
    if (d != 1) {
      if (!dims.empty() && dims.front().a_stride * dims.front().size == as[i] &&
          dims.front().b_stride * dims.front().size == bs[i]) {
        dims.front().size *= d;
      } else {
        dims.insert(dims.begin(), BatchDim{d, as[i], bs[i], y_stride});
      }
    }
    y_stride *= d;
  }
  GemmDesc g = DenseGemm(x.dtype, false, false, s.m, s.n, s.k, x.data, w.data, y.data);
  if (dims.empty()) dims.push_back(BatchDim{1, 0, 0, 0});
  const BatchDim inner = dims.back();
  dims.pop_back();
  if (dims.empty() && inner.b_stride == 0 && inner.a_stride == s.m * s.k) {
    // B is shared by every batch: one GEMM with the batch folded into M.
    g.m = inner.size * s.m;
  } else {
    g.batch = inner.size;
    g.stride_a = inner.a_stride;
    g.stride_b = inner.b_stride;
    g.stride_c = s.m * s.n;
  }
  int64_t outer = 1;
  for (const BatchDim& d : dims) outer *= d.size;
  const size_t es = DTypeSize(x.dtype);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t ao = 0, bo = 0, yo = 0, rest = o;
    for (size_t i = dims.size(); i-- > 0;) {
      const int64_t v = rest % dims[i].size;
      rest /= dims[i].size;
      ao += v * dims[i].a_stride;
      bo += v * dims[i].b_stride;
      yo += v * dims[i].y_stride;
    }
    g.a = x.data + ao * es;
    g.b = w.data + bo * es;
    g.c = y.data + yo * es;
    A8_RETURN_IF_ERROR(Run(ctx, g));
  }
  return Status::Ok();
}

// ---- Gemm

Status Gemm(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  if (x.dims.size() != 2 || w.dims.size() != 2) return InvalidInput("Gemm: A and B must be 2-D");
  const bool trans_a = a.Int("transA") != 0, trans_b = a.Int("transB") != 0;
  const float alpha = a.Float("alpha"), beta = a.Float("beta");
  const int64_t m = trans_a ? x.dims[1] : x.dims[0], k = trans_a ? x.dims[0] : x.dims[1];
  const int64_t n = trans_b ? w.dims[0] : w.dims[1];
  if ((trans_b ? w.dims[1] : w.dims[0]) != k)
    return InvalidInput("Gemm: inner dims differ: A [{}] and B [{}]", fmt::join(x.dims, ","),
                        fmt::join(w.dims, ","));
  A8_RETURN_IF_ERROR(CheckOutDims(a, {m, n}));
  int64_t c_rows = 1, c_cols = 1;
  const bool has_c = a.has_in(2);
  if (has_c) {
    const Dims& cd = a.in(2).dims;
    if (cd.size() > 2) return InvalidInput("Gemm: C has rank {} > 2", cd.size());
    if (cd.size() >= 1) c_cols = cd.back();
    if (cd.size() == 2) c_rows = cd[0];
    if ((c_rows != 1 && c_rows != m) || (c_cols != 1 && c_cols != n))
      return InvalidInput("Gemm: C dims [{}] do not broadcast to [{},{}]", fmt::join(cd, ","), m,
                          n);
  }
  if (!IsFloat(x.dtype)) {
    IntGemmParams p;
    p.dtype = x.dtype;
    p.trans_a = trans_a;
    p.trans_b = trans_b;
    p.m = m;
    p.n = n;
    p.k = k;
    p.alpha = alpha;
    p.beta = beta;
    p.c_rows = c_rows;
    p.c_cols = c_cols;
    p.a = x.data;
    p.b = w.data;
    p.c = has_c ? a.in(2).data : nullptr;
    p.y = y.data;
    return FromDev(IntGemm(ctx, p));
  }
  // beta C enters as the GEMM's C: broadcast into Y first, so alpha AB + beta C is rounded once.
  const bool use_c = has_c && beta != 0.0f;
  if (use_c)
    A8_RETURN_IF_ERROR(
        FromDev(BroadcastMatrix(ctx, x.dtype, m, n, a.in(2).data, c_rows, c_cols, y.data)));
  GemmDesc g = DenseGemm(x.dtype, trans_a, trans_b, m, n, k, x.data, w.data, y.data);
  g.alpha = alpha;
  g.beta = use_c ? beta : 0.0f;
  return Run(ctx, g);
}

// ---- convolutions

// The descriptor's geometry from resolved CPU params (defaults: stride and dilation 1, pad 0).
void SetGeometry(const ConvParams& p, const Dims& in_spatial, const Dims& out_spatial,
                 ConvDesc* d) {
  d->dtype = p.dtype;
  d->rank = static_cast<int>(in_spatial.size());
  d->group = p.group;
  for (int i = 0; i < d->rank; ++i) {
    d->in_spatial[i] = in_spatial[i];
    d->out_spatial[i] = out_spatial[i];
    d->kernel[i] = p.kernel[i];
    d->strides[i] = p.strides.empty() ? 1 : p.strides[i];
    d->dilations[i] = p.dilations.empty() ? 1 : p.dilations[i];
    d->pads[i] = p.pads.empty() ? 0 : p.pads[i];
  }
}

// W's leading dims, the operands' dtypes and the bias length (input 2, optional): checked here
// because a mismatch would make the device read out of bounds.
Status CheckFilterAndBias(const KernelArgs& a, int64_t filters, int64_t per_group,
                          int64_t bias_len) {
  const TensorArg& w = a.in(1);
  if (w.dims.size() < 2 || w.dims[0] != filters || w.dims[1] != per_group)
    return InvalidInput("{}: W [{}] does not match the channels ({} filters of {})",
                        a.kernel().op(), fmt::join(w.dims, ","), filters, per_group);
  if (w.dtype != a.in(0).dtype || a.out(0).dtype != a.in(0).dtype ||
      (a.has_in(2) && a.in(2).dtype != a.in(0).dtype))
    return InvalidInput("{}: operands of different dtypes", a.kernel().op());
  if (a.has_in(2) && a.in(2).count() != bias_len)
    return InvalidInput("{}: B has {} elements, expected {}", a.kernel().op(), a.in(2).count(),
                        bias_len);
  return Status::Ok();
}

// Conv, or with kTranspose ConvTranspose: the convolution's data gradient, whose output is the
// convolution's x (channels M), its input the convolution's y (channels C), W [C, M / group, k...]
// the same filter.
template <bool kTranspose>
Status Conv(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(ConvParams p, ConvParamsOf(a, kTranspose));
  A8_ASSIGN_OR_RETURN(Dims out, ConvOutputDims(p, kTranspose));
  Dims y_dims = {p.batch, p.out_channels};
  y_dims.insert(y_dims.end(), out.begin(), out.end());
  A8_RETURN_IF_ERROR(CheckOutDims(a, y_dims));
  // The engine's x, channels and spatial dims are the convolution's: ConvTranspose's output.
  const int64_t x_channels = kTranspose ? p.out_channels : p.in_channels;
  const int64_t y_channels = kTranspose ? p.in_channels : p.out_channels;
  A8_RETURN_IF_ERROR(CheckFilterAndBias(a, y_channels, x_channels / p.group, p.out_channels));
  ConvDesc d;
  d.kind = kTranspose ? ConvKind::kBackwardData : ConvKind::kForward;
  SetGeometry(p, kTranspose ? out : p.in_spatial, kTranspose ? p.in_spatial : out, &d);
  d.batch = p.batch;
  d.in_channels = x_channels;
  d.out_channels = y_channels;
  d.x = kTranspose ? a.out(0).data : a.in(0).data;
  d.w = a.in(1).data;
  d.y = kTranspose ? a.in(0).data : a.out(0).data;
  d.bias = a.has_in(2) ? a.in(2).data : nullptr;
  return FromDev(ctx.blas->Conv(ctx, d));
}

// a8.ConvGradFilter(dY, X) {kernel_shape, strides, dilations, pads, group} -> dW.
Status ConvGradFilter(const KernelArgs& a, DevCtx& ctx) {
  const TensorArg& dy = a.in(0);
  const TensorArg& x = a.in(1);
  A8_RETURN_IF_ERROR(CheckRank(a, x, "x", 3));
  if (dy.dtype != x.dtype || a.out(0).dtype != x.dtype)
    return InvalidInput("{}: operands of different dtypes", a.kernel().op());
  A8_ASSIGN_OR_RETURN(ConvParams p, ConvGradFilterParams(a));
  A8_ASSIGN_OR_RETURN(Dims out, ConvOutputDims(p, false));
  Dims w_dims = {p.out_channels, p.in_channels / p.group};
  w_dims.insert(w_dims.end(), p.kernel.begin(), p.kernel.end());
  A8_RETURN_IF_ERROR(CheckOutDims(a, w_dims));
  ConvDesc d;
  d.kind = ConvKind::kBackwardFilter;
  SetGeometry(p, p.in_spatial, out, &d);
  d.batch = p.batch;
  d.in_channels = p.in_channels;
  d.out_channels = p.out_channels;
  d.x = x.data;
  d.y = dy.data;
  d.w = a.out(0).data;
  return FromDev(ctx.blas->Conv(ctx, d));
}

// a8.FusedConv(X, W, B?, Z?){activation}: Conv into Y, then the epilogue (+ Z, Relu) over Y in
// place as one fused elementwise program: Y's element is read before it is written, and the
// program rounds once as the unfused Add and Relu do.
Status FusedConv(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(const FusedConvArgs f, FusedConvOperands(a));
  A8_RETURN_IF_ERROR(Conv<false>(a, ctx));
  const TensorArg &z = a.in(3), &y = a.out(0);
  if (!z.present && !f.relu) return Status::Ok();
  FusedElementwiseParams e;
  FusedConvEpilogue(z.present, f.relu, &e.program);
  e.in_dtype = e.out_dtype = y.dtype;
  e.n = y.count();
  e.in[0] = y.data;
  e.in[1] = z.present ? z.data : nullptr;
  e.y = y.data;
  return FromDev(FusedElementwise(ctx, e));
}

// ---- a8.FusedMatMul (compiler/ir/op_table_fused.cc): one GEMM with an engine epilogue.

Status FusedMatMul(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(const FusedMatMulParams f, FusedMatMulOperands(a));
  const TensorArg &x = a.in(0), &w = a.in(1), &y = a.out(0);
  const TensorArg &bias = a.in(2), &aux = a.in(3), &out1 = a.out(1);
  if (EpilogueHasBias(f.epilogue) != bias.present ||
      EpilogueIsBackward(f.epilogue) != aux.present) {
    return InvalidInput("a8.FusedMatMul: epilogue {} got the wrong bias/aux operands", f.epilogue);
  }
  GemmDesc g = DenseGemm(x.dtype, false, f.trans_b, f.m, f.n, f.k, x.data, w.data, y.data);
  g.epilogue = GemmEpilogueOf(f.epilogue);
  g.gelu_tanh = f.tanh_form;
  g.bias = bias.present ? bias.data : nullptr;
  g.aux = aux.present ? aux.data : nullptr;
  g.ldaux = f.n;
  if (out1.present) (f.bgrad ? g.bias_grad : g.pre) = out1.data;
  return Run(ctx, g);
}

}  // namespace

std::vector<DevKernelEntry> DeviceGemmConvOps() {
  static const std::vector<DType> kMatMulTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                  DType::kF64, DType::kI64, DType::kI32};
  return {
      {"Gemm", kMatMulTypes, 0, Gemm,
       "cuBLASLt for float types (beta C broadcast into Y first); integers: a kernel"},
      {"MatMul", kMatMulTypes, 0, MatMul,
       "cuBLASLt strided batches (broadcast batch dims); integers: a kernel"},
      {"Conv", kFloatTypes, 0, Conv<false>, "cuDNN (2-D, symmetric pads); else im2col + GEMM"},
      {"ConvTranspose", kFloatTypes, 0, Conv<true>,
       "cuDNN backward data (2-D); else GEMM + col2im"},
      {"a8.ConvGradFilter", kFloatTypes, 0, ConvGradFilter,
       "cuDNN backward filter (2-D); else im2col + GEMM"},
      {"a8.FusedConv", kFloatTypes, 0, FusedConv,
       "Conv's, then + Z and Relu in place (the fused elementwise kernel)"},
      {"a8.FusedMatMul", kFloatTypes, 0, FusedMatMul,
       "cuBLASLt epilogues bias/relu; others: float accumulator + epilogue kernel"},
  };
}

}  // namespace a8::A8_DEV_NS
