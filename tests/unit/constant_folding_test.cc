// The constant evaluator, op by op, against values computed here independently (numpy
// semantics written out as loops) on seeded random data: broadcasting, integer division and
// modulo signs, wrapping, Cast rounding to f16/bf16 (bit-exact against float16.h), data
// movement, reductions, and the limits (unsupported ops, the size cap, bad indices).
#include "passes/cleanup/constant_folding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/common/float16.h"
#include "tests/unit/random_util.h"

namespace a8 {
namespace {

using Data = std::shared_ptr<TensorData>;

template <typename T>
Data Make(DType dt, const std::vector<T>& v, std::vector<int64_t> dims) {
  Data t = TensorData::Make(TensorType{dt, std::move(dims)});
  EXPECT_EQ(t->bytes.size(), v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(t->bytes.data(), v.data(), t->bytes.size());
  return t;
}
Data F32(const std::vector<float>& v, std::vector<int64_t> dims) {
  return Make(DType::kF32, v, std::move(dims));
}
Data I64(const std::vector<int64_t>& v, std::vector<int64_t> dims) {
  return Make(DType::kI64, v, std::move(dims));
}

std::vector<float> UniformFloats(int64_t n, uint32_t seed) {
  return testing::RandomFloats(static_cast<size_t>(n), seed,
                               std::uniform_real_distribution<float>(-4.0f, 4.0f));
}

std::vector<double> AsDoubles(const TensorData& t) {
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.GetDouble(i);
  return v;
}

// One node over constant inputs (null: an absent input), in a graph of its own.
class Eval {
 public:
  StatusOr<std::vector<TensorDataPtr>> Run(const std::string& op, std::vector<Data> inputs,
                                           std::map<std::string, Attribute> attrs = {},
                                           int num_outputs = 1) {
    std::vector<Value*> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(inputs[i] ? g_.AddConstant("c" + std::to_string(i), inputs[i]) : nullptr);
    }
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < num_outputs; ++i) outs.push_back({"y", TensorType{}});
    Node* n = g_.AddNode(op, "", values, outs, std::move(attrs), op + "_0");
    return EvaluateNode(*n, ConstantInputs(*n));
  }
  TensorDataPtr One(const std::string& op, std::vector<Data> inputs,
                    std::map<std::string, Attribute> attrs = {}) {
    auto r = Run(op, std::move(inputs), std::move(attrs));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)[0] : TensorData::Make(TensorType{DType::kF32, {0}});
  }
  Graph& graph() { return g_; }

 private:
  Graph g_;
};

TEST(ConstantFoldingTest, BinaryFloatOpsBroadcastLikeNumpy) {
  const auto a = UniformFloats(3 * 1 * 4, 1), b = UniformFloats(5 * 1, 2);
  const std::map<std::string, float (*)(float, float)> ops = {
      {"Add", [](float x, float y) { return x + y; }},
      {"Sub", [](float x, float y) { return x - y; }},
      {"Mul", [](float x, float y) { return x * y; }},
      {"Div", [](float x, float y) { return x / y; }},
      {"Max", [](float x, float y) { return std::max(x, y); }},
      {"Min", [](float x, float y) { return std::min(x, y); }}};
  for (const auto& [op, fn] : ops) {
    Eval e;
    TensorDataPtr r = e.One(op, {F32(a, {3, 1, 4}), F32(b, {5, 1})});
    ASSERT_EQ(r->type, (TensorType{DType::kF32, {3, 5, 4}})) << op;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k) {
          EXPECT_EQ(r->data<float>()[(i * 5 + j) * 4 + k], fn(a[i * 4 + k], b[j])) << op;
        }
  }
}

