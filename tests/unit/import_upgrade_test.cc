// ImportUpgradeTest: old ONNX op forms (opset 1-12) upgraded at import to the canonical form
// (compiler/onnx/import_upgrade.h, import_upgrade_legacy.h). tests/onnx/schema_history_test.py
// runs every version against onnxruntime; these check the rewritten graphs and the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/importer.h"
#include "tests/unit/ir_test_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

TEST(ImportUpgradeTest, UpgradesOtherLegacyAttributeForms) {
  auto g = ImportText(R"(<ir_version: 7, opset_import: ["" : 9]>
g (float[2, 6] x) => (float[2, 1] y, float[2, 3] a, float[2, 3] b, float[2, 6] c, float[2, 8] d,
                      float[2, 6] e, float[2, 6] s)
{
  y = ReduceMean <axes = [1], keepdims = 1> (x)
  a, b = Split <axis = 1, split = [3, 3]> (x)
  t = Slice <starts = [0], ends = [3], axes = [1]> (x)
  c = Clip <min = -0.5, max = 0.75> (x)
  d = Pad <pads = [0, 1, 0, 1], value = 2.5> (x)
  e = Dropout <ratio = 0.25> (x)
  s = Softmax <axis = 1> (x)
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, Node*> by_op;
  for (Node* n : (*g)->nodes()) by_op[n->op()] = n;
  auto input = [&](const char* op, int i) { return by_op.at(op)->input(i); };
  EXPECT_EQ(input("ReduceMean", 1)->data()->ToInt64Vector(), (std::vector<int64_t>{1}));
  EXPECT_EQ(by_op.at("ReduceMean")->version(), 18);
  EXPECT_EQ(input("Split", 1)->data()->ToInt64Vector(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(input("Slice", 1)->data()->ToInt64Vector(), (std::vector<int64_t>{0}));
  EXPECT_EQ(input("Slice", 2)->data()->ToInt64Vector(), (std::vector<int64_t>{3}));
  EXPECT_EQ(input("Slice", 3)->data()->ToInt64Vector(), (std::vector<int64_t>{1}));
  EXPECT_EQ(input("Clip", 1)->type(), (TensorType{DType::kF32, {}}));
  EXPECT_FLOAT_EQ(static_cast<float>(input("Clip", 1)->data()->GetDouble(0)), -0.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(input("Clip", 2)->data()->GetDouble(0)), 0.75f);
  EXPECT_EQ(input("Pad", 1)->data()->ToInt64Vector(), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_FLOAT_EQ(static_cast<float>(input("Pad", 2)->data()->GetDouble(0)), 2.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(input("Dropout", 1)->data()->GetDouble(0)), 0.25f);
  for (const auto& [op, n] : by_op) {
    EXPECT_EQ(n->version(), FindOp("", op)->canonical) << op;
    for (const char* legacy :
         {"axes", "split", "starts", "ends", "min", "max", "pads", "value", "ratio"}) {
      EXPECT_FALSE(n->has_attr(legacy)) << op << " still has " << legacy;
    }
  }
  EXPECT_EQ(by_op.at("Softmax")->GetInt("axis", -7), 1);
}

TEST(ImportUpgradeTest, SoftmaxBefore13CoercesTo2DAtAxis) {
  auto g = ImportText(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) { y = Softmax <axis = 1> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Reshape", "Shape", "Softmax", "Reshape"}));
  std::vector<Node*> nodes = (*g)->NodeList();
  // [2, 3 * 4]: the leading dims kept, the dims from axis on flattened.
  EXPECT_EQ(nodes[0]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(nodes[2]->GetInt("axis", 0), -1);
  EXPECT_EQ(nodes[2]->version(), 13);
  EXPECT_EQ(nodes[3]->input(1), nodes[1]->output(0));
  EXPECT_EQ(nodes[3]->output(0)->name(), "y");
  EXPECT_EQ((*g)->outputs()[0], nodes[3]->output(0));

  // Axis 0 flattens everything; a positive axis needs no rank.
  ImportOptions k;
  k.dims["K"] = 2;
  g = ImportText(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x, int64[K] shape) => (float[2, 3] y) { t = Reshape (x, shape) y = LogSoftmax <axis = 0> (t) })",
                 k);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g),
            (std::vector<std::string>{"Reshape", "Reshape", "Shape", "LogSoftmax", "Reshape"}));
  // The last axis needs nothing but the axis (ranks from onnx's inference included).
  g = ImportText(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[2, 3] y) { t = Relu (x) y = Softmax (t) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Relu", "Softmax"}));
  EXPECT_EQ((*g)->NodeList()[1]->GetInt("axis", -7), 1);

  Status s = ImportError(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x, int64[K] shape) => (float[2, 3] y) { t = Reshape (x, shape) y = Softmax <axis = -1> (t) })",
                         k);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'Softmax_1' (Softmax): Softmax-11 flattens its input "
                                     "to 2D at axis -1, and the input's rank is unknown"));
}

TEST(ImportUpgradeTest, LegacyBroadcastAlignsBAtAxis) {
  auto g = ImportText(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3, 4] a, float[3] b, float[4] c) => (float[2, 3, 4] y, float[2, 3, 4] z)
{ y = Add <broadcast = 1, axis = 1> (a, b) z = Mul <broadcast = 1> (a, c) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Unsqueeze", "Add", "Mul"}));
  std::vector<Node*> nodes = (*g)->NodeList();
  EXPECT_EQ(nodes[0]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1}));
  EXPECT_EQ(nodes[1]->input(1), nodes[0]->output(0));
  for (Node* n : {nodes[1], nodes[2]}) {
    EXPECT_FALSE(n->has_attr("broadcast"));
    EXPECT_FALSE(n->has_attr("axis"));
    EXPECT_EQ(n->version(), 7);
  }
  EXPECT_EQ(nodes[2]->input(1)->name(), "c");  // suffix-aligned: numpy broadcasting as is

  Status s = ImportError(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3] a, float[3, 4] b) => (float[2, 3] y) { y = Sub <broadcast = 1, axis = 1> (a, b) })");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(s.message(), HasSubstr("node 'Sub_0' (Sub): Sub-6: B of rank 2 does not fit A of "
                                     "rank 2 from axis 1"));
}

