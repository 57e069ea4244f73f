// The Graph API: use lists under every rewrite (SetInput, ReplaceAllUsesWith, EraseNode,
// RemoveTrailingInputs), unique names, node order (AddNode before, MoveNode, Reorder), graph
// outputs; plus a random rewrite sequence checked against an independent count of operands.
#include "compiler/ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "compiler/ir/verifier.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;

int CountUses(const Value* v, const Node* n, int operand) {
  return static_cast<int>(std::count_if(v->uses().begin(), v->uses().end(), [&](const Use& u) {
    return u.node == n && u.operand == operand;
  }));
}

std::vector<std::string> OpOrder(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node* n : g.nodes()) ops.push_back(n->name());
  return ops;
}

TEST(GraphTest, UseListsFollowOperands) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Value* y = g.AddInput("y", F32({2}));
  Node* add = g.AddNode("Add", "", {x, x}, {{"s", F32({2})}}, {}, "add");
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(CountUses(x, add, 0), 1);
  EXPECT_EQ(CountUses(x, add, 1), 1);
  EXPECT_EQ(add->output(0)->producer(), add);
  EXPECT_EQ(add->output(0)->producer_output(), 0);
  EXPECT_EQ(add->output(0)->role(), ValueRole::kIntermediate);

  add->SetInput(1, y);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(CountUses(x, add, 0), 1);
  EXPECT_EQ(CountUses(y, add, 1), 1);

  add->SetInput(3, x);  // grows with a null operand 2
  EXPECT_EQ(add->num_inputs(), 4);
  EXPECT_FALSE(add->has_input(2));
  EXPECT_EQ(CountUses(x, add, 3), 1);
  add->RemoveTrailingInputs(2);
  EXPECT_EQ(add->num_inputs(), 2);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(add->input(5), nullptr);
}

TEST(GraphTest, ReplaceAllUsesWithRewritesOperandsAndOutputs) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Value* z = g.AddInput("z", F32({2}));
  Node* neg = g.AddNode("Neg", "", {x}, {{"n", F32({2})}}, {}, "neg");
  Node* add = g.AddNode("Add", "", {neg->output(0), neg->output(0)}, {{"s", F32({2})}}, {}, "add");
  g.AddOutput(neg->output(0));
  g.AddOutput(add->output(0));
  g.ReplaceAllUsesWith(neg->output(0), z);
  EXPECT_TRUE(neg->output(0)->uses().empty());
  EXPECT_FALSE(neg->output(0)->is_graph_output());
  EXPECT_EQ(add->input(0), z);
  EXPECT_EQ(add->input(1), z);
  EXPECT_EQ(z->uses().size(), 2u);
  EXPECT_EQ(g.outputs()[0], z);
  EXPECT_TRUE(z->is_graph_output());
  g.ReplaceAllUsesWith(z, z);  // no-op
  EXPECT_EQ(z->uses().size(), 2u);
  // The now-dead node can be erased; its output disappears from the name table.
  g.EraseNode(neg);
  EXPECT_EQ(g.FindValue("n"), nullptr);
  EXPECT_TRUE(x->uses().empty());
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g).message();
}

TEST(GraphTest, EraseNodeRemovesItsUses) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({2})}}, {}, "a");
  Node* b = g.AddNode("Add", "", {a->output(0), x}, {{"b", F32({2})}}, {}, "b");
  g.AddOutput(a->output(0));
  EXPECT_EQ(x->uses().size(), 2u);
  g.EraseNode(b);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_TRUE(a->output(0)->uses().empty());
  EXPECT_EQ(g.FindValue("b"), nullptr);
  // Its name is free again.
  Node* c = g.AddNode("Neg", "", {x}, {{"b", F32({2})}}, {}, "c");
  EXPECT_EQ(c->output(0)->name(), "b");
}

TEST(GraphTest, UniqueNames) {
  Graph g;
  EXPECT_EQ(g.UniqueName("w"), "w");
  Value* w = g.AddInput("w", F32({1}));
  EXPECT_EQ(w->name(), "w");
  EXPECT_EQ(g.UniqueName("w"), "w.1");
  Value* w1 = g.AddInput("w", F32({1}));
  EXPECT_EQ(w1->name(), "w.1");
  Value* w2 = g.AddConstant("w", TensorData::FromFloats({1.5f}, {1}));
  EXPECT_EQ(w2->name(), "w.2");
  Node* n = g.AddNode("Add", "", {w, w1}, {{"w", F32({1})}, {"w", F32({1})}});
  EXPECT_EQ(n->output(0)->name(), "w.3");
  EXPECT_EQ(n->output(1)->name(), "w.4");
  EXPECT_EQ(g.FindValue("w.3"), n->output(0));
  Value* empty = g.AddInput("", F32({1}));
  EXPECT_EQ(empty->name(), "v");
  EXPECT_EQ(g.AddInput("", F32({1}))->name(), "v.1");
}