TEST(ConstantFoldingTest, IntegerDivTruncatesTowardZeroAndModFollowsDivisor) {
  const std::vector<int64_t> a = {7, -7, 7, -7, 0, 9, -9, INT64_MIN};
  const std::vector<int64_t> b = {2, 2, -2, -2, 3, 3, 4, -1};
  Eval e;
  EXPECT_EQ(e.One("Div", {I64(a, {8}), I64(b, {8})})->ToInt64Vector(),
            (std::vector<int64_t>{3, -3, -3, 3, 0, 3, -2, INT64_MIN}));
  EXPECT_EQ(e.One("Mod", {I64(a, {8}), I64(b, {8})})->ToInt64Vector(),
            (std::vector<int64_t>{1, 1, -1, -1, 0, 0, 3, 0}));
  EXPECT_EQ(e.One("Mod", {I64(a, {8}), I64(b, {8})}, {{"fmod", 1}})->ToInt64Vector(),
            (std::vector<int64_t>{1, -1, 1, -1, 0, 0, -1, 0}));
  // Random int32 against C++ semantics (which numpy's fmod and ORT's Div share).
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> dist(-1000, 1000);
  std::vector<int32_t> x(64), y(64);
  for (int i = 0; i < 64; ++i) {
    x[i] = dist(rng);
    do y[i] = dist(rng) / 50;
    while (y[i] == 0);
  }
  auto q = e.One("Div", {Make(DType::kI32, x, {64}), Make(DType::kI32, y, {64})});
  auto m = e.One("Mod", {Make(DType::kI32, x, {64}), Make(DType::kI32, y, {64})});
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(q->data<int32_t>()[i], x[i] / y[i]);
    int32_t r = x[i] % y[i];
    if (r != 0 && ((r < 0) != (y[i] < 0))) r += y[i];
    EXPECT_EQ(m->data<int32_t>()[i], r);
  }
  auto zero = e.Run("Div", {I64({1, 2}, {2}), I64({1, 0}, {2})});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(zero.status().message().find("Div_0"), std::string::npos);
}

TEST(ConstantFoldingTest, IntegerArithmeticWraps) {
  Eval e;
  auto r = e.One("Add", {Make<int8_t>(DType::kI8, {100, -100}, {2}),
                         Make<int8_t>(DType::kI8, {100, -100}, {2})});
  EXPECT_EQ(r->data<int8_t>()[0], -56);
  EXPECT_EQ(r->data<int8_t>()[1], 56);
  auto m = e.One("Mul", {Make<uint8_t>(DType::kU8, {200}, {}), Make<uint8_t>(DType::kU8, {3}, {})});
  EXPECT_EQ(m->data<uint8_t>()[0], 88);  // 600 mod 256
}

TEST(ConstantFoldingTest, CastToHalfIsBitExactWithFloat16H) {
  auto v = UniformFloats(256, 4);
  v.push_back(65519.0f);  // rounds to 65504
  v.push_back(65520.0f);  // overflows to inf
  v.push_back(1e-8f);     // subnormal range
  v.push_back(-0.0f);
  const int64_t n = static_cast<int64_t>(v.size());
  Eval e;
  auto h = e.One("Cast", {F32(v, {n})}, {{"to", DTypeToOnnx(DType::kF16)}});
  auto b = e.One("Cast", {F32(v, {n})}, {{"to", DTypeToOnnx(DType::kBF16)}});
  ASSERT_EQ(h->type.dtype, DType::kF16);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(h->data<uint16_t>()[i], FloatToHalfBits(v[i])) << v[i];
    EXPECT_EQ(b->data<uint16_t>()[i], FloatToBFloat16Bits(v[i])) << v[i];
  }
  // Back to f32 is exact.
  auto back =
      e.One("Cast", {std::const_pointer_cast<TensorData>(h)}, {{"to", DTypeToOnnx(DType::kF32)}});
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(FloatToBits(back->data<float>()[i]),
              FloatToBits(HalfBitsToFloat(FloatToHalfBits(v[i]))));
  }
}

TEST(ConstantFoldingTest, CastBetweenIntegerFloatAndBool) {
  Eval e;
  auto f = F32({-2.7f, 2.7f, 0.0f, 300.5f}, {4});
  EXPECT_EQ(e.One("Cast", {f}, {{"to", DTypeToOnnx(DType::kI64)}})->ToInt64Vector(),
            (std::vector<int64_t>{-2, 2, 0, 300}));
  EXPECT_EQ(e.One("Cast", {f}, {{"to", DTypeToOnnx(DType::kBool)}})->ToInt64Vector(),
            (std::vector<int64_t>{1, 1, 0, 1}));
  EXPECT_EQ(e.One("Cast", {f}, {{"to", DTypeToOnnx(DType::kU8)}})->ToInt64Vector(),
            (std::vector<int64_t>{254, 2, 0, 44}));  // wraps through int32, as x86 converts
  auto big = I64({(int64_t{1} << 53) + 1, -3, 300}, {3});
  auto asf = e.One("Cast", {big}, {{"to", DTypeToOnnx(DType::kF32)}});
  EXPECT_EQ(asf->data<float>()[0], static_cast<float>((int64_t{1} << 53) + 1));
  EXPECT_EQ(e.One("Cast", {big}, {{"to", DTypeToOnnx(DType::kI8)}})->ToInt64Vector(),
            (std::vector<int64_t>{1, -3, 44}));
}

