// ImportSequenceTest: SplitToSequence with a constant split read by SequenceAt at constant
// positions becomes Slice (and Squeeze) nodes at import (compiler/onnx/import_sequence.h); any
// other use of a sequence is one error naming the node and the op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "compiler/ir/graph.h"
#include "tests/unit/onnx_test_util.h"

namespace a8 {
namespace {

using ::a8::testing::ImportText;
using ::testing::HasSubstr;

// x [2, 6, 4] split along `axis` by `split_decl` (a Constant "split = Constant <value = ...>()"
// line, or "" for none), `body` reading the sequence `s`, returning `outs`.
std::string Model(const std::string& split_node, const std::string& split_attrs,
                  const std::string& body, const std::string& outs) {
  return "<ir_version: 8, opset_import: [\"\" : 20]>\ng (float[2, 6, 4] x) => (" + outs +
         ")\n{\n zero = Constant <value = int64 {0}> ()\n one = Constant <value = int64 {1}> ()\n"
         " two = Constant <value = int64 {2}> ()\n last = Constant <value = int64 {-1}> ()\n" +
         split_node + "\n s = SplitToSequence " + split_attrs + " (x" +
         (split_node.empty() ? "" : ", split") + ")\n" + body + "\n}";
}

// The Slice that produces `name`, with its constant starts, ends and axes.
struct SliceOf {
  int64_t start, end, axis;
};
SliceOf FindSlice(const Graph& g, const std::string& name) {
  const Value* v = g.FindValue(name);
  EXPECT_NE(v, nullptr) << name;
  const Node* n = v->producer();
  if (n->op() == "Squeeze") n = n->input(0)->producer();
  EXPECT_EQ(n->op(), "Slice");
  EXPECT_EQ(n->input(0)->name(), "x");
  return {n->input(1)->data()->GetInt64(0), n->input(2)->data()->GetInt64(0),
          n->input(3)->data()->GetInt64(0)};
}

TEST(ImportSequenceTest, ScalarSplitBecomesSlices) {
  // GPT-2's dynamo export: c_attn's output split into q, k, v with a scalar split.
  auto g = ImportText(Model(" split = Constant <value = int64 {2}> ()", "<axis = 1>",
                            " q = SequenceAt (s, zero)\n k = SequenceAt (s, one)\n"
                            " v = SequenceAt (s, two)",
                            "float[2, 2, 4] q, float[2, 2, 4] k, float[2, 2, 4] v"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (const Node* n : (*g)->nodes()) {
    EXPECT_NE(n->op(), "SplitToSequence");
    EXPECT_NE(n->op(), "SequenceAt");
  }
  for (auto [name, start] : {std::pair<const char*, int64_t>{"q", 0}, {"k", 2}, {"v", 4}}) {
    SliceOf s = FindSlice(**g, name);
    EXPECT_EQ(s.start, start) << name;
    EXPECT_EQ(s.end, start + 2) << name;
    EXPECT_EQ(s.axis, 1) << name;
  }
  EXPECT_EQ((*g)->FindValue("v")->producer()->name(), "SequenceAt_8");
}

TEST(ImportSequenceTest, LengthsAndOnesAndNegativePositions) {
  auto g = ImportText(Model(" split = Constant <value = int64[3] {1, 3, 2}> ()", "<axis = -2>",
                            " a = SequenceAt (s, one)\n b = SequenceAt (s, last)",
                            "float[2, 3, 4] a, float[2, 2, 4] b"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  SliceOf a = FindSlice(**g, "a"), b = FindSlice(**g, "b");
  EXPECT_EQ(a.start, 1);
  EXPECT_EQ(a.end, 4);
  EXPECT_EQ(a.axis, -2);
  EXPECT_EQ(b.start, 4);
  EXPECT_EQ(b.end, 6);
  // No split, keepdims = 0: slices of 1, squeezed.
  g = ImportText(
      Model("", "<axis = 2, keepdims = 0>", " c = SequenceAt (s, last)", "float[2, 6] c"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Node* sq = (*g)->FindValue("c")->producer();
  EXPECT_EQ(sq->op(), "Squeeze");
  SliceOf c = FindSlice(**g, "c");
  EXPECT_EQ(c.start, -1);
  EXPECT_EQ(c.end, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.axis, 2);
}

TEST(ImportSequenceTest, OtherSequenceUsesAreRefused) {
  const std::string split = " split = Constant <value = int64 {2}> ()";
  // Another op reading the sequence.
  auto g = ImportText(Model(split, "<axis = 1>", " n = SequenceLength (s)", "int64 n"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(g.status().message(),
              HasSubstr("(SequenceLength): input 's' is the sequence made by node "
                        "'SplitToSequence_5' (SplitToSequence); a800c takes a sequence only "
                        "through SequenceAt at a constant position"));
  const struct {
    const char* what;
    std::string model;
    const char* message;
  } refused[] = {
      {"a position computed at run time",
       "<ir_version: 8, opset_import: [\"\" : 20]>\ng (float[2, 6, 4] x, int64 p) => (float[2, 2, "
       "4] y)\n{\n split = Constant <value = int64 {2}> ()\n s = SplitToSequence <axis = 1> (x, "
       "split)\n y = SequenceAt (s, p)\n}",
       "(SequenceAt): position 'p' is computed at run time"},
      {"a split computed at run time",
       "<ir_version: 8, opset_import: [\"\" : 20]>\ng (float[2, 6, 4] x, int64 k) => (float[2, 2, "
       "4] y)\n{\n s = SplitToSequence <axis = 1> (x, k)\n zero = Constant <value = int64 {0}> ()\n"
       " y = SequenceAt (s, zero)\n}",
       "(SplitToSequence): split 'k' is computed at run time"},
      {"out of range",
       Model(" split = Constant <value = int64[2] {2, 4}> ()", "<axis = 1>",
             " y = SequenceAt (s, two)", "float[2, 2, 4] y"),
       "(SequenceAt): position 2 is out of range"},
      {"negative, with a scalar split",
       Model(split, "<axis = 1>", " y = SequenceAt (s, last)", "float[2, 2, 4] y"),
       "a800c takes positions >= 0 here"},
  };
  for (const auto& c : refused) {
    SCOPED_TRACE(c.what);
    g = ImportText(c.model);
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace a8
