// Gradient rules: how reverse-mode autodiff (`build-training`, autodiff.h) differentiates one op.
//
// A rule sees one forward node and the gradients that reach its outputs, emits ordinary IR nodes
// (ONNX ops or internal `a8.*Grad` ops with their own shape rules and kernels) and hands back the
// gradient of each input that needs one. The engine sums fan-out, prunes what the loss does not
// reach and names the results (`<value>.grad`), so a rule only states the math. Rules live in one
// file per op family (grad_rules_math.cc: elementwise, matmul, shape and reductions;
// grad_rules_nn.cc: conv, pooling, normalizations, softmax, dropout, losses) and register
// themselves by op in grad_registry.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

class GradContext {
 public:
  virtual ~GradContext() = default;

  // The forward node being differentiated.
  virtual const Node& node() const = 0;
  // The gradient flowing into forward output `i` (same type as the output), or null when no
  // gradient reaches it (e.g. LayerNormalization's Mean output, Dropout's mask).
  virtual Value* output_grad(int i) const = 0;
  // Whether input `i` needs a gradient: it is a float value on a path from a trainable
  // parameter (or another differentiated value) to the loss. Rules skip work for the others.
  virtual bool needs_grad(int i) const = 0;
  // Hands the gradient of input `i` to the engine. `g` must have the input's exact type; the
  // engine adds it to other contributions (fan-out). Inputs that need no gradient ignore it.
  virtual Status SetInputGrad(int i, Value* g) = 0;

  // Emits `qualified_op` ("MatMul", "a8.ReluGrad") on `inputs` (null for an absent optional
  // input), with `num_outputs` outputs whose types come from the op's shape rule. The node is
  // named after the forward node ("<node>.grad", "<node>.grad.1", ...) so errors and
  // --check-numerics can name the ONNX node it came from.
  virtual StatusOr<std::vector<Value*>> Emit(std::string_view qualified_op,
                                             std::vector<Value*> inputs,
                                             std::map<std::string, Attribute> attrs = {},
                                             int num_outputs = 1) = 0;
  // Emit with one output.
  StatusOr<Value*> Emit1(std::string_view qualified_op, std::vector<Value*> inputs,
                         std::map<std::string, Attribute> attrs = {});

  // Constants (graph values with role kConstant).
  virtual Value* ConstInts(const std::vector<int64_t>& values) = 0;  // i64[n]
  virtual Value* ConstScalar(DType dtype, double value) = 0;         // rank 0

  // Reduces `g` (the gradient of a broadcast result) to `dims` by summing over the broadcast
  // axes (numpy rules) and reshaping; returns `g` itself when the dims already match.
  StatusOr<Value*> SumToShape(Value* g, const std::vector<int64_t>& dims);
};

// A rule; errors name the node (`node.Where()`) and say what is not differentiable.
using GradRule = Status (*)(GradContext& ctx);

// Rules by qualified op. An op that is registered with `kNoGradient` is known to be not
// differentiable (Shape, ArgMax, comparisons, integer ops): its inputs get no gradient, and
// autodiff does not fail when the loss depends on it only through non-float values.
struct GradRuleTable {
  std::map<std::string, GradRule, std::less<>> rules;
  void Add(std::string qualified_op, GradRule rule) { rules[std::move(qualified_op)] = rule; }
};
Status NoGradient(GradContext& ctx);  // the rule of non-differentiable ops
inline constexpr GradRule kNoGradient = NoGradient;

// The rule of `qualified_op`, or null when it has none.
GradRule FindGradRule(std::string_view qualified_op);
// Whether `a800c --list-ops` should say the op has a gradient (a rule other than kNoGradient).
bool HasGradient(std::string_view qualified_op);

// Registration, one function per family (grad_registry.cc calls them).
void RegisterMathGradRules(GradRuleTable* t);  // grad_rules_math.cc
void RegisterNnGradRules(GradRuleTable* t);    // grad_rules_nn.cc

}  // namespace a8