TEST(ConstantFoldingTest, HalfArithmeticRoundsEachResult) {
  auto a = UniformFloats(32, 5), b = UniformFloats(32, 6);
  std::vector<uint16_t> ha(32), hb(32);
  for (int i = 0; i < 32; ++i) {
    ha[i] = FloatToHalfBits(a[i]);
    hb[i] = FloatToHalfBits(b[i]);
  }
  Eval e;
  auto r = e.One("Mul", {Make(DType::kF16, ha, {32}), Make(DType::kF16, hb, {32})});
  ASSERT_EQ(r->type.dtype, DType::kF16);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(r->data<uint16_t>()[i],
              FloatToHalfBits(HalfBitsToFloat(ha[i]) * HalfBitsToFloat(hb[i])));
  }
}

TEST(ConstantFoldingTest, SumOfThreeHalvesRoundsOnceLikeOnnxruntime) {
  auto a = UniformFloats(64, 12), b = UniformFloats(64, 13), c = UniformFloats(64, 14);
  std::vector<uint16_t> ha(64), hb(64), hc(64);
  for (int i = 0; i < 64; ++i) {
    ha[i] = FloatToHalfBits(a[i]);
    hb[i] = FloatToHalfBits(b[i]);
    hc[i] = FloatToHalfBits(c[i]);
  }
  Eval e;
  auto r = e.One("Sum", {Make(DType::kF16, ha, {64}), Make(DType::kF16, hb, {64}),
                         Make(DType::kF16, hc, {64})});
  int differs_from_pairwise = 0;
  for (int i = 0; i < 64; ++i) {
    const float fa = HalfBitsToFloat(ha[i]), fb = HalfBitsToFloat(hb[i]),
                fc = HalfBitsToFloat(hc[i]);
    EXPECT_EQ(r->data<uint16_t>()[i], FloatToHalfBits(fa + fb + fc));
    const float pairwise = HalfBitsToFloat(FloatToHalfBits(fa + fb)) + fc;
    differs_from_pairwise += FloatToHalfBits(pairwise) != FloatToHalfBits(fa + fb + fc);
  }
  EXPECT_GT(differs_from_pairwise, 0);  // the test tells the two orders apart
}

TEST(ConstantFoldingTest, UnaryOps) {
  auto v = UniformFloats(40, 7);
  Eval e;
  const std::map<std::string, float (*)(float)> ops = {
      {"Neg", [](float x) { return -x; }},
      {"Abs", [](float x) { return std::fabs(x); }},
      {"Relu", [](float x) { return x < 0 ? 0.0f : x; }},
      {"Exp", [](float x) { return std::exp(x); }},
      {"Floor", [](float x) { return std::floor(x); }},
      {"Ceil", [](float x) { return std::ceil(x); }},
      {"Reciprocal", [](float x) { return 1.0f / x; }},
      {"Sqrt", [](float x) { return std::sqrt(std::fabs(x)); }},
      {"Log", [](float x) { return std::log(std::fabs(x)); }}};
  std::vector<float> pos(v.size());
  for (size_t i = 0; i < v.size(); ++i) pos[i] = std::fabs(v[i]);
  for (const auto& [op, fn] : ops) {
    const bool needs_pos = op == "Sqrt" || op == "Log";
    auto r = e.One(op, {F32(needs_pos ? pos : v, {40})});
    for (int i = 0; i < 40; ++i) EXPECT_EQ(r->data<float>()[i], fn(v[i])) << op;
  }
  EXPECT_EQ(e.One("Abs", {I64({-5, 5, INT64_MIN}, {3})})->ToInt64Vector(),
            (std::vector<int64_t>{5, 5, INT64_MIN}));
  auto unsupported = e.Run("Sqrt", {I64({4}, {1})});
  EXPECT_EQ(unsupported.status().code(), StatusCode::kUnsupported);
}

