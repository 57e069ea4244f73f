// LinearAttention and CausalConvWithState, imported as nodes of other ops
// (import_decompose_linear_attention.cc): what they import as, the errors a bad node gets, and
// their gradients through the decomposition against finite differences (every update rule, GQA,
// the past state). Their values are checked by the ONNX node tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/decompose_test_util.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using namespace ::a8::testing;  // ImportText, the gradient-check cases (the headers above)
using ::testing::HasSubstr;

TEST(ImportDecomposeLinearAttentionTest, UnrolledOverTheSequence) {
  // 3 steps of gated delta with GQA (4 query heads on 2 kv heads): per step the retrieval, the
  // write and the read are one MatMul each.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 6] v, float[2, 3, 8] d, float[2, 3, 2] b) => (float[2, 3, 12] y, float[2, 2, 4, 3] s) {
  y, s = LinearAttention <q_num_heads = 4, kv_num_heads = 2> (q, k, v, , d, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "MatMul"), 3 * 3);
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[2,3,12]");
  EXPECT_EQ((*g)->outputs()[1]->type().ToString(), "f32[2,2,4,3]");
}

TEST(ImportDecomposeLinearAttentionTest, CausalConvIsConcatConvSlice) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 4, 5] x, float[4, 1, 3] w, float[2, 4, 2] past) => (float[2, 4, 5] y, float[2, 4, 2] s) {
  y, s = CausalConvWithState <activation = "silu"> (x, w, , past) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Conv"), 1);
  EXPECT_EQ(CountOps(**g, "Sigmoid"), 1);
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[1]->type().ToString(), "f32[2,4,2]");
}

TEST(ImportDecomposeLinearAttentionTest, BadNodesGetOneClearError) {
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 8] v) => (float[2, 3, 16] y) {
  y = LinearAttention <q_num_heads = 4, kv_num_heads = 3, update_rule = "linear"> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'LinearAttention_0' (LinearAttention): q_num_heads 4 "
                                     "must be a positive multiple of kv_num_heads 3"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 8] v) => (float[2, 3, 16] y) {
  y = LinearAttention <q_num_heads = 4, kv_num_heads = 2> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("update_rule 'gated_delta' requires input 'decay'"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 8] v, float[2, 3, 2] b) => (float[2, 3, 16] y) {
  y = LinearAttention <q_num_heads = 4, kv_num_heads = 2, update_rule = "linear"> (q, k, v, , , b) })");
  EXPECT_THAT(s.message(), HasSubstr("update_rule 'linear' forbids input 'beta'"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 8] v, float[2, 3, 5] d) => (float[2, 3, 16] y) {
  y = LinearAttention <q_num_heads = 4, kv_num_heads = 2, update_rule = "gated"> (q, k, v, , d) })");
  EXPECT_THAT(s.message(), HasSubstr("decay's last dim 5 must be kv_num_heads (2) or "
                                     "kv_num_heads * d_k (8)"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 3, 16] q, float[2, 3, 8] k, float[2, 3, 8] v) => (float[2, 3, 16] y) {
  y = LinearAttention <q_num_heads = 4, kv_num_heads = 2, update_rule = "fast"> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'update_rule' 'fast' must be linear, gated, delta "
                                     "or gated_delta"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 4, 5] x, float[4, 1, 3] w) => (float[2, 4, 5] y) {
  y = CausalConvWithState <activation = "gelu"> (x, w) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'CausalConvWithState_0' (CausalConvWithState): "
                                     "attribute 'activation' 'gelu' must be none, silu or swish"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 27]>
g (float[2, 4, 5] x, float[4, 2, 3] w) => (float[2, 4, 5] y) {
  y = CausalConvWithState (x, w) })");
  EXPECT_THAT(s.message(), HasSubstr("weight [4, 2, 3] must be [channels, 1, k] with k >= 1"));
}

GradCheckInput Decay(std::vector<int64_t> dims) {
  // exp(decay) in (0.5, 1]: a decaying state.
  GradCheckInput in = F64(std::move(dims));
  int64_t n = 1;
  for (int64_t d : in.type.dims) n *= d;
  for (int64_t i = 0; i < n; ++i) in.values.push_back(-0.05 * static_cast<double>(1 + i % 7));
  return in;
}

TEST(ImportDecomposeLinearAttentionTest, LinearAttentionGradientsMatchFiniteDifferences) {
  // Every update rule on 3 steps, 2 query heads on 1 kv head (GQA), d_k 2, d_v 3; both outputs
  // with respect to query, key, value, the past state, decay and beta.
  for (const char* rule : {"linear", "gated", "delta", "gated_delta"}) {
    SCOPED_TRACE(rule);
    const bool gated = std::string(rule).find("gated") != std::string::npos;
    const bool delta = std::string(rule).find("delta") != std::string::npos;
    ExpectGradientsMatch(
        DecomposedGradCase("LinearAttention", 27,
                           {{"q_num_heads", Attribute(int64_t{2})},
                            {"kv_num_heads", Attribute(int64_t{1})},
                            {"update_rule", Attribute(rule)}},
                           {F64({2, 3, 4}), F64({2, 3, 2}), F64({2, 3, 3}), F64({2, 1, 2, 3}),
                            gated ? Decay({2, 3, 2}) : Absent(), delta ? F64({2, 3, 1}) : Absent()},
                           2));
  }
  // Per-head decay, beta per kv head, an explicit scale, no past state.
  ExpectGradientsMatch(DecomposedGradCase(
      "LinearAttention", 27,
      {{"q_num_heads", Attribute(int64_t{2})},
       {"kv_num_heads", Attribute(int64_t{2})},
       {"scale", Attribute(0.5f)}},
      {F64({1, 2, 4}), F64({1, 2, 4}), F64({1, 2, 2}), Absent(), Decay({1, 2, 2}), F64({1, 2, 2})},
      2));
}

TEST(ImportDecomposeLinearAttentionTest, CausalConvGradientsMatchFiniteDifferences) {
  for (const char* activation : {"none", "silu"}) {
    SCOPED_TRACE(activation);
    ExpectGradientsMatch(
        DecomposedGradCase("CausalConvWithState", 27, {{"activation", Attribute(activation)}},
                           {F64({2, 3, 4}), F64({3, 1, 3}), F64({3}), F64({2, 3, 2})}, 2));
  }
  // Without a past state: zeros before the input.
  ExpectGradientsMatch(
      DecomposedGradCase("CausalConvWithState", 27, {}, {F64({1, 2, 3}), F64({2, 1, 2})}, 2));
}

}  // namespace
}  // namespace a8
