// Shape rules of the op table, on tiny hand-built graphs: known cases taken from the ONNX
// backend node tests, the error paths (each naming node and field), and randomized cases checked
// against independent reference computations (broadcasting, MatMul, Slice, Conv/pool windows).
#include "compiler/ir/shape_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "compiler/ir/op_table.h"
#include "tests/unit/shape_rules_test_util.h"

namespace a8 {
namespace {

using shape_test::F32;
using shape_test::I64;
using shape_test::T;
using ShapeRulesTest = shape_test::ShapeRulesFixture;

// ---------------------------------------------------------------- elementwise

TEST_F(ShapeRulesTest, BroadcastingBinary) {
  EXPECT_EQ(One("Add", {In(F32({3, 4, 5})), In(F32({5}))}), F32({3, 4, 5}));
  EXPECT_EQ(One("Mul", {In(F32({2, 1, 5})), In(F32({4, 1}))}), F32({2, 4, 5}));
  EXPECT_EQ(One("Sub", {In(F32({})), In(F32({2, 3}))}), F32({2, 3}));
  EXPECT_EQ(One("Div", {In(F32({0, 3})), In(F32({1, 3}))}), F32({0, 3}));
  EXPECT_EQ(One("Equal", {In(I64({2, 3})), In(I64({3}))}), T(DType::kBool, {2, 3}));
  EXPECT_EQ(One("Less", {In(F32({4})), In(F32({1}))}), T(DType::kBool, {4}));
  EXPECT_EQ(One("And", {In(T(DType::kBool, {2})), In(T(DType::kBool, {}))}), T(DType::kBool, {2}));
  EXPECT_EQ(One("Pow", {In(F32({2, 3})), In(I64({}))}), F32({2, 3}));
  EXPECT_EQ(One("Max", {In(F32({2, 1})), In(F32({3})), In(F32({1, 1, 1}))}), F32({1, 2, 3}));
  EXPECT_EQ(One("Where", {In(T(DType::kBool, {2, 1})), In(F32({3})), In(F32({}))}), F32({2, 3}));
}

TEST_F(ShapeRulesTest, BroadcastingErrors) {
  Status s = Error("Add", {In(F32({2, 3})), In(F32({4}))});
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "node 'n' (Add): input 1: shapes [2,3] and [4] are not broadcastable");
  s = Error("Add", {In(F32({3})), In(I64({3}))});
  EXPECT_NE(s.message().find("element type"), std::string::npos) << s.message();
  s = Error("And", {In(F32({3})), In(F32({3}))});
  EXPECT_NE(s.message().find("must be bool"), std::string::npos) << s.message();
  s = Error("Where", {In(F32({3})), In(F32({3})), In(F32({3}))});
  EXPECT_NE(s.message().find("'condition'"), std::string::npos) << s.message();
}

// Numpy broadcasting, computed differently from the rule: pad both shapes to the same rank,
// then take the non-1 dim of each pair.
std::vector<int64_t> ReferenceBroadcast(std::vector<int64_t> a, std::vector<int64_t> b, bool* ok) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  std::vector<int64_t> out;
  *ok = true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != 1 && b[i] != 1 && a[i] != b[i]) *ok = false;
    out.push_back(a[i] == 1 ? b[i] : a[i]);
  }
  return out;
}

TEST_F(ShapeRulesTest, RandomBroadcastMatchesReference) {
  std::mt19937 rng(1234);
  auto random_shape = [&]() {
    std::vector<int64_t> dims(rng() % 5);
    for (int64_t& d : dims) d = std::vector<int64_t>{1, 1, 2, 3, 0}[rng() % 5];
    return dims;
  };
  int failures = 0, successes = 0;
  for (int iter = 0; iter < 500; ++iter) {
    const std::vector<int64_t> a = random_shape(), b = random_shape();
    bool ok = false;
    const std::vector<int64_t> expected = ReferenceBroadcast(a, b, &ok);
    StatusOr<std::vector<int64_t>> got = BroadcastShapes(a, b, "test");
    ASSERT_EQ(got.ok(), ok) << DimsString(a) << " " << DimsString(b);
    if (ok) {
      EXPECT_EQ(*got, expected);
      ++successes;
    } else {
      ++failures;
    }
  }
  EXPECT_GT(successes, 50);
  EXPECT_GT(failures, 50);
}

