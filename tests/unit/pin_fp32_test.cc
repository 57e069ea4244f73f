// pin-fp32 (PinFp32): after assign-precision, LayerNorm and BatchNorm that compute in FP32 by the
// default lists but read a low-precision X get `a8.edge` (statistics in FP32, X and Y in the low
// type); a user override gets no edge; a graph without low-precision producers gets none.
#include "passes/mixed_precision/pin_fp32.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "passes/mixed_precision/assign_precision.h"
#include "passes/mixed_precision/policy.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::NodeNamed;
using ::a8::testing::ParseOrFail;

// MatMul (allow) -> LayerNormalization (deny) -> MatMul.
constexpr const char* kLayerNorm = R"(graph @t opsets {"" = 17} {
  input %x : f32[2,4]
  param %w : f32[4,4] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5, 0.75, -1.0, 0.5, 0.25, -0.125, 0.625, -0.375]
  param %g : f32[4] = [1, 1, 1, 1]
  param %b : f32[4] = [0, 0, 0, 0]
  %h = MatMul(%x, %w) : f32[2,4] loc("mm0")
  %n = LayerNormalization(%h, %g, %b) {axis=-1, epsilon=1e-5} : f32[2,4] loc("ln")
  %y = MatMul(%n, %w) : f32[2,4] loc("mm1")
  output %y
})";

StatusOr<bool> AssignThenPin(Graph& g, PrecisionMode mode,
                             std::vector<PrecisionOverride> overrides = {}) {
  CompileConfig config;
  config.precision = PrecisionConfig{};
  config.precision->mode = mode;
  config.precision->overrides = std::move(overrides);
  auto assigned = AssignPrecision().SetConfig(&config).Run(g);
  if (!assigned.ok()) return assigned.status();
  return PinFp32().SetConfig(&config).Run(g);
}

TEST(PinFp32Test, LayerNormReadingF16GetsAnF16EdgeAndFp32Statistics) {
  auto g = ParseOrFail(kLayerNorm);
  ASSERT_NE(g, nullptr);
  auto changed = AssignThenPin(*g, PrecisionMode::kAmp);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  const Node* ln = NodeNamed(*g, "ln");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->GetString("a8.precision", ""), "f32");
  EXPECT_EQ(EdgePrecision(*ln), DType::kF16);
  EXPECT_FALSE(EdgePrecision(*NodeNamed(*g, "mm0")).has_value());
}

TEST(PinFp32Test, Bf16ModeGivesABf16Edge) {
  auto g = ParseOrFail(kLayerNorm);
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(AssignThenPin(*g, PrecisionMode::kBf16).ok());
  EXPECT_EQ(EdgePrecision(*NodeNamed(*g, "ln")), DType::kBF16);
}

TEST(PinFp32Test, AUserOverrideGetsNoEdge) {
  auto g = ParseOrFail(kLayerNorm);
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(
      AssignThenPin(*g, PrecisionMode::kAmp, {PrecisionOverride::Fp32Ops({"LayerNormalization"})})
          .ok());
  const Node* ln = NodeNamed(*g, "ln");
  EXPECT_EQ(ln->GetString("a8.precision", ""), "f32");
  EXPECT_FALSE(EdgePrecision(*ln).has_value());
}

TEST(PinFp32Test, Fp32ModeChangesNothing) {
  auto g = ParseOrFail(kLayerNorm);
  ASSERT_NE(g, nullptr);
  auto changed = AssignThenPin(*g, PrecisionMode::kFp32);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_FALSE(EdgePrecision(*NodeNamed(*g, "ln")).has_value());
}

}  // namespace
}  // namespace a8
