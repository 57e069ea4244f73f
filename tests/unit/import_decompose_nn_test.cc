// The ops that import as nodes of other ops (import_decompose_nn.cc, _more.cc, _einsum.cc): what
// they import as, the errors a bad node gets, and their gradients (through the ops they are made
// of) against finite differences. Their values are checked by the ONNX node tests
// (onnx_node_tests).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/decompose_test_util.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/ir_test_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

TEST(ImportDecomposeNnTest, RmsNormalizationComputesInFloat) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 4] x, float[3, 4] s) => (float[2, 3, 4] y) { y = RMSNormalization <axis = 1> (x, s) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Cast", "Mul", "ReduceMean", "Add", "Sqrt", "Div",
                                                "CastLike", "Mul"}));
  // axis 1 of a rank-3 input: the mean is over axes 1 and 2.
  Node* mean = (*g)->NodeList()[2];
  ASSERT_TRUE(mean->has_input(1));
  EXPECT_EQ(mean->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*g)->outputs()[0]->producer()->name(), "RMSNormalization_0");

  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3] x, float[3] s) => (float[2, 3] y) { y = RMSNormalization <stash_type = 10> (x, s) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(),
              HasSubstr("node 'RMSNormalization_0' (RMSNormalization): stash_type 10"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3] x, float[3] s) => (float[2, 3] y) { y = RMSNormalization <axis = 2> (x, s) })");
  EXPECT_THAT(s.message(), HasSubstr("axis 2 is out of range for rank 2"));
}

TEST(ImportDecomposeNnTest, LpNormalizationAndErrors) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) { y = LpNormalization <p = 1, axis = 0> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"ReduceL1", "CastLike", "Equal", "CastLike",
                                                "Where", "Div", "Where"}));
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) { y = LpNormalization <p = 3> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(LpNormalization): p must be 1 or 2, got 3"));
}

TEST(ImportDecomposeNnTest, HardmaxPicksTheFirstMaximumAlongAxis) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) { y = Hardmax <axis = 1> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Shape", "ConstantOfShape", "CumSum", "Reshape",
                                                "ArgMax", "Equal", "CastLike"}));
  // Hardmax-11 coerces to 2-D at `axis`: flattened, then reshaped back.
  g = ImportText(R"(<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) { y = Hardmax <axis = 1> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g).front(), "Flatten");
  EXPECT_EQ(Ops(**g).back(), "Reshape");
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) { y = Hardmax <axis = -3> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(Hardmax): axis -3 is out of range for rank 2"));
}

TEST(ImportDecomposeNnTest, EyeLikeAndSpaceDepthErrors) {
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) { y = EyeLike (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(EyeLike): EyeLike takes a 2-D input, got rank 3"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 8, 2, 2] x) => (float[1, 2, 4, 4] y) { y = DepthToSpace <blocksize = 2, mode = "XYZ"> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(DepthToSpace): mode must be DCR or CRD, got 'XYZ'"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 8, 2, 2] x) => (float[1, 2, 4, 4] y) { y = DepthToSpace (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(DepthToSpace): attribute 'blocksize' is required"));
  // SpaceToDepth has a mode only from version 28.
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 2, 4, 4] x) => (float[1, 8, 2, 2] y) { y = SpaceToDepth <blocksize = 2, mode = "CRD"> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(SpaceToDepth): unknown attribute 'mode'"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 2, 4] x) => (float[1, 8, 2] y) { y = SpaceToDepth <blocksize = 2> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("takes a 4-D input [N, C, H, W], got rank 3"));
}

TEST(ImportDecomposeNnTest, CompressNeedsAConstantCondition) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 2] x) => (float[2] y) <bool[4] c = {1, 0, 0, 1}> { y = Compress (x, c) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Reshape", "Gather"}));
  EXPECT_EQ((*g)->NodeList()[1]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{0, 3}));
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 2] x, bool[3] c) => (float[2, 2] y) { y = Compress <axis = 0> (x, c) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(),
              HasSubstr("(Compress): input 'condition' must be a constant (a800c "
                        "needs static shapes); freeze graph input 'c' with --bind=c="));
}