TEST(GraphTest, NodeOrder) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({2})}}, {}, "a");
  Node* c = g.AddNode("Relu", "", {x}, {{"c", F32({2})}}, {}, "c");
  Node* b = g.AddNode("Relu", "", {x}, {{"b", F32({2})}}, {}, "b", /*before=*/c);
  EXPECT_EQ(OpOrder(g), (std::vector<std::string>{"a", "b", "c"}));
  g.MoveNode(a, nullptr);
  EXPECT_EQ(OpOrder(g), (std::vector<std::string>{"b", "c", "a"}));
  g.MoveNode(a, b);
  EXPECT_EQ(OpOrder(g), (std::vector<std::string>{"a", "b", "c"}));
  g.Reorder({c, a, b});
  EXPECT_EQ(OpOrder(g), (std::vector<std::string>{"c", "a", "b"}));
  // NodeList is a snapshot: erasing while iterating it is safe.
  for (Node* n : g.NodeList()) g.EraseNode(n);
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_TRUE(x->uses().empty());
}

TEST(GraphTest, GraphValuesAndOutputs) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Value* p = g.AddParameter("p", TensorData::FromFloats({1.0f, 2.0f}, {2}));
  Value* s = g.AddState("s", TensorData::FromFloats({3.0f, 4.0f}, {2}));
  Value* c = g.AddConstant("c", TensorData::FromInt64s({7}, {1}));
  Value* q = g.AddParameter("q", TensorData::FromFloats({5.0f}, {1}));
  EXPECT_EQ(g.graph_values(), (std::vector<Value*>{x, p, s, c, q}));
  EXPECT_EQ(g.inputs(), (std::vector<Value*>{x}));
  EXPECT_EQ(g.parameters(), (std::vector<Value*>{p, q}));
  EXPECT_EQ(p->type(), F32({2}));
  EXPECT_EQ(c->dtype(), DType::kI64);
  EXPECT_TRUE(c->is_constant());
  EXPECT_FALSE(p->is_constant());
  EXPECT_EQ(ValueRoleName(s->role()), "state");
  g.AddOutput(p);
  g.AddOutput(p);
  g.ReplaceOutput(0, s);
  EXPECT_TRUE(p->is_graph_output());  // still output 1
  g.ReplaceOutput(1, s);
  EXPECT_FALSE(p->is_graph_output());
  g.SetOutputs({x});
  EXPECT_FALSE(s->is_graph_output());
  EXPECT_TRUE(x->is_graph_output());
  g.EraseGraphValue(q);
  EXPECT_EQ(g.FindValue("q"), nullptr);
  EXPECT_EQ(g.parameters(), (std::vector<Value*>{p}));
}

// EraseGraphValue clears a slot and compacts once half the slots are clear: the creation order
// of what is left, inputs() and parameters() must hold across erasures in any order and across
// compactions, and values added afterwards must land after the survivors.
TEST(GraphTest, EraseGraphValueKeepsCreationOrder) {
  Graph g;
  std::vector<Value*> all;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "v" + std::to_string(i);
    all.push_back(i % 5 == 0 ? g.AddInput(name, F32({1}))
                             : g.AddParameter(name, TensorData::FromFloats({1.0f}, {1})));
  }
  std::vector<Value*> expected = all;
  std::mt19937 rng(7);
  for (int round = 0; round < 30; ++round) {
    std::uniform_int_distribution<size_t> pick(0, expected.size() - 1);
    Value* v = expected[pick(rng)];
    expected.erase(std::find(expected.begin(), expected.end(), v));
    const std::string name = v->name();
    g.EraseGraphValue(v);
    EXPECT_EQ(g.FindValue(name), nullptr);
    ASSERT_EQ(g.graph_values(), expected) << "after erasing " << name;
    std::vector<Value*> inputs, params;
    for (Value* w : expected) {
      if (w->role() == ValueRole::kInput) inputs.push_back(w);
      if (w->role() == ValueRole::kParameter) params.push_back(w);
    }
    ASSERT_EQ(g.inputs(), inputs);
    ASSERT_EQ(g.parameters(), params);
    if (round % 7 == 3) {  // a value added between erasures goes last
      Value* added = g.AddConstant("c" + std::to_string(round), TensorData::FromInt64s({1}, {1}));
      expected.push_back(added);
      ASSERT_EQ(g.graph_values(), expected);
    }
  }
}