TEST(ImportUpgradeTest, Dropout7MaskIsCastToTheDataType) {
  auto g = ImportText(R"(<ir_version: 3, opset_import: ["" : 9]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 3] m) { y, m = Dropout <ratio = 0.25> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Dropout", "Cast"}));
  Node* cast = (*g)->NodeList()[1];
  EXPECT_EQ(cast->GetInt("to", 0), 1);  // FLOAT
  EXPECT_EQ(cast->output(0)->name(), "m");
  EXPECT_EQ(cast->input(0), (*g)->NodeList()[0]->output(1));
  EXPECT_NE(cast->input(0)->name(), "m");
}

TEST(ImportUpgradeTest, Opset1Forms) {
  auto g = ImportText(R"(<ir_version: 3, opset_import: ["" : 1]>
g (float[2, 3] x, float[2, 2] w) => (float[2, 3] r, double[2, 3] c, float[2, 5] k, float[3, 2] s,
                                     float[2, 3] e, float[2, 6] t, float[2, 3] cl)
<float tiles = {2.0}, float axis = {1.0}>
{
  r = Relu <consumed_inputs = [0]> (x)
  c = Cast <to = "DOUBLE"> (x)
  k = Concat (x, w)
  s = Reshape <shape = [3, 2]> (x)
  e = Selu (x)
  t = Tile (x, tiles, axis)
  cl = Clip <min = -1.0, consumed_inputs = [0]> (x)
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, Node*> by_op;
  for (Node* n : (*g)->nodes()) by_op[n->op()] = n;
  EXPECT_FALSE(by_op.at("Relu")->has_attr("consumed_inputs"));
  EXPECT_FALSE(by_op.at("Clip")->has_attr("consumed_inputs"));
  EXPECT_EQ(by_op.at("Cast")->GetInt("to", 0), 11);
  EXPECT_EQ(by_op.at("Concat")->GetInt("axis", -1), 1);
  EXPECT_EQ(by_op.at("Reshape")->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{3, 2}));
  EXPECT_FLOAT_EQ(by_op.at("Selu")->GetFloat("alpha", 0), 1.6732f);
  EXPECT_FLOAT_EQ(by_op.at("Selu")->GetFloat("gamma", 0), 1.0507f);
  ASSERT_EQ(by_op.at("Tile")->num_inputs(), 2);
  EXPECT_EQ(by_op.at("Tile")->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1, 2}));
  for (const auto& [op, n] : by_op) EXPECT_EQ(n->version(), FindOp("", op)->canonical) << op;

  Status s = ImportError(R"(<ir_version: 3, opset_import: ["" : 1]>
g (float[2] x) => (float[2] y) { y = Cast <to = "REAL"> (x) })");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(s.message(), HasSubstr("node 'Cast_0' (Cast): attribute 'to' = 'REAL' is not an "
                                     "ONNX element type name"));
  s = ImportError(R"(<ir_version: 3, opset_import: ["" : 5]>
g (float[2, 3] x, float tiles) => (float[4, 3] y) <float axis = {0.0}> { y = Tile (x, tiles, axis) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'Tile_0' (Tile): Tile-1's 'tiles' and 'axis' must be "
                                     "constant scalars"));
}

TEST(ImportUpgradeTest, UpsampleNearestByIntegersIsRepeatedElements) {
  auto g = ImportText(R"(<ir_version: 3, opset_import: ["" : 7]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 12] y) { y = Upsample <scales = [1.0, 1.0, 2.0, 3.0]> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Unsqueeze", "Expand", "Shape", "Mul", "Reshape"}));
  std::vector<Node*> nodes = (*g)->NodeList();
  EXPECT_EQ(nodes[0]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(nodes[1]->input(1)->data()->ToInt64Vector(),
            (std::vector<int64_t>{1, 1, 1, 1, 1, 2, 1, 3}));
  EXPECT_EQ(nodes[3]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1, 1, 2, 3}));
  EXPECT_EQ(nodes[4]->output(0)->name(), "y");
  EXPECT_EQ(nodes[4]->name(), "Upsample_0");

  // Other modes and scales: per-axis interpolation matrices, as Resize (import_decompose_resize.h).
  g = ImportText(R"(<ir_version: 3, opset_import: ["" : 7]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) { y = Upsample <scales = [1.0, 1.0, 2.0, 2.0], mode = "linear"> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Reshape", "MatMul", "Reshape", "MatMul"}));
  g = ImportText(R"(<ir_version: 3, opset_import: ["" : 1]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 4, 6] y) { y = Upsample <height_scale = 1.5, width_scale = 1.5> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Status s = ImportError(R"(<ir_version: 3, opset_import: ["" : 7]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 3, 4] y) { y = Upsample <scales = [1.0, 1.0, 0.5, 1.0]> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'Upsample_0' (Upsample): Upsample-7 has scale 0.5 "
                                     "(Upsample's scales are >= 1)"));
}

TEST(ImportUpgradeTest, VersionsStillRefusedNameTheNode) {
  Status s = ImportError(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3] x, float[3] slope) => (float[2, 3] y) { y = PRelu (x, slope) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'PRelu_0' (PRelu): PRelu-6"));
}

}  // namespace
}  // namespace a8::testing
