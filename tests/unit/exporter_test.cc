// ExporterTest: IR -> ONNX, checked by importing the result again.
#include "compiler/onnx/exporter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/importer.h"
#include "compiler/onnx/onnx_util.h"
#include "tests/unit/graph_values_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

// Every intermediate has a static value_info, so types survive without shape inference.
constexpr char kModel[] = R"(<ir_version: 8, opset_import: ["" : 13]>
net (float[4, 6] x, int64[4] labels) => (float[4, 5] y, float[] loss)
<float[4, 5] g, float[4, 5] a, float[5, 4] t, float[4, 10] c, float[4, 10] d, float[4, 5] s,
 float[4, 5] h, float[1, 4, 5] u, float[4, 5] cl, float[] lo>
{
  g = Gemm <alpha = 0.5, beta = 2.0, transB = 1> (x, w, b)
  a = LeakyRelu <alpha = 0.125> (g)
  t = Transpose <perm = [1, 0]> (a)
  c = Concat <axis = 1> (a, a)
  d = Cast <to = 1> (c)
  s, h = Split <axis = 1> (d, split)
  u = Unsqueeze (s, axes)
  cl = Clip (h, , hi)
  y = Identity (cl)
  lo = SoftmaxCrossEntropyLoss <reduction = "mean", ignore_index = -1> (y, labels)
  loss = Identity (lo)
}
)";

onnx::ModelProto ModelWithWeights() {
  onnx::ModelProto m = ParseModelText(kModel);
  auto add = [&](const std::string& name, const TensorData& d) {
    TensorToOnnx(d, name, m.mutable_graph()->add_initializer());
  };
  add("w", *TensorData::FromFloats(RandomFloats(30, 1), {5, 6}));
  add("b", *TensorData::FromFloats(RandomFloats(5, 2), {5}));
  add("split", *TensorData::FromInt64s({5, 5}, {2}));
  add("axes", *TensorData::FromInt64s({0}, {1}));
  add("hi", *TensorData::FromFloats({1.5f}, {}));
  return m;
}

std::unique_ptr<Graph> RoundTrip(const Graph& g, onnx::ModelProto* exported = nullptr) {
  auto bytes = ExportOnnxBytes(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  if (!bytes.ok()) return nullptr;
  if (exported) {
    EXPECT_TRUE(exported->ParseFromString(*bytes));
  }
  auto again = ImportOnnxBytes(*bytes, "exported.onnx", "");
  EXPECT_TRUE(again.ok()) << again.status().message();
  return again.ok() ? std::move(*again) : nullptr;
}

TEST(ExporterTest, RoundTripKeepsNodesAttributesTypesAndData) {
  auto g = ImportOnnxModel(ModelWithWeights(), "m.onnx", "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::unique_ptr<Graph> back = RoundTrip(**g);
  ASSERT_NE(back, nullptr);

  EXPECT_EQ(back->name, "net");
  // Split's canonical form is Split-18, so the exported opset is raised from 13 to 18.
  EXPECT_EQ((*g)->opsets.at(""), 13);
  EXPECT_EQ(back->opsets.at(""), 18);
  std::vector<Node*> a = (*g)->NodeList(), b = back->NodeList();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i]->Where());
    EXPECT_EQ(a[i]->op(), b[i]->op());
    EXPECT_EQ(a[i]->domain(), b[i]->domain());
    EXPECT_EQ(a[i]->name(), b[i]->name());
    EXPECT_EQ(a[i]->version(), b[i]->version());
    EXPECT_EQ(a[i]->attrs(), b[i]->attrs());
    ASSERT_EQ(a[i]->num_inputs(), b[i]->num_inputs());
    for (int k = 0; k < a[i]->num_inputs(); ++k) {
      ASSERT_EQ(a[i]->has_input(k), b[i]->has_input(k));
      if (a[i]->has_input(k)) {
        EXPECT_EQ(a[i]->input(k)->name(), b[i]->input(k)->name());
      }
    }
    ASSERT_EQ(a[i]->num_outputs(), b[i]->num_outputs());
    for (int k = 0; k < a[i]->num_outputs(); ++k) {
      EXPECT_EQ(a[i]->output(k)->name(), b[i]->output(k)->name());
      EXPECT_EQ(a[i]->output(k)->type(), b[i]->output(k)->type());
    }
  }
  // Spot checks that the comparison above saw real content.
  EXPECT_FLOAT_EQ(b[0]->GetFloat("alpha", 0), 0.5f);
  EXPECT_EQ(b[2]->GetInts("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(b[9]->GetString("reduction", ""), "mean");
  EXPECT_EQ(b[3]->output(0)->type(), (TensorType{DType::kF32, {4, 10}}));
  EXPECT_FALSE(b[7]->has_input(1));

  ASSERT_NO_FATAL_FAILURE(ExpectSameGraphValues(**g, *back));
  EXPECT_EQ(back->FindValue("w")->role(), ValueRole::kParameter);
  EXPECT_EQ(back->FindValue("hi")->role(), ValueRole::kConstant);  // Clip bound, not a weight
  ASSERT_EQ(back->outputs().size(), 2u);
  EXPECT_EQ(back->outputs()[1]->name(), "loss");
}

TEST(ExporterTest, WritesHeaderInitializersAndValueInfo) {
  auto g = ImportOnnxModel(ModelWithWeights(), "m.onnx", "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  onnx::ModelProto m;
  ASSERT_NE(RoundTrip(**g, &m), nullptr);
  EXPECT_EQ(m.producer_name(), "a800c");
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 18);
  EXPECT_EQ(m.graph().input_size(), 2);
  EXPECT_EQ(m.graph().initializer_size(), 5);
  for (const onnx::TensorProto& t : m.graph().initializer()) {
    EXPECT_TRUE(t.has_raw_data()) << t.name();
  }
  // One value_info per intermediate that is not a graph output.
  int intermediates = 0;
  for (const Node* n : (*g)->nodes()) intermediates += n->num_outputs();
  EXPECT_EQ(m.graph().value_info_size(), intermediates - 2);
  EXPECT_EQ(m.graph().node(0).name(), "Gemm_0");
}

TEST(ExporterTest, RaisesOpsetToTheCanonicalFormOfUpgradedOps) {
  auto g = ImportText(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[1, 2, 3] y) <float[2, 3] r> { r = Relu (x) y = Unsqueeze <axes = [0]> (r) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->opsets.at(""), 11);
  onnx::ModelProto m;
  std::unique_ptr<Graph> back = RoundTrip(**g, &m);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(m.opset_import(0).version(), 13);
  EXPECT_EQ(m.graph().node(1).input_size(), 2);
  EXPECT_EQ(m.graph().node(1).attribute_size(), 0);
  Node* unsq = back->NodeList().at(1);
  EXPECT_EQ(unsq->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{0}));
}

