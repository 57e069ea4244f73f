// Device entries of a8.FusedAttention and a8.FusedAttentionGrad (kernels/device/attention.h).
// The CPU backend has no entries of its own for them: it runs these through its host launch, so
// the CPU, the CUDA backend and cuda-emu give the same bits. The checks repeat the shape rules'
// (compiler/ir/op_table_attention.cc), since a plan may have been edited.
#include <cmath>

#include "kernels/common/kernel_types.h"
#include "kernels/device/attention.h"
#include "runtime/device/device_registry.h"

namespace a8::A8_DEV_NS {
namespace {

namespace at = attention;

// The accumulation type of the kernels, which LSE has: f64 for f64 operands, f32 otherwise.
DType LseType(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// Q, K, V and the bias (`bias` may be null) as the kernel's parameters; Y and LSE not set.
StatusOr<at::AttentionParams> AttentionOperands(const KernelArgs& a, const char* op,
                                                const TensorArg& q, const TensorArg& k,
                                                const TensorArg& v, const TensorArg* bias) {
  if (q.dims.size() != 4 || k.dims.size() != 4 || v.dims.size() != 4)
    return InvalidInput("{}: Q, K and V must be 4-D [B, H, S, D]", op);
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return InvalidInput("{}: Q, K and V must have one dtype", op);
  at::AttentionParams p;
  p.dtype = q.dtype;
  p.batch = q.dims[0];
  p.heads = q.dims[1];
  p.sq = q.dims[2];
  p.d = q.dims[3];
  p.kv_heads = k.dims[1];
  p.sk = k.dims[2];
  p.dv = v.dims[3];
  if (k.dims[0] != p.batch || v.dims[0] != p.batch || v.dims[1] != p.kv_heads ||
      v.dims[2] != p.sk || k.dims[3] != p.d || p.kv_heads < 1 || p.heads % p.kv_heads != 0 ||
      p.d < 1 || p.dv < 1)
    return InvalidInput(
        "{}: K must be [B, Hkv, Sk, D] and V [B, Hkv, Sk, Dv] for Q [B, H, Sq, D], H a multiple "
        "of Hkv",
        op);
  const float scale = a.Float("scale", 0.0f);
  p.scale = a.attr("scale") != nullptr ? static_cast<double>(scale)
                                       : 1.0 / std::sqrt(static_cast<double>(p.d));
  p.causal = a.Int("is_causal") != 0;
  p.causal_offset = a.Int("causal_offset");
  if (bias != nullptr) {
    if (bias->dtype != q.dtype && bias->dtype != DType::kF32)
      return InvalidInput("{}: the bias must have Q's dtype or f32", op);
    const int64_t full[4] = {p.batch, p.heads, p.sq, p.sk};
    const int64_t r = static_cast<int64_t>(bias->dims.size());
    if (r > 4) return InvalidInput("{}: the bias has rank {} (at most 4)", op, r);
    int64_t stride = 1;
    for (int64_t ax = 3; ax >= 0; --ax) {
      const int64_t bi = ax - (4 - r);
      const int64_t d = bi >= 0 ? bias->dims[bi] : 1;
      if (d != 1 && d != full[ax])
        return InvalidInput("{}: the bias does not broadcast to [B, H, Sq, Sk]", op);
      p.bias_dims[ax] = d;
      p.bias_strides[ax] = d == 1 ? 0 : stride;
      stride *= d;
    }
    p.bias_dtype = bias->dtype;
    p.bias = bias->data;
  }
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  return p;
}

Dims LseDims(const at::AttentionParams& p) { return {p.batch, p.heads, p.sq}; }
Dims YDims(const at::AttentionParams& p) { return {p.batch, p.heads, p.sq, p.dv}; }

// (Q, K, V, bias?) -> (Y, LSE).
Status FusedAttention(const KernelArgs& a, DevCtx& ctx) {
  A8_ASSIGN_OR_RETURN(at::AttentionParams p, AttentionOperands(a, "a8.FusedAttention", a.in(0),
                                                               a.in(1), a.in(2), a.in_or_null(3)));
  const TensorArg &y = a.out(0), &lse = a.out(1);
  if (y.dtype != p.dtype || y.dims != YDims(p))
    return InvalidInput("a8.FusedAttention: Y must be [B, H, Sq, Dv] of Q's dtype");
  if (!lse.present || lse.dtype != LseType(p.dtype) || lse.dims != LseDims(p))
    return InvalidInput("a8.FusedAttention: LSE must be [B, H, Sq] of {}",
                        ElemName(LseType(p.dtype)));
  p.y = y.data;
  p.lse = lse.data;
  return FromDev(at::FusedAttention(ctx, p));
}

// (dY, Q, K, V, Y, LSE, bias?) -> (dQ, dK, dV, dBias?).
Status FusedAttentionGrad(const KernelArgs& a, DevCtx& ctx) {
  const char* op = "a8.FusedAttentionGrad";
  const TensorArg* bias = a.in_or_null(6);
  at::AttentionGradParams g;
  A8_ASSIGN_OR_RETURN(g.fwd, AttentionOperands(a, op, a.in(1), a.in(2), a.in(3), bias));
  const at::AttentionParams& p = g.fwd;
  const TensorArg &dy = a.in(0), &y = a.in(4), &lse = a.in(5);
  if (dy.dtype != p.dtype || dy.dims != YDims(p) || y.dtype != p.dtype || y.dims != YDims(p))
    return InvalidInput("{}: dY and Y must be [B, H, Sq, Dv] of Q's dtype", op);
  if (lse.dtype != LseType(p.dtype) || lse.dims != LseDims(p))
    return InvalidInput("{}: LSE must be [B, H, Sq] of {}", op, ElemName(LseType(p.dtype)));
  const TensorArg* want[] = {&a.in(1), &a.in(2), &a.in(3), bias};
  void** dst[] = {&g.dq, &g.dk, &g.dv, &g.dbias};
  for (int i = 0; i < 4; ++i) {
    if (!a.has_out(i)) continue;
    if (want[i] == nullptr) return InvalidInput("{}: dBias without a bias", op);
    if (a.out(i).dtype != want[i]->dtype || a.out(i).dims != want[i]->dims)
      return InvalidInput("{}: output {} must have the dtype and dims of input {}", op, i,
                          i < 3 ? i + 1 : 6);
    *dst[i] = a.out(i).data;
  }
  g.fwd.y = y.data;
  g.fwd.lse = lse.data;
  g.dy = dy.data;
  return FromDev(at::FusedAttentionGrad(ctx, g));
}

}  // namespace

std::vector<DevKernelEntry> DeviceAttentionOps() {
  return {
      {"a8.FusedAttention", kFloatTypes, 0, FusedAttention,
       "online softmax, one thread a (query row, 64 dims of V); no score buffer; "
       "statistics in f32 (f64: double)"},
      {"a8.FusedAttentionGrad", kFloatTypes, 1, FusedAttentionGrad,
       "P recomputed from LSE; dQ a thread a query row, dK/dV a key row, dBias an "
       "element (no atomics)"},
  };
}

}  // namespace a8::A8_DEV_NS
