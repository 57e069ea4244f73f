// The helpers that the decomposition files (import_decompose*.cc) share: the node emitter and
// the arity check. Internal to compiler/onnx.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/types.h"
#include "compiler/onnx/import_decompose.h"

namespace a8::decompose_internal {

// One node of a decomposition with a single output: a fresh intermediate `<name>.<suffix>`, or
// the ONNX output when `last`.
class Emitter {
 public:
  Emitter(Graph& g, const DecomposeRequest& req) : g_(g), req_(req) {}

  Value* Emit(const std::string& op, int since_version, std::vector<Value*> inputs,
              std::map<std::string, Attribute> attrs, const std::string& suffix, bool last) {
    std::pair<std::string, TensorType> out =
        last ? req_.outputs[0]
             : std::make_pair(req_.fresh_name(req_.name + "." + suffix), TensorType{});
    Node* n = g_.AddNode(op, "", std::move(inputs), {out}, std::move(attrs),
                         last ? req_.name : req_.name + "." + suffix);
    nodes_.push_back({n, since_version});
    return n->output(0);
  }
  // One node whose output is the request's output `i` (of an op with several outputs, such as
  // Attention): named as the node for output 0, `<name>.<suffix>` for the others.
  Value* EmitOutput(size_t i, const std::string& op, int since_version, std::vector<Value*> inputs,
                    std::map<std::string, Attribute> attrs, const std::string& suffix) {
    Node* n = g_.AddNode(op, "", std::move(inputs), {req_.outputs[i]}, std::move(attrs),
                         i == 0 ? req_.name : req_.name + "." + suffix);
    nodes_.push_back({n, since_version});
    return n->output(0);
  }
  // One node of the internal op a8.`op` with `num_outputs` outputs (`<name>.<suffix>`,
  // `<name>.<suffix>.1`, ...), whose first output is the request's output 0 when `last`.
  std::vector<Value*> EmitInternal(const std::string& op, std::vector<Value*> inputs,
                                   std::map<std::string, Attribute> attrs,
                                   const std::string& suffix, int num_outputs, bool last) {
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < num_outputs; ++i) {
      if (i == 0 && last) {
        outs.push_back(req_.outputs[0]);
      } else {
        const std::string tail = i == 0 ? "" : "." + std::to_string(i);
        outs.emplace_back(req_.fresh_name(req_.name + "." + suffix + tail), TensorType{});
      }
    }
    Node* n = g_.AddNode(op, "a8", std::move(inputs), std::move(outs), std::move(attrs),
                         last ? req_.name : req_.name + "." + suffix);
    nodes_.push_back({n, 1});
    return n->outputs();
  }
  // A compile-time constant `<name>.<suffix>` (an axis, a shape, epsilon).
  Value* Constant(const std::string& suffix, TensorDataPtr data) {
    return g_.AddConstant(req_.fresh_name(req_.name + "." + suffix), std::move(data));
  }
  Value* Int64s(const std::string& suffix, const std::vector<int64_t>& v,
                std::vector<int64_t> dims) {
    return Constant(suffix, TensorData::FromInt64s(v, std::move(dims)));
  }
  std::vector<DecomposedNode> nodes() const { return nodes_; }

 private:
  Graph& g_;
  const DecomposeRequest& req_;
  std::vector<DecomposedNode> nodes_;
};

// The base of a decomposition that builds its nodes in a class (AttentionBuilder, RnnBuilder,
// ...): the request, the op's parsed `Spec`, the emitter, and Emit for an intermediate node.
template <typename Spec>
class DecomposeBuilder {
 public:
  DecomposeBuilder(Graph& g, const DecomposeRequest& req, const Spec& spec)
      : req_(req), s_(spec), e_(g, req) {}

 protected:
  Value* Emit(const std::string& op, int version, std::vector<Value*> inputs,
              const std::string& suffix, std::map<std::string, Attribute> attrs = {}) {
    return e_.Emit(op, version, std::move(inputs), std::move(attrs), suffix, false);
  }
  static Attribute Ints(std::vector<int64_t> v) { return Attribute(std::move(v)); }

  const DecomposeRequest& req_;
  const Spec& s_;
  Emitter e_;
};

// The request has exactly `inputs` present inputs and one output.
Status CheckArity(const DecomposeRequest& req, size_t inputs);

// The request's first inputs are present; `names` are theirs, for the error ("input 'Q' is
// required"). The caller has checked that there are that many.
Status RequireLeadingInputs(const DecomposeRequest& req,
                            std::initializer_list<std::string_view> names);

// Operand `i` of the request; null when it is absent (past the end, or an empty name).
inline Value* Input(const DecomposeRequest& req, size_t i) {
  return i < req.inputs.size() ? req.inputs[i] : nullptr;
}

// Whether operand `i` is present.
inline bool Present(const DecomposeRequest& req, size_t i) { return Input(req, i) != nullptr; }

