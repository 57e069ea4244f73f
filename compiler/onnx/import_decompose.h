// ONNX ops that a800c imports as a few nodes of ops it has: their ONNX definitions written out
// (as onnx's own function bodies do), so that they get shape rules, precision, both backends'
// kernels and gradients from the ops they are made of, without kernels of their own.
//
//   PRelu-7/9/16 (x, slope)  -> Sub(Relu(x), Mul(slope, Relu(Neg(x))))
//       equal to x < 0 ? slope * x : x, slope broadcast to x (unidirectional from PRelu-7 on;
//       PRelu-1/6 only with a one-element constant slope, the form they define);
//   ReduceLogSum-1..28       -> Log(ReduceSum(x, axes, keepdims, noop_with_empty_axes))
//       (an empty reduction gives log(0) = -inf, as ONNX says);
//   Upsample-1/7/9, mode 'nearest', integer scales s (attributes, or a constant input)
//                            -> Reshape(Expand(Unsqueeze(x, [1, 3, ..]), [1, s0, 1, s1, ..]),
//                                       Shape(x) * s)
//       each element repeated s times along its dim, as nearest upsampling by an integer does;
//       other modes and scales as Resize-10. Upsample-10 is deprecated (an error, as onnx's
//       checker says);
//   Resize-10/11/13/18/19: per resized axis a MatMul by a constant [out, in] interpolation
//       matrix built at import from the static dims (import_decompose_resize.cc);
//   BitwiseNot-18 (x)         -> BitwiseXor(x, Sub(CastLike(0, x), CastLike(1, x)));
//   RMSNormalization, LpNormalization, Hardmax, EyeLike, SpaceToDepth, DepthToSpace: see
//       import_decompose_nn.cc; Attention: import_decompose_attention.cc; RotaryEmbedding:
//       import_decompose_rotary.cc;
//   DFT, STFT, HannWindow, HammingWindow, BlackmanWindow: import_decompose_signal.cc.
//   QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear: import_decompose_quant.cc;
//       MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (int32 accumulation):
//       import_decompose_quant_int.cc.
//
// Every node made here is named `<node>.<op>` (the last one, which produces the ONNX outputs,
// keeps the node's name) and comes back with the ONNX since_version its form has, for the caller
// to upgrade to the op's canonical form and check like any imported node.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

// Whether `op` of the default domain is imported as a decomposition.
bool IsDecomposedOp(std::string_view op);
// Whether `op` of ai.onnx.preview is (FlexAttention: import_decompose_flex_attention.cc).
bool IsDecomposedPreviewOp(std::string_view op);

struct DecomposedNode {
  Node* node;
  int since_version;  // the ONNX version of the form the node was built in
};

struct DecomposeRequest {
  std::string op;     // the ONNX op
  int version = 0;    // its since_version at the model's opset
  std::string name;   // the node's name
  std::string where;  // "node 'n' (PRelu)", for errors
  std::vector<Value*> inputs;
  std::vector<std::pair<std::string, TensorType>> outputs;
  std::map<std::string, Attribute> attrs;
  std::function<std::string(const std::string& base)> fresh_name;
  // The rank the model declares (or onnx infers) for a value, when known.
  std::function<std::optional<int64_t>(const Value* v)> known_rank;
  // The dims of a value when they are all static and known (a constant, a graph input, a
  // declared intermediate), for decompositions that build constants from them (Resize).
  std::function<std::optional<std::vector<int64_t>>(const Value* v)> known_dims;
  // The element type the model declares for a value, when known (may be unset).
  std::function<std::optional<DType>(const Value* v)> known_dtype;
  // Tells the importer the rank of an output the decomposition knows (for a later node that
  // needs it, such as Attention after RotaryEmbedding, which onnx's inference may not know).
  std::function<void(const Value* v, int64_t rank)> note_rank;
};

// Emits the nodes for `req` into `g`, in order.
StatusOr<std::vector<DecomposedNode>> Decompose(Graph& g, DecomposeRequest req);

}  // namespace a8
