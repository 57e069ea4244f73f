// The bucket packing of the data-parallel communicators (runtime/comm/comm_internal.h): every
// dtype a gradient may have, both wire dtypes, checked against a float64 reference of the
// rounding each step does.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cpu/cast_elem.h"
#include "runtime/comm/comm_internal.h"

namespace a8 {
namespace {

// Element i of `data` (dtype `dt`) as float, and a float stored there (the Cast rounding).
float Get(const void* data, DType dt, int64_t i) {
  auto v = cpu::LoadAs<double>(dt, static_cast<const uint8_t*>(data) + i * DTypeSize(dt), 1, "t");
  EXPECT_TRUE(v.ok());
  return static_cast<float>((*v)[0]);
}
void Set(void* data, DType dt, int64_t i, float x) {
  EXPECT_TRUE(
      cpu::StoreAs(dt, std::vector<float>{x}, static_cast<uint8_t*>(data) + i * DTypeSize(dt), "t")
          .ok());
}

// `n` random values in [-3, 3] stored in `dtype`, and their exact float64 values.
std::vector<uint8_t> RandomBuffer(DType dtype, int64_t n, uint32_t seed,
                                  std::vector<double>* exact) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * DTypeSize(dtype));
  exact->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Set(bytes.data(), dtype, i, dist(rng));
    (*exact)[i] = dtype == DType::kF64 ? reinterpret_cast<const double*>(bytes.data())[i]
                                       : Get(bytes.data(), dtype, i);
  }
  return bytes;
}

// What rounding `v` to `dtype` gives, in float64.
double Round(double v, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(v)));
    case DType::kBF16:
      return BFloat16BitsToFloat(FloatToBFloat16Bits(static_cast<float>(v)));
    case DType::kF64:
      return static_cast<float>(v);  // the bucket carries float: f64 passes through it
    default:
      return static_cast<float>(v);
  }
}

TEST(CommPackTest, PackThenUnpackRoundsOnceAtEachEnd) {
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
  for (DType wire : {DType::kF32, DType::kF16}) {
    for (float scale : {1.0f, 0.25f}) {
      std::vector<std::vector<uint8_t>> storage;
      std::vector<std::vector<double>> exact(4);
      std::vector<CommBuffer> buffers;
      const int64_t sizes[] = {7, 1, 33, 5};
      for (int i = 0; i < 4; ++i) {
        storage.push_back(RandomBuffer(dtypes[i], sizes[i], 11 + i, &exact[i]));
        buffers.push_back({storage.back().data(), sizes[i], dtypes[i]});
      }
      auto packed_or = PackBucket(buffers, wire, scale);
      ASSERT_TRUE(packed_or.ok()) << packed_or.status().message();
      std::vector<uint8_t> packed = *std::move(packed_or);
      ASSERT_EQ(packed.size(), static_cast<size_t>(46 * (wire == DType::kF16 ? 2 : 4)));
      // The wire: each element times `scale`, rounded once to the wire dtype.
      int64_t at = 0;
      for (int i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < sizes[i]; ++j) {
          const double want = Round(static_cast<float>(exact[i][j]) * scale, wire);
          EXPECT_EQ(Get(packed.data(), wire, at + j), want) << "buffer " << i << " element " << j;
        }
        at += sizes[i];
      }
      // Back: times 1/scale, rounded once to each buffer's dtype.
      ASSERT_TRUE(UnpackBucket(packed, wire, 1.0f / scale, buffers).ok());
      at = 0;
      for (int i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < sizes[i]; ++j) {
          const float on_wire = Get(packed.data(), wire, at + j);
          const double want = Round(on_wire * (1.0f / scale), dtypes[i]);
          const double got = dtypes[i] == DType::kF64
                                 ? reinterpret_cast<const double*>(storage[i].data())[j]
                                 : Get(storage[i].data(), dtypes[i], j);
          EXPECT_EQ(got, want) << "buffer " << i << " element " << j;
          // And within the wire's rounding of the original value.
          const double tol =
              (wire == DType::kF16 ? 1e-3 : 1e-7) + (dtypes[i] == DType::kBF16 ? 8e-3 : 0);
          EXPECT_NEAR(got, exact[i][j], tol * (1 + std::abs(exact[i][j])));
        }
        at += sizes[i];
      }
    }
  }
}

}  // namespace
}  // namespace a8