TEST_F(ShapeRulesTest, UnaryAndCasts) {
  EXPECT_EQ(One("Relu", {In(F32({2, 3}))}), F32({2, 3}));
  EXPECT_EQ(One("Sign", {In(I64({4}))}), I64({4}));
  EXPECT_EQ(One("IsNaN", {In(F32({4, 1}))}), T(DType::kBool, {4, 1}));
  EXPECT_EQ(One("IsInf", {In(T(DType::kF16, {2}))}, {{"detect_negative", 0}}),
            T(DType::kBool, {2}));
  EXPECT_EQ(One("Not", {In(T(DType::kBool, {2}))}), T(DType::kBool, {2}));
  EXPECT_EQ(One("Gelu", {In(T(DType::kBF16, {8}))}, {{"approximate", "tanh"}}),
            T(DType::kBF16, {8}));
  EXPECT_EQ(One("Cast", {In(F32({2, 3}))}, {{"to", 10}}), T(DType::kF16, {2, 3}));  // FLOAT16
  EXPECT_EQ(One("Cast", {In(F32({2}))}, {{"to", 7}}), I64({2}));                    // INT64
  EXPECT_EQ(One("CastLike", {In(F32({5})), In(T(DType::kBF16, {}))}), T(DType::kBF16, {5}));
  EXPECT_EQ(One("Clip", {In(F32({3})), FloatScalar(0), FloatScalar(6)}), F32({3}));
  EXPECT_EQ(One("Clip", {In(F32({3})), nullptr, FloatScalar(6)}), F32({3}));

  Status s = Error("Cast", {In(F32({2}))}, {{"to", 8}});  // STRING
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("node 'n' (Cast): attribute 'to'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("STRING"), std::string::npos) << s.message();
  s = Error("Exp", {In(I64({2}))});
  EXPECT_NE(s.message().find("floating-point"), std::string::npos) << s.message();
  s = Error("Gelu", {In(F32({2}))}, {{"approximate", "erf"}});
  EXPECT_NE(s.message().find("'approximate'"), std::string::npos) << s.message();
  s = Error("Clip", {In(F32({3})), In(F32({3}))});
  EXPECT_NE(s.message().find("input 'min' must be a scalar"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------- MatMul, Gemm

TEST_F(ShapeRulesTest, MatMul) {
  EXPECT_EQ(One("MatMul", {In(F32({3, 4})), In(F32({4, 5}))}), F32({3, 5}));
  EXPECT_EQ(One("MatMul", {In(F32({4})), In(F32({4}))}), F32({}));
  EXPECT_EQ(One("MatMul", {In(F32({4})), In(F32({2, 4, 5}))}), F32({2, 5}));
  EXPECT_EQ(One("MatMul", {In(F32({2, 3, 4})), In(F32({4}))}), F32({2, 3}));
  EXPECT_EQ(One("MatMul", {In(F32({2, 1, 3, 4})), In(F32({5, 4, 6}))}), F32({2, 5, 3, 6}));
  Status s = Error("MatMul", {In(F32({3, 4})), In(F32({5, 6}))});
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("node 'n' (MatMul): inner dimensions"), std::string::npos)
      << s.message();
  s = Error("MatMul", {In(F32({2, 3, 4})), In(F32({3, 4, 5}))});
  EXPECT_NE(s.message().find("batch dimensions"), std::string::npos) << s.message();
  EXPECT_FALSE(Error("MatMul", {In(F32({})), In(F32({3}))}).ok());
}

TEST_F(ShapeRulesTest, RandomMatMulMatchesReference) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    const int64_t m = 1 + rng() % 4, k = 1 + rng() % 4, n = 1 + rng() % 4;
    std::vector<int64_t> batch_a(rng() % 3), batch_b(rng() % 3);
    for (int64_t& d : batch_a) d = 1 + rng() % 2;
    for (int64_t& d : batch_b) d = 1 + rng() % 2;
    const bool a_vec = rng() % 4 == 0, b_vec = rng() % 4 == 0;
    std::vector<int64_t> a = a_vec ? std::vector<int64_t>{k} : batch_a;
    std::vector<int64_t> b = b_vec ? std::vector<int64_t>{k} : batch_b;
    if (!a_vec) a.insert(a.end(), {m, k});
    if (!b_vec) b.insert(b.end(), {k, n});
    bool ok = false;
    std::vector<int64_t> expected = ReferenceBroadcast(
        a_vec ? std::vector<int64_t>{} : batch_a, b_vec ? std::vector<int64_t>{} : batch_b, &ok);
    if (!a_vec) expected.push_back(m);
    if (!b_vec) expected.push_back(n);
    StatusOr<std::vector<TensorType>> got = Infer("MatMul", {In(F32(a)), In(F32(b))});
    ASSERT_EQ(got.ok(), ok) << DimsString(a) << " x " << DimsString(b);
    if (ok) {
      EXPECT_EQ((*got)[0], F32(expected)) << DimsString(a) << " x " << DimsString(b);
    }
  }
}

TEST_F(ShapeRulesTest, Gemm) {
  EXPECT_EQ(One("Gemm", {In(F32({3, 4})), In(F32({4, 5}))}), F32({3, 5}));
  EXPECT_EQ(
      One("Gemm", {In(F32({4, 3})), In(F32({5, 4})), In(F32({5}))}, {{"transA", 1}, {"transB", 1}}),
      F32({3, 5}));
  EXPECT_EQ(One("Gemm", {In(F32({3, 4})), In(F32({4, 5})), In(F32({3, 1}))}), F32({3, 5}));
  Status s = Error("Gemm", {In(F32({3, 4})), In(F32({4, 5})), In(F32({5, 3}))});
  EXPECT_NE(s.message().find("input 'C' f32[5,3] does not broadcast to [3,5]"), std::string::npos)
      << s.message();
  s = Error("Gemm", {In(F32({3, 4})), In(F32({4, 5}))}, {{"transB", 1}});
  EXPECT_NE(s.message().find("inner dimensions"), std::string::npos) << s.message();
  s = Error("Gemm", {In(F32({2, 3, 4})), In(F32({4, 5}))});
  EXPECT_NE(s.message().find("input 'A' must have rank 2"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------- Conv and pooling

TEST_F(ShapeRulesTest, ConvFromTheBackendTests) {
  Value* x = In(F32({1, 1, 7, 5}));
  Value* w = In(F32({1, 1, 3, 3}));
  // test_conv_with_strides_padding / _no_padding / _and_asymmetric_padding
  EXPECT_EQ(
      One("Conv", {x, w},
          {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      F32({1, 1, 4, 3}));
  EXPECT_EQ(One("Conv", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}}), F32({1, 1, 3, 2}));
  EXPECT_EQ(
      One("Conv", {x, w},
          {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 0, 1, 0}}}),
      F32({1, 1, 4, 2}));
  // test_conv_with_autopad_same: SAME_LOWER, stride 2 on 5x5 -> 3x3
  EXPECT_EQ(One("Conv", {In(F32({1, 1, 5, 5})), w},
                {{"auto_pad", "SAME_LOWER"}, {"strides", std::vector<int64_t>{2, 2}}}),
            F32({1, 1, 3, 3}));
  EXPECT_EQ(One("Conv", {In(F32({2, 3, 10, 11})), In(F32({8, 3, 3, 3}))},
                {{"auto_pad", "SAME_UPPER"}, {"strides", std::vector<int64_t>{3, 2}}}),
            F32({2, 8, 4, 6}));
  // dilations, groups, bias, 1-D and 3-D
  EXPECT_EQ(One("Conv", {In(F32({1, 4, 9, 9})), In(F32({6, 2, 3, 3})), In(F32({6}))},
                {{"dilations", std::vector<int64_t>{2, 2}}, {"group", 2}}),
            F32({1, 6, 5, 5}));
  EXPECT_EQ(One("Conv", {In(F32({2, 3, 16})), In(F32({4, 3, 5}))}), F32({2, 4, 12}));
  EXPECT_EQ(
      One("Conv", {In(F32({1, 2, 4, 5, 6})), In(F32({3, 2, 2, 2, 2}))}, {{"auto_pad", "VALID"}}),
      F32({1, 3, 3, 4, 5}));
}

TEST_F(ShapeRulesTest, ConvErrors) {
  Status s = Error("Conv", {In(F32({1, 3, 5, 5})), In(F32({4, 2, 3, 3}))});
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("node 'n' (Conv): channels do not match"), std::string::npos)
      << s.message();
  s = Error("Conv", {In(F32({1, 1, 5, 5})), In(F32({1, 1, 3, 3}))},
            {{"strides", std::vector<int64_t>{2}}});
  EXPECT_EQ(s.message(), "node 'n' (Conv): attribute 'strides' has 1 values, expected 2");
  s = Error("Conv", {In(F32({1, 1, 5, 5})), In(F32({1, 1, 3, 3}))},
            {{"strides", std::vector<int64_t>{0, 1}}});
  EXPECT_NE(s.message().find("attribute 'strides' value 0 is out of range"), std::string::npos)
      << s.message();
  s = Error("Conv", {In(F32({1, 1, 2, 2})), In(F32({1, 1, 3, 3}))});
  EXPECT_NE(s.message().find("larger than"), std::string::npos) << s.message();
  s = Error("Conv", {In(F32({1, 1, 5, 5})), In(F32({1, 1, 3, 3}))},
            {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"auto_pad", "SAME_UPPER"}});
  EXPECT_NE(s.message().find("cannot be used together"), std::string::npos) << s.message();
  s = Error("Conv", {In(F32({1, 1, 5, 5})), In(F32({1, 1, 3, 3}))}, {{"auto_pad", "SAME"}});
  EXPECT_NE(s.message().find("'auto_pad'"), std::string::npos) << s.message();
  s = Error("Conv", {In(F32({1, 5, 5})), In(F32({1, 1, 3, 3}))});
  EXPECT_NE(s.message().find("input 'W' must have rank 3"), std::string::npos) << s.message();
  s = Error("Conv", {In(F32({1, 1, 5, 5})), In(F32({2, 1, 3, 3})), In(F32({3}))});
  EXPECT_NE(s.message().find("input 'B' must be [2]"), std::string::npos) << s.message();
}

