// The vocabulary of the kernel ABI that every backend shares: dims and their helpers (numpy
// broadcasting, axis normalisation, ONNX Slice resolution) and the parameter structs of the
// kernels whose geometry the runtime decodes once for all backends (pool, conv, loss, pad).
//
// Header-only and below every backend: the CPU kernels (kernels/cpu, which re-export these names
// in a8::cpu), the runtime's kernel ABI (runtime/core/kernel_args.h) and the CUDA backend
// (runtime/device) all read it, so the CUDA backend never includes the CPU's kernels.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/dtype_enum.h"
#include "base/status.h"

namespace a8 {

using Dims = std::vector<int64_t>;

// "f32", "f16", ... for kernel messages (compiler/ir/types.h DTypeName, without the compiler).
inline const char* ElemName(DType t) {
  static const char* const kNames[] = {"f32", "f16",  "bf16", "f64", "i64", "i32", "i8",
                                       "u8",  "bool", "i16",  "u16", "u32", "u64"};
  size_t i = static_cast<size_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "invalid";
}

inline int64_t NumElements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Row-major strides of `dims`.
inline Dims Strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// `axis` in [-rank, rank) made non-negative, or InvalidInput naming `op`.
inline StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    return InvalidInput("{}: axis {} is out of range for rank {}", op, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// ---- numpy broadcasting

// A BroadcastPlan coalesces the output dims (drops 1s, merges dims that every input walks
// contiguously) so the innermost loop is as long as possible, and gives each input a stride per
// coalesced dim (0 where it is broadcast).
struct BroadcastPlan {
  Dims out_dims;              // the broadcast output dims
  Dims dims;                  // coalesced, never empty (a scalar is {1})
  std::vector<Dims> strides;  // per input, per coalesced dim; 0 where broadcast
};

// Output dims of broadcasting `inputs` together, or InvalidInput naming `op` and the dims.
inline StatusOr<Dims> BroadcastDims(const std::vector<Dims>& inputs, const char* op) {
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

// The plan for broadcasting `inputs` to `out_dims` (which must be their broadcast, or a shape
// they broadcast to, as for Expand).
inline StatusOr<BroadcastPlan> MakeBroadcastPlan(const std::vector<Dims>& inputs,
                                                 const Dims& out_dims, const char* op) {
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

// ---- data movement

// ONNX Slice resolved to a start, step and count per dim.
struct SliceSpec {
  Dims start, step, count;  // per dim of the input
  Dims out_dims() const { return count; }
};

// Resolves ONNX Slice inputs (negative and out-of-range starts/ends clamped as ONNX specifies,
// negative steps, axes defaulting to 0..n-1 and steps to 1).
inline StatusOr<SliceSpec> ResolveSlice(const Dims& dims, const std::vector<int64_t>& starts,
                                        const std::vector<int64_t>& ends,
                                        const std::vector<int64_t>& axes,
                                        const std::vector<int64_t>& steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    return InvalidInput("Slice: starts, ends, axes and steps have different lengths");
  }
  SliceSpec s;
  s.start.assign(rank, 0);
  s.step.assign(rank, 1);
  s.count = dims;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    A8_ASSIGN_OR_RETURN(
        int64_t a, NormalizeAxis(axes.empty() ? static_cast<int64_t>(i) : axes[i], rank, "Slice"));
    if (seen[a]) return InvalidInput("Slice: axis {} is repeated", a);
    seen[a] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) return InvalidInput("Slice: step of axis {} is 0", a);
    const int64_t d = dims[a];
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    // Clamping as the ONNX Slice spec (and onnxruntime) define it.
    int64_t st = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t en = ends[i] < 0 ? ends[i] + d : ends[i];
    if (step > 0) {
      st = clamp(st, 0, d);
      en = clamp(en, 0, d);
      s.count[a] = en > st ? (en - st + step - 1) / step : 0;
    } else {
      st = clamp(st, 0, d - 1);
      en = clamp(en, -1, d - 1);
      s.count[a] = st > en ? (st - en + (-step) - 1) / (-step) : 0;
    }
    s.start[a] = st;
    s.step[a] = step;
  }
  return s;
}

enum class PadMode { kConstant, kReflect, kEdge, kWrap };  // the order of movement::PadParams::mode

// ---- parameter structs decoded by runtime/core/kernel_args.h for every backend

// Pooling over 1 to 3 spatial dims (kernels/cpu/pool.h has the output-size rule).
struct PoolParams {
  DType dtype = DType::kF32;
  int64_t batch = 1, channels = 1;
  Dims in_spatial, kernel;
  Dims strides, dilations, pads;  // empty: 1s, 1s, 0s; pads ONNX order (begins, then ends)
  bool ceil_mode = false;
  bool count_include_pad = false;     // AveragePool
  bool column_major_indices = false;  // MaxPool storage_order=1
};

// Convolution and transposed convolution, already resolved: explicit pads (auto_pad and
// ConvTranspose's output_shape are the compiler's business), kernel dims from W. Empty strides /
// dilations / pads mean 1 / 1 / 0.
// a8.FusedMatMul: Y [m, n] = epilogue(A [m, k] @ op(B)), B [k, n] ([n, k] with trans_b), every
// operand and output of `dtype`; the CPU kernel's parameters (kernels/cpu/fused.h) and what both
// backends' entries check (runtime/core/kernel_args.h FusedMatMulOperands).
struct FusedMatMulParams {
  DType dtype = DType::kF32;
  int64_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  int32_t epilogue = 0;    // FusedEpilogue (kernels/common/fused_elementwise.h): kEpilogueBias
  bool tanh_form = false;  // Gelu approximate="tanh"
  bool bgrad = false;      // out1 is the bias gradient [n] (backward epilogues)
};

struct ConvParams {
  DType dtype = DType::kF32;
  int64_t batch = 1;
  int64_t in_channels = 0;   // C of X
  int64_t out_channels = 0;  // M of Y
  int64_t group = 1;
  Dims in_spatial;  // X's spatial dims
  Dims kernel;      // W's spatial dims
  Dims strides, dilations;
  Dims pads;            // ONNX order: begin of every spatial dim, then end of every one
  Dims output_padding;  // ConvTranspose only
};

enum class LossReduction { kNone, kMean, kSum };

// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss and their gradients.
struct LossParams {
  DType dtype = DType::kF32;        // scores / log-probabilities, weights, loss, log_prob
  DType label_dtype = DType::kI64;  // i32 or i64
  int64_t batch = 1;                // N
  int64_t classes = 1;              // C
  int64_t extra = 1;                // product of the trailing dims d1..dk (1 when there are none)
  LossReduction reduction = LossReduction::kMean;
  bool has_ignore_index = false;
  int64_t ignore_index = 0;
};

}  // namespace a8
