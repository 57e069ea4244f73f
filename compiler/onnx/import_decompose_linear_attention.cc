// LinearAttention-27 and CausalConvWithState-27 (the recurrent blocks of Gated DeltaNet and Mamba)
// imported as nodes of ops a800c has (see import_decompose.h), following the ONNX specification,
// its function bodies and its reference implementation (onnx/reference/ops/
// op_linear_attention.py, op_causal_conv_with_state.py):
//
//   LinearAttention (query [B, T, Hq * dk], key [B, T, Hkv * dk], value [B, T, Hkv * dv],
//                    past_state? [B, Hkv, dk, dv], decay? [B, T, Hkv * dk | Hkv],
//                    beta? [B, T, Hkv | 1]; q_num_heads, kv_num_heads, scale, update_rule,
//                    chunk_size (a tuning hint without effect))
//       -> in float32 (the reference's accumulation; cast back to query's type, the state to
//          past_state's or query's): the heads split out ([B, Hkv, T, ..]; the query grouped
//          [B, Hkv, T, G, dk], G = Hq / Hkv, so that query head h reads kv head h / G), S the
//          past state or zeros, then for t in 0 .. T - 1 (T static, unrolled):
//            gated, gated_delta: S = S * exp(g_t)                      (g_t per key dim or head)
//            delta, gated_delta: v_t = beta_t * (v_t - k_t^T S)       ([1, dk] x [dk, dv])
//            S = S + k_t v_t                                          ([dk, 1] x [1, dv])
//            o_t = scale * q_t S                                      ([G, dk] x [dk, dv])
//          output = the o_t merged back to [B, T, Hq * dv]; present_state = S. scale 0 or absent
//          is 1 / sqrt(dk).
//   CausalConvWithState (input [B, C, L], weight [C, 1, k], bias? [C], past_state? [B, C, k - 1];
//                        activation none | silu | swish)
//       -> padded = Concat(past_state or zeros, input) along L; output = Conv(padded, weight,
//          bias; group C) (silu/swish: x * Sigmoid(x) in float32, cast back); present_state =
//          the last k - 1 positions of padded (ONNX's function body).
// Both differentiable through their ops (not with respect to the state's absence).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers

constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

StatusOr<std::vector<int64_t>> StaticDims(const DecomposeRequest& req, size_t i,
                                          std::string_view field, size_t rank,
                                          std::string_view why) {
  Value* v = req.inputs[i];
  std::optional<std::vector<int64_t>> dims = req.known_dims ? req.known_dims(v) : std::nullopt;
  if (!dims) {
    return Unsupported("{}: {} needs the static shape of input '{}' ('{}'){}", req.where, req.op,
                       field, v->name(), why);
  }
  if (dims->size() != rank) {
    return InvalidInput("{}: input '{}' must be rank {}, got rank {}", req.where, field, rank,
                        dims->size());
  }
  return *dims;
}

// Whether x's type is float16 or bfloat16, or not declared: the reference computes in float32.
bool NeedsWidening(const DecomposeRequest& req, const Value* x) {
  std::optional<DType> dt = x->data()         ? std::optional(x->data()->type.dtype)
                            : req.known_dtype ? req.known_dtype(x)
                                              : std::nullopt;
  return !dt || (*dt != DType::kF32 && *dt != DType::kF64);
}

struct LinearAttentionSpec {
  int64_t q_heads = 0, kv_heads = 0, group = 1;
  int64_t batch = 0, seq = 0, dk = 0, dv = 0;
  bool gating = false, delta = false;
  bool decay_per_head = false;
  int64_t beta_heads = 0;
  float scale = 0;
};

