// Graph's node order over pooled storage (compiler/ir/id_pool.h, the id-linked order in
// graph.h): random inserts, moves, erasures and reorders checked step by step against a
// std::list of the same nodes; the iterator rules the header states (walking while adding and
// moving nodes); the pool itself; and the verifier rejecting an order that a move broke.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <list>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/id_pool.h"
#include "compiler/ir/verifier.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;

std::vector<Node*> Walk(const Graph& g) {
  std::vector<Node*> out;
  for (Node* n : g.nodes()) out.push_back(n);
  return out;
}

TEST(GraphOrderTest, RandomOperationsMatchAListModel) {
  Graph g;
  Value* x = g.AddInput("x", F32({1}));
  std::list<Node*> model;
  std::mt19937 rng(15);
  int made = 0;
  auto pick = [&]() {
    auto it = model.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, model.size() - 1)(rng));
    return it;
  };
  for (int step = 0; step < 4000; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 9)(rng);
    if (model.empty() || op < 4) {  // add: at the end or before a random node
      const bool at_end = model.empty() || op < 2;
      auto pos = at_end ? model.end() : pick();
      Node* before = at_end ? nullptr : *pos;
      Node* n =
          g.AddNode("Relu", "", {x}, {{"y", F32({1})}}, {}, "n" + std::to_string(made++), before);
      model.insert(pos, n);
    } else if (op < 6) {  // erase
      auto it = pick();
      g.EraseNode(*it);
      model.erase(it);
    } else if (op < 9) {  // move before a random node or to the end
      auto from = pick();
      Node* n = *from;
      const bool to_end = op == 8;
      Node* before = to_end ? nullptr : *pick();
      g.MoveNode(n, before);
      if (before != n) {
        model.erase(from);
        model.insert(to_end ? model.end() : std::find(model.begin(), model.end(), before), n);
      }
    } else {  // a random permutation
      std::vector<Node*> order(model.begin(), model.end());
      std::shuffle(order.begin(), order.end(), rng);
      g.Reorder(order);
      model.assign(order.begin(), order.end());
    }
    const std::vector<Node*> expected(model.begin(), model.end());
    ASSERT_EQ(Walk(g), expected) << "after step " << step << " (op " << op << ")";
    ASSERT_EQ(g.NodeList(), expected) << "after step " << step;
    ASSERT_EQ(g.num_nodes(), model.size());
    ASSERT_EQ(x->uses().size(), model.size());
  }
  // Every live node is still itself (pooled storage never moved it).
  for (Node* n : model) EXPECT_EQ(n->output(0)->producer(), n);
}

TEST(GraphOrderTest, WalkingWhileAddingAndMoving) {
  Graph g;
  Value* x = g.AddInput("x", F32({1}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({1})}}, {}, "a");
  Node* b = g.AddNode("Relu", "", {x}, {{"b", F32({1})}}, {}, "b");
  Node* c = g.AddNode("Relu", "", {x}, {{"c", F32({1})}}, {}, "c");
  std::vector<std::string> seen;
  for (Node* n : g.nodes()) {
    seen.push_back(n->name());
    if (n == a) {
      // Added before the position: not visited. Added after it: visited. A burst of additions
      // grows the order's arrays (the iterator holds an id, not a pointer into them).
      g.AddNode("Relu", "", {x}, {{"pre", F32({1})}}, {}, "pre", a);
      for (int i = 0; i < 300; ++i) g.AddNode("Relu", "", {x}, {{"t", F32({1})}}, {}, "tail");
      g.AddNode("Relu", "", {x}, {{"mid", F32({1})}}, {}, "mid", c);
    }
    if (n == b) g.MoveNode(b, nullptr);  // followed to its new place, the end: the walk stops
  }
  ASSERT_EQ(seen.size(), 2u);  // a, then b, which moved to the end
  EXPECT_EQ(seen[0], "a");
  EXPECT_EQ(seen[1], "b");
  const std::vector<Node*> all = g.NodeList();
  ASSERT_EQ(all.size(), 305u);
  EXPECT_EQ(all[0]->name(), "pre");
  EXPECT_EQ(all[1], a);
  EXPECT_EQ(all[2]->name(), "mid");
  EXPECT_EQ(all[3], c);
  EXPECT_EQ(all.back(), b);
}

TEST(GraphOrderTest, EmptyAndSingleNode) {
  Graph g;
  EXPECT_TRUE(Walk(g).empty());
  EXPECT_TRUE(g.nodes().begin() == g.nodes().end());
  Value* x = g.AddInput("x", F32({1}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({1})}}, {}, "a");
  g.MoveNode(a, a);
  g.MoveNode(a, nullptr);
  EXPECT_EQ(Walk(g), std::vector<Node*>{a});
  g.EraseNode(a);
  EXPECT_TRUE(Walk(g).empty());
  g.Reorder({});
  Node* b = g.AddNode("Relu", "", {x}, {{"b", F32({1})}}, {}, "b");
  EXPECT_EQ(Walk(g), std::vector<Node*>{b});
  EXPECT_EQ(b->id(), 1);  // ids are never reused
}

struct Counted {
  static int live;
  Counted() { ++live; }
  ~Counted() { --live; }
  int payload[7] = {};
};
int Counted::live = 0;

TEST(GraphOrderTest, IdPoolConstructsDestroysAndKeepsAddresses) {
  {
    IdPool<Counted> pool;
    std::vector<Counted*> made;
    for (int i = 0; i < 1000; ++i) {
      made.push_back(pool.Create());
      made.back()->payload[0] = i;
    }
    EXPECT_EQ(Counted::live, 1000);
    for (int i = 0; i < 1000; i += 3) pool.Destroy(i);
    EXPECT_EQ(Counted::live, 1000 - 334);
    for (int i = 0; i < 1000; ++i) {
      EXPECT_EQ(pool.live(i), i % 3 != 0);
      if (i % 3 != 0) {
        EXPECT_EQ(pool.Get(i), made[i]);  // never moved by later blocks
        EXPECT_EQ(pool.Get(i)->payload[0], i);
      }
    }
    // Within a block, consecutive ids are neighbours.
    EXPECT_EQ(pool.Get(2) + 1, pool.Get(4) - 1);
    EXPECT_FALSE(pool.live(1000));
    EXPECT_FALSE(pool.live(-1));
  }
  EXPECT_EQ(Counted::live, 0);  // the pool's destructor ran the live ones' destructors
}

TEST(GraphOrderTest, VerifierRejectsAnOrderAMoveBroke) {
  Graph g;
  Value* x = g.AddInput("x", F32({2}));
  Node* a = g.AddNode("Relu", "", {x}, {{"a", F32({2})}}, {}, "a");
  Node* b = g.AddNode("Relu", "", {a->output(0)}, {{"b", F32({2})}}, {}, "b");
  g.SetOutputs({b->output(0)});
  ASSERT_TRUE(Verify(g).ok());
  g.MoveNode(a, nullptr);  // the producer after its consumer
  const Status s = Verify(g);
  EXPECT_FALSE(s.ok());
  g.MoveNode(a, b);
  EXPECT_TRUE(Verify(g).ok());
}

}  // namespace
}  // namespace a8
