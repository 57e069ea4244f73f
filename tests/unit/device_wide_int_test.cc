// The 16-, 32- and 64-bit integer dtypes (i16, u16, u32, u64) and BitCast through the kernels of
// both backends: the CPU's values against ONNX's integer semantics written out by hand (wrap
// around, Div truncating toward zero, Mod with the divisor's sign or C fmod's, unsigned order
// above INT64_MAX), and the CUDA kernels (cuda-emu; the real GPU in a8_gpu_tests) against the
// CPU byte for byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using B = plan::Buffer;
using testing::Bytes;
using testing::PlanBuilder;
using Inputs = std::map<std::string, std::vector<uint8_t>>;

template <typename T>
DType DTypeOf() {
  if constexpr (std::is_same_v<T, int16_t>) return DType::kI16;
  if constexpr (std::is_same_v<T, uint16_t>) return DType::kU16;
  if constexpr (std::is_same_v<T, uint32_t>) return DType::kU32;
  if constexpr (std::is_same_v<T, uint64_t>) return DType::kU64;
  return DType::kF32;
}

// Runs `f` on the CPU and on the device under test with `in`; the device's outputs must be the
// CPU's bytes. Returns the CPU's outputs.
std::map<std::string, std::vector<uint8_t>> RunBoth(const PlanFile& f, const Inputs& in) {
  auto want = testing::RunOn(f, MakeCpuBackend(), in);
  auto dev = testing::DeviceUnderTest();
#if defined(A8_DEVICE_TESTS_ON_GPU)
  if (!dev.ok()) return want;  // no GPU: the CPU's values are still checked
#endif
  EXPECT_TRUE(dev.ok()) << dev.status().message();
  if (!dev.ok()) return want;
  auto got = testing::RunOn(f, std::move(dev).value(), in);
  EXPECT_EQ(got, want) << "device bytes differ from the CPU's";
  return want;
}

// y = op(a, b) of dtype `ty` on both backends; the CPU's y must be the bytes `want`.
template <typename T>
void ExpectBinaryBytes(const std::string& op, const std::vector<T>& a, const std::vector<T>& b,
                       DType ty, const std::vector<uint8_t>& want, const std::string& direction,
                       int64_t fmod) {
  SCOPED_TRACE(op + " " + std::string(DTypeName(DTypeOf<T>())));
  const int64_t n = static_cast<int64_t>(a.size());
  PlanBuilder pb;
  const int x0 = pb.Buffer("a", DTypeOf<T>(), {n}, B::INPUT);
  const int x1 = pb.Buffer("b", DTypeOf<T>(), {n}, B::INPUT);
  const int y = pb.Buffer("y", ty, {n}, B::OUTPUT);
  plan::Kernel* k = pb.Kernel(op, {x0, x1}, {y});
  if (!direction.empty()) {
    plan::Attribute* at = k->add_attrs();
    at->set_name("direction");
    at->set_s(direction);
  }
  if (fmod >= 0) PlanBuilder::Int(k, "fmod", fmod);
  auto out = RunBoth(pb.Finish(), {{"a", Bytes(a)}, {"b", Bytes(b)}});
  EXPECT_EQ(out["y"], want);
}

// An arithmetic or bitwise op: y of the operands' dtype.
template <typename T>
void ExpectBinary(const std::string& op, const std::vector<T>& a, const std::vector<T>& b,
                  const std::vector<T>& want, const std::string& direction = "",
                  int64_t fmod = -1) {
  ExpectBinaryBytes(op, a, b, DTypeOf<T>(), Bytes(want), direction, fmod);
}

// A comparison: y bool (one byte each, 0 or 1).
template <typename T>
void ExpectCompare(const std::string& op, const std::vector<T>& a, const std::vector<T>& b,
                   const std::vector<uint8_t>& want) {
  ExpectBinaryBytes(op, a, b, DType::kBool, want, "", -1);
}