StatusOr<LinearAttentionSpec> ReadLinearAttention(const DecomposeRequest& req) {
  if (req.inputs.size() < 3 || req.inputs.size() > 6 || req.outputs.empty() ||
      req.outputs.size() > 2) {
    return InvalidInput("{}: LinearAttention takes 3 to 6 inputs and 1 or 2 outputs, got {} and {}",
                        req.where, req.inputs.size(), req.outputs.size());
  }
  A8_RETURN_IF_ERROR(RequireLeadingInputs(req, {"query", "key", "value"}));
  A8_RETURN_IF_ERROR(
      CheckAttrs(req, {"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"}));
  LinearAttentionSpec s;
  A8_ASSIGN_OR_RETURN(s.q_heads, IntAttr(req, "q_num_heads", std::nullopt));
  A8_ASSIGN_OR_RETURN(s.kv_heads, IntAttr(req, "kv_num_heads", std::nullopt));
  if (s.q_heads <= 0 || s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
    return InvalidInput("{}: q_num_heads {} must be a positive multiple of kv_num_heads {}",
                        req.where, s.q_heads, s.kv_heads);
  }
  s.group = s.q_heads / s.kv_heads;
  A8_ASSIGN_OR_RETURN(std::string rule, StringAttr(req, "update_rule", "gated_delta"));
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return InvalidInput(
        "{}: attribute 'update_rule' '{}' must be linear, gated, delta or gated_delta", req.where,
        rule);
  }
  s.gating = rule == "gated" || rule == "gated_delta";
  s.delta = rule == "delta" || rule == "gated_delta";
  if (s.gating != (Input(req, 4) != nullptr)) {
    return InvalidInput("{}: update_rule '{}' {} input 'decay'", req.where, rule,
                        s.gating ? "requires" : "forbids");
  }
  if (s.delta != (Input(req, 5) != nullptr)) {
    return InvalidInput("{}: update_rule '{}' {} input 'beta'", req.where, rule,
                        s.delta ? "requires" : "forbids");
  }
  const char* why = " (the recurrence is unrolled over the sequence)";
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> q, StaticDims(req, 0, "query", 3, why));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> k, StaticDims(req, 1, "key", 3, why));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> v, StaticDims(req, 2, "value", 3, why));
  s.batch = q[0];
  s.seq = q[1];
  if (q[2] % s.q_heads != 0 || v[2] % s.kv_heads != 0) {
    return InvalidInput(
        "{}: query's last dim {} and value's {} must be multiples of q_num_heads {} and "
        "kv_num_heads {}",
        req.where, q[2], v[2], s.q_heads, s.kv_heads);
  }
  s.dk = q[2] / s.q_heads;
  s.dv = v[2] / s.kv_heads;
  if (k != std::vector<int64_t>{s.batch, s.seq, s.kv_heads * s.dk} || v[0] != s.batch ||
      v[1] != s.seq) {
    return InvalidInput(
        "{}: key [{}] and value [{}] do not match query [{}] with {} query and {} kv heads",
        req.where, fmt::join(k, ", "), fmt::join(v, ", "), fmt::join(q, ", "), s.q_heads,
        s.kv_heads);
  }
  if (s.seq <= 0 || s.dk <= 0 || s.dv <= 0) {
    return InvalidInput("{}: the sequence length {}, d_k {} and d_v {} must be positive", req.where,
                        s.seq, s.dk, s.dv);
  }
  if (Input(req, 3)) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> p, StaticDims(req, 3, "past_state", 4, ""));
    if (p != std::vector<int64_t>{s.batch, s.kv_heads, s.dk, s.dv}) {
      return InvalidInput("{}: past_state [{}] must be [{}, {}, {}, {}]", req.where,
                          fmt::join(p, ", "), s.batch, s.kv_heads, s.dk, s.dv);
    }
  }
  if (s.gating) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> d, StaticDims(req, 4, "decay", 3, ""));
    if (d[2] != s.kv_heads && d[2] != s.kv_heads * s.dk) {
      return InvalidInput(
          "{}: decay's last dim {} must be kv_num_heads ({}) or kv_num_heads * d_k ({})", req.where,
          d[2], s.kv_heads, s.kv_heads * s.dk);
    }
    s.decay_per_head = d[2] == s.kv_heads;
  }
  if (s.delta) {
    A8_ASSIGN_OR_RETURN(std::vector<int64_t> b, StaticDims(req, 5, "beta", 3, ""));
    if (b[2] != s.kv_heads && b[2] != 1) {
      return InvalidInput("{}: beta's last dim {} must be kv_num_heads ({}) or 1", req.where, b[2],
                          s.kv_heads);
    }
    s.beta_heads = b[2];
  }
  A8_ASSIGN_OR_RETURN(s.scale, FloatAttr(req, "scale", 0));
  if (s.scale == 0) s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.dk)));
  return s;
}

class LinearAttentionBuilder : public DecomposeBuilder<LinearAttentionSpec> {
 public:
  using DecomposeBuilder::DecomposeBuilder;