TEST_F(ShapeRulesTest, ConvTranspose) {
  // test_convtranspose: [1,1,3,3] * [1,2,3,3] -> [1,2,5,5]
  EXPECT_EQ(One("ConvTranspose", {In(F32({1, 1, 3, 3})), In(F32({1, 2, 3, 3}))}),
            F32({1, 2, 5, 5}));
  // test_convtranspose_pads: strides 3,2, pads 1,2,1,2 -> [1,2,7,3]
  EXPECT_EQ(
      One("ConvTranspose", {In(F32({1, 1, 3, 3})), In(F32({1, 2, 3, 3}))},
          {{"strides", std::vector<int64_t>{3, 2}}, {"pads", std::vector<int64_t>{1, 2, 1, 2}}}),
      F32({1, 2, 7, 3}));
  // test_convtranspose_output_shape and _kernel_shape use output_shape [10, 8]
  EXPECT_EQ(
      One("ConvTranspose", {In(F32({1, 1, 3, 3})), In(F32({1, 2, 3, 3}))},
          {{"strides", std::vector<int64_t>{3, 2}}, {"output_shape", std::vector<int64_t>{10, 8}}}),
      F32({1, 2, 10, 8}));
  // test_convtranspose_pad: output_padding 1,1 -> [1,2,10,8]
  EXPECT_EQ(One("ConvTranspose", {In(F32({1, 1, 3, 3})), In(F32({1, 2, 3, 3}))},
                {{"strides", std::vector<int64_t>{3, 2}},
                 {"output_padding", std::vector<int64_t>{1, 1}}}),
            F32({1, 2, 10, 8}));
  // test_convtranspose_autopad_same: SAME_UPPER, strides 2 -> in * stride
  EXPECT_EQ(One("ConvTranspose", {In(F32({1, 1, 3, 3})), In(F32({1, 2, 3, 3}))},
                {{"auto_pad", "SAME_UPPER"}, {"strides", std::vector<int64_t>{2, 2}}}),
            F32({1, 2, 6, 6}));
  // groups: W is C x M/group
  EXPECT_EQ(One("ConvTranspose", {In(F32({1, 4, 3})), In(F32({4, 3, 2}))}, {{"group", 2}}),
            F32({1, 6, 4}));
}