TEST(DeviceWideIntTest, ArithmeticWrapsAndTruncatesAsOnnx) {
  // u16 * u16 past int's range (computed unsigned, not as a promoted int), wrap-around.
  ExpectBinary<uint16_t>("Mul", {65535, 300, 2}, {65535, 300, 7}, {1, 24464, 14});
  ExpectBinary<uint16_t>("Add", {65535, 1, 0}, {1, 2, 0}, {0, 3, 0});
  ExpectBinary<uint16_t>("Sub", {0, 5, 7}, {1, 2, 7}, {65535, 3, 0});
  ExpectBinary<int16_t>("Add", {32767, -32768, -5}, {1, -1, 3}, {-32768, 32767, -2});
  ExpectBinary<int16_t>("Mul", {300, -300, 181}, {300, 300, 181}, {24464, -24464, 32761});
  ExpectBinary<uint32_t>("Sub", {0, 10}, {1, 3}, {0xffffffffu, 7});
  ExpectBinary<uint64_t>("Mul", {0x8000000000000001ull, 3}, {2, 5}, {2, 15});
  // Div truncates toward zero; by zero gives 0; INT16_MIN / -1 wraps.
  ExpectBinary<int16_t>("Div", {7, -7, 7, -32768, 5}, {2, 2, -2, -1, 0}, {3, -3, -3, -32768, 0});
  ExpectBinary<uint64_t>("Div", {~0ull, 10, 3}, {2, 3, 0}, {0x7fffffffffffffffull, 3, 0});
  // Mod: the divisor's sign (fmod=0), the dividend's (fmod=1).
  ExpectBinary<int16_t>("Mod", {-4, 7, -7, 4}, {3, -3, -3, -3}, {2, -2, -1, -2});
  ExpectBinary<int16_t>("Mod", {-4, 7, -7, 4}, {3, -3, -3, -3}, {-1, 1, -1, 1}, "", 1);
  ExpectBinary<uint32_t>("Mod", {4000000000u, 7, 9}, {7, 7, 0}, {4000000000u % 7, 0, 0});
  // Min/Max in unsigned order, above INT64_MAX too.
  ExpectBinary<uint64_t>("Max", {~0ull, 1}, {2, 0x8000000000000000ull},
                         {~0ull, 0x8000000000000000ull});
  ExpectBinary<uint64_t>("Min", {~0ull, 1}, {2, 0x8000000000000000ull}, {2, 1});
}

TEST(DeviceWideIntTest, ComparisonsAndBitwiseOps) {
  ExpectCompare<uint64_t>("Greater", {~0ull, 1, 5}, {1, ~0ull, 5}, {1, 0, 0});
  ExpectCompare<uint32_t>("LessOrEqual", {0xffffffffu, 1}, {1, 1}, {0, 1});
  ExpectCompare<int16_t>("Less", {-1, 3}, {0, -3}, {1, 0});
  ExpectCompare<uint16_t>("Equal", {65535, 2}, {65535, 3}, {1, 0});
  ExpectBinary<uint64_t>("BitwiseAnd", {~0ull, 0xf0}, {0x8000000000000001ull, 0x3c},
                         {0x8000000000000001ull, 0x30});
  ExpectBinary<int16_t>("BitwiseXor", {-1, 0x0f0f}, {0x00ff, 0x0ff0}, {-256, 0x00ff});
  // BitShift-28: bits past the top dropped, a too-wide shift gives 0; logical for unsigned.
  ExpectBinary<uint16_t>("BitShift", {0x8001, 1, 3}, {1, 16, 15}, {2, 0, 0x8000}, "LEFT");
  ExpectBinary<uint64_t>("BitShift", {~0ull, 16, 1}, {63, 2, 64}, {1, 4, 0}, "RIGHT");
  ExpectBinary<int16_t>("BitShift", {-32768, 64}, {15, 3}, {-1, 8}, "RIGHT");
}

