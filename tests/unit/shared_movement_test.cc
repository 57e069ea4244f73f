#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/device/movement_setup.h"
#include "kernels/emu/run_on_host.h"
#include "tests/unit/cpu_kernels_test_util.h"

namespace a8::cpu {
namespace {

// The movement family's one body (kernels/device/movement_impl.h, set up by movement_setup.h),
// run on the host as the CPU backend and constant folding run it, through the signatures of the
// CPU kernels it replaced: each output holds exactly the elements its op writes.
// (DeviceMovementTest runs the entries through both backends.)
namespace mv = emu::movement;

Status Transpose(DType dt, const Dims& dims, const std::vector<int64_t>& perm, const void* x,
                 void* y) {
  return emu::RunOnHost(
      [&](emu::DevCtx& c) { return mv::Transpose(c, dt, dims, perm, x, y, NumElements(dims)); });
}

Status Concat(DType dt, const std::vector<Dims>& in_dims, const std::vector<const void*>& xs,
              int64_t axis, void* y) {
  int64_t count = 0;
  for (const Dims& d : in_dims) count += NumElements(d);
  return emu::RunOnHost(
      [&](emu::DevCtx& c) { return mv::Concat(c, dt, in_dims, xs, axis, y, count); });
}

Status Split(DType dt, const Dims& dims, int64_t axis, const std::vector<int64_t>& sizes,
             const void* x, const std::vector<void*>& ys) {
  return emu::RunOnHost([&](emu::DevCtx& c) { return mv::Split(c, dt, dims, axis, sizes, x, ys); });
}

Status Slice(DType dt, const Dims& dims, const SliceSpec& spec, const void* x, void* y) {
  return emu::RunOnHost(
      [&](emu::DevCtx& c) { return mv::Slice(c, dt, dims, spec, x, y, NumElements(spec.count)); });
}

// How many elements Gather writes: data with dim `axis` replaced by `index_dims` (0 for an axis
// out of range, which the set-up rejects first).
int64_t GatheredCount(const Dims& data_dims, int64_t axis, const Dims& index_dims) {
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  if (axis < -rank || axis >= rank) return 0;
  int64_t count = NumElements(index_dims);
  for (int64_t d = 0; d < rank; ++d)
    if (d != (axis < 0 ? axis + rank : axis)) count *= data_dims[d];
  return count;
}

Status Gather(DType dt, const Dims& data_dims, const void* data, int64_t axis, DType index_dtype,
              const Dims& index_dims, const void* indices, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& c) {
    return mv::Gather(c, dt, data_dims, data, axis, index_dtype, index_dims, indices, indices, y,
                      GatheredCount(data_dims, axis, index_dims));
  });
}

Status GatherElements(DType dt, const Dims& data_dims, const void* data, int64_t axis,
                      DType index_dtype, const Dims& index_dims, const void* indices, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& c) {
    return mv::GatherElements(c, dt, data_dims, data, axis, index_dtype, index_dims, indices,
                              indices, y, NumElements(index_dims));
  });
}

Status Expand(DType dt, const Dims& dims, const void* x, const Dims& out_dims, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& c) {
    return mv::Expand(c, dt, dims, x, out_dims, y, NumElements(out_dims));
  });
}

Status Tile(DType dt, const Dims& dims, const std::vector<int64_t>& repeats, const void* x,
            void* y) {
  int64_t count = NumElements(dims);
  for (int64_t r : repeats) count *= r;
  return emu::RunOnHost(
      [&](emu::DevCtx& c) { return mv::Tile(c, dt, dims, repeats, x, y, count); });
}

Status Pad(DType dt, const Dims& dims, const std::vector<int64_t>& pads, PadMode mode,
           const void* value, const void* x, void* y) {
  int64_t count = 1;
  for (size_t i = 0; i < dims.size() && pads.size() == 2 * dims.size(); ++i)
    count *= std::max<int64_t>(dims[i] + pads[i] + pads[dims.size() + i], 0);
  return emu::RunOnHost(
      [&](emu::DevCtx& c) { return mv::Pad(c, dt, dims, pads, mode, value, x, y, count); });
}

