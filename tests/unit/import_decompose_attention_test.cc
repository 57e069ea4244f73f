// Attention and RotaryEmbedding, imported as nodes of other ops (import_decompose_attention.cc;
// Attention as one a8.FusedAttention where it needs no score output or softcap): what they
// import as, the errors a bad node gets, and their gradients through the nodes they import as
// (the fused kernel or the decomposition) against finite differences (every differentiable output
// and input, causal and padding masks, GQA, the KV cache, softcap). Their values are checked by the
// ONNX node tests (onnx_node_tests).
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

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

TEST(ImportDecomposeAttentionTest, AttentionImportsAsFusedAttentionOrMatMulSoftmaxMatMul) {
  // The fused kernel: one a8.FusedAttention named as the node, no score tensor.
  auto f = ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 4, 8] q, float[2, 3, 6, 8] k, float[2, 3, 6, 8] v) => (float[2, 3, 4, 8] y) {
  y = Attention (q, k, v) })");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(CountOps(**f, "FusedAttention"), 1);
  EXPECT_EQ(CountOps(**f, "MatMul") + CountOps(**f, "Softmax"), 0);
  EXPECT_EQ((*f)->outputs()[0]->producer()->op(), "FusedAttention");
  EXPECT_EQ((*f)->outputs()[0]->producer()->name(), "Attention_0");
  // A softcap (not in the kernel): the decomposition.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 4, 8] q, float[2, 3, 6, 8] k, float[2, 3, 6, 8] v) => (float[2, 3, 4, 8] y) {
  y = Attention <softcap = 5.0> (q, k, v) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "FusedAttention"), 0);
  EXPECT_EQ(CountOps(**g, "MatMul"), 2);
  EXPECT_EQ(CountOps(**g, "Softmax"), 1);
  // Equal head counts: no GQA repeat; no mask: no bias, no fully-masked-row guard.
  EXPECT_EQ(CountOps(**g, "Expand"), 0);
  EXPECT_EQ(CountOps(**g, "Where"), 0);
  EXPECT_EQ((*g)->outputs()[0]->producer()->op(), "MatMul");
  EXPECT_EQ((*g)->outputs()[0]->producer()->name(), "Attention_0");
}

TEST(ImportDecomposeAttentionTest, SkippedPresentOutputsAndGqa) {
  // Y and qk_matmul_output with the present key and value skipped (empty names), 3-D GQA.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 16] q, float[2, 6, 8] k, float[2, 6, 8] v) => (float[2, 4, 16] y, float[2, 4, 4, 6] qk) {
  y, , , qk = Attention <q_num_heads = 4, kv_num_heads = 2, is_causal = 1, qk_matmul_output_mode = 3> (q, k, v) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Expand"), 2);  // K and V repeated for 4 query heads
  EXPECT_EQ((*g)->outputs()[1]->producer()->name(), "Attention_0.qk_matmul_output");
  EXPECT_EQ((*g)->outputs()[1]->type().ToString(), "f32[2,4,4,6]");
}

TEST(ImportDecomposeAttentionTest, AttentionAfterRotaryEmbeddingKnowsTheRank) {
  // onnx's inference in the importer may not know RotaryEmbedding (a newer opset than its own):
  // the decomposition tells the importer the rank of its output, which Attention needs.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 8] x, float[2, 3, 2] c, float[2, 3, 2] s) => (float[2, 3, 8] y) {
  qr = RotaryEmbedding <num_heads = 2> (x, c, s)
  kr = RotaryEmbedding <num_heads = 2, interleaved = 1> (x, c, s)
  y = Attention <q_num_heads = 2, kv_num_heads = 2> (qr, kr, kr) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->outputs()[0]->producer()->op(), "Reshape");
}

TEST(ImportDecomposeAttentionTest, GqaWithHeadCountsUnknownAtImport) {
  // Q and K made by other nodes: their head counts are unknown at import. The decomposition (a
  // softcap) repeats by Shape(Q)[1] / Shape(K)[1], which shape inference folds; the fused kernel
  // reads the kv head of each query head itself.
  for (const char* attrs : {"<softcap = 3.0> ", ""}) {
    SCOPED_TRACE(attrs);
    auto g = ImportText(std::string(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 3, 8] q, float[2, 2, 5, 8] k, float[2, 2, 5, 6] v) => (float[2, 4, 3, 6] y) {
  qa = Relu (q)
  ka = Relu (k)
  y = Attention )") + attrs +
                        "(qa, ka, v) }");
    ASSERT_TRUE(g.ok()) << g.status().message();
    const bool fused = std::string(attrs).empty();
    // K and V, each by Shape(Q)[1] / Shape(K)[1]
    EXPECT_EQ(CountOps(**g, "Expand"), fused ? 0 : 2);
    EXPECT_EQ(CountOps(**g, "FusedAttention"), fused ? 1 : 0);
    ASSERT_TRUE(ShapeInference().Run(**g).ok());
    EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[2,4,3,6]");
  }
}

