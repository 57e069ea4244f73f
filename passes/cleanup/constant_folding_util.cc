// The constant evaluator's shared helpers (constant_folding_internal.h).
#include <algorithm>

#include "passes/cleanup/constant_folding.h"
#include "passes/cleanup/constant_folding_internal.h"

namespace a8 {
namespace folding {

StatusOr<std::shared_ptr<TensorData>> NewTensor(const Node& node, DType dtype,
                                                std::vector<int64_t> dims) {
  TensorType type{dtype, std::move(dims)};
  StatusOr<int64_t> n = type.NumElements();
  if (!n.ok()) return n.status().WithContext(node.Where());
  if (*n > kMaxFoldElements) {
    return Unsupported("{}: result {} has more than {} elements; not folded", node.Where(),
                       type.ToString(), kMaxFoldElements);
  }
  return TensorData::Make(std::move(type));
}

StatusOr<std::vector<int64_t>> Broadcast(const Node& node, const std::vector<int64_t>& a,
                                         const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return InvalidInput("{}: shapes [{}] and [{}] do not broadcast", node.Where(),
                          fmt::join(a, ","), fmt::join(b, ","));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastIndex(const std::vector<int64_t>& in_dims,
                                    const std::vector<int64_t>& out_dims) {
  const int rank = static_cast<int>(out_dims.size());
  const int pad = rank - static_cast<int>(in_dims.size());
  // The stride of each output dim in the input: 0 where the input is broadcast.
  std::vector<int64_t> stride(rank, 0);
  for (int d = rank - 1, s = 1; d >= pad; s *= in_dims[d - pad], --d) {
    stride[d] = in_dims[d - pad] == 1 ? 0 : s;
  }
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  std::vector<int64_t> index(n);
  std::vector<int64_t> c(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    for (int d = 0; d < rank; ++d) at += c[d] * stride[d];
    index[i] = at;
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < out_dims[d]) break;
      c[d] = 0;
    }
  }
  return index;
}

StatusOr<std::vector<int64_t>> IntsOf(const Node& node, const Inputs& in, int i,
                                      const char* field) {
  if (i >= static_cast<int>(in.size()) || !in[i]) {
    return InvalidInput("{}: input {} ('{}') is missing", node.Where(), i, field);
  }
  if (!IsInteger(in[i]->type.dtype)) {
    return InvalidInput("{}: input {} ('{}') must be an integer tensor, got {}", node.Where(), i,
                        field, in[i]->type.ToString());
  }
  return in[i]->ToInt64Vector();
}

Status KernelResult(const Node& node, const Status& kernel) {
  if (kernel.ok()) return kernel;
  return Unsupported("{}: not folded: {}", node.Where(), kernel.message());
}

}  // namespace folding
}  // namespace a8