Status OneHot(DType index_dtype, const Dims& index_dims, const void* indices, int64_t depth,
              int64_t axis, DType dt, const void* values, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& c) {
    return mv::OneHot(c, index_dtype, index_dims, indices, depth, axis, dt, values, y,
                      NumElements(index_dims) * depth);
  });
}

Status Range(DType dt, const void* start, const void* delta, int64_t n, void* y) {
  return emu::RunOnHost([&](emu::DevCtx& c) { return mv::Range(c, dt, start, delta, n, y); });
}

using testing::Buffer;
using testing::ExpectRoundedExactly;
using testing::FromValues;
using testing::MakeBuffer;
using testing::RandomBuffer;
using testing::Values;

// Multi-index of linear index `e` in `dims`.
Dims Unravel(const Dims& dims, int64_t e) {
  Dims idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) idx[i] = e % dims[i], e /= dims[i];
  return idx;
}
int64_t Ravel(const Dims& dims, const Dims& idx) {
  int64_t e = 0;
  for (size_t i = 0; i < dims.size(); ++i) e = e * dims[i] + idx[i];
  return e;
}

TEST(SharedMovementTransposeTest, AllPermutationsAndSizes) {
  std::mt19937_64 rng(40);
  for (DType dt : {DType::kF16, DType::kF32, DType::kI64, DType::kBool}) {
    for (const Dims& dims : {Dims{2, 3, 17}, Dims{1, 65, 3}}) {
      std::vector<int64_t> perm = {0, 1, 2};
      do {
        Buffer x = RandomBuffer(dt, dims, rng, -9, 9);
        Dims od = {dims[perm[0]], dims[perm[1]], dims[perm[2]]};
        Buffer y = MakeBuffer(dt, od);
        ASSERT_TRUE(Transpose(dt, dims, perm, x.data(), y.data()).ok());
        std::vector<double> xv = Values(x), want(xv.size());
        for (int64_t e = 0; e < y.size(); ++e) {
          Dims oi = Unravel(od, e), ii(3);
          for (int a = 0; a < 3; ++a) ii[perm[a]] = oi[a];
          want[e] = xv[Ravel(dims, ii)];
        }
        EXPECT_EQ(Values(y), want) << ElemName(dt);
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
  Buffer x = MakeBuffer(DType::kF32, {2, 3});
  Buffer y = MakeBuffer(DType::kF32, {3, 2});
  EXPECT_FALSE(Transpose(DType::kF32, {2, 3}, {0, 0}, x.data(), y.data()).ok());
  EXPECT_TRUE(Transpose(DType::kF32, {2, 3}, {}, x.data(), y.data()).ok());
}

TEST(SharedMovementConcatSplitTest, RoundTripAlongAnyAxis) {
  std::mt19937_64 rng(41);
  for (int64_t axis : {0, 1, -1}) {
    const int64_t a = axis < 0 ? 2 : axis;
    Dims d0 = {3, 5, 4}, d1 = d0, d2 = d0;
    d1[a] = 1, d2[a] = 6;
    Buffer x0 = RandomBuffer(DType::kBF16, d0, rng), x1 = RandomBuffer(DType::kBF16, d1, rng),
           x2 = RandomBuffer(DType::kBF16, d2, rng);
    Dims od = d0;
    od[a] = d0[a] + 1 + 6;
    Buffer y = MakeBuffer(DType::kBF16, od);
    ASSERT_TRUE(
        Concat(DType::kBF16, {d0, d1, d2}, {x0.data(), x1.data(), x2.data()}, axis, y.data()).ok());
    std::vector<double> yv = Values(y);
    const Buffer* parts[] = {&x0, &x1, &x2};
    for (int64_t e = 0; e < y.size(); ++e) {
      Dims oi = Unravel(od, e);
      int k = 0;
      int64_t at = oi[a];
      while (at >= parts[k]->dims[a]) at -= parts[k]->dims[a], ++k;
      oi[a] = at;
      ASSERT_EQ(yv[e], Values(*parts[k])[Ravel(parts[k]->dims, oi)]) << e;
    }
    Buffer s0 = MakeBuffer(DType::kBF16, d0), s1 = MakeBuffer(DType::kBF16, d1),
           s2 = MakeBuffer(DType::kBF16, d2);
    ASSERT_TRUE(
        Split(DType::kBF16, od, axis, {d0[a], 1, 6}, y.data(), {s0.data(), s1.data(), s2.data()})
            .ok());
    EXPECT_EQ(s0.bytes, x0.bytes);
    EXPECT_EQ(s1.bytes, x1.bytes);
    EXPECT_EQ(s2.bytes, x2.bytes);
  }
  Buffer y = MakeBuffer(DType::kF32, {4});
  EXPECT_FALSE(Split(DType::kF32, {4}, 0, {1, 2}, y.data(), {y.data(), y.data()}).ok());
}

// An empty operand may have no bytes (a null pointer, as an empty constant has): it is skipped,
// never read or written (the sanitizer tree runs this).
TEST(SharedMovementConcatSplitTest, EmptyOperandsMayBeNull) {
  const std::vector<float> a = {1, 2}, b = {3};
  std::vector<float> y(3, 0);
  ASSERT_TRUE(
      Concat(DType::kF32, {{2}, {0}, {1}}, {a.data(), nullptr, b.data()}, 0, y.data()).ok());
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3}));
  std::vector<float> s0(2), s2(1);
  ASSERT_TRUE(
      Split(DType::kF32, {3}, 0, {2, 0, 1}, y.data(), {s0.data(), nullptr, s2.data()}).ok());
  EXPECT_EQ(s0, a);
  EXPECT_EQ(s2, b);
  const int64_t idx[] = {1, 0};
  ASSERT_TRUE(
      Gather(DType::kF32, {2, 0}, nullptr, 0, DType::kI64, {2}, idx, nullptr).ok());  // [2, 0]
}

