// OpNode, the view of a node the op registry works on (compiler/ir/op_node.h): filled without a
// graph (as the plan validator does) it runs the same shape rules and checks, with the same
// messages, as the IR's Node it is filled from.
#include "compiler/ir/op_node.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/plan/kernel_catalog.h"

namespace a8 {
namespace {

// The values of a MatMul y[4, 5] = a[4, 3] x b[b_dims] in dtype t, and what their OpValues point
// to: a is a graph input, b one where `b_graph_input`.
struct MatMulValues {
  MatMulValues(DType t, std::vector<int64_t> b_dims, bool b_graph_input)
      : a_type{t, {4, 3}},
        b_type{t, std::move(b_dims)},
        y_type{t, {4, 5}},
        b(&b_name, &b_type, &none, b_graph_input) {}
  MatMulValues(const MatMulValues&) = delete;
  MatMulValues& operator=(const MatMulValues&) = delete;

  const std::string a_name = "a", b_name = "b", y_name = "y";
  const TensorType a_type, b_type, y_type;
  const TensorDataPtr none;
  const OpValue a{&a_name, &a_type, &none, true}, b, y{&y_name, &y_type, &none, false};
};

TEST(OpNodeTest, ViewWithoutAGraphRunsTheShapeRule) {
  const MatMulValues v(DType::kF16, {3, 5}, false);
  const std::map<std::string, Attribute> attrs;
  const OpNode node("", "MatMul", "mm", 13, {&v.a, &v.b}, {&v.y}, &attrs);

  const OpDef* def = FindOp("", "MatMul");
  ASSERT_NE(def, nullptr);
  ASSERT_TRUE(CheckNodeAgainstOpDef(node, *def).ok());
  std::vector<TensorType> out;
  ASSERT_TRUE(def->infer(node, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], v.y_type);
  EXPECT_EQ(KernelName(node), "MatMul:f16,f16->f16");
}

TEST(OpNodeTest, ErrorsNameTheNodeAsTheIrDoes) {
  const MatMulValues v(DType::kF32, {2, 5}, true);
  const std::map<std::string, Attribute> attrs = {{"bogus", Attribute(int64_t{1})}};
  const OpNode view("", "MatMul", "mm", 13, {&v.a, &v.b}, {&v.y}, &attrs);

  Graph g;
  Node* node = g.AddNode("MatMul", "", {g.AddInput("a", v.a_type), g.AddInput("b", v.b_type)},
                         {{"y", v.y_type}}, attrs, "mm");
  node->set_version(13);
  const OpDef* def = FindOp("", "MatMul");
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(view.Where(), node->Where());

  const Status from_view = CheckNodeAgainstOpDef(view, *def);
  const Status from_node = CheckNodeAgainstOpDef(*node, *def);
  ASSERT_FALSE(from_view.ok());
  EXPECT_EQ(from_view.message(), "node 'mm' (MatMul): unknown attribute 'bogus'");
  EXPECT_EQ(from_node.message(), from_view.message());

  node->RemoveAttr("bogus");
  const std::map<std::string, Attribute> no_attrs;
  const OpNode clean("", "MatMul", "mm", 13, {&v.a, &v.b}, {&v.y}, &no_attrs);
  std::vector<TensorType> out_view, out_node;
  const Status infer_view = def->infer(clean, &out_view);
  const Status infer_node = def->infer(*node, &out_node);
  ASSERT_FALSE(infer_view.ok());
  EXPECT_NE(infer_view.message().find("node 'mm' (MatMul)"), std::string::npos)
      << infer_view.message();
  EXPECT_EQ(infer_node.message(), infer_view.message());
}

TEST(OpNodeTest, AbsentOptionalInputsAreNull) {
  const std::string x_name = "x", y_name = "y";
  const TensorType x_type{DType::kF32, {2, 2}};
  const TensorDataPtr none;
  const OpValue x(&x_name, &x_type, &none, true), y(&y_name, &x_type, &none, false);
  const std::map<std::string, Attribute> attrs;
  const OpNode node("", "Clip", "clip", 13, {&x, nullptr, nullptr}, {&y}, &attrs);
  EXPECT_EQ(node.num_inputs(), 3);
  EXPECT_TRUE(node.has_input(0));
  EXPECT_FALSE(node.has_input(1));
  EXPECT_EQ(node.input(7), nullptr);
  EXPECT_EQ(KernelName(node), "Clip:f32->f32");
  std::vector<TensorType> out;
  ASSERT_TRUE(FindOp("", "Clip")->infer(node, &out).ok());
  EXPECT_EQ(out.at(0), x_type);
}

}  // namespace
}  // namespace a8