// Ids are dense, never reused, and below the bounds, for nodes and values alike.
TEST(GraphTest, DenseIds) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({2})}});
  Node* b = g.AddNode("Relu", "", {a->output(0)}, {{"b", F32({2})}});
  EXPECT_EQ(x->id(), 0);
  EXPECT_EQ(a->output(0)->id(), 1);
  EXPECT_EQ(b->output(0)->id(), 2);
  EXPECT_EQ(a->id(), 0);
  EXPECT_EQ(b->id(), 1);
  EXPECT_EQ(g.value_id_bound(), 3);
  EXPECT_EQ(g.node_id_bound(), 2);
  g.EraseNode(b);
  Node* c = g.AddNode("Relu", "", {x}, {{"c", F32({2})}}, {}, "", a);
  EXPECT_EQ(c->id(), 2);  // not b's
  EXPECT_EQ(c->output(0)->id(), 3);
  EXPECT_EQ(g.node_id_bound(), 3);
  EXPECT_EQ(g.value_id_bound(), 4);
}

TEST(GraphTest, NodeAccessors) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* n = g.AddNode("Adam", "ai.onnx.preview.training", {x}, {{"y", F32({2})}},
                      {{"alpha", Attribute(0.9f)},
                       {"norm", Attribute("l2")},
                       {"k", Attribute(int64_t{3})},
                       {"ks", Attribute(std::vector<int64_t>{1, 2})}},
                      "opt");
  EXPECT_EQ(n->qualified_op(), "ai.onnx.preview.training.Adam");
  EXPECT_EQ(n->Where(), "node 'opt' (ai.onnx.preview.training.Adam)");
  EXPECT_EQ(n->GetFloat("alpha", 0.0f), 0.9f);
  EXPECT_EQ(n->GetFloat("k", -1.0f), -1.0f);  // wrong kind: the default
  EXPECT_EQ(n->GetInt("k", 0), 3);
  EXPECT_EQ(n->GetString("norm", ""), "l2");
  EXPECT_EQ(n->GetInts("ks"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n->GetInts("missing", {9}), (std::vector<int64_t>{9}));
  n->RemoveAttr("k");
  EXPECT_FALSE(n->has_attr("k"));
  EXPECT_EQ(n->graph(), &g);
}

// Random graphs under random rewrites: every value's use list equals an independent count of
// the operands that name it, and the graph stays valid.
TEST(GraphTest, RandomRewritesKeepUseListsExact) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 10; ++trial) {
    Graph g;
    std::vector<Value*> pool;
    for (int i = 0; i < 3; ++i) pool.push_back(g.AddInput("in", F32({4})));
    for (int i = 0; i < 40; ++i) {
      std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
      Node* n = g.AddNode("Add", "", {pool[pick(rng)], pool[pick(rng)]}, {{"t", F32({4})}});
      pool.push_back(n->output(0));
    }
    g.AddOutput(pool.back());
    for (int step = 0; step < 60; ++step) {
      std::vector<Node*> nodes = g.NodeList();
      Node* n = nodes[rng() % nodes.size()];
      switch (rng() % 3) {
        case 0: {  // rewire an operand to an earlier value (keeps topological order)
          std::vector<Value*> earlier(g.inputs().begin(), g.inputs().end());
          for (Node* m : nodes) {
            if (m == n) break;
            earlier.push_back(m->output(0));
          }
          n->SetInput(static_cast<int>(rng() % 2), earlier[rng() % earlier.size()]);
          break;
        }
        case 1: {  // replace n's output by one of its inputs
          g.ReplaceAllUsesWith(n->output(0), n->input(0));
          break;
        }
        default:  // erase n if it is dead
          if (n->output(0)->uses().empty() && !n->output(0)->is_graph_output()) g.EraseNode(n);
      }
      std::map<const Value*, int> expected;
      for (const Node* m : g.nodes()) {
        for (int i = 0; i < m->num_inputs(); ++i) {
          ++expected[m->input(i)];
          ASSERT_EQ(CountUses(m->input(i), m, i), 1);
        }
      }
      for (const Value* v : g.graph_values()) {
        ASSERT_EQ(static_cast<int>(v->uses().size()), expected[v]) << v->name();
      }
      for (const Node* m : g.nodes()) {
        ASSERT_EQ(static_cast<int>(m->output(0)->uses().size()), expected[m->output(0)]);
      }
      Status s = Verify(g);
      ASSERT_TRUE(s.ok()) << s.message();
    }
  }
}

}  // namespace
}  // namespace a8