TEST(SharedMovementSliceTest, ClampingAndNegativeStepsMatchNumpy) {
  std::vector<double> ten(10);
  std::iota(ten.begin(), ten.end(), 0.0);
  Buffer x = FromValues(DType::kI32, {10}, ten);
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    int64_t start, end, step;
    std::vector<double> want;  // numpy x[start:end:step]
  };
  const Case cases[] = {
      {1, 8, 3, {1, 4, 7}},          {-1, kMin, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {8, 2, -2, {8, 6, 4}},         {20, 5, -1, {9, 8, 7, 6}},
      {-100, 5, 1, {0, 1, 2, 3, 4}}, {5, 5, 1, {}},
      {0, kMax, 4, {0, 4, 8}},       {-3, -1, 1, {7, 8}},
      {3, -100, -2, {3, 1}},
  };
  for (const Case& c : cases) {
    auto spec = ResolveSlice({10}, {c.start}, {c.end}, {0}, {c.step});
    ASSERT_TRUE(spec.ok());
    Buffer y = MakeBuffer(DType::kI32, spec->out_dims());
    ASSERT_TRUE(Slice(DType::kI32, {10}, *spec, x.data(), y.data()).ok());
    EXPECT_EQ(Values(y), c.want) << c.start << ":" << c.end << ":" << c.step;
  }
  EXPECT_FALSE(ResolveSlice({10}, {0}, {5}, {0}, {0}).ok());
  EXPECT_FALSE(ResolveSlice({10}, {0}, {5}, {1}, {1}).ok());

  std::mt19937_64 rng(42);
  const Dims dims = {5, 17, 6};
  Buffer t = RandomBuffer(DType::kF16, dims, rng);
  auto spec = ResolveSlice(dims, {4, 1, -1}, {0, 17, -7}, {0, 1, -1}, {-2, 3, -2});
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->out_dims(), (Dims{2, 6, 3}));
  Buffer y = MakeBuffer(DType::kF16, spec->out_dims());
  ASSERT_TRUE(Slice(DType::kF16, dims, *spec, t.data(), y.data()).ok());
  std::vector<double> tv = Values(t), want;
  for (int64_t i = 4; i > 0; i -= 2) {
    for (int64_t j = 1; j < 17; j += 3) {
      for (int64_t k = 5; k >= 0; k -= 2) want.push_back(tv[(i * 17 + j) * 6 + k]);
    }
  }
  EXPECT_EQ(Values(y), want);
}

