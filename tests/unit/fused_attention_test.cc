// a8.FusedAttention and a8.FusedAttentionGrad in the compiler (compiler/ir/op_table_attention.cc,
// passes/autodiff/grad_rules_attention.cc): the shape rules and their errors, the gradient
// through the compiled graph against central finite differences (GQA, causal with an offset, a
// differentiable bias, fully masked rows), which Attention imports as the fused op, and that the
// plan of an Attention model trained in amp holds no [B, H, S, S] buffer while LSE stays f32.
// The kernels themselves are tested against double precision in device_attention_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/plan/plan_file.h"
#include "driver/driver.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/onnx_test_util.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::CountOps;
using Dims = std::vector<int64_t>;
using shape_test::F32;
using shape_test::T;
using testing::ExpectGradientsMatch;
using testing::Fixed;
using testing::GradCheckCase;
using testing::GradCheckInput;

class FusedAttentionShapeTest : public shape_test::ShapeRulesFixture {};

TEST_F(FusedAttentionShapeTest, OutputsAreYAndF32Lse) {
  auto r = Infer("FusedAttention",
                 {In(T(DType::kF16, {2, 4, 5, 8})), In(T(DType::kF16, {2, 2, 7, 8})),
                  In(T(DType::kF16, {2, 2, 7, 6})), In(F32({5, 7}))},
                 {}, 2, 1, "a8");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], T(DType::kF16, {2, 4, 5, 6}));
  EXPECT_EQ((*r)[1], F32({2, 4, 5}));
  auto g = Infer("FusedAttentionGrad",
                 {In(T(DType::kF64, {1, 2, 3, 4})), In(T(DType::kF64, {1, 2, 3, 4})),
                  In(T(DType::kF64, {1, 1, 5, 4})), In(T(DType::kF64, {1, 1, 5, 4})),
                  In(T(DType::kF64, {1, 2, 3, 4})), In(T(DType::kF64, {1, 2, 3})),
                  In(T(DType::kF64, {1, 1, 1, 5}))},
                 {}, 4, 1, "a8");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)[2], T(DType::kF64, {1, 1, 5, 4}));
  EXPECT_EQ((*g)[3], T(DType::kF64, {1, 1, 1, 5}));
}

TEST_F(FusedAttentionShapeTest, BadInputsNameTheField) {
  auto err = [&](StatusOr<std::vector<TensorType>> r, const std::string& want) {
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("node 'n'"), std::string::npos) << r.status().message();
  };
  // 3 query heads on 2 kv heads.
  err(Infer("FusedAttention", {In(F32({1, 3, 2, 4})), In(F32({1, 2, 2, 4})), In(F32({1, 2, 2, 4}))},
            {}, 2, 1, "a8"),
      "with H a multiple of Hkv");
  err(Infer("FusedAttention",
            {In(F32({1, 2, 2, 4})), In(F32({1, 2, 3, 4})), In(F32({1, 2, 3, 4})), In(F32({2, 2}))},
            {}, 2, 1, "a8"),
      "input 'bias' f32[2,2] does not broadcast to [B, H, Sq, Sk] [1,2,2,3]");
  err(Infer("FusedAttention",
            {In(T(DType::kF16, {1, 1, 2, 4})), In(T(DType::kF16, {1, 1, 3, 4})),
             In(T(DType::kF16, {1, 1, 3, 4})), In(T(DType::kBF16, {2, 3}))},
            {}, 2, 1, "a8"),
      "input 'bias' bf16[2,3] must have Q's dtype or f32");
  err(Infer("FusedAttention", {In(F32({1, 2, 4})), In(F32({1, 2, 4})), In(F32({1, 2, 4}))}, {}, 2,
            1, "a8"),
      "'Q'");
  // LSE in f16 (the statistics are f32).
  err(Infer("FusedAttentionGrad",
            {In(T(DType::kF16, {1, 1, 2, 4})), In(T(DType::kF16, {1, 1, 2, 4})),
             In(T(DType::kF16, {1, 1, 2, 4})), In(T(DType::kF16, {1, 1, 2, 4})),
             In(T(DType::kF16, {1, 1, 2, 4})), In(T(DType::kF16, {1, 1, 2}))},
            {}, 3, 1, "a8"),
      "input 'LSE' f16[1,1,2] must be f32[1,1,2]");
}

GradCheckInput F64(Dims dims) { return testing::Input(DType::kF64, std::move(dims)); }

TEST(FusedAttentionGradTest, MatchesFiniteDifferences) {
  // Group-query heads (4 on 2), Sq != Sk, Dv != D, a differentiable [Sq, Sk] bias.
  GradCheckCase gqa;
  gqa.op = "a8.FusedAttention";
  gqa.inputs = {F64({1, 4, 3, 4}), F64({1, 2, 5, 4}), F64({1, 2, 5, 3}), F64({3, 5})};
  gqa.num_outputs = 2;
  gqa.loss_outputs = {0};
  ExpectGradientsMatch(gqa);
  // Causal, bottom-right (offset Sk - Sq), a scale, a bias broadcast over the batch.
  GradCheckCase causal = gqa;
  causal.inputs = {F64({2, 2, 3, 4}), F64({2, 2, 5, 4}), F64({2, 2, 5, 4}), F64({1, 2, 3, 5})};
  causal.attrs = {{"is_causal", Attribute(int64_t{1})},
                  {"causal_offset", Attribute(int64_t{2})},
                  {"scale", Attribute(0.4f)}};
  causal.seed = 7;
  ExpectGradientsMatch(causal);
  // A fixed bias whose second row is -inf everywhere, and a causal offset that masks the first
  // row too: their outputs and gradients are 0, never NaN.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> bias(12, 0.25);
  for (int j = 4; j < 8; ++j) bias[j] = -inf;
  GradCheckCase masked;
  masked.op = "a8.FusedAttention";
  masked.inputs = {F64({1, 1, 3, 4}), F64({1, 1, 4, 4}), F64({1, 1, 4, 2}),
                   Fixed(DType::kF64, {3, 4}, bias)};
  masked.attrs = {{"is_causal", Attribute(int64_t{1})}, {"causal_offset", Attribute(int64_t{-1})}};
  masked.num_outputs = 2;
  masked.loss_outputs = {0};
  ExpectGradientsMatch(masked);
}

