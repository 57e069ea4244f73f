// ai.onnx.preview FlexAttention-1 imported as nodes of ops a800c has (see import_decompose.h),
// following its ONNX function body:
//
//   FlexAttention (Q [B, Hq, L, D], K [B, Hkv, S, D], V [B, Hkv, S, Dv]; scale,
//                  softmax_precision)
//       -> K and V repeated to Hq heads when Hkv < Hq (query head h reads kv head
//          h / (Hq / Hkv): Unsqueeze, Expand, Reshape); s = sqrt(scale) in Q's type (scale
//          defaulting to 1 / sqrt(D)); scores = MatMul(Q * s, Transpose(K * s)) cast to the
//          softmax type (softmax_precision; default float, double for double inputs);
//          Y = MatMul(Softmax(scores), V in that type), cast back to Q's type.
//       Differentiable with respect to Q, K and V.
//
// The modifier subgraphs score_mod and prob_mod: the importer (import_control_flow.cc,
// ExpandFlexAttentionModifiers) splits such a node into the two halves of the decomposition
// above, before and after the Softmax (FlexAttention nodes with a800c's attribute `a8.stage`),
// with the subgraphs' nodes inlined between them:
//   FlexAttention <a8.stage = "scores"> (Q, K, V)         -> scores, in the softmax type
//   score_mod's nodes (scores)                            -> scores'
//   Softmax <axis = -1> (scores')                         -> probs
//   prob_mod's nodes (probs)                              -> probs'
//   FlexAttention <a8.stage = "output"> (Q, K, V, probs') -> Y
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers
constexpr int64_t kOnnxDouble = 11;  // TensorProto.DOUBLE

// What one FlexAttention node computes: all of it, or one of the importer's halves.
enum class Stage { kWhole, kScores, kOutput };

// Q K^T, Q and K each scaled by the square root of the scale, in Q's type.
StatusOr<Value*> EmitScores(Emitter& e, const DecomposeRequest& req, Value* q, Value* k) {
  auto emit = [&](const std::string& op, int version, std::vector<Value*> inputs,
                  const std::string& suffix, std::map<std::string, Attribute> attrs = {}) {
    return e.Emit(op, version, std::move(inputs), std::move(attrs), suffix, false);
  };
  Value* s;
  A8_ASSIGN_OR_RETURN(std::optional<float> scale_attr, AttentionScaleAttr(req));
  if (scale_attr) {
    s = e.Constant("sqrt_scale", TensorData::FromFloats(
                                     {static_cast<float>(std::sqrt(double{*scale_attr}))}, {}));
  } else {
    Value* head = emit("Shape", 15, {q}, "head_size", {{"start", int64_t{3}}, {"end", int64_t{4}}});
    Value* d = emit("Cast", 13, {head}, "head_size_f", {{"to", Attribute(kOnnxFloat)}});
    Value* one = e.Constant("one_f", TensorData::FromFloats({1.0f}, {}));
    Value* scale = emit("Div", 14, {one, emit("Sqrt", 13, {d}, "sqrt_head_size")}, "scale");
    s = emit("Sqrt", 13, {scale}, "sqrt_scale_f");
  }
  s = emit("CastLike", 15, {s, q}, "sqrt_scale_t");
  Value* q_scaled = emit("Mul", 14, {q, s}, "q_scaled");
  Value* k_scaled = emit("Mul", 14, {k, s}, "k_scaled");
  Value* k_t = emit("Transpose", 13, {k_scaled}, "k_t",
                    {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}});
  return emit("MatMul", 13, {q_scaled, k_t}, "scores");
}