TEST(SharedMovementGatherTest, AxesNegativeIndicesAndRangeChecks) {
  std::mt19937_64 rng(43);
  const Dims dims = {5, 4, 3};
  Buffer data = RandomBuffer(DType::kF32, dims, rng);
  std::vector<double> dv = Values(data);
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    for (DType it : {DType::kI64, DType::kI32}) {
      Buffer idx = FromValues(it, {2, 3}, {0, -1, 2, 1, 1, -2});
      Dims od;
      for (int64_t i = 0; i < a; ++i) od.push_back(dims[i]);
      od.push_back(2), od.push_back(3);
      for (int64_t i = a + 1; i < 3; ++i) od.push_back(dims[i]);
      Buffer y = MakeBuffer(DType::kF32, od);
      ASSERT_TRUE(
          Gather(DType::kF32, dims, data.data(), axis, it, {2, 3}, idx.data(), y.data()).ok());
      std::vector<double> iv = Values(idx), want;
      for (int64_t e = 0; e < y.size(); ++e) {
        Dims oi = Unravel(od, e), di;
        for (int64_t i = 0; i < a; ++i) di.push_back(oi[i]);
        int64_t j = static_cast<int64_t>(iv[oi[a] * 3 + oi[a + 1]]);
        di.push_back(j < 0 ? j + dims[a] : j);
        for (int64_t i = a + 1; i < 3; ++i) di.push_back(oi[i + 1]);
        want.push_back(dv[Ravel(dims, di)]);
      }
      EXPECT_EQ(Values(y), want) << axis;
    }
  }
  Buffer bad = FromValues(DType::kI64, {1}, {5});
  Buffer y = MakeBuffer(DType::kF32, {1, 4, 3});
  Status st = Gather(DType::kF32, dims, data.data(), 0, DType::kI64, {1}, bad.data(), y.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
}

TEST(SharedMovementGatherElementsTest, BothAxes) {
  Buffer data = FromValues(DType::kI64, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Buffer idx = FromValues(DType::kI32, {2, 3}, {1, 2, 0, 2, 0, -1});
  Buffer y = MakeBuffer(DType::kI64, {2, 3});
  ASSERT_TRUE(
      GatherElements(DType::kI64, {3, 3}, data.data(), 0, DType::kI32, {2, 3}, idx.data(), y.data())
          .ok());
  EXPECT_EQ(Values(y), (std::vector<double>{4, 8, 3, 7, 2, 9}));  // ONNX example semantics
  Buffer idx1 = FromValues(DType::kI64, {3, 2}, {0, 0, 1, 0, 2, 1});
  Buffer y1 = MakeBuffer(DType::kI64, {3, 2});
  ASSERT_TRUE(GatherElements(DType::kI64, {3, 3}, data.data(), 1, DType::kI64, {3, 2}, idx1.data(),
                             y1.data())
                  .ok());
  EXPECT_EQ(Values(y1), (std::vector<double>{1, 1, 5, 4, 9, 8}));
  Buffer bad = FromValues(DType::kI64, {3, 2}, {0, 3, 1, 0, 2, 1});
  EXPECT_FALSE(GatherElements(DType::kI64, {3, 3}, data.data(), 1, DType::kI64, {3, 2}, bad.data(),
                              y1.data())
                   .ok());
}

TEST(SharedMovementExpandTileTest, BroadcastAndRepeat) {
  std::mt19937_64 rng(44);
  Buffer x = RandomBuffer(DType::kF16, {3, 1}, rng);
  Buffer y = MakeBuffer(DType::kF16, {2, 3, 4});
  ASSERT_TRUE(Expand(DType::kF16, {3, 1}, x.data(), {2, 3, 4}, y.data()).ok());
  std::vector<double> xv = Values(x), want;
  for (int64_t e = 0; e < 24; ++e) want.push_back(xv[(e / 4) % 3]);
  EXPECT_EQ(Values(y), want);
  EXPECT_FALSE(Expand(DType::kF16, {3, 2}, x.data(), {2, 3, 4}, y.data()).ok());

  Buffer t = RandomBuffer(DType::kI32, {2, 3}, rng, -9, 9);
  Buffer ty = MakeBuffer(DType::kI32, {6, 6});
  ASSERT_TRUE(Tile(DType::kI32, {2, 3}, {3, 2}, t.data(), ty.data()).ok());
  std::vector<double> tv = Values(t), twant;
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j = 0; j < 6; ++j) twant.push_back(tv[(i % 2) * 3 + j % 3]);
  }
  EXPECT_EQ(Values(ty), twant);
}

