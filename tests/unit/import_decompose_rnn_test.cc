// RNN, GRU and LSTM imported as their recurrence unrolled (import_decompose_rnn.cc): what they
// import as, the errors a bad node gets, and training through them: the gradients of every output
// with respect to X, W, R, B, the initial states and the peepholes against finite differences.
// Their values are checked by the ONNX node tests and the schema history test.
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

TEST(ImportDecomposeRnnTest, LstmUnrollsOneMatMulPerStepAndDirection) {
  // Bidirectional over 3 steps: per direction one GEMM for X W^T and one H R^T per step.
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[2, 20, 4] w, float[2, 20, 5] r) => (float[3, 2, 2, 5] y, float[2, 2, 5] yh, float[2, 2, 5] yc) {
  y, yh, yc = LSTM <hidden_size = 5, direction = "bidirectional"> (x, w, r) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "MatMul"), 2 * (1 + 3));
  EXPECT_EQ(CountOps(**g, "Sigmoid"), 2 * 3 * 3);
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[3,2,2,5]");
  EXPECT_EQ((*g)->outputs()[2]->type().ToString(), "f32[2,2,5]");
}

TEST(ImportDecomposeRnnTest, BatchFirstLayout) {
  // layout 1: X [B, S, I], Y [B, S, D, H], Y_h [B, D, H]. (Y absent, only Y_h: the node tests
  // test_*_defaults.)
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[2, 3, 4] x, float[1, 9, 4] w, float[1, 9, 3] r) => (float[2, 3, 1, 3] y, float[2, 1, 3] yh) {
  y, yh = GRU <hidden_size = 3, layout = 1, linear_before_reset = 1> (x, w, r) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(ShapeInference().Run(**g).ok());
  EXPECT_EQ((*g)->outputs()[0]->type().ToString(), "f32[2,3,1,3]");
  EXPECT_EQ((*g)->outputs()[1]->type().ToString(), "f32[2,1,3]");
  EXPECT_EQ((*g)->outputs()[1]->producer()->name(), "GRU_0.Y_h");
}

TEST(ImportDecomposeRnnTest, BadRecurrentNodesGetOneClearError) {
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[1, 4, 4] w, float[1, 4, 4] r) => (float[3, 1, 2, 4] y) {
  y = RNN <hidden_size = 4, activations = ["Gelu"]> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'RNN_0' (RNN): attribute 'activations' names 'Gelu', "
                                     "not an RNN activation"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[2, 4, 4] w, float[2, 4, 4] r) => (float[3, 2, 2, 4] y) {
  y = RNN <hidden_size = 4, direction = "bidirectional", activations = ["Tanh"]> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'activations' has 1 names; RNN with 2 "
                                     "direction(s) takes 2 (1 per direction)"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[1, 4, 4] w, float[1, 4, 4] r) => (float[3, 1, 2, 4] y) {
  y = RNN <hidden_size = 4, direction = "sideways"> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'direction' 'sideways' must be forward, reverse "
                                     "or bidirectional"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[1, 12, 4] w, float[1, 12, 3] r) => (float[3, 1, 2, 3] y) {
  y = GRU <hidden_size = 4> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'hidden_size' 4 does not match R's last dim 3"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 13]>
g (float[3, 2, 4] x, float[1, 12, 4] w, float[1, 12, 3] r) => (float[3, 1, 2, 3] y) {
  y = GRU <hidden_size = 3, layout = 1> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("unknown attribute 'layout' (GRU-7)"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[1, 16, 4] w, float[1, 16, 4] r) => (float[3, 1, 2, 4] y) {
  y = LSTM <hidden_size = 4, clip = -1.0> (x, w, r) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'clip' must be positive, got -1"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[3, 2, 4] x, float[1, 16, 4] w, float[1, 16, 4] r) => (float[3, 1, 2, 4] y) {
  lens = Constant <value = int32[2] {3, 5}> ()
  y = LSTM <hidden_size = 4> (x, w, r, , lens) })");
  EXPECT_THAT(s.message(), HasSubstr("sequence_lens[1] = 5 is outside [0, 3]"));
}

GradCheckInput Lengths(std::vector<double> values) {
  GradCheckInput in;
  in.type = TensorType{DType::kI32, {static_cast<int64_t>(values.size())}};
  in.values = std::move(values);
  in.differentiable = false;
  return in;
}

TEST(ImportDecomposeRnnTest, LstmGradientsMatchFiniteDifferences) {
  // Bidirectional, 3 steps, batch 2, input 2, hidden 2: Y, Y_h and Y_c with respect to X, W, R,
  // B, initial_h, initial_c and the peepholes.
  ExpectGradientsMatch(DecomposedGradCase(
      "LSTM", 22,
      {{"hidden_size", Attribute(int64_t{2})}, {"direction", Attribute("bidirectional")}},
      {F64({3, 2, 2}), F64({2, 8, 2}), F64({2, 8, 2}), F64({2, 16}), Absent(), F64({2, 2, 2}),
       F64({2, 2, 2}), F64({2, 6})},
      3));
  // Reverse, batch first, one sequence shorter than the others (its state is held, its Y is 0).
  ExpectGradientsMatch(DecomposedGradCase(
      "LSTM", 22,
      {{"hidden_size", Attribute(int64_t{2})},
       {"direction", Attribute("reverse")},
       {"layout", Attribute(int64_t{1})},
       {"input_forget", Attribute(int64_t{1})}},
      {F64({2, 3, 2}), F64({1, 8, 2}), F64({1, 8, 2}), F64({1, 16}), Lengths({3, 2})}, 3));
}

TEST(ImportDecomposeRnnTest, GruGradientsMatchFiniteDifferences) {
  for (int64_t lbr : {0, 1}) {
    SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
    ExpectGradientsMatch(DecomposedGradCase(
        "GRU", 22,
        {{"hidden_size", Attribute(int64_t{3})},
         {"linear_before_reset", Attribute(lbr)},
         {"direction", Attribute(lbr ? "reverse" : "forward")}},
        {F64({3, 2, 2}), F64({1, 9, 2}), F64({1, 9, 3}), F64({1, 18}), Absent(), F64({1, 2, 3})},
        2));
  }
}

TEST(ImportDecomposeRnnTest, RnnGradientsMatchFiniteDifferences) {
  // Other activations (ScaledTanh with alpha and beta, Softsign) and sequence lengths.
  ExpectGradientsMatch(DecomposedGradCase(
      "RNN", 22,
      {{"hidden_size", Attribute(int64_t{3})},
       {"direction", Attribute("bidirectional")},
       {"activations", Attribute(std::vector<std::string>{"ScaledTanh", "Softsign"})},
       {"activation_alpha", Attribute(std::vector<float>{1.5f, 0})},
       {"activation_beta", Attribute(std::vector<float>{0.7f, 0})}},
      {F64({3, 2, 2}), F64({2, 3, 2}), F64({2, 3, 3}), F64({2, 6}), Lengths({1, 3})}, 2));
}

}  // namespace
}  // namespace a8