TEST_F(ShapeRulesTest, PoolingFromTheBackendTests) {
  // test_maxpool_2d_ceil: 4x4, kernel 3, stride 2, ceil -> 2x2
  EXPECT_EQ(One("MaxPool", {In(F32({1, 1, 4, 4}))},
                {{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"ceil_mode", 1}}),
            F32({1, 1, 2, 2}));
  // test_maxpool_2d_dilations: 4x4, kernel 2, dilation 2 -> 2x2
  EXPECT_EQ(One("MaxPool", {In(F32({1, 1, 4, 4}))},
                {{"kernel_shape", std::vector<int64_t>{2, 2}},
                 {"dilations", std::vector<int64_t>{2, 2}}}),
            F32({1, 1, 2, 2}));
  // test_averagepool_2d_same_upper / _lower: 32x32, kernel 2 -> 32x32
  EXPECT_EQ(One("AveragePool", {In(F32({1, 3, 32, 32}))},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"auto_pad", "SAME_UPPER"}}),
            F32({1, 3, 32, 32}));
  // test_averagepool_2d_pads: 28x28, kernel 3, pads 2 -> 30x30
  EXPECT_EQ(One("AveragePool", {In(F32({1, 3, 28, 28}))},
                {{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"pads", std::vector<int64_t>{2, 2, 2, 2}}}),
            F32({1, 3, 30, 30}));
  // test_averagepool_2d_precomputed_same_upper: 5x5, kernel 3, stride 2 -> 3x3
  EXPECT_EQ(One("AveragePool", {In(F32({1, 1, 5, 5}))},
                {{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"auto_pad", "SAME_UPPER"}}),
            F32({1, 1, 3, 3}));
  // A ceil-mode window that would start in the right padding is dropped (PyTorch, onnx 1.16+).
  EXPECT_EQ(One("MaxPool", {In(F32({1, 1, 5, 5}))},
                {{"kernel_shape", std::vector<int64_t>{2, 2}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                 {"ceil_mode", 1}}),
            F32({1, 1, 3, 3}));
  // MaxPool's optional Indices output is i64 of the same shape.
  StatusOr<std::vector<TensorType>> r =
      Infer("MaxPool", {In(F32({2, 3, 8}))},
            {{"kernel_shape", std::vector<int64_t>{2}}, {"strides", std::vector<int64_t>{2}}}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({2, 3, 4}));
  EXPECT_EQ((*r)[1], I64({2, 3, 4}));
  EXPECT_EQ(One("GlobalAveragePool", {In(F32({2, 3, 7, 9}))}), F32({2, 3, 1, 1}));
  EXPECT_EQ(One("GlobalMaxPool", {In(F32({2, 3, 7}))}), F32({2, 3, 1}));

  Status s = Error("MaxPool", {In(F32({1, 1, 4, 4}))});
  EXPECT_EQ(s.message(), "node 'n' (MaxPool): required attribute 'kernel_shape' is missing");
  s = Error("AveragePool", {In(F32({4, 4}))}, {{"kernel_shape", std::vector<int64_t>{2}}});
  EXPECT_NE(s.message().find("rank >= 3"), std::string::npos) << s.message();
}

