// Properties of the op registry (compiler/ir/op_table.h) that every op must have, checked over
// every entry rather than over lists that repeat the implementation's: a shape rule, a precision
// class, a gradient decision backed by a rule, and for each kernel-catalog signature a CPU and a
// CUDA (emulated) kernel. Also the one math body of the elementwise ops
// (kernels/common/unary_math.h): its lists agree with the op table, and every activation
// gradient is the derivative of its forward body.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "compiler/ir/op_table_value_shaped.h"
#include "compiler/plan/kernel_catalog.h"
#include "kernels/common/unary_math.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/mixed_precision/policy.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/registry.h"
#include "runtime/device/device_registry.h"

namespace a8 {
namespace {

// Ops that never reach a plan: the importer turns Constant into a value, autodiff replaces
// ai.onnx.preview.training's Gradient, constant folding the value-shaped ops (FindFoldRule).
bool NeverInAPlan(const OpDef& op) {
  return QualifiedName(op) == "Constant" || FindFoldRule(op.domain, op.name) != nullptr ||
         QualifiedName(op) == "ai.onnx.preview.training.Gradient";
}

TEST(OpRegistryTest, EveryOpHasAShapeRule) {
  for (const OpDef& op : AllOps()) EXPECT_NE(op.infer, nullptr) << QualifiedName(op);
}

TEST(OpRegistryTest, EveryOpHasAPrecisionClass) {
  for (const OpDef& op : AllOps()) {
    EXPECT_TRUE(DefaultOpClass(QualifiedName(op)).has_value()) << QualifiedName(op);
  }
}

// The decision is declared in the op table, or is the rule (or kNoGradient) registered in
// passes/autodiff; an op the table calls differentiable has a rule.
TEST(OpRegistryTest, EveryOpHasAGradientDecisionAndDifferentiableOnesHaveARule) {
  for (const OpDef& op : AllOps()) {
    const std::string q = QualifiedName(op);
    if (op.gradient == GradDecision::kUndeclared && op.domain.empty()) {
      EXPECT_NE(FindGradRule(q), nullptr) << q << ": no gradient decision";
    }
    if (op.gradient == GradDecision::kActivationOfInput ||
        op.gradient == GradDecision::kActivationOfOutput) {
      EXPECT_TRUE(HasGradient(q)) << q << " says it is differentiable but has no rule";
      const OpDef* grad = FindOp("a8", op.name + "Grad");
      ASSERT_NE(grad, nullptr) << q << " has no a8." << op.name << "Grad";
      EXPECT_EQ(grad->attrs.size(), op.attrs.size()) << q;
    }
    if (op.gradient == GradDecision::kNone || op.gradient == GradDecision::kNotImplemented) {
      EXPECT_FALSE(HasGradient(q)) << q;
    }
    // Not differentiable: the inputs of an ONNX op get no gradient, where an op without a
    // decision is an error when a loss depends on it.
    if (op.gradient == GradDecision::kNone && op.domain.empty()) {
      EXPECT_EQ(FindGradRule(q), kNoGradient) << q;
    }
  }
}

// The dtypes the catalog allows `op` at input `type_input` (output 0 when it is -1), read from its
// concrete kernel names; a variadic last input stands for every later one.
std::set<DType> CatalogDTypesAt(const std::string& op, int type_input) {
  std::set<DType> out;
  for (const std::string& name : KernelNamesForOp(op)) {
    auto sig = ParseKernelName(name);
    EXPECT_TRUE(sig.ok()) << sig.status().message();
    if (!sig.ok()) continue;
    if (type_input < 0) {
      if (!sig->outputs.empty()) out.insert(sig->outputs[0]);
    } else if (!sig->inputs.empty()) {
      const auto& in = sig->inputs[std::min<size_t>(type_input, sig->inputs.size() - 1)];
      if (in) out.insert(*in);
    }
  }
  return out;
}

TEST(OpRegistryTest, EveryCatalogSignatureHasACpuAndACudaKernel) {
  for (const OpDef& op : AllOps()) {
    const std::string q = QualifiedName(op);
    if (NeverInAPlan(op)) continue;
    ASSERT_TRUE(IsCatalogOp(q)) << q << " has no kernel-catalog row";
    // The CPU backend's resolution: its own kernel, else the shared (device) body on the host.
    const CpuKernelEntry* cpu = FindCpuBackendKernel(q);
    const emu::DevKernelEntry* dev = emu::FindDeviceKernel(q);
    ASSERT_NE(cpu, nullptr) << q << " has no CPU kernel";
    ASSERT_NE(dev, nullptr) << q << " has no CUDA kernel";
    ASSERT_TRUE(op.kernel.has_value()) << q << " has no signature (OpDef::kernel)";
    // An entry dispatches on its type operand: every dtype the signature allows there has a
    // kernel.
    auto expect_takes = [&](const char* backend, const std::vector<DType>& types, int type_input) {
      for (DType t : CatalogDTypesAt(q, type_input)) {
        EXPECT_NE(std::find(types.begin(), types.end(), t), types.end())
            << q << ": " << DTypeName(t) << " at the type operand has no " << backend
            << " kernel";
      }
    };
    expect_takes("CPU", cpu->types, cpu->type_input);
    expect_takes("CUDA", dev->types, dev->type_input);
  }
}

TEST(OpRegistryTest, TraitsHoldWhereTheyAreDeclared) {
  for (const OpDef& op : AllOps()) {
    const std::string q = QualifiedName(op);
    if (op.in_place != InPlace::kNo) {
      if (op.in_place != InPlace::kView) {
        EXPECT_TRUE(op.elementwise) << q << ": only elementwise kernels run in place";
      }
      EXPECT_EQ(op.max_outputs, 1) << q;
    }
  }
  for (const char* view : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
    EXPECT_EQ(FindOp("", view)->in_place, InPlace::kView) << view;
  EXPECT_TRUE(FindOp("", "Dropout")->random);
  EXPECT_FALSE(FindOp("", "Relu")->random);
}

// ---- the elementwise math body.

TEST(UnaryMathTest, EveryListedOpIsAnElementwiseOpOfTheTableWithItsDefaults) {
  std::vector<std::string> names;
#define A8_X(Name, Types, Cost, Fused) \
  if (UnaryTypes::k##Types != UnaryTypes::kVariant) names.push_back(#Name);
  A8_UNARY_OPS(A8_X)
#undef A8_X
  for (const std::string& name : names) {
    const OpDef* op = FindOp("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->elementwise) << name;
    const UnaryAttrs at = DefaultUnaryAttrs(name.c_str());
    for (const AttrSpec& spec : op->attrs) {
      if (spec.name == "alpha") {
        EXPECT_EQ(spec.default_value->f(), at.alpha) << name;
      }
      if (spec.name == "beta") {
        EXPECT_EQ(spec.default_value->f(), at.beta) << name;
      }
      if (spec.name == "gamma") {
        EXPECT_EQ(spec.default_value->f(), at.gamma) << name;
      }
      if (spec.name == "bias") {
        EXPECT_EQ(spec.default_value->f(), at.bias) << name;
      }
      if (spec.name == "lambd") {
        EXPECT_EQ(spec.default_value->f(), at.lambd) << name;
      }
    }
  }
}

TEST(UnaryMathTest, EveryListedGradientIsTheGradientOpOfAnActivation) {
#define A8_X(Name, Reads, Cost, Fused)                                 \
  if (GradReads::k##Reads != GradReads::kVariant) {                    \
    const OpDef* fwd = FindOp("", #Name);                              \
    ASSERT_NE(fwd, nullptr) << #Name;                                  \
    EXPECT_EQ(fwd->gradient, GradReads::k##Reads == GradReads::kOutput \
                                 ? GradDecision::kActivationOfOutput   \
                                 : GradDecision::kActivationOfInput)   \
        << #Name;                                                      \
    EXPECT_NE(FindOp("a8", #Name "Grad"), nullptr) << #Name;           \
  }
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
}

// d/dx f(x) by central differences in double, against NameGradF(dy = 1, z) with z = x or f(x).
// The points avoid the kinks (Relu, LeakyRelu at 0; HardSigmoid at -2.5 and 2.5).
TEST(UnaryMathTest, EveryActivationGradientIsTheDerivativeOfItsForwardBody) {
  const double points[] = {-2.3, -0.7, -0.05, 0.4, 1.9};
  auto check = [&](const char* name, auto f, auto grad, bool reads_output) {
    const UnaryAttrs at = DefaultUnaryAttrs(name);
    f.at = at;
    grad.at = at;
    int checked = 0;
    for (double x : points) {
      const double h = 1e-6;
      // Outside the domain (Asin, Acos, Atanh beyond 1, Acosh below 1) there is nothing to check.
      if (!std::isfinite(f(x - h)) || !std::isfinite(f(x + h))) continue;
      ++checked;
      const double numeric = (f(x + h) - f(x - h)) / (2 * h);
      const double z = reads_output ? f(x) : x;
      const double analytic = grad(1.0, z);
      EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::fabs(numeric)))
          << name << " at x = " << x;
    }
    EXPECT_GE(checked, 1) << name << ": no point of its domain";
  };
#define A8_X(Name, Reads, Cost, Fused) \
  check(#Name, Name##F{}, Name##GradF{}, GradReads::k##Reads == GradReads::kOutput);
  A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
}

}  // namespace
}  // namespace a8