TEST(ImportDecomposeNnTest, CenterCropPadCropsAndPadsAroundTheCenter) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[5, 2] x) => (float[2, 5] y) <int64[2] s = {2, 5}> { y = CenterCropPad (x, s) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g).back(), "Pad");
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[5, 2] x, int64[1] s) => (float[5, 4] y) { y = CenterCropPad <axes = [1]> (x, s) })");
  EXPECT_THAT(s.message(), HasSubstr("(CenterCropPad): input 'shape' must be a constant (a800c "
                                     "needs static shapes); freeze graph input 's' with --bind"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[5, 2] x) => (float[5, 4] y) <int64[2] s = {2, 5}> { y = CenterCropPad <axes = [1]> (x, s) })");
  EXPECT_THAT(s.message(), HasSubstr("'shape' has 2 values for 1 axes"));
}

TEST(ImportDecomposeNnTest, GroupNormalizationAndLrnErrors) {
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2, 4, 3] x, float[2] s, float[2] b) => (float[2, 4, 3] y) {
  y = GroupNormalization <num_groups = 2> (x, s, b) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("GroupNormalization-18 scales per group"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 21]>
g (float[2, 4, 3] x, float[4] s, float[4] b) => (float[2, 4, 3] y) {
  y = GroupNormalization (x, s, b) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'num_groups' is required"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4, 3] x) => (float[2, 4, 3] y) { y = LRN <size = 0> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("(LRN): size must be positive, got 0"));
}

TEST(ImportDecomposeNnTest, EinsumParsesTheEquation) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3, 4] a, float[2, 4, 5] b) => (float[2, 3, 5] y) { y = Einsum <equation = "bij, bjk -> bik"> (a, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  // Two operands: one batched MatMul of [b, i, j] and [b, j, k] (the group sizes folded).
  EXPECT_THAT(Ops(**g), ::testing::Contains("MatMul"));
  EXPECT_THAT(Ops(**g), ::testing::Not(::testing::Contains("Mul")));
  EXPECT_EQ(Ops(**g).back(), "Reshape");
  // A summed "..." may broadcast (1 against n), which a MatMul dim cannot: Mul and ReduceSum.
  g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a, float[1, 3] b) => (float y) { y = Einsum <equation = "...i,...i->"> (a, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Mul", "ReduceSum"}));
  EXPECT_EQ((*g)->outputs()[0]->producer()->name(), "Einsum_0");
  // Implicit output: the labels seen once, sorted ("ji" -> "ij", the transpose of a [2, 3]).
  g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 2] a) => (float[2, 3] y) { y = Einsum <equation = "ji"> (a) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Transpose", "Identity"}));
  // A diagonal: "ii->i" keeps x[i, i] (Where on the iotas' equality), summed over the copy.
  g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 3] a) => (float[3] y) { y = Einsum <equation = "ii->i"> (a) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_THAT(Ops(**g), ::testing::Contains("Where"));

  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a) => (float[2] y) { y = Einsum <equation = "i1->i"> (a) })");
  EXPECT_THAT(s.message(), HasSubstr("(Einsum): equation term 'i1' has '1'"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a) => (float[2] y) { y = Einsum <equation = "ij,jk->i"> (a) })");
  EXPECT_THAT(s.message(), HasSubstr("equation 'ij,jk->i' has 2 operands, the node 1 inputs"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a) => (float[2] y) { y = Einsum <equation = "ijk->i"> (a) })");
  EXPECT_THAT(s.message(), HasSubstr("gives operand 0 3 labels, input 'a' has rank 2"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a) => (float[2] y) { y = Einsum <equation = "ij->k"> (a) })");
  EXPECT_THAT(s.message(), HasSubstr("output label 'k' is in no input"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] a) => (float[2] y) { y = Einsum <equation = "...i...->i"> (a) })");
  EXPECT_THAT(s.message(), HasSubstr("has more than one '...'"));
}

TEST(ImportDecomposeNnTest, SwiGluIsSwishTimesTheValue) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 28]>
g (float[2, 4] a, float[2, 4] b) => (float[2, 4] y) { y = SwiGLU <alpha = 1.5> (a, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"Swish", "Mul"}));
  EXPECT_FLOAT_EQ((*g)->NodeList()[0]->attrs().at("alpha").f(), 1.5f);
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 28]>
g (float[2, 4] a, float[4] b) => (float[2, 4] y) { y = SwiGLU (a, b) })");
  EXPECT_THAT(s.message(), HasSubstr("(SwiGLU): inputs 'A' and 'B' must have one shape"));
}