// Whether output `i` is wanted (present with a name).
inline bool WantsOutput(const DecomposeRequest& req, size_t i) {
  return i < req.outputs.size() && !req.outputs[i].first.empty();
}

// TensorProto.FLOAT: the `stash_type` / `softmax_precision` value a800c computes in.
inline constexpr int64_t kOnnxFloat = 1;

// `v` cast to double (`<name>.<suffix>`). The quantization decompositions compute in double,
// where the precision passes leave them (fp16 mode puts every float "follow" op in f16), and
// round to the reference's type with a Cast where it rounds. A double result of +, -, * or /
// rounded to f32, f16 or bf16 is the correctly rounded result in that type (53 >= 2 * 24 + 2
// bits: the double rounding is innocuous), so the values are the reference's.
inline Value* F64(Emitter& e, Value* v, const std::string& suffix) {
  return e.Emit("Cast", 13, {v}, {{"to", int64_t{DTypeToOnnx(DType::kF64)}}}, suffix, false);
}

// Every attribute of the request is one of `known`.
Status CheckAttrs(const DecomposeRequest& req, std::initializer_list<std::string_view> known);
// An attribute's value, `def` when absent (required when `def` is empty).
StatusOr<int64_t> IntAttr(const DecomposeRequest& req, const std::string& name,
                          std::optional<int64_t> def);
StatusOr<float> FloatAttr(const DecomposeRequest& req, const std::string& name, float def);
// Attention's and FlexAttention's optional `scale` (nullopt when absent): an error when negative
// or NaN, since Q and K are scaled by its square root.
StatusOr<std::optional<float>> AttentionScaleAttr(const DecomposeRequest& req);
StatusOr<std::string> StringAttr(const DecomposeRequest& req, const std::string& name,
                                 const std::string& def);
// The rank of input 0, which the decomposition needs for `why`.
StatusOr<int64_t> RankOf(const DecomposeRequest& req, std::string_view why);
// `axis` in [0, rank), or an error naming the node.
StatusOr<int64_t> NormalizedAxis(const DecomposeRequest& req, int64_t axis, int64_t rank);
// Input `i` must be constant data: a graph input gets the --bind hint.
Status RequireConstant(const DecomposeRequest& req, int i, std::string_view field);
// 0, 1, .., d - 1 (int64) for d = dim `start` of x: folded to a constant by shape inference.
Value* Iota(Emitter& e, Value* x, int64_t start, const std::string& suffix);

// Each decomposed op's name and function, named once: IsDecomposedOp and Decompose read this.
using DecomposeFn = StatusOr<std::vector<DecomposedNode>> (*)(Graph& g,
                                                              const DecomposeRequest& req);
using DecomposeTable = std::map<std::string_view, DecomposeFn>;
// Add the ops of import_decompose_nn.cc, and of import_decompose_more.cc with
// import_decompose_einsum.cc, to `t`.
void AddNnDecompositions(DecomposeTable* t);
void AddMoreDecompositions(DecomposeTable* t);
// Attention and RotaryEmbedding (import_decompose_attention.cc).
void AddAttentionDecompositions(DecomposeTable* t);
// RotaryEmbedding (import_decompose_rotary.cc), registered by AddAttentionDecompositions.
StatusOr<std::vector<DecomposedNode>> DecomposeRotaryEmbedding(Graph& g,
                                                               const DecomposeRequest& req);
// RNN, GRU and LSTM (import_decompose_rnn.cc); LinearAttention and CausalConvWithState
// (import_decompose_linear_attention.cc).
void AddRnnDecompositions(DecomposeTable* t);
void AddLinearAttentionDecompositions(DecomposeTable* t);
// ai.onnx.preview's FlexAttention (import_decompose_flex_attention.cc).
void AddFlexAttentionDecompositions(DecomposeTable* t);
// DFT, STFT and the window functions (import_decompose_signal.cc).
void AddSignalDecompositions(DecomposeTable* t);
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (import_decompose_quant.cc) and
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (import_decompose_quant_int.cc).
void AddQuantDecompositions(DecomposeTable* t);
void AddQuantIntegerDecompositions(DecomposeTable* t);
// The element type of `v` where the importer knows it (constant data, a graph value, a declared
// intermediate).
std::optional<DType> KnownDType(const DecomposeRequest& req, const Value* v);
// The int range [lo, hi] of a quantized type (int8, uint8, int16, uint16); nullopt for others.
std::optional<std::pair<int64_t, int64_t>> QuantRange(DType t);
// `v` cast to int32 minus `zero_point` cast to int32 (no zero point: the cast alone); exact.
Value* Int32Minus(Emitter& e, Value* v, Value* zero_point, const std::string& suffix);
StatusOr<std::vector<DecomposedNode>> DecomposeEinsum(Graph& g, const DecomposeRequest& req);

}  // namespace a8::decompose_internal