// Counts window positions one by one: a window at step j starts at j*stride - pad_begin; floor
// mode needs it to end inside the padded input, ceil mode only needs it to start inside the
// padded input before its last kernel-sized stretch... and not in the right padding.
int64_t ReferenceWindows(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                         bool ceil_mode) {
  const int64_t ek = (k - 1) * d + 1;
  int64_t count = 0;
  for (int64_t j = 0;; ++j) {
    const int64_t start = j * s - pb;
    const bool fits = start + ek <= in + pe;
    const bool partial = start + ek - s < in + pe && start < in;
    if (fits || (ceil_mode && partial)) {
      ++count;
    } else {
      break;
    }
  }
  return count;
}

TEST_F(ShapeRulesTest, RandomPoolingMatchesReference) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const int64_t in = 1 + rng() % 12, k = 1 + rng() % 4, s = 1 + rng() % 3, d = 1 + rng() % 2;
    const int64_t pb = rng() % k, pe = rng() % k;
    const bool ceil_mode = rng() % 2;
    const int64_t expected = ReferenceWindows(in, k, s, d, pb, pe, ceil_mode);
    StatusOr<std::vector<TensorType>> got = Infer("MaxPool", {In(F32({1, 2, in}))},
                                                  {{"kernel_shape", std::vector<int64_t>{k}},
                                                   {"strides", std::vector<int64_t>{s}},
                                                   {"dilations", std::vector<int64_t>{d}},
                                                   {"pads", std::vector<int64_t>{pb, pe}},
                                                   {"ceil_mode", ceil_mode ? 1 : 0}});
    SCOPED_TRACE(
        fmt::format("in={} k={} s={} d={} pads={},{} ceil={}", in, k, s, d, pb, pe, ceil_mode));
    if (expected < 1) {
      EXPECT_FALSE(got.ok());
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ((*got)[0], F32({1, 2, expected}));
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

// ---------------------------------------------------------------- normalization, softmax, losses

TEST_F(ShapeRulesTest, Normalization) {
  Value* c = In(F32({3}));
  EXPECT_EQ(One("BatchNormalization", {In(F32({2, 3, 4, 4})), c, c, c, c}), F32({2, 3, 4, 4}));
  StatusOr<std::vector<TensorType>> r =
      Infer("BatchNormalization", {In(F32({2, 3, 4})), c, c, c, c}, {{"training_mode", 1}}, 3, 15);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1], F32({3}));
  EXPECT_EQ((*r)[2], F32({3}));
  Status s = Error("BatchNormalization", {In(F32({2, 4, 4})), c, c, c, c});
  EXPECT_NE(s.message().find("input 'scale' must be [4]"), std::string::npos) << s.message();
  s = Error("BatchNormalization", {In(F32({2, 3})), c, c, c, c}, {}, 3);
  EXPECT_NE(s.message().find("expected 1 with training_mode=0"), std::string::npos) << s.message();
  r = Infer("BatchNormalization", {In(F32({2, 3})), c, c, c, c}, {}, 5, 9);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);

  r = Infer("LayerNormalization", {In(T(DType::kF16, {2, 5, 8})), In(T(DType::kF16, {8}))},
            {{"axis", -1}}, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], T(DType::kF16, {2, 5, 8}));
  EXPECT_EQ((*r)[1], F32({2, 5, 1}));  // stash_type FLOAT
  EXPECT_EQ((*r)[2], F32({2, 5, 1}));
  r = Infer("LayerNormalization", {In(F32({2, 5, 8})), In(F32({5, 8})), In(F32({8}))},
            {{"axis", 1}}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1], F32({2, 1, 1}));
  s = Error("LayerNormalization", {In(F32({2, 5, 8})), In(F32({5}))});
  EXPECT_NE(s.message().find("input 'Scale' f32[5] does not broadcast"), std::string::npos)
      << s.message();
  s = Error("LayerNormalization", {In(F32({2, 5})), In(F32({5}))}, {{"axis", 2}});
  EXPECT_EQ(s.message(),
            "node 'n' (LayerNormalization): attribute 'axis' 2 is out of range for "
            "rank 2 (expected [-2, 1])");
  EXPECT_EQ(One("InstanceNormalization", {In(F32({2, 3, 5, 5})), c, c}), F32({2, 3, 5, 5}));
}