TEST(ImportDecomposeNnTest, AffineGridNeedsAConstantSize) {
  // [1, 1, 2, 3] with align_corners 0: x in {-2/3, 0, 2/3}, y in {-1/2, 1/2}, rows (x, y, 1).
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 20]>
g (float[1, 2, 3] t) => (float[1, 2, 3, 2] y) <int64[4] s = {1, 1, 2, 3}> { y = AffineGrid (t, s) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g), (std::vector<std::string>{"CastLike", "Transpose", "MatMul", "Reshape"}));
  const Value* base = (*g)->NodeList()[0]->input(0);
  ASSERT_NE(base->data(), nullptr);
  std::vector<double> got;
  for (int64_t i = 0; i < base->data()->num_elements(); ++i)
    got.push_back(base->data()->GetDouble(i));
  const std::vector<double> want = {-2.0 / 3, -0.5, 1, 0, -0.5, 1, 2.0 / 3, -0.5, 1,
                                    -2.0 / 3, 0.5,  1, 0, 0.5,  1, 2.0 / 3, 0.5,  1};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 20]>
g (float[1, 2, 3] t, int64[4] s) => (float[1, 2, 3, 2] y) { y = AffineGrid (t, s) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("(AffineGrid): input 'size' must be a constant"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 20]>
g (float[1, 2, 3] t) => (float[1, 2, 3, 2] y) <int64[3] s = {1, 2, 3}> { y = AffineGrid (t, s) })");
  EXPECT_THAT(s.message(), HasSubstr("input 'size' must have 4 (2-D) or 5 (3-D) values, got 3"));
}

TEST(ImportDecomposeNnTest, CumProdLpPoolReverseSequenceErrors) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 26]>
g (float[2, 3] x) => (float[2, 3] y) <int64 a = {-1}> { y = CumProd <reverse = 1> (x, a) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Ops(**g).back(), "ReduceProd");
  // axis 1 of [2, 3]: the mask compares j >= i (reverse, inclusive), axis 2 of the [2, 3, 3]
  // Where is reduced.
  EXPECT_EQ((*g)->NodeList().back()->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{2}));
  EXPECT_THAT(Ops(**g), ::testing::Contains("GreaterOrEqual"));
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 26]>
g (float[2, 3] x, int64 a) => (float[2, 3] y) { y = CumProd (x, a) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("(CumProd): input 'axis' must be a constant (a800c needs "
                                     "static shapes); freeze graph input 'a' with --bind"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 1, 5] x) => (float[1, 1, 3] y) { y = LpPool <kernel_shape = [2], ceil_mode = 1> (x) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("(LpPool): LpPool with ceil_mode 1 is not supported"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 1, 5] x) => (float[1, 1, 4] y) { y = LpPool <p = 2> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("attribute 'kernel_shape' (ints) is required"));
  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 2] x, int64[2] l) => (float[3, 2] y) { y = ReverseSequence <batch_axis = 0, time_axis = 0> (x, l) })");
  EXPECT_THAT(s.message(),
              HasSubstr("(ReverseSequence): batch_axis and time_axis must be 0 and 1 in some "
                        "order, got 0 and 0"));
}

// A gradient check of `op` imported as its decomposition: the nodes are upgraded to their
// canonical forms and typed as the importer and shape-inference would.
GradCheckCase Decomposed(const std::string& op, int version, std::map<std::string, Attribute> attrs,
                         const std::vector<TensorType>& inputs,
                         const std::vector<GradCheckInput>& constants = {}) {
  GradCheckCase c;
  c.op = op;
  for (const TensorType& t : inputs) {
    GradCheckInput in;
    in.type = t;
    c.inputs.push_back(in);
  }
  for (const GradCheckInput& in : constants) c.inputs.push_back(in);
  c.build = [op, version, attrs](
                Graph& g, const std::vector<Value*>& operands) -> StatusOr<std::vector<Value*>> {
    DecomposeRequest req;
    req.op = op;
    req.version = version;
    req.inputs = operands;
    req.attrs = attrs;
    return DecomposeAsImported(g, std::move(req));
  };
  return c;
}