TEST(ConstantFoldingTest, PowSumAndVariadic) {
  Eval e;
  auto base = UniformFloats(6, 8);
  auto r = e.One("Pow", {F32(base, {2, 3}), I64({2}, {})});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r->data<float>()[i], base[i] * base[i]);
  auto p = e.One("Pow", {F32({2.0f, 9.0f}, {2}), F32({0.5f}, {1})});
  EXPECT_EQ(p->data<float>()[1], std::pow(9.0f, 0.5f));
  // Both operands broadcast: [2, 1] ** [3] -> [2, 3].
  auto b = e.One("Pow", {I64({2, 3}, {2, 1}), I64({0, 1, 2}, {3})});
  EXPECT_EQ(b->type.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b->ToInt64Vector(), (std::vector<int64_t>{1, 2, 4, 1, 3, 9}));
  auto s = e.One("Sum", {I64({1, 2}, {2}), I64({10}, {1}), I64({100, 200}, {2})});
  EXPECT_EQ(s->ToInt64Vector(), (std::vector<int64_t>{111, 212}));
  auto mx = e.One("Max", {I64({1, 5}, {2}), I64({3}, {}), I64({0, 4}, {2})});
  EXPECT_EQ(mx->ToInt64Vector(), (std::vector<int64_t>{3, 5}));
}

