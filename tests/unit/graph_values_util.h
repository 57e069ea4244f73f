// The graph values of two graphs compared one by one, for the round-trip tests (IR text, ONNX
// export and import again).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "compiler/ir/graph.h"

namespace a8::testing {

// Every graph value of `b` has the name, role and type of the value at the same place in `a`, and
// its data byte for byte (where `a`'s value has data; where it has none, neither has `b`'s).
inline void ExpectSameGraphValues(const Graph& a, const Graph& b) {
  const std::vector<Value*> va = a.graph_values(), vb = b.graph_values();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    SCOPED_TRACE(va[i]->name());
    EXPECT_EQ(va[i]->name(), vb[i]->name());
    EXPECT_EQ(va[i]->role(), vb[i]->role());
    EXPECT_EQ(va[i]->type(), vb[i]->type());
    ASSERT_EQ(va[i]->data() != nullptr, vb[i]->data() != nullptr);
    if (va[i]->data()) {
      EXPECT_EQ(va[i]->data()->bytes, vb[i]->data()->bytes);
    }
  }
}

}  // namespace a8::testing