TEST(ImportDecomposeAttentionTest, BadAttentionNodesGetOneClearError) {
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 16] q, float[2, 6, 8] k, float[2, 6, 8] v) => (float[2, 4, 16] y) {
  y = Attention <q_num_heads = 4> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'Attention_0' (Attention): 3-D inputs need positive "
                                     "attributes q_num_heads and kv_num_heads, got 4 and 0"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 16] q, float[2, 6, 8] k, float[2, 6, 8] v) => (float[2, 4, 16] y) {
  y = Attention <q_num_heads = 3, kv_num_heads = 2> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("q_num_heads 3 is not a multiple of kv_num_heads 2"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v, float[1, 2, 2, 4] pk) => (float[1, 2, 3, 4] y) {
  y = Attention (q, k, v, , pk) })");
  EXPECT_THAT(s.message(), HasSubstr("'past_key' and 'past_value' must be given together"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v, bool[3, 5] m) => (float[1, 2, 3, 4] y) {
  y = Attention (q, k, v, m) })");
  EXPECT_THAT(s.message(),
              HasSubstr("attn_mask's last dim 5 is longer than the total kv length 3"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v) => (float[1, 2, 3, 4] y) {
  y = Attention <scale = -0.5> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'scale' -0.5 is negative or NaN"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v) => (float[1, 2, 3, 4] y) {
  y = Attention <softmax_precision = 7> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'softmax_precision' 7 is not a float type"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v) => (float[1, 2, 3, 4] y) {
  y = Attention <left_window_size = 2> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("(Attention): unknown attribute 'left_window_size'"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 25]>
g (float[1, 2, 3, 4] q, float[1, 2, 3, 4] k, float[1, 2, 3, 4] v) => (float[1, 2, 3, 4] y) {
  y = Attention <q_num_heads = 2, kv_num_heads = 2> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("must not be given for 4-D inputs"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 3, 4] x, float[3, 2] c, float[3, 2] s) => (float[1, 3, 4] y) {
  y = RotaryEmbedding (x, c, s) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'RotaryEmbedding_0' (RotaryEmbedding): a 3-D X needs a "
                                     "positive attribute 'num_heads', got 0"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 1, 3, 4] x, float[1, 3, 2] c, float[1, 3, 2] s) => (float[1, 1, 3, 4] y) {
  y = RotaryEmbedding <rotary_embedding_dim = 3> (x, c, s) })");
  EXPECT_THAT(s.message(), HasSubstr("'rotary_embedding_dim' must be even and non-negative"));
}

TEST(ImportDecomposeAttentionTest, AttentionGradientsMatchFiniteDifferences) {
  // 4-D, the default scale.
  ExpectGradientsMatch(DecomposedGradCase(
      "Attention", 23, {}, {F64({1, 2, 3, 4}), F64({1, 2, 5, 4}), F64({1, 2, 5, 3})}));
  // Causal with a float mask shorter than the kv length (padded with -inf), softcap, scale: the
  // mask is differentiable too.
  ExpectGradientsMatch(
      DecomposedGradCase("Attention", 23,
                         {{"is_causal", Attribute(int64_t{1})},
                          {"softcap", Attribute(2.0f)},
                          {"scale", Attribute(0.3f)}},
                         {F64({1, 2, 4, 3}), F64({1, 2, 4, 3}), F64({1, 2, 4, 2}), F64({4, 3})}));
  // 3-D GQA (4 query heads, 2 kv heads) with a bool mask whose second row attends to nothing
  // (its output and gradients are zero, never NaN).
  ExpectGradientsMatch(DecomposedGradCase(
      "Attention", 23,
      {{"q_num_heads", Attribute(int64_t{4})}, {"kv_num_heads", Attribute(int64_t{2})}},
      {F64({2, 3, 8}), F64({2, 4, 4}), F64({2, 4, 6}),
       Fixed(DType::kBool, {3, 4}, {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0})}));
  // The KV cache: every output (Y, present_key, present_value, qk_matmul_output) with respect
  // to Q, K, V, the float mask and the past key and value, causal from the past length (not in
  // mode 2, whose output then holds -inf).
  for (int64_t mode : {0, 1, 2, 3}) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    ExpectGradientsMatch(
        DecomposedGradCase("Attention", 23,
                           {{"is_causal", Attribute(int64_t{mode != 2})},
                            {"softcap", Attribute(1.5f)},
                            {"qk_matmul_output_mode", Attribute(mode)}},
                           {F64({1, 2, 2, 3}), F64({1, 2, 2, 3}), F64({1, 2, 2, 3}),
                            F64({1, 1, 2, 4}), F64({1, 2, 2, 3}), F64({1, 2, 2, 3})},
                           4));
  }
  // Attention-24's external cache: padding and bottom-right causal alignment per batch; the
  // second batch's first query row is fully masked (nonpad 2 < 3 queries).
  ExpectGradientsMatch(
      DecomposedGradCase("Attention", 24, {{"is_causal", Attribute(int64_t{1})}},
                         {F64({2, 1, 3, 2}), F64({2, 1, 5, 2}), F64({2, 1, 5, 2}), Absent(),
                          Absent(), Absent(), Fixed(DType::kI64, {2}, {4, 2})}));
  // Attention-25's sliding window, with softmax in float.
  GradCheckCase window =
      DecomposedGradCase("Attention", 25,
                         {{"left_window_size", Attribute(int64_t{1})},
                          {"right_window_size", Attribute(int64_t{1})},
                          {"softmax_precision", Attribute(int64_t{1})}},
                         {F64({1, 1, 4, 2}), F64({1, 1, 4, 2}), F64({1, 1, 4, 2})});
  window.eps = 1e-3;
  window.rtol = 1e-3;
  window.atol = 1e-5;
  ExpectGradientsMatch(window);
}

