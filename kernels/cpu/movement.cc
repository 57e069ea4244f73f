#include "kernels/cpu/movement.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/parallel.h"
#include "kernels/common/kernel_types.h"

namespace a8::cpu {
namespace {

// y (contiguous, row-major over out_dims) [o] = x[base + sum idx_i * in_strides_i].
template <typename U>
void CopyStrided(const Dims& out_dims, const Dims& in_strides, int64_t base, const U* x, U* y) {
  const int64_t rank = static_cast<int64_t>(out_dims.size());
  if (rank == 0) {
    y[0] = x[base];
    return;
  }
  const int64_t inner = out_dims.back(), inner_stride = in_strides.back();
  const int64_t rows = NumElements(out_dims) / std::max<int64_t>(inner, 1);
  if (inner == 0 || rows == 0) return;
  ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
    ForEachRowOffset<1>(
        out_dims, b, e, [&](size_t, int64_t i) { return in_strides[i]; },
        [&](int64_t r, const std::array<int64_t, 1>& row) {
          const U* src = x + base + row[0];
          U* dst = y + r * inner;
          if (inner_stride == 1) {
            std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(U));
          } else {
            for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * inner_stride];
          }
        });
  });
}

// Loads index i of an i32/i64 buffer.
inline int64_t IndexAt(DType dt, const void* p, int64_t i) {
  return dt == DType::kI32 ? static_cast<const int32_t*>(p)[i] : static_cast<const int64_t*>(p)[i];
}

Status CheckIndexDType(DType dt, const char* op) {
  if (dt != DType::kI32 && dt != DType::kI64) {
    return Unsupported("{}: index dtype {} (i32 or i64 expected)", op, ElemName(dt));
  }
  return Status::Ok();
}

// Every index in [-len, len), made non-negative.
StatusOr<std::vector<int64_t>> LoadIndices(DType dt, const void* p, int64_t n, int64_t len,
                                           const char* op) {
  A8_RETURN_IF_ERROR(CheckIndexDType(dt, op));
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = IndexAt(dt, p, i);
    if (v < -len || v >= len) {
      return InvalidInput("{}: index {} (element {}) is out of range [-{}, {})", op, v, i, len,
                          len);
    }
    out[i] = v < 0 ? v + len : v;
  }
  return out;
}

}  // namespace

Status Transpose(DType dtype, const Dims& dims, const std::vector<int64_t>& perm, const void* x,
                 void* y) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> p = perm;
  if (p.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) p.push_back(i);
  }
  std::vector<bool> seen(dims.size(), false);
  if (static_cast<int64_t>(p.size()) != rank) {
    return InvalidInput("Transpose: perm has {} entries for rank {}", p.size(), rank);
  }
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[v]) {
      return InvalidInput("Transpose: perm [{}] is not a permutation", fmt::join(p, ","));
    }
    seen[v] = true;
  }
  const Dims strides = Strides(dims);
  Dims out_dims(rank), in_strides(rank);
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = dims[p[i]], in_strides[i] = strides[p[i]];
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    CopyStrided(out_dims, in_strides, 0, static_cast<const U*>(x), static_cast<U*>(y));
    return Status::Ok();
  });
}

Status Concat(DType dtype, const std::vector<Dims>& in_dims, const std::vector<const void*>& xs,
              int64_t axis, void* y) {
  if (in_dims.empty() || in_dims.size() != xs.size()) {
    return InvalidInput("Concat: {} inputs with {} shapes", xs.size(), in_dims.size());
  }
  const Dims& d0 = in_dims[0];
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, static_cast<int64_t>(d0.size()), "Concat"));
  for (const Dims& d : in_dims) {
    bool ok = d.size() == d0.size();
    for (size_t i = 0; ok && i < d.size(); ++i) ok = static_cast<int64_t>(i) == a || d[i] == d0[i];
    if (!ok) {
      return InvalidInput("Concat: shapes [{}] and [{}] differ off axis {}", fmt::join(d0, ","),
                          fmt::join(d, ","), a);
    }
  }
  int64_t outer = 1, inner = 1, total = 0;
  for (int64_t i = 0; i < a; ++i) outer *= d0[i];
  for (size_t i = a + 1; i < d0.size(); ++i) inner *= d0[i];
  for (const Dims& d : in_dims) total += d[a];
  const size_t es = ElemSize(dtype);
  char* out = static_cast<char*>(y);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      const int64_t chunk = in_dims[k][a] * inner;
      // An empty input may have no bytes at all (a null pointer): nothing to copy.
      if (chunk > 0) {
        std::memcpy(out + (o * total * inner + at) * es,
                    static_cast<const char*>(xs[k]) + o * chunk * es, chunk * es);
      }
      at += chunk;
    }
  }
  return Status::Ok();
}

Status Split(DType dtype, const Dims& dims, int64_t axis, const std::vector<int64_t>& sizes,
             const void* x, const std::vector<void*>& ys) {
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, static_cast<int64_t>(dims.size()), "Split"));
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s < 0 ? dims[a] + 1 : s;
  if (sizes.size() != ys.size() || sum != dims[a]) {
    return InvalidInput("Split: sizes [{}] do not split dim {} of {} into {} outputs",
                        fmt::join(sizes, ","), a, dims[a], ys.size());
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= dims[i];
  for (size_t i = a + 1; i < dims.size(); ++i) inner *= dims[i];
  const size_t es = ElemSize(dtype);
  const char* in = static_cast<const char*>(x);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;
    for (size_t k = 0; k < ys.size(); ++k) {
      const int64_t chunk = sizes[k] * inner;
      if (chunk > 0) {  // an empty output may have no bytes at all
        std::memcpy(static_cast<char*>(ys[k]) + o * chunk * es,
                    in + (o * dims[a] * inner + at) * es, chunk * es);
      }
      at += chunk;
    }
  }
  return Status::Ok();
}

