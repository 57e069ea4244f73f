// If, Loop and Scan unrolled at import (import_control_flow.h): what they import as, the errors
// of the cases a800c cannot unroll, and gradients through the unrolled nodes against finite
// differences. Their values are checked by the ONNX node tests (test_if, test_loop11,
// test_scan*, the _expanded cases that use them).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "passes/analysis/shape_inference.h"
#include "passes/cleanup/fold_value.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::CountOps;
using ::a8::testing::ExpectGradientsMatch;
using ::a8::testing::GradCheckCase;
using ::a8::testing::ImportError;
using ::a8::testing::ImportText;
using ::testing::HasSubstr;

constexpr const char* kIfOnInput = R"(<ir_version: 8, opset_import: ["" : 16]>
g (bool c, float[2] x) => (float[2] y) {
  y = If (c) <then_branch = t () => (float[2] a) { a = Neg (x) },
              else_branch = e () => (float[2] b) { b = Abs (x) }>
})";

TEST(ImportControlFlowTest, IfInlinesTheBranchAConstantCondTakes) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] x) => (float[2] y) {
  c = Constant <value = bool {0}> ()
  y = If (c) <then_branch = t () => (float[2] a) { a = Neg (x) },
              else_branch = e () => (float[2] b) { b = Abs (x) }>
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Abs"), 1);
  EXPECT_EQ(CountOps(**g, "Neg"), 0);
  EXPECT_EQ((*g)->outputs()[0]->name(), "y");

  // A graph input as cond: the error says how to freeze it; --bind does.
  Status s = ImportError(kIfOnInput);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(),
              HasSubstr("node 'If_0' (If): cond 'c' is a graph input; a800c unrolls control flow "
                        "only on compile-time values; freeze graph input 'c' with --bind=c="));
  ImportOptions opts;
  std::shared_ptr<TensorData> yes = TensorData::Make(TensorType{DType::kBool, {}});
  yes->bytes[0] = 1;
  opts.bound["c"] = yes;
  g = ImportText(kIfOnInput, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Neg"), 1);
}

TEST(ImportControlFlowTest, ConditionsComputedFromConstantsFold) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[4] x) => (float[4] y) {
  n = Size (x)
  four = Constant <value = int64 {4}> ()
  c = Equal (n, four)
  y = If (c) <then_branch = t () => (float[4] a) { a = Neg (x) },
              else_branch = e () => (float[4] b) { b = Abs (x) }>
})";
  Status s = ImportError(text);
  EXPECT_THAT(s.message(), HasSubstr("cond 'c' is computed at run time"));
  ImportOptions opts;
  opts.fold_value = FoldValue;  // as the driver does
  auto g = ImportText(text, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Neg"), 1);
  EXPECT_EQ(CountOps(**g, "Abs"), 0);
}

TEST(ImportControlFlowTest, LoopUnrollsACompileTimeTripCount) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] a) => (float[2] y, float[3, 2] ys) {
  m = Constant <value = int64 {3}> ()
  c = Constant <value = bool {1}> ()
  y, ys = Loop (m, c, a) <body = lb (int64 i, bool cin, float[2] v) => (bool cout, float[2] vout, float[2] so) {
    cout = Identity (cin)
    fi = Cast <to = 1> (i)
    vout = Add (v, fi)
    so = Mul (vout, vout)
  }>
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Add"), 3);
  EXPECT_EQ(CountOps(**g, "Mul"), 3);
  EXPECT_EQ(CountOps(**g, "Concat"), 1);  // the scan output, stacked
  auto inferred = ShapeInference().Run(**g);
  ASSERT_TRUE(inferred.ok()) << inferred.status().message();
  EXPECT_EQ((*g)->outputs()[1]->type().dims, (std::vector<int64_t>{3, 2}));

  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 16]>
g (int64 m, float[2] a) => (float[2] y) {
  c = Constant <value = bool {1}> ()
  y = Loop (m, c, a) <body = lb (int64 i, bool cin, float[2] v) => (bool cout, float[2] vout) {
    cout = Identity (cin)
    vout = Neg (v)
  }>
})");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'Loop_1' (Loop): trip count M 'm' is a graph input; "
                                     "a800c unrolls control flow only on compile-time values"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] a) => (float[2] y) {
  m = Constant <value = int64 {4}> ()
  c = Constant <value = bool {1}> ()
  y = Loop (m, c, a) <body = lb (int64 i, bool cin, float[2] v) => (bool cout, float[2] vout) {
    vout = Neg (v)
    r = ReduceSum (vout)
    z = Constant <value = float {0}> ()
    cout = Greater (r, z)
  }>
})");
  EXPECT_THAT(s.message(),
              HasSubstr("node 'Loop_2' (Loop): the body computes the loop condition 'cout' (an "
                        "exit that depends on data)"));
  // No trip count (a loop until a condition): the parser takes no empty input, so M is cleared
  // in the proto.
  onnx::ModelProto no_m = testing::ParseModelText(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] a) => (float[2] y) {
  m = Constant <value = int64 {4}> ()
  c = Constant <value = bool {1}> ()
  y = Loop (m, c, a) <body = lb (int64 i, bool cin, float[2] v) => (bool cout, float[2] vout) {
    cout = Identity (cin)
    vout = Neg (v)
  }>
})");
  no_m.mutable_graph()->mutable_node(2)->set_input(0, "");
  auto g2 = ImportOnnxModel(no_m, "test.onnxtxt", "");
  ASSERT_FALSE(g2.ok());
  s = g2.status();
  EXPECT_THAT(s.message(), HasSubstr("has no trip count M"));
}