TEST(ImportDecomposeAttentionTest, FlexAttentionOfThePreviewDomain) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 26, "ai.onnx.preview" : 1]>
g (float[2, 4, 3, 8] q, float[2, 2, 5, 8] k, float[2, 2, 5, 6] v) => (float[2, 4, 3, 6] y) {
  y = ai.onnx.preview.FlexAttention <scale = 0.5> (q, k, v) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "MatMul"), 2);
  EXPECT_EQ(CountOps(**g, "Expand"), 2);  // GQA: K and V repeated for 4 query heads
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[2,4,3,6]");
}

TEST(ImportDecomposeAttentionTest, FlexAttentionModifiersAreInlined) {
  // score_mod (a soft cap reading an outer constant) and prob_mod, between the two halves.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 26, "ai.onnx.preview" : 1]>
g (float[1, 2, 3, 4] q, float[1, 1, 5, 4] k, float[1, 1, 5, 4] v) => (float[1, 2, 3, 4] y) {
  cap = Constant <value = float {20.0}> ()
  y = ai.onnx.preview.FlexAttention <scale = 0.25,
        score_mod = sm (float[1, 2, 3, 5] s) => (float[1, 2, 3, 5] t) {
          d = Div (s, cap)
          h = Tanh (d)
          t = Mul (h, cap) },
        prob_mod = pm (float[1, 2, 3, 5] p) => (float[1, 2, 3, 5] r) {
          half = Constant <value = float {0.5}> ()
          r = Mul (p, half) }> (q, k, v) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "MatMul"), 2);
  EXPECT_EQ(CountOps(**g, "Softmax"), 1);
  EXPECT_EQ(CountOps(**g, "Tanh"), 1);
  EXPECT_EQ(CountOps(**g, "Expand"), 2);  // GQA: K (scores half) and V (output half)
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[1,2,3,4]");
  // The Softmax reads score_mod's output; the output half's MatMul reads prob_mod's.
  Node* softmax = nullptr;
  for (Node* n : (*g)->NodeList()) {
    if (n->op() == "Softmax") softmax = n;
  }
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->input(0)->producer()->op(), "Mul");
  bool matmul_reads_prob_mod = false;
  for (Node* n : (*g)->NodeList()) {
    if (n->op() == "MatMul" && n->input(0)->producer()->op() == "Mul") matmul_reads_prob_mod = true;
  }
  EXPECT_TRUE(matmul_reads_prob_mod);
  // A subgraph with two outputs, and an unknown graph attribute, are errors naming them.
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 26, "ai.onnx.preview" : 1]>
g (float[1, 1, 2, 4] q, float[1, 1, 2, 4] k, float[1, 1, 2, 4] v) => (float[1, 1, 2, 4] y) {
  y = ai.onnx.preview.FlexAttention <score_mod = m (float[1, 1, 2, 2] s) => (float[1, 1, 2, 2] t,
                                                                             float[1, 1, 2, 2] u) {
    t = Neg (s)
    u = Neg (s) }> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("(ai.onnx.preview.FlexAttention): the score_mod subgraph "
                                     "has 2 outputs, expected one"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 26, "ai.onnx.preview" : 1]>
g (float[1, 1, 2, 4] q, float[1, 1, 2, 4] k, float[1, 1, 2, 4] v) => (float[1, 1, 2, 4] y) {
  y = ai.onnx.preview.FlexAttention <mask_mod = m (float[1, 1, 2, 2] s) => (float[1, 1, 2, 2] t) {
    t = Neg (s) }> (q, k, v) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'mask_mod' is a graph; FlexAttention's are "
                                     "score_mod and prob_mod"));
}

