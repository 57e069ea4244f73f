// fold-batchnorm (FoldBatchNorm): Conv -> inference BatchNormalization becomes one Conv whose
// weights and bias are the formula's, computed here again in double from the original tensors;
// the output keeps the BN's name and both ONNX nodes; training compiles, shared Conv outputs,
// statistics that are not data and training-mode BNs are left alone.
#include "passes/fusion/fold_batchnorm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/ir/verifier.h"
#include "compiler/pass/compile_config.h"
#include "tests/unit/ir_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::CountOp;
using ::a8::testing::ParseOrFail;
using ::a8::testing::RunPass;

// Two output channels, groups of one input channel each, 1x1 kernels; `bias` adds the Conv's B;
// `extra` is appended inside the graph (another use, another output).
std::string ConvBn(bool bias, const std::string& bn_attrs = "{epsilon=0.001}",
                   const std::string& extra = "") {
  return std::string(R"(graph @t opsets {"" = 17} {
  input %x : f32[1,2,2,2]
  param %w : f32[2,1,1,1] = [0.5, -2.0]
  param %b : f32[2] = [0.25, -1.0]
  param %scale : f32[2] = [1.5, 0.75]
  param %beta : f32[2] = [0.1, -0.2]
  param %mean : f32[2] = [0.3, -0.4]
  param %var : f32[2] = [4.0, 0.25]
  %c = Conv(%x, %w)") +
         (bias ? ", %b" : "") + R"() {group=2, kernel_shape=[1, 1]} : f32[1,2,2,2] loc("conv")
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) )" +
         bn_attrs + R"( : f32[1,2,2,2] loc("bn")
  %z = Relu(%y) : f32[1,2,2,2]
  output %z
)" + extra +
         "}";
}

std::vector<float> Floats(const Value* v) {
  const TensorData& d = *v->data();
  return std::vector<float>(d.data<float>(), d.data<float>() + d.num_elements());
}

TEST(FoldBatchNormTest, ConvAndBatchNormBecomeOneConvWithTheFoldedWeightsAndBias) {
  for (bool bias : {false, true}) {
    auto g = ParseOrFail(ConvBn(bias));
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(RunPass(FoldBatchNorm(), *g));
    EXPECT_EQ(CountOp(*g, "BatchNormalization"), 0);
    EXPECT_EQ(CountOp(*g, "Conv"), 1);
    const Node* conv = g->FindValue("y")->producer();
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->op(), "Conv");
    EXPECT_EQ(conv->name(), "conv");
    EXPECT_EQ(conv->input(0), g->FindValue("x"));
    EXPECT_EQ(conv->GetInt("group", 1), 2);
    ASSERT_NE(conv->attr("a8.onnx_nodes"), nullptr);
    EXPECT_EQ(conv->attr("a8.onnx_nodes")->strings(), (std::vector<std::string>{"conv", "bn"}));
    // s = scale / sqrt(var + eps); W' = W s; B' = (B - mean) s + beta.
    const double w[] = {0.5, -2.0}, b[] = {0.25, -1.0}, scale[] = {1.5, 0.75}, beta[] = {0.1, -0.2},
                 mean[] = {0.3, -0.4}, var[] = {4.0, 0.25};
    const std::vector<float> w2 = Floats(conv->input(1)), b2 = Floats(conv->input(2));
    ASSERT_EQ(w2.size(), 2u);
    ASSERT_EQ(b2.size(), 2u);
    for (int c = 0; c < 2; ++c) {
      const double s = scale[c] / std::sqrt(var[c] + 0.001);
      EXPECT_FLOAT_EQ(w2[c], static_cast<float>(w[c] * s)) << c;
      EXPECT_FLOAT_EQ(b2[c], static_cast<float>(((bias ? b[c] : 0.0) - mean[c]) * s + beta[c]))
          << c;
    }
    // The old weights and statistics went with the nodes that read them.
    for (const char* gone : {"w", "scale", "beta", "mean", "var", "c"}) {
      EXPECT_EQ(g->FindValue(gone), nullptr) << gone;
    }
    EXPECT_EQ(g->FindValue("b") == nullptr, bias);  // unread without the Conv's bias: not ours
    EXPECT_TRUE(Verify(*g).ok());
    EXPECT_FALSE(*FoldBatchNorm().Run(*g));
  }
}

TEST(FoldBatchNormTest, ABatchNormReadingOneInitializerTwiceFoldsAndErasesItOnce) {
  // Exporters that merge equal initializers give bias and mean (zeros), scale and var (ones) one
  // tensor each.
  auto g = ParseOrFail(R"(graph @t opsets {"" = 17} {
  input %x : f32[1,2,2,2]
  param %w : f32[2,2,1,1] = [1.0, 2.0, 3.0, 4.0]
  param %zeros : f32[2] = [0.0, 0.0]
  param %ones : f32[2] = [1.0, 1.0]
  %c = Conv(%x, %w) {kernel_shape=[1, 1]} : f32[1,2,2,2]
  %y = BatchNormalization(%c, %ones, %zeros, %zeros, %ones) {epsilon=0.0} : f32[1,2,2,2]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunPass(FoldBatchNorm(), *g));
  EXPECT_EQ(g->FindValue("zeros"), nullptr);
  EXPECT_EQ(g->FindValue("ones"), nullptr);
  EXPECT_EQ(Floats(g->FindValue("y")->producer()->input(1)),
            (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_TRUE(Verify(*g).ok());
}

TEST(FoldBatchNormTest, TrainingCompilesKeepTheBatchNorm) {
  auto g = ParseOrFail(ConvBn(true));
  ASSERT_NE(g, nullptr);
  CompileConfig config;
  config.training = TrainingConfig{};
  EXPECT_FALSE(*FoldBatchNorm().SetConfig(&config).Run(*g));
  EXPECT_EQ(CountOp(*g, "BatchNormalization"), 1);
}

TEST(FoldBatchNormTest, AConvOutputReadElsewhereOrATrainingModeBatchNormIsLeftAlone) {
  for (const std::string& text :
       {ConvBn(true, "{epsilon=0.001}", "  output %c\n"),
        ConvBn(true, "{epsilon=0.001}", "  %d = Neg(%c) : f32[1,2,2,2]\n  output %d\n"),
        ConvBn(true, "{epsilon=0.001, training_mode=1}")}) {
    auto g = ParseOrFail(text);
    ASSERT_NE(g, nullptr);
    EXPECT_FALSE(RunPass(FoldBatchNorm(), *g)) << text;
    EXPECT_EQ(CountOp(*g, "BatchNormalization"), 1) << text;
  }
}

TEST(FoldBatchNormTest, StatisticsThatAreGraphInputsAreNotFolded) {
  auto g = ParseOrFail(R"(graph @t opsets {"" = 17} {
  input %x : f32[1,2,2,2]
  input %mean : f32[2]
  param %w : f32[2,2,1,1] = [1.0, 0.0, 0.0, 1.0]
  param %scale : f32[2] = [1.0, 1.0]
  param %beta : f32[2] = [0.0, 0.0]
  param %var : f32[2] = [1.0, 1.0]
  %c = Conv(%x, %w) {kernel_shape=[1, 1]} : f32[1,2,2,2]
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) : f32[1,2,2,2]
  output %y
})");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(RunPass(FoldBatchNorm(), *g));
  EXPECT_EQ(CountOp(*g, "BatchNormalization"), 1);
}

}  // namespace
}  // namespace a8
