// The constant evaluator's shared helpers (constant_folding_internal.h).
#include <algorithm>
#include <cstring>

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

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
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
  const size_t pad = out_dims.size() - in_dims.size();
  std::vector<int64_t> in_strides = Strides(in_dims);
  return SourceIndex(out_dims, [&](int d, int64_t c) -> int64_t {
    if (static_cast<size_t>(d) < pad) return 0;
    size_t k = d - pad;
    return in_dims[k] == 1 ? 0 : c * in_strides[k];
  });
}

void GatherElements(const TensorData& in, const std::vector<int64_t>& index, TensorData* out) {
  const size_t es = DTypeSize(in.type.dtype);
  for (size_t i = 0; i < index.size(); ++i) {
    std::memcpy(out->bytes.data() + i * es, in.bytes.data() + index[i] * es, es);
  }
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