int64_t RefPadSource(int64_t o, int64_t d, int64_t pb, PadMode mode) {
  int64_t i = o - pb;
  if (i >= 0 && i < d) return i;
  if (mode == PadMode::kConstant) return -1;
  if (mode == PadMode::kEdge) return std::clamp<int64_t>(i, 0, d - 1);
  if (mode == PadMode::kWrap) return (i % d + d) % d;
  while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;  // numpy "reflect"
  return i;
}

TEST(SharedMovementPadTest, ConstantReflectEdgeWrapAndCrop) {
  std::mt19937_64 rng(45);
  const Dims dims = {3, 5};
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kEdge, PadMode::kWrap}) {
    for (const std::vector<int64_t>& pads :
         {std::vector<int64_t>{1, 2, 2, 1}, {0, 4, 2, 0}, {-1, 1, 0, -2}, {0, 1, 3, 0}}) {
      Buffer x = RandomBuffer(DType::kBF16, dims, rng);
      Buffer v = FromValues(DType::kBF16, {1}, {1.5});
      Dims od = {dims[0] + pads[0] + pads[2], dims[1] + pads[1] + pads[3]};
      Buffer y = MakeBuffer(DType::kBF16, od);
      Status st = Pad(DType::kBF16, dims, pads, mode, v.data(), x.data(), y.data());
      if (mode == PadMode::kReflect && pads[2] >= dims[0]) {
        EXPECT_NE(st.message().find("reflect pads"), std::string::npos) << st.message();
        continue;
      }
      if (mode == PadMode::kWrap && pads[0] < 0) {
        EXPECT_NE(st.message().find("'wrap' takes no negative pads"), std::string::npos)
            << st.message();
        continue;
      }
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<double> xv = Values(x), want;
      for (int64_t i = 0; i < od[0]; ++i) {
        for (int64_t j = 0; j < od[1]; ++j) {
          int64_t si = RefPadSource(i, dims[0], pads[0], mode);
          int64_t sj = RefPadSource(j, dims[1], pads[1], mode);
          want.push_back(si < 0 || sj < 0 ? 1.5 : xv[si * dims[1] + sj]);
        }
      }
      EXPECT_EQ(Values(y), want) << static_cast<int>(mode);
    }
  }
}

TEST(SharedMovementOneHotTest, AxesAndNegativeIndices) {
  Buffer idx = FromValues(DType::kI64, {2, 2}, {0, -1, 3, 7});
  Buffer vals = FromValues(DType::kF32, {2}, {-1, 4});
  Buffer y = MakeBuffer(DType::kF32, {2, 2, 5});
  ASSERT_TRUE(
      OneHot(DType::kI64, {2, 2}, idx.data(), 5, -1, DType::kF32, vals.data(), y.data()).ok());
  std::vector<double> want;
  for (int64_t hot : {0, 4, 3, -100}) {
    for (int64_t d = 0; d < 5; ++d) want.push_back(d == hot ? 4 : -1);
  }
  EXPECT_EQ(Values(y), want);
  Buffer y0 = MakeBuffer(DType::kF32, {5, 2, 2});
  ASSERT_TRUE(
      OneHot(DType::kI64, {2, 2}, idx.data(), 5, 0, DType::kF32, vals.data(), y0.data()).ok());
  std::vector<double> want0(20);
  for (int64_t d = 0; d < 5; ++d) {
    for (int64_t i = 0; i < 4; ++i) want0[d * 4 + i] = want[i * 5 + d];
  }
  EXPECT_EQ(Values(y0), want0);
}