  StatusOr<std::vector<DecomposedNode>> Build() {
    const int64_t hkv = s_.kv_heads;
    // [B, T, H * D] -> [B, H, T, D] (or with the query's group: [B, Hkv, T, G, dk]), in f32.
    auto heads = [&](size_t i, std::vector<int64_t> shape, std::vector<int64_t> perm,
                     const std::string& name) {
      Value* f = Widen(req_.inputs[i], name + "_f");
      const int64_t n = static_cast<int64_t>(shape.size());
      Value* r = Emit("Reshape", 14, {f, e_.Int64s(name + "_shape", shape, {n})}, name + "_split");
      return Emit("Transpose", 13, {r}, name + "_heads", {{"perm", Attribute(std::move(perm))}});
    };
    Value* q = heads(0, {0, 0, hkv, s_.group, s_.dk}, {0, 2, 1, 3, 4}, "q");  // [B,Hkv,T,G,dk]
    Value* k = heads(1, {0, 0, hkv, s_.dk}, {0, 2, 1, 3}, "k");               // [B,Hkv,T,dk]
    Value* v = heads(2, {0, 0, hkv, s_.dv}, {0, 2, 1, 3}, "v");               // [B,Hkv,T,dv]
    Value* k_col = Unsqueeze(k, 4, "k_col");                                  // [B,Hkv,T,dk,1]
    Value* k_row = Unsqueeze(k, 3, "k_row");                                  // [B,Hkv,T,1,dk]
    Value* v_row = Unsqueeze(v, 3, "v_row");                                  // [B,Hkv,T,1,dv]
    Value* gain = nullptr;  // exp(decay): [B, Hkv, T, dk or 1, 1]
    if (s_.gating) {
      Value* d = heads(4, {0, 0, hkv, s_.decay_per_head ? 1 : s_.dk}, {0, 2, 1, 3}, "decay");
      gain = Unsqueeze(Emit("Exp", 13, {d}, "decay_exp"), 4, "gain");
    }
    Value* beta = nullptr;  // [B, Hkv or 1, T, 1, 1]
    if (s_.delta) {
      Value* b = heads(5, {0, 0, s_.beta_heads, 1}, {0, 2, 1, 3}, "beta");
      beta = Unsqueeze(b, 4, "beta_b");
    }
    Value* state;
    if (Value* past = Input(req_, 3)) {
      state = Emit("CastLike", 15, {past, q}, "state0");  // in the compute type
    } else {
      state = Emit("ConstantOfShape", 9,
                   {e_.Int64s("state_shape", {s_.batch, hkv, s_.dk, s_.dv}, {4})}, "state0");
      state = Emit("CastLike", 15, {state, q}, "state0_t");
    }
    std::vector<Value*> outs;
    for (int64_t t = 0; t < s_.seq; ++t) {
      const std::string p = fmt::format("t{}_", t);
      auto at = [&](Value* x, const std::string& name) {
        return Emit("Gather", 13, {x, e_.Int64s(p + name + "_index", {t}, {})}, p + name,
                    {{"axis", Attribute(int64_t{2})}});
      };
      if (gain) state = Emit("Mul", 14, {state, at(gain, "gain")}, p + "decayed");
      Value* vt = at(v_row, "v");  // [B, Hkv, 1, dv]
      if (beta) {
        Value* retrieved = Emit("MatMul", 13, {at(k_row, "k_row"), state}, p + "retrieved");
        vt = Emit("Mul", 14, {at(beta, "beta"), Emit("Sub", 14, {vt, retrieved}, p + "v_err")},
                  p + "v_delta");
      }
      state = Emit("Add", 14, {state, Emit("MatMul", 13, {at(k_col, "k_col"), vt}, p + "kv")},
                   p + "state");
      Value* o = Emit("MatMul", 13, {at(q, "q"), state}, p + "o");  // [B, Hkv, G, dv]
      outs.push_back(Unsqueeze(o, 2, p + "o_t"));
    }
    Value* o = outs.size() == 1
                   ? outs[0]
                   : Emit("Concat", 13, outs, "o_all", {{"axis", Attribute(int64_t{2})}});
    Value* merged = Emit("Reshape", 14,
                         {Emit("Transpose", 13, {o}, "o_bthgd",
                               {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3, 4})}}),
                          e_.Int64s("out_shape", {0, 0, -1}, {3})},
                         "o_merged");
    Value* scale =
        Emit("CastLike", 15, {e_.Constant("scale", TensorData::FromFloats({s_.scale}, {})), merged},
             "scale_t");
    Value* scaled = Emit("Mul", 14, {merged, scale}, "o_scaled");
    e_.EmitOutput(0, "CastLike", 15, {scaled, req_.inputs[0]}, {}, "output");
    if (WantsOutput(req_, 1)) {
      Value* like = Input(req_, 3) ? Input(req_, 3) : req_.inputs[0];
      e_.EmitOutput(1, "CastLike", 15, {state, like}, {}, "present_state");
    }
    return e_.nodes();
  }

 private:
  // x in float32 when the query is float16 or bfloat16 (or of an undeclared type); float32
  // and float64 (which the unit tests' gradient checks use) stay as they are.
  Value* Widen(Value* x, const std::string& suffix) {
    if (!widen_) return x;
    return Emit("Cast", 13, {x}, suffix, {{"to", Attribute(kOnnxFloat)}});
  }
  Value* Unsqueeze(Value* x, int64_t axis, const std::string& suffix) {
    return Emit("Unsqueeze", 13, {x, e_.Int64s(suffix + "_axes", {axis}, {1})}, suffix);
  }

  bool widen_ = NeedsWidening(req_, req_.inputs[0]);
};

