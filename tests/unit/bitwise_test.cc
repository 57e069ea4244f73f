// The bitwise ops' shared bodies (kernels/common/binary_math.h) through the CPU kernel, against
// values written out by hand from the ONNX definitions (BitShift-28's rules for negative and
// too-wide shifts included). The CUDA kernels are checked against these in
// DeviceElementwiseTest.BitwiseOps.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/elementwise.h"

namespace a8 {
namespace {

using cpu::BinaryOp;

template <typename T>
std::vector<T> Apply(BinaryOp op, DType t, const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> y(a.size());
  const std::vector<int64_t> dims = {static_cast<int64_t>(a.size())};
  Status s = cpu::Binary(op, t, dims, a.data(), t, dims, b.data(), y.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return y;
}

TEST(BitwiseTest, AndOrXor) {
  const std::vector<int32_t> a = {12, -1, 0x7fffffff, -8}, b = {10, 5, -1, 3};
  EXPECT_EQ(Apply(BinaryOp::kBitwiseAnd, DType::kI32, a, b),
            (std::vector<int32_t>{8, 5, 0x7fffffff, 0}));
  EXPECT_EQ(Apply(BinaryOp::kBitwiseOr, DType::kI32, a, b), (std::vector<int32_t>{14, -1, -1, -5}));
  EXPECT_EQ(Apply(BinaryOp::kBitwiseXor, DType::kI32, a, b),
            (std::vector<int32_t>{6, -6, static_cast<int32_t>(0x80000000u), -5}));
  const std::vector<uint8_t> u = {0xf0, 0x0f}, v = {0xff, 0x01};
  EXPECT_EQ(Apply(BinaryOp::kBitwiseXor, DType::kU8, u, v), (std::vector<uint8_t>{0x0f, 0x0e}));
}

TEST(BitwiseTest, ShiftsFollowBitShift28) {
  // Left: bits past the top are dropped; a negative or too-wide shift gives 0.
  const std::vector<int8_t> x = {1, 3, -1, 64, 5, 5, -7};
  const std::vector<int8_t> s = {2, 6, 1, 1, -1, 8, 3};
  EXPECT_EQ(Apply(BinaryOp::kShiftLeft, DType::kI8, x, s),
            (std::vector<int8_t>{4, -64, -2, -128, 0, 0, -56}));
  // Right: arithmetic for signed types; out of range gives -1 for a negative x, else 0.
  const std::vector<int8_t> r = {16, -16, -1, 100, -100, -100, 7};
  const std::vector<int8_t> rs = {2, 2, 7, 8, 8, -1, 0};
  EXPECT_EQ(Apply(BinaryOp::kShiftRight, DType::kI8, r, rs),
            (std::vector<int8_t>{4, -4, -1, 0, -1, -1, 7}));
  const std::vector<uint8_t> ur = {0x80, 0xff, 0xff}, us = {7, 8, 3};
  EXPECT_EQ(Apply(BinaryOp::kShiftRight, DType::kU8, ur, us), (std::vector<uint8_t>{1, 0, 0x1f}));
  const std::vector<int64_t> w = {1, 1, -1}, ws = {63, 64, 62};
  EXPECT_EQ(Apply(BinaryOp::kShiftLeft, DType::kI64, w, ws),
            (std::vector<int64_t>{INT64_MIN, 0, INT64_MIN / 2}));
}

TEST(BitwiseTest, FloatOperandsAreRefused) {
  const std::vector<float> a = {1.0f}, b = {2.0f};
  std::vector<float> y(1);
  Status s = cpu::Binary(BinaryOp::kBitwiseAnd, DType::kF32, {1}, a.data(), DType::kF32, {1},
                         b.data(), y.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("BitwiseAnd: dtype"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace a8
