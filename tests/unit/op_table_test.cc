// The op table: every entry is consistent with the generated ONNX version history, version
// resolution gives the right since_version or a clear error, and CheckNodeAgainstOpDef catches
// arity and attribute mistakes, naming the node and the attribute.
#include "compiler/ir/op_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "compiler/ir/graph.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(OpTableTest, EveryEntryIsConsistentWithItsHistory) {
  const std::vector<OpDef>& ops = AllOps();
  ASSERT_GT(ops.size(), 90u);
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDef& op = ops[i];
    SCOPED_TRACE(op.domain + "." + op.name);
    EXPECT_FALSE(op.onnx_versions.empty()) << "missing from onnx_versions.inc";
    EXPECT_TRUE(std::is_sorted(op.onnx_versions.begin(), op.onnx_versions.end()));
    EXPECT_FALSE(op.implemented.empty());
    for (int v : op.implemented) EXPECT_TRUE(Contains(op.onnx_versions, v)) << v;
    EXPECT_TRUE(Contains(op.implemented, op.canonical)) << op.canonical;
    EXPECT_NE(op.infer, nullptr);
    EXPECT_FALSE(op.doc.empty());
    EXPECT_LE(op.min_inputs, op.max_inputs < 0 ? 1 << 30 : op.max_inputs);
    EXPECT_LE(op.min_outputs, op.max_outputs < 0 ? 1 << 30 : op.max_outputs);
    std::set<std::string> names;
    for (const AttrSpec& a : op.attrs) {
      EXPECT_TRUE(names.insert(a.name).second) << "duplicate attribute " << a.name;
      if (a.default_value.has_value()) {
        EXPECT_EQ(a.default_value->kind(), a.kind) << a.name;
        EXPECT_FALSE(a.required) << a.name;
      }
    }
    if (i > 0) {
      EXPECT_LT(std::tie(ops[i - 1].domain, ops[i - 1].name), std::tie(op.domain, op.name));
    }
    EXPECT_EQ(FindOp(op.domain, op.name), &op);
  }
}

TEST(OpTableTest, CoversTheOpsOfTheBrief) {
  for (const char* name : {"Abs",
                           "Relu",
                           "Gelu",
                           "IsInf",
                           "Add",
                           "Mod",
                           "Sum",
                           "Where",
                           "Clip",
                           "Cast",
                           "CastLike",
                           "MatMul",
                           "Gemm",
                           "Conv",
                           "ConvTranspose",
                           "BatchNormalization",
                           "LayerNormalization",
                           "InstanceNormalization",
                           "MaxPool",
                           "AveragePool",
                           "GlobalMaxPool",
                           "Flatten",
                           "Softmax",
                           "LogSoftmax",
                           "Dropout",
                           "ReduceLogSumExp",
                           "ArgMin",
                           "Reshape",
                           "Transpose",
                           "Concat",
                           "Split",
                           "Slice",
                           "Gather",
                           "GatherElements",
                           "Squeeze",
                           "Unsqueeze",
                           "Expand",
                           "Pad",
                           "Tile",
                           "Shape",
                           "Size",
                           "ConstantOfShape",
                           "Constant",
                           "Range",
                           "CumSum",
                           "Trilu",
                           "OneHot",
                           "SoftmaxCrossEntropyLoss",
                           "NegativeLogLikelihoodLoss"}) {
    EXPECT_NE(FindOp("", name), nullptr) << name;
  }
  for (const char* name : {"Gradient", "Adam", "Momentum", "Adagrad"}) {
    EXPECT_NE(FindOp("ai.onnx.preview.training", name), nullptr) << name;
    EXPECT_EQ(FindOp("", name), nullptr) << name;
  }
  EXPECT_EQ(FindOp("", "NoSuchOp"), nullptr);
  EXPECT_EQ(FindOp("com.microsoft", "Relu"), nullptr);
}

TEST(OpTableTest, NewestKnownOpset) {
  EXPECT_EQ(NewestKnownOpset(""), 28);
  EXPECT_EQ(NewestKnownOpset("ai.onnx.preview.training"), 1);
  EXPECT_EQ(NewestKnownOpset("com.example"), 0);
}

TEST(OpTableTest, ResolvesTheNewestSinceVersionAtOrBelowTheOpset) {
  const OpDef& relu = *FindOp("", "Relu");  // {1, 6, 13, 14}
  EXPECT_EQ(*ResolveOpVersion(relu, 9), 6);
  EXPECT_EQ(*ResolveOpVersion(relu, 13), 13);
  EXPECT_EQ(*ResolveOpVersion(relu, 21), 14);
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "Softmax"), 11), 11);
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "Reshape"), 17), 14);
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "Gelu"), 20), 20);
  EXPECT_EQ(*ResolveOpVersion(*FindOp("ai.onnx.preview.training", "Adam"), 1), 1);
}

TEST(OpTableTest, OldButSameVersionsResolve) {
  // MatMul-1 only differs from 13 in element types; opset 9 resolves to MatMul-9.
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "MatMul"), 8), 1);
  // Abs-6 serves opsets 6 to 12.
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "Abs"), 12), 6);
  // Squeeze-1/11 take axes as an attribute: implemented, the importer upgrades them.
  EXPECT_EQ(*ResolveOpVersion(*FindOp("", "Squeeze"), 11), 11);
}

