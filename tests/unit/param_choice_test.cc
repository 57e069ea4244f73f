// ParamChoiceTest: a float initializer holding Inf, NaN or a value at or below -1e30 (finfo.min
// standing for -inf in an attention mask) is kept constant as a mask; any other stays trained.
// The f32 check reads four lanes at a time, so each case puts the value in the vector body and in
// the tail.
#include "passes/autodiff/param_choice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;

// The decision for a parameter of 11 elements (two vectors of four and a tail of three) of ones,
// with `value` at `at`, added to the graph's input.
std::string KindOf(float value, int at) {
  std::vector<float> v(11, 1.0f);
  v[at] = value;
  Graph g;
  Value* x = g.AddInput("x", F32({11}));
  Value* p = g.AddParameter("p", TensorData::FromFloats(v, {11}));
  Node* add = g.AddNode("Add", "", {x, p}, {{"y", F32({11})}}, {}, "add");
  auto d = ChooseParameters(g, {add->output(0)}, "", "");
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok() || d->size() != 1) return "?";
  return (*d)[0].kind;
}

TEST(ParamChoiceTest, MasksAreFoundAnywhereInTheTensor) {
  const float inf = std::numeric_limits<float>::infinity();
  const float below = -1e30f;  // the float nearest -1e30 lies just below it: a mask value
  const float above = std::nextafter(-1e30f, 0.0f);
  for (int at : {0, 5, 8, 10}) {
    EXPECT_EQ(KindOf(inf, at), "mask") << at;
    EXPECT_EQ(KindOf(-inf, at), "mask") << at;
    EXPECT_EQ(KindOf(std::nanf(""), at), "mask") << at;
    EXPECT_EQ(KindOf(below, at), "mask") << at;
    EXPECT_EQ(KindOf(-3.4e38f, at), "mask") << at;
    EXPECT_EQ(KindOf(above, at), "trained") << at;
    EXPECT_EQ(KindOf(std::numeric_limits<float>::max(), at), "trained") << at;
    EXPECT_EQ(KindOf(-1e4f, at), "trained") << at;
  }
}

}  // namespace
}  // namespace a8