TEST(SharedMovementRangeTest, AccumulatesInTheDtype) {
  Buffer s = FromValues(DType::kI32, {1}, {10}), d = FromValues(DType::kI32, {1}, {-3});
  Buffer y = MakeBuffer(DType::kI32, {3});
  ASSERT_TRUE(Range(DType::kI32, s.data(), d.data(), 3, y.data()).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{10, 7, 4}));
  Buffer fs = FromValues(DType::kF32, {1}, {1}), fd = FromValues(DType::kF32, {1}, {0.1});
  const int64_t n = 10;  // ceil((2 - 1) / 0.1f)
  Buffer fy = MakeBuffer(DType::kF32, {n});
  ASSERT_TRUE(Range(DType::kF32, fs.data(), fd.data(), n, fy.data()).ok());
  float v = 1.0f;
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i, v += 0.1f) want.push_back(v);
  EXPECT_EQ(Values(fy), want);
}

// y[e] = x[source(output multi-index of e)] over `od`, the reference of every map below.
std::vector<double> Gathered(const Buffer& x, const Dims& dims, const Dims& od,
                             const std::function<Dims(const Dims&)>& source) {
  const std::vector<double> xv = Values(x);
  std::vector<double> want(static_cast<size_t>(NumElements(od)));
  for (int64_t e = 0; e < NumElements(od); ++e) want[e] = xv[Ravel(dims, source(Unravel(od, e)))];
  return want;
}

// Maps of over 2^15 elements: the pool splits them, so a chunk starts mid-tensor and the host
// launch divides its first row's offsets out at an arbitrary row (then carries an odometer).
TEST(SharedMovementLargeTest, ChunksThatStartMidTensor) {
  std::mt19937_64 rng(47);
  const Dims dims = {3, 64, 65, 7};
  Buffer x = RandomBuffer(DType::kF32, dims, rng);
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{2, 0, 3, 1}, {1, 0, 2, 3}}) {
    Dims od;
    for (int64_t p : perm) od.push_back(dims[p]);
    Buffer y = MakeBuffer(DType::kF32, od);
    ASSERT_TRUE(Transpose(DType::kF32, dims, perm, x.data(), y.data()).ok());
    EXPECT_EQ(Values(y), Gathered(x, dims, od,
                                  [&](const Dims& oi) {
                                    Dims ii(4);
                                    for (int a = 0; a < 4; ++a) ii[perm[a]] = oi[a];
                                    return ii;
                                  }))
        << perm[0];
  }
  const Dims small = {5, 7, 3}, repeats = {4, 9, 40}, tiled = {20, 63, 120};
  Buffer t = RandomBuffer(DType::kF32, small, rng);
  Buffer ty = MakeBuffer(DType::kF32, tiled);
  ASSERT_TRUE(Tile(DType::kF32, small, repeats, t.data(), ty.data()).ok());
  EXPECT_EQ(Values(ty), Gathered(t, small, tiled, [&](const Dims& oi) {
              return Dims{oi[0] % 5, oi[1] % 7, oi[2] % 3};
            }));
  const Dims big = {50, 40, 60};
  Buffer b = RandomBuffer(DType::kF32, big, rng);
  auto spec = ResolveSlice(big, {49, 37, 1}, {-100, -100, 60}, {0, 1, 2}, {-1, -3, 2});
  ASSERT_TRUE(spec.ok());
  Buffer sy = MakeBuffer(DType::kF32, spec->count);
  ASSERT_TRUE(Slice(DType::kF32, big, *spec, b.data(), sy.data()).ok());
  EXPECT_EQ(Values(sy), Gathered(b, big, spec->count, [&](const Dims& oi) {
              return Dims{49 - oi[0], 37 - 3 * oi[1], 1 + 2 * oi[2]};
            }));
}