// TensorScatter-24 (a ScatterElements along the sequence axis): gradients of the cache and the
// update, linear and circular, with and without write_indices.
TEST(ImportDecomposeNnTest, TensorScatterGradients) {
  const std::vector<TensorType> cache_update = {TensorType{DType::kF64, {2, 4, 3}},
                                                TensorType{DType::kF64, {2, 2, 3}}};
  for (const char* mode : {"linear", "circular"}) {
    SCOPED_TRACE(mode);
    GradCheckInput w;
    w.type = TensorType{DType::kI64, {2}};
    w.values =
        std::string(mode) == "linear" ? std::vector<double>{1, 2} : std::vector<double>{3, 1};
    w.constant = true;
    ExpectGradientsMatch(
        Decomposed("TensorScatter", 24, {{"mode", Attribute(mode)}}, cache_update, {w}));
  }
  ExpectGradientsMatch(Decomposed("TensorScatter", 24, {{"axis", Attribute(1)}}, cache_update));
}

TEST(ImportDecomposeNnTest, GradientsMatchFiniteDifferences) {
  const TensorType f64_4d{DType::kF64, {1, 8, 2, 3}};
  for (const char* mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    ExpectGradientsMatch(Decomposed(
        "DepthToSpace", 13, {{"blocksize", Attribute(2)}, {"mode", Attribute(mode)}}, {f64_4d}));
    ExpectGradientsMatch(Decomposed("SpaceToDepth", 28,
                                    {{"blocksize", Attribute(2)}, {"mode", Attribute(mode)}},
                                    {TensorType{DType::kF64, {1, 2, 4, 2}}}));
  }
  for (int p : {1, 2}) {
    for (int axis : {0, -1}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " axis=" + std::to_string(axis));
      ExpectGradientsMatch(Decomposed("LpNormalization", 22,
                                      {{"p", Attribute(p)}, {"axis", Attribute(axis)}},
                                      {TensorType{DType::kF64, {3, 4}}}));
    }
  }
  GradCheckInput condition;
  condition.type = TensorType{DType::kBool, {3}};
  condition.values = {1, 0, 1};
  condition.constant = true;
  ExpectGradientsMatch(Decomposed("Compress", 11, {{"axis", Attribute(1)}},
                                  {TensorType{DType::kF64, {2, 3}}}, {condition}));
  GradCheckInput target;
  target.type = TensorType{DType::kI64, {2}};
  target.values = {2, 5};
  target.constant = true;
  ExpectGradientsMatch(
      Decomposed("CenterCropPad", 18, {}, {TensorType{DType::kF64, {5, 2}}}, {target}));
  ExpectGradientsMatch(Decomposed("LRN", 13,
                                  {{"size", Attribute(3)},
                                   {"alpha", Attribute(0.5f)},
                                   {"beta", Attribute(0.75f)},
                                   {"bias", Attribute(1.0f)}},
                                  {TensorType{DType::kF64, {2, 4, 3}}}));
  // RMSNormalization computes in float (stash_type 1): a float32 step and bound.
  for (int axis : {-1, 1}) {
    SCOPED_TRACE("RMSNormalization axis=" + std::to_string(axis));
    const std::vector<int64_t> scale =
        axis == 1 ? std::vector<int64_t>{3, 4} : std::vector<int64_t>{4};
    GradCheckCase c =
        Decomposed("RMSNormalization", 23, {{"axis", Attribute(axis)}},
                   {TensorType{DType::kF32, {2, 3, 4}}, TensorType{DType::kF32, scale}});
    c.eps = 1e-2;
    c.rtol = 2e-2;
    c.atol = 2e-3;
    ExpectGradientsMatch(c);
  }
  // GroupNormalization too (stash_type 1).
  GradCheckCase c = Decomposed("GroupNormalization", 21, {{"num_groups", Attribute(2)}},
                               {TensorType{DType::kF32, {2, 4, 3}}, TensorType{DType::kF32, {4}},
                                TensorType{DType::kF32, {4}}});
  c.eps = 1e-2;
  c.rtol = 2e-2;
  c.atol = 2e-3;
  ExpectGradientsMatch(c);
}

