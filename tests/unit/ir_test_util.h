// Helpers for the pass tests that start from IR text: parse (a GoogleTest failure and nullptr
// when the text does not parse), run a pass, count and list ops, find a node by its name.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/parser.h"

namespace a8::testing {

inline std::unique_ptr<Graph> ParseOrFail(const std::string& text) {
  auto g = ParseIr(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : nullptr;
}

// Runs `pass` on `g`: whether it changed the graph. An error fails the test and reads false.
template <class Pass>
bool RunPass(Pass&& pass, Graph& g) {
  StatusOr<bool> changed = pass.Run(g);
  EXPECT_TRUE(changed.ok()) << changed.status().message();
  return changed.ok() && *changed;
}

inline int CountOp(const Graph& g, const std::string& op) {
  int count = 0;
  for (const Node* n : g.nodes()) count += n->op() == op ? 1 : 0;
  return count;
}

// The ops of `g`'s nodes in graph order.
inline std::vector<std::string> Ops(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node* n : g.nodes()) ops.push_back(n->op());
  return ops;
}

inline const Node* NodeNamed(const Graph& g, const std::string& name) {
  for (const Node* n : g.nodes()) {
    if (n->name() == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return nullptr;
}

}  // namespace a8::testing