TEST_F(ShapeRulesTest, SoftmaxAndDropout) {
  EXPECT_EQ(One("Softmax", {In(F32({2, 7}))}), F32({2, 7}));
  EXPECT_EQ(One("LogSoftmax", {In(F32({2, 7}))}, {{"axis", -2}}), F32({2, 7}));
  EXPECT_FALSE(Error("Softmax", {In(F32({2, 7}))}, {{"axis", 2}}).ok());
  StatusOr<std::vector<TensorType>> r =
      Infer("Dropout", {In(F32({4, 5})), FloatScalar(0.1f), nullptr}, {}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({4, 5}));
  EXPECT_EQ((*r)[1], T(DType::kBool, {4, 5}));
  r = Infer("Dropout", {In(F32({4, 5}))}, {{"ratio", 0.5f}}, 2, 7);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1], F32({4, 5}));  // Dropout-7's mask has the data's type
  Status s = Error("Dropout", {In(F32({4})), In(F32({1}))});
  EXPECT_NE(s.message().find("input 'ratio' must have rank 0"), std::string::npos) << s.message();
}

TEST_F(ShapeRulesTest, Losses) {
  EXPECT_EQ(One("SoftmaxCrossEntropyLoss", {In(F32({8, 10})), In(I64({8}))}), F32({}));
  StatusOr<std::vector<TensorType>> r =
      Infer("SoftmaxCrossEntropyLoss", {In(F32({8, 10, 3})), In(I64({8, 3})), In(F32({10}))},
            {{"reduction", "none"}, {"ignore_index", 1}}, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0], F32({8, 3}));
  EXPECT_EQ((*r)[1], F32({8, 10, 3}));
  EXPECT_EQ(One("NegativeLogLikelihoodLoss", {In(F32({8, 10})), In(T(DType::kI32, {8}))},
                {{"reduction", "sum"}}),
            F32({}));
  Status s = Error("SoftmaxCrossEntropyLoss", {In(F32({8, 10})), In(I64({7}))});
  EXPECT_NE(s.message().find("input 'labels' must be [8]"), std::string::npos) << s.message();
  s = Error("NegativeLogLikelihoodLoss", {In(F32({8, 10})), In(I64({8}))}, {{"reduction", "avg"}});
  EXPECT_NE(s.message().find("attribute 'reduction' is 'avg'"), std::string::npos) << s.message();
  s = Error("NegativeLogLikelihoodLoss", {In(F32({8, 10})), In(F32({8}))});
  EXPECT_NE(s.message().find("input 'target' must be i32 or i64"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace a8
