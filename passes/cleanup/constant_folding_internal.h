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

// Row-major strides of `dims` in elements.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);

// For each element of a tensor of `out_dims`, sum_d contrib(d, coordinate_d).
template <typename Fn>
std::vector<int64_t> SourceIndex(const std::vector<int64_t>& out_dims, Fn contrib) {
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  const int rank = static_cast<int>(out_dims.size());
  std::vector<int64_t> index(n);
  std::vector<int64_t> c(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = 0;
    for (int d = 0; d < rank; ++d) s += contrib(d, c[d]);
    index[i] = s;
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < out_dims[d]) break;
      c[d] = 0;
    }
  }
  return index;
}

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

// out[i] = in[index[i]] element-wise (any dtype; elements are copied as bytes).
void GatherElements(const TensorData& in, const std::vector<int64_t>& index, TensorData* out);

// The int64 values of input `i` (shape-like operand); InvalidInput naming the node when absent.
StatusOr<std::vector<int64_t>> IntsOf(const Node& node, const Inputs& in, int i, const char* field);

// Math half (constant_folding_math.cc). Each returns Unsupported for an op it does not handle.
StatusOr<Outputs> EvaluateMath(const Node& node, const Inputs& in);
bool IsMathOp(const std::string& op);

}  // namespace a8::folding
