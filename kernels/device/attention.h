// a8.FusedAttention and its gradient a8.FusedAttentionGrad (compiler/ir/op_table_attention.cc):
// one body each (attention_impl.h), run by the CUDA backend, its host emulation (cuda-emu) and
// the CPU backend (through its host launch), so all three give the same bits.
//
// Forward: Q [B, H, Sq, D], K [B, Hkv, Sk, D], V [B, Hkv, Sk, Dv] (H a multiple of Hkv: query
// head h reads kv head h / (H / Hkv), group-query attention without a repeated copy), an optional
// additive bias broadcastable to [B, H, Sq, Sk] (strides, 0 along a broadcast dim), is_causal
// with an offset (key j is allowed for query i when j <= i + offset, onnx's bottom-right
// alignment). s_ij = scale * q_i . k_j + bias_ij; Y_i = sum_j softmax_j(s_i) v_j; LSE_i =
// m_i + log(l_i). The softmax is online over the keys (flash attention): running max m, running
// sum l and the output accumulator in Acc<T> (float for f32/f16/bf16, double for f64), so no
// [Sq, Sk] score buffer exists anywhere; Y is rounded to T once. A row with no allowed key (or
// whose scores are all -inf: a bias all -inf) gives Y = 0 and LSE = +inf, so that the backward's
// P = exp(s - LSE) is 0 there: no NaN in Y or the gradients (the decomposition's fully masked
// rows). LSE has type Acc<T> (f32, or f64 for f64 inputs).
//
// Backward (dY, Q, K, V, Y, LSE, bias?) -> dQ, dK, dV, dBias?: P is recomputed from Q, K, the
// bias and LSE; D_i = rowsum(dY_i * Y_i) (scratch memory, one Acc<T> a query row);
// dP_ij = dY_i . v_j; dS_ij = P_ij (dP_ij - D_i); dQ_i = scale sum_j dS_ij k_j; dK_j = scale
// sum_i dS_ij q_i; dV_j = sum_i P_ij dY_i (dK and dV summed over the query heads of the group);
// dBias (the bias's own dims) is dS summed over the dims the bias broadcasts along.
//
// Parallelism, first version: one thread per (query row, chunk of kDimChunk output dims)
// forward and for dQ, one per (key row, chunk) for dK and dV, one per bias element for dBias;
// every thread loops over the whole other sequence and recomputes the scores it needs (a chunk
// loop repeats the q . k products once per chunk of head dims). Deterministic, no atomics. It
// does not yet use tensor cores or shared-memory tiles (a warp per row with Q/K/V tiles staged
// in shared memory is the next step); its memory is O(B H (Sq + Sk) D), never O(Sq Sk).
//
// Declarations only: included by host setup code and compiled by nvcc.
#pragma once

#include <cstdint>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS::attention {

constexpr int kDimChunk = 64;  // output dims one thread accumulates in registers

struct AttentionParams {
  DType dtype = DType::kF32;       // of Q, K, V, Y (and dY, dQ, dK, dV)
  DType bias_dtype = DType::kF32;  // dtype, or f32 (mixed precision keeps the bias in f32)
  int64_t batch = 0, heads = 0, kv_heads = 0, sq = 0, sk = 0, d = 0, dv = 0;
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;
  // The bias's element strides along [B, H, Sq, Sk] (0 where it broadcasts) and its dims.
  int64_t bias_strides[4] = {};
  int64_t bias_dims[4] = {1, 1, 1, 1};
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* bias = nullptr;  // may be null
  void* y = nullptr;
  void* lse = nullptr;  // [B, H, Sq] of Acc<dtype>
};
DevStatus FusedAttention(DevCtx& ctx, const AttentionParams& p);

// fwd.y and fwd.lse are read (the forward's outputs); dbias needs fwd.bias.
struct AttentionGradParams {
  AttentionParams fwd;
  const void* dy = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  void* dbias = nullptr;  // may be null
};
DevStatus FusedAttentionGrad(DevCtx& ctx, const AttentionGradParams& p);

}  // namespace a8::A8_DEV_NS::attention
