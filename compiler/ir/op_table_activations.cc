// The activations of the op table: each ONNX activation with its gradient op (see
// op_table_builder.h AddActivation); their math is kernels/common/unary_math.h.
#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {

void AddActivations(std::vector<OpDef>* ops) {
  using P = OpPrecisionClass;
  using G = GradDecision;
  const std::vector<int> kUnary6{1, 6, 13};  // 1 had `consumed_inputs`
  const std::vector<DType> kSignedTypes = DTypeVector(kSignedDTypes);
  AddActivation(ops, {"Relu",
                      {},
                      {1, 6, 13, 14},
                      6,
                      P::kFollow,
                      G::kActivationOfOutput,
                      "max(x, 0)",
                      "gradient of Relu from its output: y > 0 ? dy : 0",
                      InferNumericUnary,
                      nullptr,
                      kSignedTypes});
  AddActivation(ops, {"Sigmoid",
                      {},
                      kUnary6,
                      6,
                      P::kFollow,
                      G::kActivationOfOutput,
                      "1 / (1 + exp(-x))",
                      "gradient of Sigmoid from its output: dy * y * (1 - y)"});
  AddActivation(ops, {"Tanh",
                      {},
                      kUnary6,
                      6,
                      P::kFollow,
                      G::kActivationOfOutput,
                      "tanh(x)",
                      "gradient of Tanh from its output: dy * (1 - y^2)"});
  AddActivation(ops, {"Erf",
                      {},
                      {9, 13},
                      9,
                      P::kDeny,
                      G::kActivationOfInput,
                      "error function",
                      "gradient of Erf: dy * 2 / sqrt(pi) * e^(-x^2)"});
  AddActivation(ops, {"LeakyRelu",
                      {Opt("alpha", 0.01f)},
                      {1, 6, 16},
                      6,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x >= 0 ? x : alpha * x",
                      "gradient of LeakyRelu: x > 0 ? dy : alpha * dy"});
  AddActivation(ops, {"Elu",
                      {Opt("alpha", 1.0f)},
                      {1, 6, 22},
                      6,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x >= 0 ? x : alpha * (e^x - 1)",
                      "gradient of Elu: x > 0 ? dy : alpha * e^x * dy"});
  AddActivation(ops, {"Gelu",
                      {Opt("approximate", "none")},
                      {20},
                      20,
                      P::kFollow,
                      G::kActivationOfInput,
                      "Gaussian error linear unit (approximate: none | tanh)",
                      "gradient of Gelu (approximate: none | tanh) from its input",
                      InferGelu,
                      InferGeluGrad});
  AddActivation(ops, {"Softplus",
                      {},
                      {1, 22},
                      1,
                      P::kFollow,
                      G::kActivationOfInput,
                      "log(1 + e^x)",
                      "gradient of Softplus: dy * sigmoid(x)"});
  AddActivation(ops, {"HardSigmoid",
                      {Opt("alpha", 0.2f), Opt("beta", 0.5f)},
                      {1, 6, 22},
                      6,
                      P::kFollow,
                      G::kActivationOfInput,
                      "max(0, min(1, alpha * x + beta))",
                      "gradient of HardSigmoid: 0 < alpha x + beta < 1 ? alpha * dy : 0"});
  AddActivation(ops,
                {"Mish",
                 {},
                 {18, 22},
                 18,
                 P::kFollow,
                 G::kActivationOfInput,
                 "x * tanh(softplus(x))",
                 "gradient of Mish: dy * (t + x (1 - t^2) sigmoid(x)), t = tanh(softplus(x))"});
  // The trigonometric and hyperbolic family: steep or unbounded near the ends of their domains,
  // so FP32 (kDeny, as Erf).
  struct Trig {
    const char* name;
    std::vector<int> versions;
    const char* doc;
    const char* grad_doc;
  };
  const Trig kTrig[] = {
      {"Tan", {7, 22}, "tangent", "gradient of Tan: dy * (1 + tan(x)^2)"},
      {"Asin", {7, 22}, "arcsine", "gradient of Asin: dy / sqrt(1 - x^2)"},
      {"Acos", {7, 22}, "arccosine", "gradient of Acos: -dy / sqrt(1 - x^2)"},
      {"Atan", {7, 22}, "arctangent", "gradient of Atan: dy / (1 + x^2)"},
      {"Sinh", {9, 22}, "hyperbolic sine", "gradient of Sinh: dy * cosh(x)"},
      {"Cosh", {9, 22}, "hyperbolic cosine", "gradient of Cosh: dy * sinh(x)"},
      {"Asinh", {9, 22}, "inverse hyperbolic sine", "gradient of Asinh: dy / sqrt(x^2 + 1)"},
      {"Acosh", {9, 22}, "inverse hyperbolic cosine", "gradient of Acosh: dy / sqrt(x^2 - 1)"},
      {"Atanh", {9, 22}, "inverse hyperbolic tangent", "gradient of Atanh: dy / (1 - x^2)"},
  };
  for (const Trig& t : kTrig) {
    AddActivation(ops, {t.name,
                        {},
                        t.versions,
                        t.versions[0],
                        P::kDeny,
                        G::kActivationOfInput,
                        t.doc,
                        t.grad_doc});
  }
  AddActivation(ops, {"Softsign",
                      {},
                      {1, 22},
                      1,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x / (1 + |x|)",
                      "gradient of Softsign: dy / (1 + |x|)^2"});
  AddActivation(
      ops, {"Selu",
            {Opt("alpha", 1.67326319217681884765625f), Opt("gamma", 1.05070102214813232421875f)},
            {1, 6, 22},
            6,
            P::kFollow,
            G::kActivationOfInput,
            "gamma * (x > 0 ? x : alpha * (e^x - 1))",
            "gradient of Selu: gamma * (x > 0 ? dy : alpha * e^x * dy)"});
  AddActivation(ops, {"Celu",
                      {Opt("alpha", 1.0f)},
                      {12, 28},
                      12,
                      P::kFollow,
                      G::kActivationOfInput,
                      "max(0, x) + min(0, alpha * (e^(x / alpha) - 1))",
                      "gradient of Celu: x > 0 ? dy : e^(x / alpha) * dy"});
  AddActivation(ops, {"ThresholdedRelu",
                      {Opt("alpha", 1.0f)},
                      {10, 22},
                      10,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x > alpha ? x : 0",
                      "gradient of ThresholdedRelu: x > alpha ? dy : 0"});
  AddActivation(ops, {"Shrink",
                      {Opt("bias", 0.0f), Opt("lambd", 0.5f)},
                      {9},
                      9,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x < -lambd ? x + bias : (x > lambd ? x - bias : 0)",
                      "gradient of Shrink: |x| > lambd ? dy : 0"});
  AddActivation(ops, {"Swish",
                      {Opt("alpha", 1.0f)},
                      {24},
                      24,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x * sigmoid(alpha * x)",
                      "gradient of Swish: dy * (s + alpha x s (1 - s)), s = sigmoid(alpha x)"});
  AddActivation(ops, {"HardSwish",
                      {},
                      {14, 22},
                      14,
                      P::kFollow,
                      G::kActivationOfInput,
                      "x * max(0, min(1, x / 6 + 1/2))",
                      "gradient of HardSwish: x < -3 ? 0 : x > 3 ? dy : dy * (x / 3 + 1/2)"});
}

}  // namespace a8
