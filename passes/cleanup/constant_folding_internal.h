// Internal to the constant evaluator (constant_folding*.cc): the helpers both halves share, and
// the entry points of the math half (elementwise, Cast, reductions, Range).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8::folding {

using Outputs = std::vector<TensorDataPtr>;
using Inputs = std::vector<TensorDataPtr>;

// A zero-filled tensor of `type`, or Unsupported when it would exceed kMaxFoldElements (or the
// dims are invalid): such a node is simply not folded.
StatusOr<std::shared_ptr<TensorData>> NewTensor(const Node& node, DType dtype,
                                                std::vector<int64_t> dims);

// A CPU kernel's status as the evaluator's: a kernel that declines the node (a dtype it does not
// take, ...) leaves it unfolded.
Status KernelResult(const Node& node, const Status& kernel);

// Numpy multidirectional broadcast of two shapes; InvalidInput naming the node otherwise.
StatusOr<std::vector<int64_t>> Broadcast(const Node& node, const std::vector<int64_t>& a,
                                         const std::vector<int64_t>& b);

// For each element of a tensor of `out_dims` (row-major), the linear index of the element of a
// tensor of `in_dims` that numpy broadcasting reads (in_dims broadcasts to out_dims).
std::vector<int64_t> BroadcastIndex(const std::vector<int64_t>& in_dims,
                                    const std::vector<int64_t>& out_dims);

// The int64 values of input `i` (shape-like operand); InvalidInput naming the node when absent.
StatusOr<std::vector<int64_t>> IntsOf(const Node& node, const Inputs& in, int i, const char* field);

// Math half (constant_folding_math.cc). Each returns Unsupported for an op it does not handle.
StatusOr<Outputs> EvaluateMath(const Node& node, const Inputs& in);
bool IsMathOp(const std::string& op);

}  // namespace a8::folding