TEST(ExporterTest, RejectsInternalOpsAndElidedData) {
  Graph g;
  g.opsets[""] = 17;
  Value* x = g.AddInput("x", TensorType{DType::kF32, {4}});
  Node* n = g.AddNode("UnscaleCheckFinite", "a8", {x}, {{"y", TensorType{DType::kF32, {4}}}}, {},
                      "unscale");
  g.AddOutput(n->output(0));
  Status s = ExportOnnxBytes(g).status();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'unscale' (a8.UnscaleCheckFinite): internal op"));

  Graph e;
  e.opsets[""] = 17;
  Value* w = e.AddGraphValue("w", ValueRole::kParameter, TensorType{DType::kF32, {2}}, nullptr);
  Node* r = e.AddNode("Relu", "", {w}, {{"y", TensorType{DType::kF32, {2}}}});
  e.AddOutput(r->output(0));
  EXPECT_THAT(ExportOnnxBytes(e).status().message(),
              HasSubstr("param 'w' has no data (elided in IR text)"));
}

TEST(ExporterTest, DropsA8AnnotationsAndKeepsTensorAttributes) {
  Graph g;
  g.opsets[""] = 17;
  Value* shape = g.AddConstant("shape", TensorData::FromInt64s({2, 3}, {2}));
  auto fill = std::make_shared<TensorData>(*TensorData::FromFloats({-0.75f}, {1}));
  Node* n =
      g.AddNode("ConstantOfShape", "", {shape}, {{"y", TensorType{DType::kF32, {2, 3}}}},
                {{"value", Attribute(TensorDataPtr(fill))}, {"a8.why", Attribute("deny")}}, "fill");
  n->set_version(9);
  g.AddOutput(n->output(0));
  onnx::ModelProto m;
  std::unique_ptr<Graph> back = RoundTrip(g, &m);
  ASSERT_NE(back, nullptr);
  ASSERT_EQ(m.graph().node(0).attribute_size(), 1);
  Node* b = back->NodeList().at(0);
  EXPECT_FALSE(b->has_attr("a8.why"));
  ASSERT_TRUE(b->has_attr("value"));
  EXPECT_EQ(b->attr("value")->tensor()->GetDouble(0), -0.75);
  EXPECT_EQ(back->outputs()[0]->type(), (TensorType{DType::kF32, {2, 3}}));
}

TEST(ExporterTest, KeepsTheTrainingDomain) {
  onnx::ModelProto m = ParseModelText(R"(<ir_version: 8, opset_import: ["" : 17,
  "ai.onnx.preview.training" : 1]>
g (float[] r, int64[] t, float[3] x, float[3] gr, float[3] v, float[3] h)
  => (float[3] x2, float[3] v2, float[3] h2)
{ x2, v2, h2 = Adam <alpha = 0.875, epsilon = 0.001> (r, t, x, gr, v, h) })");
  m.mutable_graph()->mutable_node(0)->set_domain("ai.onnx.preview.training");
  // Debian's onnx 1.12 parser reads `float[]` as "no shape"; make r and t scalars.
  for (int i : {0, 1}) {
    m.mutable_graph()->mutable_input(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
  }
  auto g = ImportOnnxModel(m, "adam.onnx", "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Node* adam = (*g)->NodeList().at(0);
  EXPECT_EQ(adam->qualified_op(), "ai.onnx.preview.training.Adam");
  EXPECT_EQ(adam->version(), 1);
  onnx::ModelProto exported;
  std::unique_ptr<Graph> back = RoundTrip(**g, &exported);
  ASSERT_NE(back, nullptr);
  ASSERT_EQ(exported.opset_import_size(), 2);
  EXPECT_EQ(exported.opset_import(1).domain(), "ai.onnx.preview.training");
  EXPECT_EQ(exported.opset_import(1).version(), 1);
  EXPECT_EQ(exported.graph().node(0).domain(), "ai.onnx.preview.training");
  EXPECT_EQ(back->NodeList().at(0)->attrs(), adam->attrs());
  EXPECT_FLOAT_EQ(back->NodeList().at(0)->GetFloat("alpha", 0), 0.875f);

  // A node in a domain the model does not import.
  m.mutable_opset_import()->RemoveLast();
  EXPECT_THAT(ImportOnnxModel(m, "adam.onnx", "").status().message(),
              HasSubstr("node 'Adam_0' (ai.onnx.preview.training.Adam): domain "
                        "'ai.onnx.preview.training' is not in the model's opset_import"));
}

}  // namespace
}  // namespace a8::testing