TEST(ImportControlFlowTest, ScanSlicesAlongItsAxesAndNestedIfExpands) {
  // Scan-16 over axis 1 backwards, its output stacked along axis 1 backwards; an If inside the
  // body on an outer constant.
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] s0, float[2, 3] xs) => (float[2] s, float[2, 3] z) {
  k = Constant <value = bool {1}> ()
  s, z = Scan (s0, xs) <num_scan_inputs = 1, scan_input_axes = [1], scan_input_directions = [1],
                        scan_output_axes = [-1], scan_output_directions = [1],
                        body = sb (float[2] a, float[2] x) => (float[2] b, float[2] o) {
    b = Add (a, x)
    o = If (k) <then_branch = t () => (float[2] p) { p = Neg (b) },
                else_branch = e () => (float[2] q) { q = Abs (b) }>
  }>
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountOps(**g, "Add"), 3);
  EXPECT_EQ(CountOps(**g, "Neg"), 3);
  EXPECT_EQ(CountOps(**g, "Abs"), 0);
  EXPECT_EQ(CountOps(**g, "Gather"), 3);
  auto inferred = ShapeInference().Run(**g);
  ASSERT_TRUE(inferred.ok()) << inferred.status().message();
  EXPECT_EQ((*g)->outputs()[1]->type().dims, (std::vector<int64_t>{2, 3}));

  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2] s0, float[2, 3] xs) => (float[2] s) {
  s = Scan (s0, xs) <num_scan_inputs = 1, scan_input_axes = [2],
                     body = sb (float[2] a, float[2] x) => (float[2] b) { b = Add (a, x) }>
})");
  EXPECT_THAT(s.message(), HasSubstr("scan_input_axes 2 is out of range for 'xs' of rank 2"));
}

// The nodes of the model `text` (already unrolled by the importer, its graph inputs in order
// taking `operands`) made again on `g`, typed: a gradient-check body.
StatusOr<std::vector<Value*>> BuildFrom(const std::string& text, Graph& g,
                                        const std::vector<Value*>& operands) {
  A8_ASSIGN_OR_RETURN(std::unique_ptr<Graph> src, ImportText(text));
  std::map<const Value*, Value*> map;
  for (size_t i = 0; i < src->inputs().size(); ++i) map[src->inputs()[i]] = operands[i];
  for (Node* n : src->NodeList()) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs()) {
      if (v == nullptr) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = map.find(v);
      if (it == map.end()) it = map.emplace(v, g.AddConstant("cf." + v->name(), v->data())).first;
      ins.push_back(it->second);
    }
    std::vector<std::pair<std::string, TensorType>> outs;
    for (Value* o : n->outputs()) outs.emplace_back("cf." + o->name(), TensorType{});
    Node* m = g.AddNode(n->op(), n->domain(), ins, outs, n->attrs(), "cf." + n->name());
    m->set_version(n->version());
    for (int i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = m->output(i);
  }
  auto inferred = ShapeInference().Run(g);
  if (!inferred.ok()) return inferred.status();
  std::vector<Value*> outs;
  for (Value* o : src->outputs()) outs.push_back(map.at(o));
  return outs;
}

GradCheckCase FromModel(std::string text, const std::vector<std::vector<int64_t>>& inputs,
                        int outputs) {
  GradCheckCase c;
  c.op = "unrolled";
  for (const std::vector<int64_t>& dims : inputs) {
    c.inputs.push_back(testing::Input(DType::kF64, dims));
  }
  c.num_outputs = outputs;
  c.build = [text](Graph& g, const std::vector<Value*>& operands) {
    return BuildFrom(text, g, operands);
  };
  return c;
}

TEST(ImportControlFlowTest, GradientsThroughUnrolledScanAndLoop) {
  // w is read by the body from the outer scope; the state, the sequence and w all get gradients.
  ExpectGradientsMatch(FromModel(R"(<ir_version: 8, opset_import: ["" : 16]>
g (double[2] s0, double[3, 2] xs, double[2] w) => (double[2] s, double[3, 2] z) {
  s, z = Scan (s0, xs) <num_scan_inputs = 1, scan_input_directions = [1],
                        body = sb (double[2] a, double[2] x) => (double[2] b, double[2] o) {
    p = Mul (x, w)
    b = Add (a, p)
    o = Mul (b, a)
  }>
})",
                                 {{2}, {3, 2}, {2}}, 2));
  GradCheckCase loop = FromModel(R"(<ir_version: 8, opset_import: ["" : 16]>
g (double[2] a, double[2] w) => (double[2] y, double[3, 2] ys) {
  m = Constant <value = int64 {3}> ()
  c = Constant <value = bool {1}> ()
  y, ys = Loop (m, c, a) <body = lb (int64 i, bool cin, double[2] v) => (bool cout, double[2] vout, double[2] so) {
    cout = Identity (cin)
    fi = Cast <to = 11> (i)
    t = Mul (v, w)
    vout = Add (t, fi)
    so = Mul (vout, vout)
  }>
})",
                                 {{2}, {2}}, 2);
  ExpectGradientsMatch(loop);
}

}  // namespace
}  // namespace a8