TEST(FusedAttentionImportTest, AttentionImportsAsTheFusedOpUnlessItNeedsTheScores) {
  // 3-D GQA, causal, a bool mask: one a8.FusedAttention, no MatMul, Softmax or repeat.
  auto g = testing::ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 16] q, float[2, 6, 8] k, float[2, 6, 8] v, bool[4, 6] m) => (float[2, 4, 16] y) {
  y = Attention <q_num_heads = 4, kv_num_heads = 2, is_causal = 1> (q, k, v, m) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "FusedAttention"), 1);
  EXPECT_EQ(CountOps(**g, "MatMul") + CountOps(**g, "Softmax") + CountOps(**g, "Expand"), 0);
  // qk_matmul_output asked for, or a softcap: the decomposition.
  for (const char* attrs : {"qk_matmul_output_mode = 1", "softcap = 2.0"}) {
    SCOPED_TRACE(attrs);
    const bool qk = std::string(attrs).find("qk") == 0;
    auto d =
        testing::ImportText(std::string(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 3, 4] q, float[1, 2, 5, 4] k, float[1, 2, 5, 4] v) => (float[1, 2, 3, 4] y)") +
                            (qk ? ", float[1, 2, 3, 5] s" : "") + ") {\n  y" +
                            (qk ? ", , , s" : "") + " = Attention <" + attrs + "> (q, k, v) }");
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(CountOps(**d, "FusedAttention"), 0);
    EXPECT_EQ(CountOps(**d, "Softmax"), 1);
  }
}

// x [2, 24, 16] -> q, k, v = x W (trainable) -> Attention (2 heads of 8, causal) -> y, trained
// with an MSE loss in amp.
std::string AttentionModelFile() {
  onnx::ModelProto m = testing::ParseModelText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 24, 16] x, float[16, 16] wq, float[16, 16] wk, float[16, 16] wv) => (float[2, 24, 16] y) {
  q = MatMul (x, wq)
  k = MatMul (x, wk)
  v = MatMul (x, wv)
  y = Attention <q_num_heads = 2, kv_num_heads = 2, is_causal = 1> (q, k, v) })");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  onnx::GraphProto* graph = m.mutable_graph();
  for (const char* name : {"wq", "wk", "wv"}) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(16);
    t->add_dims(16);
    for (int i = 0; i < 256; ++i) t->add_float_data(u(rng));
  }
  // Only x stays a graph input.
  graph->mutable_input()->DeleteSubrange(1, 3);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("a8_fused_attention_" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

TEST(FusedAttentionPlanTest, AmpTrainingPlanHasNoScoreBuffer) {
  CompileOptions opts;
  opts.model = AttentionModelFile();
  opts.output = opts.model + ".plan";
  TrainingConfig training;
  training.loss = "mse";
  training.optimizer = "sgd";
  opts.config.training = training;
  opts.config.precision = PrecisionConfig{};  // amp
  std::ostringstream out;
  Status s = Compile(opts, out, [](const std::string&) {});
  ASSERT_TRUE(s.ok()) << s.message();
  auto pf = ReadPlanFile(opts.output);
  std::filesystem::remove(opts.model);
  std::filesystem::remove(opts.output);
  ASSERT_TRUE(pf.ok()) << pf.status().message();
  const plan::Plan& p = pf->plan;
  auto dtype = [&](int id) { return p.buffers(id).type().dtype(); };
  int fwd = 0, grad = 0;
  for (const plan::Kernel& k : p.kernels()) {
    EXPECT_NE(k.op(), "Softmax");
    if (k.op() == "a8.FusedAttention") {
      ++fwd;
      // Q, K, V and Y in f16 (allow), LSE in f32.
      for (int i = 0; i < 3; ++i) EXPECT_EQ(dtype(k.inputs(i)), plan::F16) << i;
      EXPECT_EQ(dtype(k.outputs(0)), plan::F16);
      EXPECT_EQ(dtype(k.outputs(1)), plan::F32);
    }
    if (k.op() == "a8.FusedAttentionGrad") {
      ++grad;
      EXPECT_EQ(dtype(k.inputs(0)), plan::F16);
      EXPECT_EQ(dtype(k.inputs(5)), plan::F32);
    }
  }
  EXPECT_EQ(fwd, 1);
  EXPECT_EQ(grad, 1);
  for (const plan::Buffer& b : p.buffers()) {
    const auto& d = b.type().dims();
    // [.., 24, 24]: a score or probability matrix over the sequence.
    EXPECT_FALSE(d.size() >= 2 && d[d.size() - 1] == 24 && d[d.size() - 2] == 24) << b.name();
  }
}

}  // namespace
}  // namespace a8