TEST(ConstantFoldingTest, ComparisonsLogicAndWhere) {
  Eval e;
  auto a = I64({1, 5, 3, -2}, {2, 2}), b = I64({3, 4}, {2});
  EXPECT_EQ(e.One("Less", {a, b})->ToInt64Vector(), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(e.One("GreaterOrEqual", {a, b})->ToInt64Vector(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(e.One("Equal", {a, I64({3}, {})})->ToInt64Vector(), (std::vector<int64_t>{0, 0, 1, 0}));
  auto t = Make<uint8_t>(DType::kBool, {1, 0, 1, 0}, {4}),
       f = Make<uint8_t>(DType::kBool, {1, 1, 0, 0}, {4});
  EXPECT_EQ(e.One("And", {t, f})->ToInt64Vector(), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(e.One("Or", {t, f})->ToInt64Vector(), (std::vector<int64_t>{1, 1, 1, 0}));
  EXPECT_EQ(e.One("Not", {t})->ToInt64Vector(), (std::vector<int64_t>{0, 1, 0, 1}));
  auto cond = Make<uint8_t>(DType::kBool, {1, 0}, {2, 1});
  auto w = e.One("Where", {cond, F32({1, 2, 3}, {3}), F32({-1}, {})});
  ASSERT_EQ(w->type, (TensorType{DType::kF32, {2, 3}}));
  EXPECT_EQ(AsDoubles(*w), (std::vector<double>{1, 2, 3, -1, -1, -1}));
}

TEST(ConstantFoldingTest, ShapeAndSizeReadTheTypeOfANonConstantInput) {
  Eval e;
  Value* x = e.graph().AddInput("x", TensorType{DType::kF16, {2, 3, 5, 7}});
  Node* shape = e.graph().AddNode("Shape", "", {x}, {{"s", {}}}, {{"start", 1}, {"end", -1}});
  Node* size = e.graph().AddNode("Size", "", {x}, {{"n", {}}});
  auto s = EvaluateNode(*shape, ConstantInputs(*shape));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ((*s)[0]->ToInt64Vector(), (std::vector<int64_t>{3, 5}));
  auto n = EvaluateNode(*size, ConstantInputs(*size));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)[0]->type.rank(), 0);
  EXPECT_EQ((*n)[0]->ToInt64Vector(), (std::vector<int64_t>{210}));
  // Other ops need constant inputs.
  Node* relu = e.graph().AddNode("Relu", "", {x}, {{"r", {}}});
  EXPECT_EQ(EvaluateNode(*relu, ConstantInputs(*relu)).status().code(), StatusCode::kUnsupported);
}

TEST(ConstantFoldingTest, GatherConcatUnsqueezeSqueezeReshape) {
  Eval e;
  auto v = UniformFloats(24, 9);
  auto data = F32(v, {2, 3, 4});
  auto g = e.One("Gather", {data, I64({-1, 0}, {2})}, {{"axis", 1}});
  ASSERT_EQ(g->type.dims, (std::vector<int64_t>{2, 2, 4}));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(g->data<float>()[(i * 2 + 0) * 4 + k], v[(i * 3 + 2) * 4 + k]);
      EXPECT_EQ(g->data<float>()[(i * 2 + 1) * 4 + k], v[(i * 3 + 0) * 4 + k]);
    }
  auto bad = e.Run("Gather", {data, I64({3}, {})}, {{"axis", 1}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);

  auto c = e.One("Concat", {I64({1, 2}, {2}), I64({}, {0}), I64({3}, {1})}, {{"axis", 0}});
  EXPECT_EQ(c->ToInt64Vector(), (std::vector<int64_t>{1, 2, 3}));
  auto c2 = e.One("Concat", {F32(v, {2, 3, 4}), F32(v, {2, 3, 4})}, {{"axis", -1}});
  ASSERT_EQ(c2->type.dims, (std::vector<int64_t>{2, 3, 8}));
  EXPECT_EQ(c2->data<float>()[1 * 8 + 5], v[1 * 4 + 1]);

  auto u = e.One("Unsqueeze", {I64({7}, {}), I64({0}, {1})});
  EXPECT_EQ(u->type.dims, (std::vector<int64_t>{1}));
  auto u2 = e.One("Unsqueeze", {data, I64({-1, 1}, {2})});
  EXPECT_EQ(u2->type.dims, (std::vector<int64_t>{2, 1, 3, 4, 1}));
  EXPECT_EQ(e.One("Squeeze", {F32(v, {1, 24, 1})})->type.dims, (std::vector<int64_t>{24}));
  EXPECT_EQ(e.One("Squeeze", {F32(v, {1, 24, 1}), I64({2}, {1})})->type.dims,
            (std::vector<int64_t>{1, 24}));
  auto r = e.One("Reshape", {data, I64({0, -1}, {2})});
  EXPECT_EQ(r->type.dims, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(AsDoubles(*r), AsDoubles(*data));
  EXPECT_EQ(e.One("Flatten", {data}, {{"axis", 2}})->type.dims, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(e.Run("Reshape", {data, I64({5, -1}, {2})}).status().code(), StatusCode::kInvalidInput);
}

TEST(ConstantFoldingTest, TransposeSliceExpandTile) {
  Eval e;
  auto v = UniformFloats(24, 10);
  auto data = F32(v, {2, 3, 4});
  auto t = e.One("Transpose", {data}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ASSERT_EQ(t->type.dims, (std::vector<int64_t>{4, 2, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(t->data<float>()[(k * 2 + i) * 3 + j], v[(i * 3 + j) * 4 + k]);

  // x[:, ::-2, 1:100] in numpy.
  auto s = e.One("Slice", {data, I64({-1, 1}, {2}), I64({INT64_MIN, 100}, {2}), I64({1, 2}, {2}),
                           I64({-2, 1}, {2})});
  ASSERT_EQ(s->type.dims, (std::vector<int64_t>{2, 2, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(s->data<float>()[(i * 2 + j) * 3 + k], v[(i * 3 + (2 - 2 * j)) * 4 + 1 + k]);

  auto x = e.One("Expand", {F32({1, 2, 3}, {3, 1}), I64({2, 1, 4}, {3})});
  ASSERT_EQ(x->type.dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(x->data<float>()[(1 * 3 + 2) * 4 + 3], 3.0f);
  auto tl = e.One("Tile", {I64({1, 2, 3, 4}, {2, 2}), I64({2, 1}, {2})});
  EXPECT_EQ(tl->ToInt64Vector(), (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4}));
  auto tl2 = e.One("Tile", {I64({1, 2}, {2}), I64({3}, {1})});
  EXPECT_EQ(tl2->ToInt64Vector(), (std::vector<int64_t>{1, 2, 1, 2, 1, 2}));
}

TEST(ConstantFoldingTest, ConstantOfShapeRangeSplitReduce) {
  Eval e;
  auto c = e.One("ConstantOfShape", {I64({2, 3}, {2})},
                 {{"value", Attribute(TensorDataPtr(I64({7}, {1})))}});
  EXPECT_EQ(c->type, (TensorType{DType::kI64, {2, 3}}));
  EXPECT_EQ(c->ToInt64Vector(), std::vector<int64_t>(6, 7));
  EXPECT_EQ(e.One("ConstantOfShape", {I64({4}, {1})})->type, (TensorType{DType::kF32, {4}}));

  EXPECT_EQ(e.One("Range", {I64({10}, {}), I64({-3}, {}), I64({-4}, {})})->ToInt64Vector(),
            (std::vector<int64_t>{10, 6, 2, -2}));
  // i16 (Range-11 allows it; no backend has the kernel, so only folding computes it).
  auto r16 = e.One("Range", {Make<int16_t>(DType::kI16, {300}, {}),
                             Make<int16_t>(DType::kI16, {-1000}, {}),
                             Make<int16_t>(DType::kI16, {-250}, {})});
  ASSERT_EQ(r16->num_elements(), 6);
  const int16_t* v16 = r16->data<int16_t>();
  EXPECT_EQ(std::vector<int16_t>(v16, v16 + 6),
            (std::vector<int16_t>{300, 50, -200, -450, -700, -950}));
  auto fr = e.One("Range", {F32({0.1f}, {}), F32({1.0f}, {}), F32({0.3f}, {})});
  ASSERT_EQ(fr->num_elements(), 3);  // ceil(0.9 / 0.3) in float
  float acc = 0.1f;
  for (int i = 0; i < 3; ++i, acc += 0.3f) EXPECT_EQ(fr->data<float>()[i], acc);

  auto parts =
      e.Run("Split", {I64({1, 2, 3, 4, 5, 6}, {2, 3}), I64({1, 2}, {2})}, {{"axis", 1}}, 2);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  EXPECT_EQ((*parts)[0]->ToInt64Vector(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ((*parts)[1]->ToInt64Vector(), (std::vector<int64_t>{2, 3, 5, 6}));
  auto even = e.Run("Split", {I64({1, 2, 3, 4, 5}, {5})}, {}, 3);
  ASSERT_TRUE(even.ok());
  EXPECT_EQ((*even)[2]->ToInt64Vector(), (std::vector<int64_t>{5}));

  auto m = I64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(e.One("ReduceSum", {m, I64({1}, {1})}, {{"keepdims", 0}})->ToInt64Vector(),
            (std::vector<int64_t>{6, 15}));
  auto p = e.One("ReduceProd", {m, I64({0}, {1})});
  EXPECT_EQ(p->type.dims, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(p->ToInt64Vector(), (std::vector<int64_t>{4, 10, 18}));
  EXPECT_EQ(e.One("ReduceProd", {m}, {{"keepdims", 0}})->ToInt64Vector(),
            (std::vector<int64_t>{720}));
}

TEST(ConstantFoldingTest, DeclinesUnknownOpsAndHugeResults) {
  Eval e;
  auto mm = e.Run("MatMul", {F32({1, 2}, {1, 2}), F32({1, 2}, {2, 1})});
  EXPECT_EQ(mm.status().code(), StatusCode::kUnsupported);
  auto huge = e.Run("ConstantOfShape", {I64({2048, 1024}, {2})});
  EXPECT_EQ(huge.status().code(), StatusCode::kUnsupported);
  auto tile = e.Run("Tile", {I64({1, 2}, {2}), I64({int64_t{1} << 40}, {1})});
  EXPECT_EQ(tile.status().code(), StatusCode::kUnsupported);
  // Malformed nodes are errors, not crashes.
  EXPECT_EQ(e.Run("Add", {I64({1}, {1}), nullptr}).status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(e.Run("Where", {nullptr, I64({1}, {1}), I64({1}, {1})}).status().code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(e.Run("Transpose", {I64({1, 2}, {2})}, {{"perm", std::vector<int64_t>{0, 1}}})
                .status()
                .code(),
            StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace a8