TEST(SharedMovementOneHotTest, FloatIndicesTruncate) {
  Buffer idx = FromValues(DType::kF32, {4}, {1.9, -0.5, -1.5, 3.2});
  Buffer vals = FromValues(DType::kF32, {2}, {0, 1});
  Buffer y = MakeBuffer(DType::kF32, {4, 3});
  ASSERT_TRUE(OneHot(DType::kF32, {4}, idx.data(), 3, -1, DType::kF32, vals.data(), y.data()).ok());
  // 1.9 -> 1, -0.5 -> 0, -1.5 -> -1 (the last), 3.2 -> 3 (out of range: all off).
  EXPECT_EQ(Values(y), (std::vector<double>{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}));
}

TEST(SharedMovementRangeTest, WideTypes) {
  Buffer s = FromValues(DType::kI64, {1}, {-5}), d = FromValues(DType::kI64, {1}, {4});
  Buffer y = MakeBuffer(DType::kI64, {4});
  ASSERT_TRUE(Range(DType::kI64, s.data(), d.data(), 4, y.data()).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{-5, -1, 3, 7}));
  Buffer fs = FromValues(DType::kF64, {1}, {0.1}), fd = FromValues(DType::kF64, {1}, {0.7});
  Buffer fy = MakeBuffer(DType::kF64, {5});
  ASSERT_TRUE(Range(DType::kF64, fs.data(), fd.data(), 5, fy.data()).ok());
  double v = 0.1;
  std::vector<double> want;
  for (int i = 0; i < 5; ++i, v += 0.7) want.push_back(v);  // accumulated, as the kernel does
  EXPECT_EQ(Values(fy), want);
}

TEST(SharedMovementPadTest, ThreeDimsEveryMode) {
  std::mt19937_64 rng(48);
  const Dims dims = {2, 3, 4};
  const std::vector<int64_t> pads = {1, 0, 2, 1, 2, 3};
  const Dims od = {4, 5, 9};
  Buffer x = RandomBuffer(DType::kF64, dims, rng);
  Buffer v = FromValues(DType::kF64, {1}, {-7});
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kEdge, PadMode::kWrap}) {
    Buffer y = MakeBuffer(DType::kF64, od);
    ASSERT_TRUE(Pad(DType::kF64, dims, pads, mode, v.data(), x.data(), y.data()).ok());
    const std::vector<double> xv = Values(x);
    std::vector<double> want;
    for (int64_t e = 0; e < NumElements(od); ++e) {
      const Dims oi = Unravel(od, e);
      Dims ii(3);
      bool fill = false;
      for (int a = 0; a < 3; ++a) {
        ii[a] = RefPadSource(oi[a], dims[a], pads[a], mode);
        fill = fill || ii[a] < 0;
      }
      want.push_back(fill ? -7 : xv[Ravel(dims, ii)]);
    }
    EXPECT_EQ(Values(y), want) << static_cast<int>(mode);
  }
}

// Each rejection names the op and what is wrong (nothing is written).
TEST(SharedMovementTest, RejectionsNameTheOpAndTheField) {
  std::vector<float> x(24), y(24);
  auto expect = [](const Status& s, const std::string& text) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  };
  expect(emu::RunOnHost([&](emu::DevCtx& c) {
           return mv::Transpose(c, DType::kF32, {2, 3, 4}, {}, x.data(), y.data(), 23);
         }),
         "Transpose: the output buffer has 23 elements, the op writes 24");
  expect(Pad(DType::kF32, {2, 3}, {1, 1, 1}, PadMode::kConstant, nullptr, x.data(), y.data()),
         "Pad: 3 pads for rank 2");
  const int64_t idx[4] = {0, 1, 0, 1};
  expect(GatherElements(DType::kF32, {2, 3}, x.data(), 0, DType::kI64, {4}, idx, y.data()),
         "GatherElements: indices rank 1 differs from data rank 2");
  expect(Gather(DType::kF32, {2, 3}, x.data(), 2, DType::kI64, {2}, idx, y.data()),
         "Gather: axis 2 is out of range");
}

}  // namespace
}  // namespace a8::cpu