StatusOr<std::vector<DecomposedNode>> DecomposeLinearAttention(Graph& g,
                                                               const DecomposeRequest& req) {
  A8_ASSIGN_OR_RETURN(LinearAttentionSpec s, ReadLinearAttention(req));
  return LinearAttentionBuilder(g, req, s).Build();
}

StatusOr<std::vector<DecomposedNode>> DecomposeCausalConvWithState(Graph& g,
                                                                   const DecomposeRequest& req) {
  if (req.inputs.size() < 2 || req.inputs.size() > 4 || req.outputs.empty() ||
      req.outputs.size() > 2) {
    return InvalidInput(
        "{}: CausalConvWithState takes 2 to 4 inputs and 1 or 2 outputs, got {} and {}", req.where,
        req.inputs.size(), req.outputs.size());
  }
  A8_RETURN_IF_ERROR(RequireLeadingInputs(req, {"input", "weight"}));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"activation"}));
  A8_ASSIGN_OR_RETURN(std::string activation, StringAttr(req, "activation", "none"));
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return InvalidInput("{}: attribute 'activation' '{}' must be none, silu or swish", req.where,
                        activation);
  }
  // Conv's group is the channel count.
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> w,
                      StaticDims(req, 1, "weight", 3, " (Conv's group is its channel count)"));
  if (w[1] != 1 || w[2] < 1) {
    return InvalidInput("{}: weight [{}] must be [channels, 1, k] with k >= 1", req.where,
                        fmt::join(w, ", "));
  }
  const int64_t channels = w[0];
  const int64_t km1 = w[2] - 1;
  Emitter e(g, req);
  auto emit = [&](const std::string& op, int version, std::vector<Value*> inputs,
                  const std::string& suffix, std::map<std::string, Attribute> attrs = {}) {
    return e.Emit(op, version, std::move(inputs), std::move(attrs), suffix, false);
  };
  Value* x = req.inputs[0];
  Value* pad = Input(req, 3);
  if (pad == nullptr) {
    Value* batch_channels = emit("Shape", 15, {x}, "batch_channels", {{"start", 0}, {"end", 2}});
    Value* shape = emit("Concat", 13, {batch_channels, e.Int64s("km1", {km1}, {1})}, "zero_shape",
                        {{"axis", Attribute(int64_t{0})}});
    pad = emit("CastLike", 15, {emit("ConstantOfShape", 9, {shape}, "zero_f"), x}, "zero_pad");
  }
  Value* padded = emit("Concat", 13, {pad, x}, "padded", {{"axis", Attribute(int64_t{2})}});
  std::vector<Value*> conv_in = {padded, req.inputs[1]};
  if (Value* bias = Input(req, 2)) conv_in.push_back(bias);
  const bool silu = activation != "none";
  Value* conv = emit("Conv", 11, conv_in, "conv", {{"group", Attribute(channels)}});
  if (silu) {
    Value* f = NeedsWidening(req, x)
                   ? emit("Cast", 13, {conv}, "conv_f", {{"to", Attribute(kOnnxFloat)}})
                   : conv;
    Value* act = emit("Mul", 14, {f, emit("Sigmoid", 13, {f}, "conv_sigmoid")}, "silu");
    e.EmitOutput(0, "CastLike", 15, {act, conv}, {}, "output");
  } else {
    e.EmitOutput(0, "Identity", 16, {conv}, {}, "output");
  }
  if (WantsOutput(req, 1)) {
    // The last k - 1 positions: from Shape(padded)[2] - (k - 1) to the end.
    Value* len = emit("Shape", 15, {padded}, "padded_len", {{"start", 2}, {"end", 3}});
    Value* start = emit("Sub", 14, {len, e.Int64s("km1_start", {km1}, {1})}, "state_start");
    e.EmitOutput(
        1, "Slice", 13,
        {padded, start, e.Int64s("state_end", {kMaxIndex}, {1}), e.Int64s("state_axes", {2}, {1})},
        {}, "present_state");
  }
  return e.nodes();
}

}  // namespace

void decompose_internal::AddLinearAttentionDecompositions(decompose_internal::DecomposeTable* t) {
  t->insert({{"LinearAttention", DecomposeLinearAttention},
             {"CausalConvWithState", DecomposeCausalConvWithState}});
}

}  // namespace a8