TEST(OpTableTest, FutureOpsetIsAnError) {
  StatusOr<int> r = ResolveOpVersion(*FindOp("", "Relu"), 99);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(), "opset 99 of ai.onnx is newer than the newest a800c knows (28)");
  r = ResolveOpVersion(*FindOp("ai.onnx.preview.training", "Adam"), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ai.onnx.preview.training"), std::string::npos);
}

TEST(OpTableTest, OpNotYetDefinedIsAnError) {
  StatusOr<int> r = ResolveOpVersion(*FindOp("", "Gelu"), 17);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("Gelu"), std::string::npos);
  EXPECT_NE(r.status().message().find("17"), std::string::npos);
  EXPECT_NE(r.status().message().find("20"), std::string::npos);
  EXPECT_FALSE(ResolveOpVersion(*FindOp("", "LayerNormalization"), 16).ok());
}

TEST(OpTableTest, ChangedDefinitionIsUnsupported) {
  // A version left out of `implemented` (every supported op's versions are implemented today, but
  // for BatchNormalization's oldest ones).
  OpDef add = *FindOp("", "Add");
  add.implemented = {7, 13, 14};
  StatusOr<int> r = ResolveOpVersion(add, 6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(),
            "Add-6 (opset 6) is not supported; a800c implements versions 7, 13, 14");
  // BatchNormalization-7 still has `spatial`, which the import upgrade takes (=1) or refuses.
  r = ResolveOpVersion(*FindOp("", "BatchNormalization"), 8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 7);
}

TEST(OpTableTest, ResolutionAgreesWithAnIndependentScanAtEveryOpset) {
  for (const OpDef& op : AllOps()) {
    const int newest = NewestKnownOpset(op.domain);
    for (int opset = 1; opset <= newest; ++opset) {
      int expected = 0;
      for (int v : op.onnx_versions) expected = v <= opset ? v : expected;
      StatusOr<int> r = ResolveOpVersion(op, opset);
      SCOPED_TRACE(op.name + " opset " + std::to_string(opset));
      if (expected != 0 && Contains(op.implemented, expected)) {
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ(*r, expected);
      } else {
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.status().message().find(op.name), std::string::npos);
      }
    }
  }
}

class CheckNodeTest : public ::testing::Test {
 protected:
  Node* Add(const std::string& op, std::vector<Value*> inputs, int outputs,
            std::map<std::string, Attribute> attrs = {}) {
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back({"y", F32({2})});
    return g_.AddNode(op, "", std::move(inputs), outs, std::move(attrs), op + "_0");
  }
  Status Check(Node* n) { return CheckNodeAgainstOpDef(*n, *FindOp(n->domain(), n->op())); }

  Graph g_;
  Value* x_ = g_.AddInput("x", F32({2}));
};

TEST_F(CheckNodeTest, AcceptsAWellFormedNode) {
  EXPECT_TRUE(Check(Add("Relu", {x_}, 1)).ok());
  EXPECT_TRUE(Check(Add("Gemm", {x_, x_}, 1, {{"transB", 1}, {"alpha", 0.5f}})).ok());
  // Trailing absent optional inputs do not count.
  EXPECT_TRUE(Check(Add("Clip", {x_, nullptr, nullptr}, 1)).ok());
  // a800c's own annotations ride along.
  EXPECT_TRUE(Check(Add("Relu", {x_}, 1, {{"a8.why", "deny"}})).ok());
  EXPECT_TRUE(Check(Add("Sum", {x_, x_, x_, x_, x_}, 1)).ok());
}

TEST_F(CheckNodeTest, Arity) {
  Status s = Check(Add("Relu", {x_, x_}, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'Relu_0' (Relu): has 2 inputs, expected at most 1");
  s = Check(Add("Gemm", {x_}, 1));
  EXPECT_EQ(s.message(), "node 'Gemm_0' (Gemm): has 1 inputs, expected at least 2");
  s = Check(Add("Gemm", {nullptr, x_}, 1));
  EXPECT_EQ(s.message(), "node 'Gemm_0' (Gemm): required input 0 is missing");
  s = Check(Add("Relu", {x_}, 2));
  EXPECT_EQ(s.message(), "node 'Relu_0' (Relu): has 2 outputs, expected at most 1");
  s = Check(Add("Clip", {x_, x_, x_, x_}, 1));
  EXPECT_FALSE(s.ok());
}

TEST_F(CheckNodeTest, UnknownAttribute) {
  Status s = Check(Add("Relu", {x_}, 1, {{"alpha", 0.1f}}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'Relu_0' (Relu): unknown attribute 'alpha'");
}

TEST_F(CheckNodeTest, MissingRequiredAttribute) {
  Status s = Check(Add("Cast", {x_}, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'Cast_0' (Cast): required attribute 'to' is missing");
  s = Check(Add("Concat", {x_, x_}, 1));
  EXPECT_EQ(s.message(), "node 'Concat_0' (Concat): required attribute 'axis' is missing");
}

TEST_F(CheckNodeTest, WrongAttributeKind) {
  Status s = Check(Add("Gemm", {x_, x_}, 1, {{"alpha", int64_t{2}}}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'Gemm_0' (Gemm): attribute 'alpha' must be float, got int");
  s = Check(Add("Transpose", {x_}, 1, {{"perm", int64_t{0}}}));
  EXPECT_EQ(s.message(), "node 'Transpose_0' (Transpose): attribute 'perm' must be ints, got int");
}

}  // namespace
}  // namespace a8
