#include "kernels/cpu/broadcast.h"

#include <fmt/ranges.h>

namespace a8::cpu {

StatusOr<Dims> BroadcastDims(const std::vector<Dims>& inputs, const char* op) {
  size_t rank = 0;
  for (const Dims& d : inputs) rank = std::max(rank, d.size());
  Dims out(rank, 1);
  for (const Dims& d : inputs) {
    size_t pad = rank - d.size();
    for (size_t i = 0; i < d.size(); ++i) {
      int64_t& o = out[pad + i];
      if (d[i] == o || d[i] == 1) continue;
      if (o != 1) {
        return InvalidInput("{}: shapes [{}] do not broadcast", op,
                            fmt::join(inputs.begin(), inputs.end(), "], ["));
      }
      o = d[i];
    }
  }
  return out;
}

StatusOr<BroadcastPlan> MakeBroadcastPlan(const std::vector<Dims>& inputs, const Dims& out_dims,
                                          const char* op) {
  const size_t rank = out_dims.size();
  const size_t k_inputs = inputs.size();
  std::vector<Dims> full(k_inputs, Dims(rank, 0));
  for (size_t k = 0; k < k_inputs; ++k) {
    const Dims& d = inputs[k];
    if (d.size() > rank)
      return InvalidInput("{}: input rank {} exceeds output rank {}", op, d.size(), rank);
    size_t pad = rank - d.size();
    int64_t stride = 1;
    for (size_t i = rank; i-- > pad;) {
      int64_t di = d[i - pad];
      if (di != out_dims[i] && di != 1) {
        return InvalidInput("{}: input dims [{}] do not broadcast to [{}]", op, fmt::join(d, ","),
                            fmt::join(out_dims, ","));
      }
      full[k][i] = di == 1 ? 0 : stride;
      stride *= di;
    }
  }
  BroadcastPlan plan;
  plan.out_dims = out_dims;
  plan.strides.assign(k_inputs, Dims());
  for (size_t i = 0; i < rank; ++i) {
    if (out_dims[i] == 1) continue;
    bool merge = !plan.dims.empty();
    for (size_t k = 0; merge && k < k_inputs; ++k) {
      merge = plan.strides[k].back() == full[k][i] * out_dims[i];
    }
    if (merge) {
      plan.dims.back() *= out_dims[i];
      for (size_t k = 0; k < k_inputs; ++k) plan.strides[k].back() = full[k][i];
    } else {
      plan.dims.push_back(out_dims[i]);
      for (size_t k = 0; k < k_inputs; ++k) plan.strides[k].push_back(full[k][i]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (auto& s : plan.strides) s.push_back(0);
  }
  return plan;
}

}  // namespace a8::cpu