StatusOr<std::vector<DecomposedNode>> DecomposeFlexAttention(Graph& g,
                                                             const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"scale", "softmax_precision", "a8.stage"}));
  Stage stage = Stage::kWhole;
  if (req.attrs.count("a8.stage")) {
    A8_ASSIGN_OR_RETURN(std::string name, StringAttr(req, "a8.stage", ""));
    if (name != "scores" && name != "output") {
      return InvalidInput("{}: attribute 'a8.stage' '{}' is neither 'scores' nor 'output'",
                          req.where, name);
    }
    stage = name == "scores" ? Stage::kScores : Stage::kOutput;
  }
  const size_t num_inputs = stage == Stage::kOutput ? 4 : 3;
  if (req.inputs.size() != num_inputs || req.outputs.size() != 1) {
    return InvalidInput("{}: FlexAttention takes Q, K, V{} and one output, got {} and {}",
                        req.where, stage == Stage::kOutput ? ", the probabilities" : "",
                        req.inputs.size(), req.outputs.size());
  }
  if (stage == Stage::kOutput && req.inputs[3] == nullptr) {
    return InvalidInput("{}: input 'probs' is required", req.where);
  }
  static const char* const kNames[] = {"Q", "K", "V"};
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < 3; ++i) {
    if (req.inputs[i] == nullptr) {
      return InvalidInput("{}: input '{}' is required", req.where, kNames[i]);
    }
    std::optional<int64_t> rank = req.known_rank ? req.known_rank(req.inputs[i]) : std::nullopt;
    if (rank && *rank != 4) {
      return InvalidInput("{}: input '{}' must be rank 4 [batch, heads, seq, head], got rank {}",
                          req.where, kNames[i], *rank);
    }
    std::optional<std::vector<int64_t>> d =
        req.known_dims ? req.known_dims(req.inputs[i]) : std::nullopt;
    dims.push_back(d.value_or(std::vector<int64_t>{}));
  }
  std::optional<int64_t> precision;
  if (req.attrs.count("softmax_precision")) {
    A8_ASSIGN_OR_RETURN(int64_t p, IntAttr(req, "softmax_precision", std::nullopt));
    // TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16.
    if (p != 1 && p != 10 && p != 11 && p != 16) {
      return InvalidInput(
          "{}: attribute 'softmax_precision' {} is not a float type (1, 10, 11, 16)", req.where, p);
    }
    precision = p;
  } else {
    std::optional<DType> dt = req.inputs[0]->data()
                                  ? std::optional(req.inputs[0]->data()->type.dtype)
                              : req.known_dtype ? req.known_dtype(req.inputs[0])
                                                : std::nullopt;
    if (!dt) {
      return Unsupported(
          "{}: the element type of Q ('{}') is not declared (the softmax runs in float, or in "
          "double for double inputs); set attribute 'softmax_precision'",
          req.where, req.inputs[0]->name());
    }
    precision = *dt == DType::kF64 ? kOnnxDouble : kOnnxFloat;
  }
  Emitter e(g, req);
  auto emit = [&](const std::string& op, int version, std::vector<Value*> inputs,
                  const std::string& suffix, std::map<std::string, Attribute> attrs = {}) {
    return e.Emit(op, version, std::move(inputs), std::move(attrs), suffix, false);
  };
  auto dim = [&](Value* x, int64_t start, int64_t end, const std::string& suffix) {
    return emit("Shape", 15, {x}, suffix, {{"start", start}, {"end", end}});
  };
  Value* q = req.inputs[0];
  Value* k = req.inputs[1];
  Value* v = req.inputs[2];
  // GQA: each kv head repeated Hq / Hkv times, [h0, h0, h1, h1, ..]; skipped when the head
  // counts are known to be equal.
  const bool known_heads = dims[0].size() == 4 && dims[1].size() == 4;
  const bool same_heads = known_heads && dims[0][1] == dims[1][1];
  if (known_heads && (dims[1][1] <= 0 || dims[0][1] % dims[1][1] != 0)) {
    return InvalidInput("{}: Q's {} heads are not a multiple of K's {}", req.where, dims[0][1],
                        dims[1][1]);
  }
  if (!same_heads) {
    Value* batch = dim(q, 0, 1, "batch");
    Value* q_heads = dim(q, 1, 2, "q_heads");
    Value* kv_heads = dim(k, 1, 2, "kv_heads");
    Value* repeat = emit("Div", 14, {q_heads, kv_heads}, "kv_repeat");
    Value* seq = dim(k, 2, 3, "kv_seq");
    auto align = [&](Value* x, const std::string& name) {
      Value* head = dim(x, 3, 4, name + "_head_size");
      Value* u = emit("Unsqueeze", 13, {x, e.Int64s(name + "_axis", {2}, {1})}, name + "_grouped");
      Value* expand_shape = emit("Concat", 13, {batch, kv_heads, repeat, seq, head},
                                 name + "_expand_shape", {{"axis", Attribute(int64_t{0})}});
      Value* expanded = emit("Expand", 13, {u, expand_shape}, name + "_repeated");
      Value* shape = emit("Concat", 13, {batch, q_heads, seq, head}, name + "_aligned_shape",
                          {{"axis", Attribute(int64_t{0})}});
      return emit("Reshape", 14, {expanded, shape}, name + "_aligned");
    };
    if (stage != Stage::kOutput) k = align(k, "k");
    if (stage != Stage::kScores) v = align(v, "v");
  }
  const std::map<std::string, Attribute> to = {{"to", Attribute(*precision)}};
  Value* p = nullptr;
  if (stage == Stage::kOutput) {
    p = req.inputs[3];
  } else {
    A8_ASSIGN_OR_RETURN(Value * scores, EmitScores(e, req, q, k));
    if (stage == Stage::kScores) {
      e.EmitOutput(0, "Cast", 13, {scores}, to, "scores");
      return e.nodes();
    }
    p = emit("Softmax", 13, {emit("Cast", 13, {scores}, "scores_sp", to)}, "probs",
             {{"axis", Attribute(int64_t{-1})}});
  }
  Value* y = emit("MatMul", 13, {p, emit("Cast", 13, {v}, "v_sp", to)}, "y_sp");
  e.EmitOutput(0, "CastLike", 15, {y, q}, {}, "Y");
  return e.nodes();
}

}  // namespace

bool IsDecomposedPreviewOp(std::string_view op) { return op == "FlexAttention"; }

void decompose_internal::AddFlexAttentionDecompositions(decompose_internal::DecomposeTable* t) {
  t->insert({"FlexAttention", DecomposeFlexAttention});
}

}  // namespace a8