Status Slice(DType dtype, const Dims& dims, const SliceSpec& spec, const void* x, void* y) {
  const Dims strides = Strides(dims);
  const size_t rank = dims.size();
  if (spec.start.size() != rank || spec.step.size() != rank || spec.count.size() != rank) {
    return InvalidInput("Slice: spec has rank {} for input rank {}", spec.start.size(), rank);
  }
  Dims in_strides(rank);
  int64_t base = 0;
  for (size_t i = 0; i < rank; ++i) {
    in_strides[i] = strides[i] * spec.step[i];
    if (spec.count[i] > 0) base += spec.start[i] * strides[i];
  }
  if (NumElements(spec.count) == 0) return Status::Ok();
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    CopyStrided(spec.count, in_strides, base, static_cast<const U*>(x), static_cast<U*>(y));
    return Status::Ok();
  });
}

Status Gather(DType dtype, const Dims& data_dims, const void* data, int64_t axis, DType index_dtype,
              const Dims& index_dims, const void* indices, void* y) {
  A8_ASSIGN_OR_RETURN(int64_t a,
                      NormalizeAxis(axis, static_cast<int64_t>(data_dims.size()), "Gather"));
  const int64_t n = NumElements(index_dims);
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                      LoadIndices(index_dtype, indices, n, data_dims[a], "Gather"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < a; ++i) outer *= data_dims[i];
  for (size_t i = a + 1; i < data_dims.size(); ++i) inner *= data_dims[i];
  const size_t es = ElemSize(dtype);
  const char* in = static_cast<const char*>(data);
  char* out = static_cast<char*>(y);
  if (inner == 0) return Status::Ok();  // an empty output: no bytes, maybe no pointer
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(out + ((o * n + j) * inner) * es, in + ((o * data_dims[a] + idx[j]) * inner) * es,
                  inner * es);
    }
  }
  return Status::Ok();
}

Status GatherElements(DType dtype, const Dims& data_dims, const void* data, int64_t axis,
                      DType index_dtype, const Dims& index_dims, const void* indices, void* y) {
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  A8_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, rank, "GatherElements"));
  if (static_cast<int64_t>(index_dims.size()) != rank) {
    return InvalidInput("GatherElements: indices rank {} differs from data rank {}",
                        index_dims.size(), rank);
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (i != a && index_dims[i] > data_dims[i]) {
      return InvalidInput("GatherElements: indices dim {} ({}) exceeds data dim ({})", i,
                          index_dims[i], data_dims[i]);
    }
  }
  const int64_t n = NumElements(index_dims);
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                      LoadIndices(index_dtype, indices, n, data_dims[a], "GatherElements"));
  const Dims ds = Strides(data_dims);
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    const U* in = static_cast<const U*>(data);
    U* out = static_cast<U*>(y);
    for (int64_t e = 0; e < n; ++e) {
      int64_t rest = e, off = 0;
      for (int64_t i = rank - 1; i >= 0; --i) {
        const int64_t c = rest % index_dims[i];
        rest /= index_dims[i];
        off += (i == a ? idx[e] : c) * ds[i];
      }
      out[e] = in[off];
    }
    return Status::Ok();
  });
}

Status Expand(DType dtype, const Dims& dims, const void* x, const Dims& out_dims, void* y) {
  A8_ASSIGN_OR_RETURN(BroadcastPlan plan, MakeBroadcastPlan({dims}, out_dims, "Expand"));
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    const U* in = static_cast<const U*>(x);
    U* out = static_cast<U*>(y);
    ForEachBroadcastRow<1>(plan, 1,
                           [&](int64_t o, const int64_t* off, int64_t len, const int64_t* st) {
                             for (int64_t i = 0; i < len; ++i) out[o + i] = in[off[0] + i * st[0]];
                           });
    return Status::Ok();
  });
}

Status Tile(DType dtype, const Dims& dims, const std::vector<int64_t>& repeats, const void* x,
            void* y) {
  if (repeats.size() != dims.size()) {
    return InvalidInput("Tile: {} repeats for rank {}", repeats.size(), dims.size());
  }
  // y viewed as [r0, d0, r1, d1, ...] reads x with stride 0 on the repeat dims.
  const Dims strides = Strides(dims);
  Dims out_dims, in_strides;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) return InvalidInput("Tile: repeat {} of dim {} is negative", repeats[i], i);
    out_dims.push_back(repeats[i]);
    in_strides.push_back(0);
    out_dims.push_back(dims[i]);
    in_strides.push_back(strides[i]);
  }
  if (NumElements(out_dims) == 0) return Status::Ok();
  return DispatchBySize(dtype, [&](auto tag) {
    using U = A8_TAG_TYPE(tag);
    CopyStrided(out_dims, in_strides, 0, static_cast<const U*>(x), static_cast<U*>(y));
    return Status::Ok();
  });
}

}  // namespace a8::cpu