// The two halves the importer splits a FlexAttention with modifiers into, around modifier nodes
// (a soft cap on the scores, a scale on the probabilities) and the Softmax, as the importer
// inlines them: the gradients of Q, K and V through all of it.
TEST(ImportDecomposeAttentionTest, FlexAttentionModifierGradientsMatchFiniteDifferences) {
  GradCheckCase c;
  c.op = "FlexAttention";
  c.inputs = {F64({1, 2, 3, 4}), F64({1, 1, 5, 4}), F64({1, 1, 5, 3})};
  c.build = [](Graph& g, const std::vector<Value*>& qkv) -> StatusOr<std::vector<Value*>> {
    auto half = [&](const std::string& stage, std::vector<Value*> inputs,
                    const std::string& out) -> StatusOr<Value*> {
      DecomposeRequest req;
      req.op = "FlexAttention";
      req.version = 1;
      req.inputs = std::move(inputs);
      req.attrs = {{"a8.stage", Attribute(stage)}, {"scale", Attribute(0.3f)}};
      req.known_dims = [](const Value* v) -> std::optional<std::vector<int64_t>> {
        return v->dims();
      };
      A8_ASSIGN_OR_RETURN(std::vector<Value*> outs, DecomposeAsImported(g, std::move(req), 1, out));
      return outs[0];
    };
    A8_ASSIGN_OR_RETURN(Value * scores, half("scores", qkv, "scores"));
    // score_mod: 2 * tanh(s / 2); prob_mod: p * p (both differentiable, neither linear).
    auto emit = [&](const std::string& op, std::vector<Value*> in, const std::string& name,
                    std::map<std::string, Attribute> attrs = {}) {
      Node* n = g.AddNode(op, "", std::move(in), {{name, TensorType{}}}, std::move(attrs), name);
      n->set_version(FindOp("", op)->canonical);
      return n->output(0);
    };
    auto two_data = TensorData::Make(TensorType{DType::kF64, {}});
    two_data->mutable_data<double>()[0] = 2.0;
    Value* two = g.AddConstant("two", two_data);
    Value* capped =
        emit("Mul", {emit("Tanh", {emit("Div", {scores, two}, "s_half")}, "s_tanh"), two}, "s2");
    Value* probs = emit("Softmax", {capped}, "probs", {{"axis", Attribute(int64_t{-1})}});
    Value* squared = emit("Mul", {probs, probs}, "p2");
    std::vector<Value*> inputs = qkv;
    inputs.push_back(squared);
    A8_ASSIGN_OR_RETURN(Value * y, half("output", inputs, "y"));
    return std::vector<Value*>{y};
  };
  ExpectGradientsMatch(c);
}

TEST(ImportDecomposeAttentionTest, FlexAttentionGradientsMatchFiniteDifferences) {
  // GQA (2 query heads on 1 kv head), the default scale, softmax in double.
  ExpectGradientsMatch(DecomposedGradCase(
      "FlexAttention", 1, {}, {F64({1, 2, 3, 4}), F64({1, 1, 5, 4}), F64({1, 1, 5, 3})}));
}

TEST(ImportDecomposeAttentionTest, RotaryEmbeddingGradientsMatchFiniteDifferences) {
  for (int64_t interleaved : {0, 1}) {
    SCOPED_TRACE("interleaved " + std::to_string(interleaved));
    // 4-D [B, H, S, D] with position ids into [max_pos, rd / 2] caches, a partial rotation.
    ExpectGradientsMatch(DecomposedGradCase(
        "RotaryEmbedding", 23,
        {{"interleaved", Attribute(interleaved)}, {"rotary_embedding_dim", Attribute(int64_t{4})}},
        {F64({1, 2, 3, 6}), F64({5, 2}), F64({5, 2}), Fixed(DType::kI64, {1, 3}, {4, 0, 2})}));
    // 3-D [B, S, H * D] without position ids: caches [B, S, D / 2].
    ExpectGradientsMatch(DecomposedGradCase(
        "RotaryEmbedding", 23,
        {{"interleaved", Attribute(interleaved)}, {"num_heads", Attribute(int64_t{2})}},
        {F64({2, 3, 8}), F64({2, 3, 2}), F64({2, 3, 2})}));
  }
}

}  // namespace
}  // namespace a8::testing
