// The host set-up of a reduction (reduce.h ReduceParams) from a tensor's dims and ONNX axes: the
// one copy of the axis checks and messages, for the backends' entry (runtime/device/ops_reduce.cc,
// which the CPU backend runs too) and for constant folding, which runs the kernel on the host.
// The kept and the reduced axes become two index spaces, each with size-1 axes dropped and
// contiguous neighbours merged, so that any axis set of any rank fits the kernel's kMaxRank
// unless more than kMaxRank non-contiguous runs are left.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/common/kernel_types.h"
#include "kernels/device/reduce.h"

namespace a8::A8_DEV_NS {

// Which axes of `dims` are reduced: `axes` normalized (negative ones count from the end), none
// meaning every axis. InvalidInput naming `op` for an axis out of range or given twice.
inline StatusOr<std::vector<bool>> ReducedAxes(const Dims& dims, const std::vector<int64_t>& axes,
                                               const std::string& op) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> reduced(dims.size(), axes.empty());
  for (int64_t axis : axes) {
    A8_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(axis, rank, op.c_str()));
    if (reduced[ax]) return InvalidInput("{}: axis {} is repeated", op, axis);
    reduced[ax] = true;
  }
  return reduced;
}

// The output dims of that reduction: reduced axes dropped, or kept as 1 with `keepdims`.
inline Dims ReducedDims(const Dims& dims, const std::vector<bool>& reduced, bool keepdims) {
  Dims out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(dims[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// Sets p->out, p->red, p->out_count and p->red_count for a dense tensor of `dims` reduced over
// `reduced`. Unsupported naming `op` when an index space keeps more than kMaxRank axes.
inline Status SetReduceShape(const Dims& dims, const std::vector<bool>& reduced,
                             const std::string& op, ReduceParams* p) {
  // An axis (outermost first) joins its space unless it has size 1, merged into the previous
  // one when the two are contiguous in memory (the walk order is unchanged).
  using Axes = std::vector<std::pair<int64_t, int64_t>>;  // (dim, element stride)
  auto add = [](Axes* axes, int64_t dim, int64_t stride) {
    if (dim == 1) return;
    if (!axes->empty() && axes->back().second == dim * stride) {
      axes->back() = {axes->back().first * dim, stride};
      return;
    }
    axes->push_back({dim, stride});
  };
  auto to_shape = [&op](const Axes& axes, Shape* s) -> Status {
    if (axes.size() > static_cast<size_t>(kMaxRank))
      return Unsupported("{}: the kernel walks at most {} non-contiguous axes, this needs {}", op,
                         kMaxRank, axes.size());
    s->rank = static_cast<int>(axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      s->dims[k] = axes[k].first;
      s->strides[k] = axes[k].second;
    }
    return Status::Ok();
  };
  const Dims strides = Strides(dims);
  Axes kept, red;
  p->out_count = p->red_count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    add(reduced[d] ? &red : &kept, dims[d], strides[d]);
    (reduced[d] ? p->red_count : p->out_count) *= dims[d];
  }
  A8_RETURN_IF_ERROR(to_shape(kept, &p->out));
  return to_shape(red, &p->red);
}

}  // namespace a8::A8_DEV_NS
