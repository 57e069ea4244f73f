// a8.FusedAttention and its gradient a8.FusedAttentionGrad, with their shape rules: the fused
// (flash-style) attention that compiler/onnx/import_decompose_attention.cc emits for Attention,
// one kernel body each, run by both backends (kernels/device/attention.h); the gradient rule is
// in passes/autodiff/grad_rules_attention.cc.
//
//   a8.FusedAttention (Q [B, H, Sq, D], K [B, Hkv, Sk, D], V [B, Hkv, Sk, Dv], bias?
//                      broadcastable to [B, H, Sq, Sk]; scale (default 1 / sqrt(D)), is_causal,
//                      causal_offset) -> Y [B, H, Sq, Dv], LSE [B, H, Sq]
//   a8.FusedAttentionGrad (dY, Q, K, V, Y, LSE, bias?) -> dQ, dK, dV, dBias?
//
// Precision: allow (PRECISION.md lists fused attention with the GEMMs): Q, K, V, Y and their
// gradients may be f16/bf16. This keeps PRECISION.md's "Softmax stays FP32" rule, because the
// softmax is inside the kernel and never in the low type: the scores, the running max and sum,
// the output accumulator and the backward's D = rowsum(dY * Y) and dS are f32 (Acc<T>), only Y
// and the gradients are rounded to T once. LSE, the softmax statistics the backward reads, is
// f32 (f64 for f64 operands) whatever the mode, and the bias may stay f32 under f16 Q, K and V
// (a mask's large negative values would overflow f16): insert-casts keeps both
// (PrecisionPolicy::KeepsF32Operand, KeepsF32Result).
#include <string>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

DType LseType(DType t) { return t == DType::kF64 ? DType::kF64 : DType::kF32; }

// Checks Q, K, V and the bias (inputs q0 .. q0 + 3) and returns Y's dims.
StatusOr<std::vector<int64_t>> AttentionDims(const OpNode& node, int q0) {
  A8_RETURN_IF_ERROR(RequireFloat(node, q0, "Q"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, q0, "Q", q0 + 1, "K"));
  A8_RETURN_IF_ERROR(RequireSameDType(node, q0, "Q", q0 + 2, "V"));
  A8_RETURN_IF_ERROR(RequireRank(node, q0, "Q", 4));
  A8_RETURN_IF_ERROR(RequireRank(node, q0 + 1, "K", 4));
  A8_RETURN_IF_ERROR(RequireRank(node, q0 + 2, "V", 4));
  const std::vector<int64_t>& q = node.input(q0)->dims();
  const std::vector<int64_t>& k = node.input(q0 + 1)->dims();
  const std::vector<int64_t>& v = node.input(q0 + 2)->dims();
  if (k[0] != q[0] || v[0] != q[0] || k[3] != q[3] || v[1] != k[1] || v[2] != k[2] || k[1] < 1 ||
      q[1] % k[1] != 0 || q[3] < 1 || v[3] < 1) {
    return InvalidInput(
        "{}: inputs Q {}, K {} and V {} must be [B, H, Sq, D], [B, Hkv, Sk, D] and [B, Hkv, Sk, "
        "Dv] with H a multiple of Hkv and D, Dv positive",
        node.Where(), DimsString(q), DimsString(k), DimsString(v));
  }
  if (node.has_input(q0 + 3)) {
    const TensorType& b = node.input(q0 + 3)->type();
    const DType qt = node.input(q0)->dtype();
    if (b.dtype != qt && b.dtype != DType::kF32) {
      return InvalidInput("{}: input 'bias' {} must have Q's dtype or f32", node.Where(),
                          b.ToString());
    }
    const std::vector<int64_t> full = {q[0], q[1], q[2], k[2]};
    bool ok = b.rank() <= 4;
    for (int64_t i = 0; ok && i < b.rank(); ++i) {
      const int64_t d = b.dims[b.rank() - 1 - i];
      ok = d == 1 || d == full[3 - i];
    }
    if (!ok) {
      return InvalidInput("{}: input 'bias' {} does not broadcast to [B, H, Sq, Sk] {}",
                          node.Where(), b.ToString(), DimsString(full));
    }
  }
  return std::vector<int64_t>{q[0], q[1], q[2], v[3]};
}