TEST(DeviceWideIntTest, TopKOrdersU64AboveInt64Max) {
  const std::vector<uint64_t> x = {5, 0x8000000000000001ull, ~0ull, 0, 7};
  for (int largest : {1, 0}) {
    PlanBuilder pb;
    const int xb = pb.Buffer("x", DType::kU64, {5}, B::INPUT);
    const int64_t k = 2;
    const int kb = pb.Buffer("k", DType::kI64, {1}, B::CONSTANT, &k);
    const int vb = pb.Buffer("v", DType::kU64, {2}, B::OUTPUT);
    const int ib = pb.Buffer("i", DType::kI64, {2}, B::OUTPUT);
    plan::Kernel* kern = pb.Kernel("TopK", {xb, kb}, {vb, ib});
    PlanBuilder::Int(kern, "axis", 0);
    PlanBuilder::Int(kern, "largest", largest);
    auto out = RunBoth(pb.Finish(), {{"x", Bytes(x)}});
    if (largest) {
      EXPECT_EQ(out["v"], Bytes(std::vector<uint64_t>{~0ull, 0x8000000000000001ull}));
      EXPECT_EQ(out["i"], Bytes(std::vector<int64_t>{2, 1}));
    } else {
      EXPECT_EQ(out["v"], Bytes(std::vector<uint64_t>{0, 5}));
      EXPECT_EQ(out["i"], Bytes(std::vector<int64_t>{3, 0}));
    }
  }
}

// Cast between the new dtypes and the others: CPU and device alike (CastEveryPair in
// device_elementwise_test.cc runs every pair), plus the values ONNX fixes.
TEST(DeviceWideIntTest, CastValues) {
  PlanBuilder pb;
  const int x = pb.Buffer("x", DType::kF64, {4}, B::INPUT);
  const int y16 = pb.Buffer("y16", DType::kU16, {4}, B::OUTPUT);
  const int y64 = pb.Buffer("y64", DType::kU64, {4}, B::OUTPUT);
  const int yf = pb.Buffer("yf", DType::kF32, {4}, B::OUTPUT);
  PlanBuilder::Int(pb.Kernel("Cast", {x}, {y16}), "to", 4);
  PlanBuilder::Int(pb.Kernel("Cast", {x}, {y64}), "to", 13);
  PlanBuilder::Int(pb.Kernel("Cast", {y64}, {yf}), "to", 1);
  auto out = RunBoth(pb.Finish(),
                     {{"x", Bytes(std::vector<double>{70000.5, 3.9, 1.8446744073709550e19, 0})}});
  EXPECT_EQ(out["y16"], Bytes(std::vector<uint16_t>{70000 - 65536, 3, 0, 0}));
  const uint64_t big = static_cast<uint64_t>(1.8446744073709550e19);
  EXPECT_EQ(out["y64"], Bytes(std::vector<uint64_t>{70000, 3, big, 0}));
  EXPECT_EQ(out["yf"], Bytes(std::vector<float>{70000.0f, 3.0f, static_cast<float>(big), 0.0f}));
}

// BitCast keeps every bit (NaN payloads, negative zero); a bool output reads a nonzero byte as
// true.
TEST(DeviceWideIntTest, BitCastKeepsTheBits) {
  const std::vector<uint32_t> bits = {0x7fc00001u, 0x80000000u, 0x3f800000u, 0xffffffffu};
  for (DType to : {DType::kF32, DType::kI32, DType::kU32}) {
    SCOPED_TRACE(DTypeName(to));
    PlanBuilder pb;
    const int x = pb.Buffer("x", DType::kU32, {4}, B::INPUT);
    const int y = pb.Buffer("y", to, {4}, B::OUTPUT);
    PlanBuilder::Int(pb.Kernel("BitCast", {x}, {y}), "to", DTypeToOnnx(to));
    auto out = RunBoth(pb.Finish(), {{"x", Bytes(bits)}});
    EXPECT_EQ(out["y"], Bytes(bits));
  }
  PlanBuilder pb;
  const int x = pb.Buffer("x", DType::kU8, {4}, B::INPUT);
  const int y = pb.Buffer("y", DType::kBool, {4}, B::OUTPUT);
  PlanBuilder::Int(pb.Kernel("BitCast", {x}, {y}), "to", DTypeToOnnx(DType::kBool));
  auto out = RunBoth(pb.Finish(), {{"x", Bytes(std::vector<uint8_t>{0, 1, 2, 255})}});
  EXPECT_EQ(out["y"], (std::vector<uint8_t>{0, 1, 1, 1}));
}

}  // namespace
}  // namespace a8
