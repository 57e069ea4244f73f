// ImportBatchNormTest: BatchNormalization-1/6/7/9 become version 14's form on import
// (compiler/onnx/import_upgrade.h), or get one error naming the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/ir/graph.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::ImportError;
using ::a8::testing::ImportText;
using ::testing::HasSubstr;

// A BatchNormalization node over x [2, 3] at `opset`, with `attrs` ("<...>" or "") and the
// outputs `outs`, which the graph also returns when `graph_outs` is given (else only y).
std::string Model(int opset, const std::string& attrs, const std::string& outs,
                  const std::string& graph_outs = "float[2, 3] y") {
  return "<ir_version: 7, opset_import: [\"\" : " + std::to_string(opset) +
         "]>\ng (float[2, 3] x, float[3] s, float[3] b, float[3] mean, float[3] var) => (" +
         graph_outs + ")\n{ " + outs + " = BatchNormalization " + attrs + " (x, s, b, mean, var) }";
}

const Node* OnlyNode(const Graph& g) {
  EXPECT_EQ(g.num_nodes(), 1u);
  return *g.nodes().begin();
}

TEST(ImportBatchNormTest, TrainingFormBeforeFourteenBecomesTrainingMode) {
  // Opset 9 (TorchScript's export at opset 13 too): five outputs, the last two unread.
  auto g = ImportText(Model(9, "<epsilon = 0.001, momentum = 0.99>", "y, m2, v2, sm, sv"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node* n = OnlyNode(**g);
  EXPECT_EQ(n->version(), 14);
  EXPECT_EQ(n->num_outputs(), 3);
  EXPECT_EQ(n->output(1)->name(), "m2");
  EXPECT_EQ(n->GetInt("training_mode", 0), 1);
  EXPECT_FLOAT_EQ(n->GetFloat("momentum", 0), 0.99f);
  // Opset 6 and 1: is_test=0 and spatial=1 (and BN-1's consumed_inputs) go.
  for (int opset : {1, 6}) {
    const std::string legacy = opset == 1 ? ", consumed_inputs = [0, 0, 0, 1, 1]" : "";
    g = ImportText(Model(opset, "<is_test = 0, spatial = 1" + legacy + ">", "y, m2, v2, sm, sv"));
    ASSERT_TRUE(g.ok()) << opset << ": " << g.status().message();
    n = OnlyNode(**g);
    EXPECT_EQ(n->GetInt("training_mode", 0), 1);
    EXPECT_FALSE(n->has_attr("is_test") || n->has_attr("spatial") ||
                 n->has_attr("consumed_inputs"));
  }
}

TEST(ImportBatchNormTest, InferenceFormBeforeFourteenStaysInference) {
  for (const auto& [opset, attrs] :
       {std::pair<int, std::string>{6, "<is_test = 1>"}, {7, "<spatial = 1>"}, {9, ""}}) {
    auto g = ImportText(Model(opset, attrs, "y"));
    ASSERT_TRUE(g.ok()) << opset << ": " << g.status().message();
    const Node* n = OnlyNode(**g);
    EXPECT_EQ(n->num_outputs(), 1);
    EXPECT_EQ(n->GetInt("training_mode", 0), 0);
    EXPECT_TRUE(n->attrs().count("is_test") == 0 && n->attrs().count("spatial") == 0);
  }
}

TEST(ImportBatchNormTest, FormsWithAnotherMeaningAreRefused) {
  Status s = ImportError(Model(7, "<spatial = 0>", "y"));
  EXPECT_THAT(s.message(), HasSubstr("node 'BatchNormalization_0' (BatchNormalization): "
                                     "BatchNormalization-7 with spatial=0"));
  s = ImportError(Model(6, "<is_test = 1>", "y, m2, v2, sm, sv"));
  EXPECT_THAT(s.message(), HasSubstr("is_test=1 does not match its outputs"));
  // saved_mean read by the graph: version 14 has no such output.
  s = ImportError(Model(9, "", "y, m2, v2, sm, sv", "float[2, 3] y, float[3] sm"));
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("(BatchNormalization): output 'sm' is a graph output; "
                                     "BatchNormalization-14 has no saved_mean/saved_var"));
}

}  // namespace
}  // namespace a8