Status InferFusedAttention(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 3));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> y, AttentionDims(node, 0));
  const DType t = node.input(0)->dtype();
  return SetOutputs(node, out, {TensorType{t, y}, TensorType{LseType(t), {y[0], y[1], y[2]}}});
}

// The gradient's inputs (dY, Q, K, V, Y, LSE, bias?) as the forward's (Q, K, V, bias?).
Status InferFusedAttentionGrad(const OpNode& node, std::vector<TensorType>* out) {
  A8_RETURN_IF_ERROR(RequireInputs(node, 6));
  std::vector<const OpValue*> fwd_ins = {node.input(1), node.input(2), node.input(3)};
  if (node.has_input(6)) fwd_ins.push_back(node.input(6));
  const std::string y_name = "y", lse_name = "lse";
  const TensorType no_type;
  const TensorDataPtr no_data;
  const OpValue y_value(&y_name, &no_type, &no_data, false);
  const OpValue lse_value(&lse_name, &no_type, &no_data, false);
  const OpNode fwd("a8", "FusedAttention", node.name(), node.version(), fwd_ins,
                   {&y_value, &lse_value}, &node.attrs());
  std::vector<TensorType> want;
  A8_RETURN_IF_ERROR(InferFusedAttention(fwd, &want));
  if (node.input(0)->type() != want[0] || node.input(4)->type() != want[0]) {
    return InvalidInput("{}: inputs 'dY' {} and 'Y' {} must be {}", node.Where(),
                        node.input(0)->type().ToString(), node.input(4)->type().ToString(),
                        want[0].ToString());
  }
  if (node.input(5)->type() != want[1]) {
    return InvalidInput("{}: input 'LSE' {} must be {}", node.Where(),
                        node.input(5)->type().ToString(), want[1].ToString());
  }
  std::vector<TensorType> types = {node.input(1)->type(), node.input(2)->type(),
                                   node.input(3)->type()};
  if (node.num_outputs() == 4) {
    if (!node.has_input(6)) {
      return InvalidInput("{}: output 'dBias' needs input 'bias'", node.Where());
    }
    types.push_back(node.input(6)->type());
  }
  return SetOutputs(node, out, types);
}

}  // namespace

void AddAttentionOps(std::vector<OpDef>* ops) {
  const std::vector<AttrSpec> attrs = {Opt("causal_offset", int64_t{0}),
                                       Opt("is_causal", int64_t{0}),
                                       OptNoDefault("scale", AttrKind::kFloat)};
  const std::vector<std::pair<char, std::vector<DType>>> vars = {
      {'T', kKernelFloats}, {'B', kKernelFloats}, {'L', {DType::kF32, DType::kF64}}};
  OpDef fwd = InternalOp("FusedAttention", {3, 4, 2, 2}, attrs, InferFusedAttention,
                         "softmax(scale Q K^T + bias, causal) V without a score buffer (online "
                         "softmax in f32), and the rows' log-sum-exp");
  fwd.precision = OpPrecisionClass::kAllow;
  fwd.f32_inputs = {3};   // the additive bias (a mask's large negative values overflow f16)
  fwd.f32_outputs = {1};  // the rows' log-sum-exp
  fwd.kernel = KernelRowSpec{"T,T,T,B?", "T,L", vars};
  ops->push_back(std::move(fwd));
  OpDef grad = InternalOp("FusedAttentionGrad", {6, 7, 3, 4}, attrs, InferFusedAttentionGrad,
                          "gradient of FusedAttention: (dY, Q, K, V, Y, LSE, bias?) -> (dQ, dK, "
                          "dV, dBias?), P recomputed from LSE");
  grad.precision = OpPrecisionClass::kAllow;
  grad.f32_inputs = {5, 6};  // LSE and the bias
  grad.f32_outputs = {3};    // dBias
  grad.gradient = GradDecision::kNone;
  grad.kernel = KernelRowSpec{"T,T,T,T,T,L,B?", "T,T,T,B?", vars};
  ops->push_back(std::move(grad));
}

}  // namespace a8
