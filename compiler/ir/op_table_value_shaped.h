// Ops whose output shapes depend on their input values (NonZero, Unique, NonMaxSuppression;
// op_table_value_shaped.cc). a800c's shapes are static, so such an op is always folded at compile
// time: its fold rule computes the outputs from its constant inputs on the host, its shape rule
// runs that rule (and fails naming the input to --bind when one is not constant), and constant
// folding puts the results in place of the node. It never reaches a plan and has no kernel.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/op_node.h"
#include "compiler/ir/status.h"

namespace a8 {

using FoldRule = StatusOr<std::vector<TensorDataPtr>> (*)(const OpNode& node);

// The fold rule of a value-shaped op, null for every other op.
FoldRule FindFoldRule(std::string_view domain, std::string_view op);

}  // namespace a8
