// The data-movement kernels that also create values: Pad, OneHot, Range (declared in
// movement.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/movement.h"
#include "kernels/cpu/parallel.h"
#include "kernels/common/kernel_types.h"

namespace a8::cpu {
namespace {

// Source index of output coordinate `o` in a dim of size d padded by `pb` in front, or -1 for
// the constant fill.
inline int64_t PadSource(int64_t o, int64_t d, int64_t pb, PadMode mode) {
  int64_t i = o - pb;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : d - 1;
    case PadMode::kReflect: {
      if (d == 1) return 0;
      const int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

}  // namespace

Status Pad(DType dtype, const Dims& dims, const std::vector<int64_t>& pads, PadMode mode,
           const void* value, const void* x, void* y) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    return InvalidInput("Pad: {} pads for rank {}", pads.size(), rank);
  }
  Dims out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    out_dims[i] = dims[i] + pads[i] + pads[rank + i];
    if (out_dims[i] < 0) return InvalidInput("Pad: dim {} would be {}", i, out_dims[i]);
    if (mode != PadMode::kConstant && out_dims[i] > 0 && dims[i] == 0) {
      return InvalidInput("Pad: dim {} is empty and cannot be padded by edge or reflect", i);
    }
    if (mode == PadMode::kReflect && (pads[i] >= dims[i] || pads[rank + i] >= dims[i]) &&
        dims[i] > 1) {
      return InvalidInput("Pad: reflect pads {}+{} must be smaller than dim {} ({})", pads[i],
                          pads[rank + i], i, dims[i]);
    }
  }
  if (NumElements(out_dims) == 0) return Status::Ok();
  if (rank == 0) {
    std::memcpy(y, x, ElemSize(dtype));
    return Status::Ok();
  }
  const Dims in_strides = Strides(dims);
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    const U* in = static_cast<const U*>(x);
    U* out = static_cast<U*>(y);
    U fill{};
    if (value != nullptr) std::memcpy(&fill, value, sizeof(U));
    const int64_t inner = out_dims.back(), rows = NumElements(out_dims) / inner;
    ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t rest = r, off = 0;
        bool constant_row = false;
        for (int64_t i = rank - 2; i >= 0; --i) {
          int64_t src = PadSource(rest % out_dims[i], dims[i], pads[i], mode);
          rest /= out_dims[i];
          if (src < 0)
            constant_row = true;
          else
            off += src * in_strides[i];
        }
        U* dst = out + r * inner;
        for (int64_t j = 0; j < inner; ++j) {
          int64_t src = constant_row ? -1 : PadSource(j, dims.back(), pads[rank - 1], mode);
          dst[j] = src < 0 ? fill : in[off + src];
        }
      }
    });
    return Status::Ok();
  });
}

Status OneHot(DType index_dtype, const Dims& index_dims, const void* indices, int64_t depth,
              int64_t axis, DType dtype, const void* values, void* y) {
  if (index_dtype != DType::kI32 && index_dtype != DType::kI64) {
    return Unsupported("OneHot: index dtype {} (i32 or i64 expected)", ElemName(index_dtype));
  }
  if (depth < 1) return InvalidInput("OneHot: depth {} < 1", depth);
  A8_ASSIGN_OR_RETURN(int64_t a,
                      NormalizeAxis(axis, static_cast<int64_t>(index_dims.size()) + 1, "OneHot"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= index_dims[i];
  for (size_t i = a; i < index_dims.size(); ++i) inner *= index_dims[i];
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    const U off = static_cast<const U*>(values)[0], on = static_cast<const U*>(values)[1];
    U* out = static_cast<U*>(y);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = index_dtype == DType::kI32
                        ? static_cast<const int32_t*>(indices)[o * inner + i]
                        : static_cast<const int64_t*>(indices)[o * inner + i];
        if (v < 0) v += depth;
        for (int64_t d = 0; d < depth; ++d) out[(o * depth + d) * inner + i] = d == v ? on : off;
      }
    }
    return Status::Ok();
  });
}

StatusOr<int64_t> RangeCount(double start, double limit, double delta) {
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
    return InvalidInput("Range: start {}, limit {}, delta {} give no finite range", start, limit,
                        delta);
  }
  double n = std::ceil((limit - start) / delta);
  if (n > 9.0e15) return InvalidInput("Range: {} elements is too many", n);
  return static_cast<int64_t>(std::max(n, 0.0));
}

Status Range(DType dtype, const void* start, const void* delta, int64_t n, void* y) {
  return Dispatch<TypeSet::kNumeric>(dtype, "Range", [&](auto tag) -> Status {
    using T = A8_TAG_TYPE(tag);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return Unsupported("Range: dtype {} is not supported", ElemName(dtype));
    } else {
      T v = *static_cast<const T*>(start);
      const T d = *static_cast<const T*>(delta);
      T* out = static_cast<T*>(y);
      for (int64_t i = 0; i < n; ++i) {
        out[i] = v;
        v = static_cast<T>(v + d);
      }
      return Status::Ok();
    }
  });
}

}  // namespace a8::cpu
