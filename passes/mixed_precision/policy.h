// PrecisionPolicy: which precision each op computes in, as data (XLA's FloatSupport in spirit).
//
// The default is each op's precision class in the op table (OpDef::precision: set by the entry,
// or from PRECISION.md's lists in compiler/ir/op_table_precision.cc), PRECISION.md's op policy:
// - allow (the low type: tensor-core work): MatMul, Gemm, Conv, ConvTranspose, Einsum;
// - deny (FP32: numerically sensitive): normalizations, Softmax/LogSoftmax, losses, every Reduce*,
//   Exp, Log, Pow, Sqrt, Reciprocal, Erf, CumSum, LpNormalization, TopK, Range, and their
//   gradient ops;
// - follow (the type of their inputs, the widest wins): elementwise ops, activations, pooling,
//   data movement, comparisons;
// - pinned (FP32 whatever the mode or the user asks): the optimizer, the loss ops, a8.TrainControl
//   and every internal a8 op left unclassed (FP32 is always correct, so an internal op added
//   later is safe until it is classified);
// - none: ops that compute nothing in a float type or fix their own output type (Cast, Shape,
//   Constant, logic ops): they are left alone.
// An ONNX op without a class is an error naming the op: it is never silently put in FP16.
//
// Overrides: pinned ops are FP32 whatever the user asks; then the user's overrides
// (--fp32-ops, --fp16-ops, --fp32-nodes, --policy) in command-line order, the last one that
// matches a node winning (a policy file's keys count as written fp16_ops, fp32_ops, fp32_nodes);
// then the default lists. Gradient nodes take the decision of their forward node
// (assign_precision.h).
//
// Policy file (--policy=FILE), a JSON object whose keys are all optional:
//   {"fp32_ops": ["Add", "Gelu"], "fp16_ops": ["Softmax"], "fp32_nodes": "^encoder\\.0\\."}
// fp32_ops / fp16_ops are op types (qualified for internal ops: "a8.ReluGrad"), fp32_nodes an
// ECMAScript regex searched in node names. Unknown keys, wrong JSON types, unknown ops and bad
// regexes are errors naming the file.
#pragma once

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/precision_config.h"
#include "compiler/ir/status.h"

namespace a8 {

// "Relu_2.grad.3" -> "Relu_2": the forward node a gradient node differentiates (autodiff names
// gradient nodes `<forward>.grad`, `.grad.N`, `.grad.sum`); "" for a node that is not one.
std::string GradientForwardName(const std::string& node_name);

// The float types the precision modes move between (f64 graphs keep their types).
inline bool IsMixedFloat(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

// OpPrecisionClass is declared in compiler/ir/op_table.h, with each op.
std::string_view OpPrecisionClassName(OpPrecisionClass c);  // "allow", "deny", ...

// The op table's class of an op by its qualified name ("MatMul", "a8.ReluGrad"); nullopt for an
// unknown op or an ONNX op without one.
std::optional<OpPrecisionClass> DefaultOpClass(std::string_view qualified_op);

// What the policy says about one node before propagation.
struct PrecisionDecision {
  enum Kind { kLow, kF32, kFollow, kNone } kind = kNone;
  std::string why;  // PRECISION.md reason: mode, allow, deny, follow, user-op, ...
  // True when the decision came from the default lists (so a gradient node may take its forward
  // node's decision instead).
  bool from_defaults = false;
};

class PrecisionPolicy {
 public:
  // Validates the overrides (known ops, regexes) and reads the policy file.
  static StatusOr<PrecisionPolicy> Create(const PrecisionConfig& config);

  const PrecisionConfig& config() const { return config_; }
  // The 16-bit type of the mode: f16 (amp, fp16) or bf16.
  DType low_type() const;

  // The decision for `node` from its op and name alone.
  StatusOr<PrecisionDecision> Decide(const Node& node) const;

  // Whether operand `operand` of `node` may stay in the low type even when the node computes in
  // FP32: the optimizer and gradient accumulation read FP16/BF16 gradients into FP32 masters
  // (OpDef::any_float_inputs).
  static bool ReadsAnyFloat(const Node& node, int operand);

  // Operands and results that stay FP32 whatever the node's precision: a8.FusedAttention's
  // softmax statistics (LSE, written by the forward and read by its gradient) and its additive
  // bias (a mask's large negative values overflow f16), with the bias's gradient. The kernel
  // computes the softmax in FP32 inside (OpDef::f32_inputs, f32_outputs: op_table_attention.cc).
  static bool KeepsF32Operand(const Node& node, int operand);
  static bool KeepsF32Result(const Node& node, int result);

  // Normalizations that may read and write the low type at their edges while computing in FP32
  // with FP32 scale, bias and statistics (PRECISION.md): LayerNormalization and
  // BatchNormalization, and their gradient ops. The edge operands are X (forward) or dY and X
  // (gradient); the edge result is Y or dX (OpDef::low_edge_inputs). pin-fp32 decides the edges
  // (`a8.edge`).
  static bool HasLowEdges(const Node& node);
  static bool IsEdgeOperand(const Node& node, int operand);
  static bool IsEdgeResult(const Node& /*node*/, int result) { return result == 0; }

 private:
  // One override: op types or a node-name regex, and what it decides.
  struct Rule {
    std::set<std::string> ops;
    std::optional<std::regex> nodes;
    bool fp32 = true;
    std::string why;  // user-op, user-node, policy-file
  };

  PrecisionConfig config_;
  std::vector<Rule> rules_;  // in command-line order: the last that matches a node wins
};

}  // namespace a8