TEST(ImportDecomposeNnTest, EinsumLpPoolMvnReverseSequenceGradients) {
  const TensorType f64_23{DType::kF64, {2, 3}};
  struct EinsumCase {
    const char* equation;
    std::vector<TensorType> inputs;
  };
  const std::vector<EinsumCase> einsums = {
      {"bij,bjk->bik", {{DType::kF64, {2, 3, 4}}, {DType::kF64, {2, 4, 2}}}},
      {"...ii->...i", {{DType::kF64, {2, 3, 3}}}},
      {"ij->ji", {f64_23}},
      {"ij->i", {f64_23}},
      {"i,i", {{DType::kF64, {4}}, {DType::kF64, {4}}}},
      {"...j,jk", {{DType::kF64, {2, 2, 3}}, {DType::kF64, {3, 2}}}},
      {"ij,kj->", {f64_23, {DType::kF64, {4, 3}}}},
      {"ij,jk,kl->il", {f64_23, {DType::kF64, {3, 2}}, {DType::kF64, {2, 2}}}},
      {"...i,...i->", {f64_23, {DType::kF64, {1, 3}}}},
      {"bhqd,bkhd->bhqk", {{DType::kF64, {1, 2, 3, 2}}, {DType::kF64, {1, 4, 2, 2}}}},
  };
  for (const EinsumCase& c : einsums) {
    SCOPED_TRACE(c.equation);
    ExpectGradientsMatch(Decomposed("Einsum", 12, {{"equation", Attribute(c.equation)}}, c.inputs));
  }
  const TensorType f64_pool{DType::kF64, {1, 2, 4, 5}};
  for (int p : {1, 2, 3}) {
    SCOPED_TRACE("LpPool p=" + std::to_string(p));
    ExpectGradientsMatch(Decomposed("LpPool", 18,
                                    {{"p", Attribute(p)},
                                     {"kernel_shape", Attribute(std::vector<int64_t>{2, 3})},
                                     {"pads", Attribute(std::vector<int64_t>{1, 0, 0, 1})},
                                     {"strides", Attribute(std::vector<int64_t>{1, 2})}},
                                    {f64_pool}));
  }
  ExpectGradientsMatch(Decomposed("MeanVarianceNormalization", 13, {}, {f64_pool}));
  for (int align : {0, 1}) {
    SCOPED_TRACE("AffineGrid align_corners=" + std::to_string(align));
    GradCheckInput size2d;
    size2d.type = TensorType{DType::kI64, {4}};
    size2d.values = {2, 1, 3, 4};
    size2d.constant = true;
    ExpectGradientsMatch(Decomposed("AffineGrid", 20, {{"align_corners", Attribute(align)}},
                                    {TensorType{DType::kF64, {2, 2, 3}}}, {size2d}));
    GradCheckInput size3d;
    size3d.type = TensorType{DType::kI64, {5}};
    size3d.values = {1, 1, 2, 3, 2};
    size3d.constant = true;
    ExpectGradientsMatch(Decomposed("AffineGrid", 20, {{"align_corners", Attribute(align)}},
                                    {TensorType{DType::kF64, {1, 3, 4}}}, {size3d}));
  }
  ExpectGradientsMatch(Decomposed("SwiGLU", 28, {{"alpha", Attribute(1.5f)}}, {f64_23, f64_23}));
  for (int time_axis : {0, 1}) {
    SCOPED_TRACE("ReverseSequence time_axis=" + std::to_string(time_axis));
    GradCheckInput lens;
    lens.type = TensorType{DType::kI64, {3}};
    lens.values = {4, 1, 2};
    lens.constant = true;
    const std::vector<int64_t> dims =
        time_axis == 0 ? std::vector<int64_t>{4, 3, 2} : std::vector<int64_t>{3, 4, 2};
    ExpectGradientsMatch(
        Decomposed("ReverseSequence", 10,
                   {{"time_axis", Attribute(time_axis)}, {"batch_axis", Attribute(1 - time_axis)}},
                   {TensorType{DType::kF64, dims}}, {lens}));
  }
}

}  // namespace
}  // namespace a8::testing
