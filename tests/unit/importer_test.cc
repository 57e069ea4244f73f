// ImporterTest: ONNX -> IR on models written in ONNX text syntax, and the errors a bad model gets.
#include "compiler/onnx/importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/onnx_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kMlp[] = R"(<ir_version: 8, opset_import: ["" : 13]>
mlp (float[N, 4] x, int64[2] shape) => (float[N, 3] y)
<float[4, 3] w = {0.5, -1.25, 2, 3.5, -4, 0.125, 6, 7, -8, 9, 10, -11}, int64[1] axes = {1},
 float[N, 3] h>
{
  h = MatMul (x, w)
  r = Relu (h)
  y = Identity (r)
}
)";

TEST(ImporterTest, ImportsMlpWithDimBoundByName) {
  std::vector<std::string> warnings;
  ImportOptions opts;
  opts.warnings = &warnings;
  opts.dims["N"] = 1;
  auto g = ImportText(kMlp, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  Graph& graph = **g;
  EXPECT_EQ(graph.name, "mlp");
  EXPECT_EQ(graph.source, "test.onnxtxt");
  EXPECT_EQ(graph.opsets.at(""), 13);
  ASSERT_EQ(graph.inputs().size(), 2u);
  EXPECT_EQ(graph.inputs()[0]->name(), "x");
  EXPECT_EQ(graph.inputs()[0]->type(), (TensorType{DType::kF32, {1, 4}}));
  EXPECT_EQ(graph.inputs()[1]->type(), (TensorType{DType::kI64, {2}}));
  EXPECT_TRUE(warnings.empty());

  // The float initializer is a parameter with its data, the integer one a constant.
  Value* w = graph.FindValue("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->role(), ValueRole::kParameter);
  ASSERT_NE(w->data(), nullptr);
  EXPECT_EQ(w->type(), (TensorType{DType::kF32, {4, 3}}));
  EXPECT_FLOAT_EQ(w->data()->data<float>()[1], -1.25f);
  EXPECT_FLOAT_EQ(w->data()->data<float>()[11], -11.0f);
  EXPECT_EQ(graph.FindValue("axes")->role(), ValueRole::kConstant);

  std::vector<Node*> nodes = graph.NodeList();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0]->op(), "MatMul");
  EXPECT_EQ(nodes[0]->name(), "MatMul_0");
  EXPECT_EQ(nodes[1]->name(), "Relu_1");
  EXPECT_EQ(nodes[0]->input(1), w);
  EXPECT_EQ(nodes[0]->version(), FindOp("", "MatMul")->canonical);
  // value_info with a dynamic dim leaves the type to shape inference.
  EXPECT_EQ(nodes[0]->output(0)->name(), "h");
  ASSERT_EQ(graph.outputs().size(), 1u);
  EXPECT_EQ(graph.outputs()[0]->name(), "y");
  EXPECT_EQ(graph.declared_output_types.at("y"), (TensorType{DType::kF32, {-1, 3}}));
}

TEST(ImporterTest, BindsDynamicDimsFromShapesAndBatch) {
  ImportOptions opts;
  opts.shapes["x"] = {8, 4};
  auto g = ImportText(kMlp, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->inputs()[0]->dims(), (std::vector<int64_t>{8, 4}));

  std::vector<std::string> warnings;
  ImportOptions batch;
  batch.batch = 16;
  batch.warnings = &warnings;
  g = ImportText(kMlp, batch);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->inputs()[0]->dims(), (std::vector<int64_t>{16, 4}));
  EXPECT_TRUE(warnings.empty());

  ImportOptions bad_rank;
  bad_rank.shapes["x"] = {8, 4, 1};
  EXPECT_THAT(ImportError(kMlp, bad_rank).message(), HasSubstr("--shape x: gives rank 3"));
  ImportOptions bad_dim;
  bad_dim.shapes["x"] = {8, 5};
  EXPECT_THAT(ImportError(kMlp, bad_dim).message(),
              HasSubstr("dim 1 is 5, but the model declares 4"));
  ImportOptions unknown;
  unknown.shapes["z"] = {1};
  EXPECT_THAT(ImportError(kMlp, unknown).message(),
              HasSubstr("--shape z: the model has no input 'z' (inputs: x, shape)"));
  ImportOptions zero_batch;
  zero_batch.batch = 0;
  EXPECT_THAT(ImportError(kMlp, zero_batch).message(), HasSubstr("--batch must be at least 1"));
}

// Two inputs share the symbolic dim 'B'; 'T' and an unnamed dim appear once each.
constexpr char kSymbolic[] = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[B, T] x, float[B, ?] m) => (float[B, T] y) { y = Identity (x) })";

TEST(ImporterTest, UnboundDimsAreOneErrorListingEach) {
  Status s = ImportError(kSymbolic);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "test.onnxtxt: a800c needs static shapes, and these dims are not bound: "
            "input 'x' dim 0 'B' (set --batch=SIZE, --dim=B=SIZE or --shape=x:D0xD1x...); "
            "input 'x' dim 1 'T' (set --dim=T=SIZE or --shape=x:D0xD1x...); "
            "input 'm' dim 0 'B' (set --batch=SIZE, --dim=B=SIZE or --shape=m:D0xD1x...); "
            "input 'm' dim 1 (unnamed) (set --shape=m:D0xD1x...)");

  // --batch binds the leading dims, and their name 'B' everywhere; the rest still fail.
  ImportOptions batch;
  batch.batch = 4;
  s = ImportError(kSymbolic, batch);
  EXPECT_THAT(s.message(), HasSubstr("these dims are not bound: input 'x' dim 1 'T' (set "
                                     "--dim=T=SIZE or --shape=x:D0xD1x...); input 'm' dim 1"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("'B'")));

  ImportOptions all;
  all.dims["B"] = 2;
  all.dims["T"] = 5;
  all.shapes["m"] = {2, 7};
  auto g = ImportText(kSymbolic, all);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->inputs()[0]->dims(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ((*g)->inputs()[1]->dims(), (std::vector<int64_t>{2, 7}));

  // --dim takes precedence over --batch for a named leading dim.
  ImportOptions both = all;
  both.batch = 9;
  g = ImportText(kSymbolic, both);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->inputs()[0]->dims(), (std::vector<int64_t>{2, 5}));

  ImportOptions typo;
  typo.dims["S"] = 3;
  EXPECT_THAT(ImportError(kSymbolic, typo).message(),
              HasSubstr("--dim S: no input has a dim named 'S' (named dims: B, T)"));
}

TEST(ImporterTest, NegativeDimInTheModelIsAnError) {
  constexpr char kNegative[] = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, -3] x) => (float[2, -3] y) { y = Identity (x) })";
  ImportOptions batch;
  batch.batch = 2;
  Status s = ImportError(kNegative, batch);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "test.onnxtxt: graph input 'x': dim 1 is -3; a dim is a size >= 0 or a symbolic "
            "name");
  // An empty tensor (dim 0) is valid ONNX.
  constexpr char kEmpty[] = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 0] x) => (float[2, 0] y) { y = Identity (x) })";
  auto g = ImportText(kEmpty);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->inputs()[0]->dims(), (std::vector<int64_t>{2, 0}));
}

// --bind: a graph input becomes a constant before shape inference, so a Reshape whose shape
// arrives as an input gets a static type.
TEST(ImporterTest, BindFreezesAGraphInputToAConstant) {
  constexpr char kReshape[] = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 6] x, int64[2] shape) => (float[?, ?] y) { y = Reshape (x, shape) })";
  ImportOptions opts;
  opts.bound["shape"] = TensorData::FromInt64s({3, 4}, {2});
  auto g = ImportText(kReshape, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->inputs()[0]->name(), "x");
  const Value* shape = (*g)->FindValue("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_TRUE(shape->is_constant());
  EXPECT_EQ(shape->data()->ToInt64Vector(), (std::vector<int64_t>{3, 4}));

  ImportOptions wrong_dtype;
  wrong_dtype.bound["shape"] = TensorData::FromFloats({3, 4}, {2});
  EXPECT_THAT(ImportError(kReshape, wrong_dtype).message(),
              HasSubstr("--bind shape: the array is f32, the model declares i64"));
  ImportOptions wrong_dims;
  wrong_dims.bound["shape"] = TensorData::FromInt64s({3, 4, 1}, {3});
  EXPECT_THAT(ImportError(kReshape, wrong_dims).message(),
              HasSubstr("--bind shape: dim 0 of the array is 3, the model declares 2"));
  ImportOptions wrong_rank;
  wrong_rank.bound["shape"] = TensorData::FromInt64s({3, 4}, {1, 2});
  EXPECT_THAT(ImportError(kReshape, wrong_rank).message(),
              HasSubstr("--bind shape: the array has rank 2, the model declares rank 1"));
  ImportOptions unknown;
  unknown.bound["axes"] = TensorData::FromInt64s({0}, {1});
  EXPECT_THAT(ImportError(kReshape, unknown).message(),
              HasSubstr("--bind axes: the model has no input 'axes' (inputs: x, shape)"));
  ImportOptions both;
  both.bound["shape"] = TensorData::FromInt64s({3, 4}, {2});
  both.shapes["shape"] = {2};
  EXPECT_THAT(ImportError(kReshape, both).message(),
              HasSubstr("--bind shape: the input also has a --shape"));
}

// .npy has no bf16: a bf16 input's --bind array arrives as u16 bits (as a800c-run's data does).
TEST(ImporterTest, BindTakesU16BitsForABf16Input) {
  constexpr char kAdd[] = R"(<ir_version: 8, opset_import: ["" : 13]>
g (bfloat16[2] x, bfloat16[2] b) => (bfloat16[2] y) { y = Add (x, b) })";
  auto bits = TensorData::Make(TensorType{DType::kU16, {2}});
  bits->mutable_data<uint16_t>()[0] = 0x3f80;  // 1.0
  bits->mutable_data<uint16_t>()[1] = 0xc000;  // -2.0
  ImportOptions opts;
  opts.bound["b"] = bits;
  auto g = ImportText(kAdd, opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Value* b = (*g)->FindValue("b");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->is_constant());
  EXPECT_EQ(b->data()->type.dtype, DType::kBF16);
  EXPECT_EQ(b->data()->GetDouble(0), 1.0);
  EXPECT_EQ(b->data()->GetDouble(1), -2.0);
  // Other integer arrays are still the wrong dtype for a bf16 input.
  ImportOptions wrong;
  wrong.bound["b"] = TensorData::FromInt64s({1, 2}, {2});
  EXPECT_THAT(ImportError(kAdd, wrong).message(),
              HasSubstr("--bind b: the array is i64, the model declares bf16"));
}

// PRelu and ReduceLogSum import as nodes of ops a800c has (import_decompose.h).
TEST(ImporterTest, DecomposesPReluAndReduceLogSum) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 16]>
g (float[2, 3] x, float[3] slope) => (float[2, 3] y) { y = PRelu (x, slope) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<std::string> ops;
  for (Node* n : (*g)->NodeList()) ops.push_back(n->op() + ":" + n->name());
  EXPECT_EQ(ops,
            (std::vector<std::string>{"Relu:PRelu_0.pos", "Neg:PRelu_0.neg_x", "Relu:PRelu_0.neg",
                                      "Mul:PRelu_0.scaled", "Sub:PRelu_0"}));
  EXPECT_EQ((*g)->outputs()[0]->producer()->op(), "Sub");

  Status s = ImportError(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3] x, float[3] slope) => (float[2, 3] y) { y = PRelu (x, slope) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'PRelu_0' (PRelu): PRelu-6 defines only a one-element "
                                     "constant slope"));
  // The one-element slope PRelu-1/6 define.
  g = ImportText(R"(<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3] x) => (float[2, 3] y) <float[1] slope = {0.25}> { y = PRelu (x, slope) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->outputs()[0]->producer()->op(), "Sub");

  // Before 18 the axes are an attribute: ReduceSum gets them as an input (its canonical form).
  g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 1] y) { y = ReduceLogSum <axes = [1]> (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<Node*> nodes = (*g)->NodeList();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]->op(), "ReduceSum");
  ASSERT_TRUE(nodes[0]->has_input(1));
  EXPECT_EQ(nodes[0]->input(1)->data()->ToInt64Vector(), (std::vector<int64_t>{1}));
  EXPECT_EQ(nodes[1]->op(), "Log");
  EXPECT_EQ(nodes[1]->output(0)->name(), "y");

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[2, 3] x) => (float[2, 1] y) { y = ReduceLogSum <axes = [1]> (x) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'ReduceLogSum_0' (ReduceLogSum): unknown attribute "
                                     "'axes'"));
}

TEST(ImporterTest, UpgradesUnsqueeze11AxesAttributeToInput) {
  auto model = ParseModelText(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[1, 2, 1, 3] y) { y = Unsqueeze <axes = [0, 2]> (x) })");
  model.mutable_graph()->mutable_node(0)->set_name("unsq");
  auto g = ImportOnnxModel(model, "m.onnx", "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Node* n = (*g)->NodeList().at(0);
  EXPECT_EQ(n->name(), "unsq");
  EXPECT_FALSE(n->has_attr("axes"));
  EXPECT_EQ(n->version(), 13);
  ASSERT_EQ(n->num_inputs(), 2);
  Value* axes = n->input(1);
  EXPECT_EQ(axes->name(), "unsq.axes");
  EXPECT_TRUE(axes->is_constant());
  EXPECT_EQ(axes->data()->ToInt64Vector(), (std::vector<int64_t>{0, 2}));
}

TEST(ImporterTest, ConstantNodesBecomeConstants) {
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y, float[3] z)
{
  c = Constant <value = float[3] {1.5, -2, 3}> ()
  k = Constant <value_int = 7> ()
  z = Constant <value_floats = [0.25, 0.5, 0.75]> ()
  y = Add (x, c)
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  Value* c = (*g)->FindValue("c");
  ASSERT_TRUE(c && c->is_constant());
  EXPECT_EQ(c->type(), (TensorType{DType::kF32, {3}}));
  EXPECT_FLOAT_EQ(c->data()->data<float>()[1], -2.0f);
  EXPECT_EQ((*g)->FindValue("k")->data()->GetInt64(0), 7);
  EXPECT_EQ((*g)->FindValue("k")->type(), (TensorType{DType::kI64, {}}));
  EXPECT_EQ((*g)->outputs()[1]->name(), "z");
  EXPECT_EQ((*g)->num_nodes(), 1u);

  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { c = Constant <value_string = "hi"> () y = Identity (x) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'Constant_0' (Constant): attribute 'value_string'"));
}

TEST(ImporterTest, InitializerListedAsInputIsAParameter) {
  auto g = ImportText(R"(<ir_version: 3, opset_import: ["" : 9]>
g (float[2, 4] x, float[4] b = {1, 2, 3, 4}) => (float[2, 4] y) { y = Add (x, b) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->FindValue("b")->role(), ValueRole::kParameter);
}

TEST(ImporterTest, NamesUnnamedNodesUniquely) {
  auto model = ParseModelText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { a = Relu (x) b = Relu (a) y = Relu (b) })");
  model.mutable_graph()->mutable_node(0)->set_name("Relu_1");  // collides with a default name
  auto g = ImportOnnxModel(model, "m", "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<Node*> nodes = (*g)->NodeList();
  EXPECT_EQ(nodes[0]->name(), "Relu_1");
  EXPECT_EQ(nodes[1]->name(), "Relu_1.1");
  EXPECT_EQ(nodes[2]->name(), "Relu_2");
}

TEST(ImporterTest, ReadsTypedFieldsAndNormalizesBools) {
  onnx::TensorProto t;
  t.set_name("h");
  t.set_data_type(onnx::TensorProto::FLOAT16);
  t.add_dims(2);
  t.add_int32_data(0x3c00);  // 1.0
  t.add_int32_data(0xc000);  // -2.0
  auto d = TensorFromOnnx(t, "initializer 'h'", "");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)->GetDouble(0), 1.0);
  EXPECT_EQ((*d)->GetDouble(1), -2.0);

  t.add_int32_data(0);
  EXPECT_THAT(TensorFromOnnx(t, "initializer 'h'", "").status().message(),
              HasSubstr("initializer 'h': holds 3 values in int32_data, but its type f16[2] has "
                        "2 elements"));

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  b.set_raw_data(std::string("\x00\x07\x01", 3));
  d = TensorFromOnnx(b, "b", "");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)->bytes, (std::vector<uint8_t>{0, 1, 1}));

  onnx::TensorProto big;
  big.set_data_type(onnx::TensorProto::FLOAT);
  big.add_dims(int64_t{1} << 40);
  big.set_raw_data("abcd");
  EXPECT_THAT(TensorFromOnnx(big, "initializer 'big'", "").status().message(),
              HasSubstr("initializer 'big': raw_data has 4 bytes"));
}

// ---- errors

TEST(ImporterTest, RejectsEmptyRandomAndTruncatedFiles) {
  Status s = ImportOnnxBytes("", "empty.onnx", "").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(s.message(), HasSubstr("empty.onnx: the file is empty"));

  std::mt19937 rng(1234);
  for (int trial = 0; trial < 20; ++trial) {
    std::string noise(64 + trial * 97, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    s = ImportOnnxBytes(noise, "noise.onnx", "").status();
    EXPECT_FALSE(s.ok()) << "trial " << trial;
    EXPECT_THAT(s.message(), HasSubstr("noise.onnx: ")) << "trial " << trial;
  }

  std::string bytes;
  ASSERT_TRUE(ParseModelText(kMlp).SerializeToString(&bytes));
  ImportOptions batch;
  batch.batch = 2;
  ASSERT_TRUE(ImportOnnxBytes(bytes, "whole.onnx", "", batch).ok());
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3}) {
    s = ImportOnnxBytes(bytes.substr(0, cut), "cut.onnx", "").status();
    EXPECT_THAT(s.message(), HasSubstr("cut.onnx: not a valid ONNX model")) << cut;
  }
}

TEST(ImporterTest, CorruptedModelsImportOrFailCleanly) {
  // Byte flips in a valid model: each import either succeeds or returns an error that names the
  // source; none may crash (the sanitizer build checks memory safety here).
  std::string good;
  ASSERT_TRUE(ParseModelText(kMlp).SerializeToString(&good));
  std::mt19937 rng(99);
  int failures = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = good;
    for (int k = 0; k < 1 + trial % 4; ++k) bytes[rng() % bytes.size()] ^= 1 << (rng() % 8);
    auto g = ImportOnnxBytes(bytes, "flip.onnx", "");
    if (!g.ok()) {
      ++failures;
      EXPECT_THAT(g.status().message(), HasSubstr("flip.onnx: "));
    }
  }
  EXPECT_GT(failures, 0);
}

TEST(ImporterTest, FileErrorsNameTheFile) {
  TempDir dir;
  EXPECT_THAT(ImportOnnxFile(dir.path() + "/missing.onnx").status().message(),
              HasSubstr("missing.onnx: cannot open the file"));
  std::string txt = dir.Write("bad.onnxtxt", "<ir_version: 8> agraph (float[2] x => (");
  Status s = ImportOnnxFile(txt).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(s.message(), HasSubstr("bad.onnxtxt: ONNX text does not parse"));
  std::string good = dir.Write("good.onnxtxt", kMlp);
  ImportOptions batch;
  batch.batch = 2;
  auto g = ImportOnnxFile(good, batch);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->source, good);
  EXPECT_EQ((*g)->num_nodes(), 3u);
}

TEST(ImporterTest, RejectsBadValueNamesAndOrder) {
  auto model = ParseModelText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { a = Relu (b) b = Add (a, x) y = Relu (b) })");
  model.mutable_graph()->mutable_node(0)->set_name("a_node");
  Status s = ImportOnnxModel(model, "cyc.onnx", "").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "cyc.onnx: node 'a_node' (Relu): input 'b' is used before it is "
            "produced (cycle or wrong order)");

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = Add (x, ghost) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'Add_0' (Add): input 1 'ghost' is not produced"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = Relu (x) y = Neg (x) })");
  EXPECT_THAT(s.message(), HasSubstr("node 'Neg_1' (Neg): output 'y' is already produced by "
                                     "node 'Relu_0' (Relu)"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { x = Relu (x) y = Neg (x) })");
  EXPECT_THAT(s.message(), HasSubstr("output 'x' is already a graph input"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] nowhere) { y = Relu (x) })");
  EXPECT_THAT(s.message(), HasSubstr("graph output 'nowhere': is not produced"));
}

TEST(ImporterTest, RejectsUnknownAndUnsupportedOps) {
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = Bar (x) })");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(s.message(), HasSubstr("node 'Bar_0' (Bar): unknown op 'Bar' in domain ai.onnx"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = MaxRoiPool (x) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'MaxRoiPool_0' (MaxRoiPool): op 'MaxRoiPool' of "
                                     "ai.onnx is not supported"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[2] x) => (float[2] y)
{
  y = If (c) <then_branch = t () => (float[2] z) { z = Relu (x) },
              else_branch = e () => (float[2] z) { z = Neg (x) }>
})");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'If_0' (If): cond 'c' is a graph input; a800c unrolls "
                                     "control flow only on compile-time values"));
}

TEST(ImporterTest, RejectsBadModelHeaders) {
  Status s = ImportError(R"(<ir_version: 8, opset_import: ["" : 99]>
g (float[2] x) => (float[2] y) { y = Relu (x) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("opset 99 of ai.onnx is newer than the newest a800c knows"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13, "ai.onnx" : 13]>
g (float[2] x) => (float[2] y) { y = Relu (x) })");
  EXPECT_THAT(s.message(), HasSubstr("opset_import: domain ai.onnx is listed twice"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
g (float[2] x) => (float[2] y) { y = com.example.Relu (x) })");
  EXPECT_THAT(s.message(), HasSubstr("ops of domain 'com.example' are not supported"));

  s = ImportError(R"(<ir_version: 99, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = Relu (x) })");
  EXPECT_THAT(s.message(), HasSubstr("ir_version 99 is newer"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (string[2] x) => (float[2] y) { y = Relu (x) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("graph input 'x': element type STRING is not supported"));

  s = ImportError(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4294967296, 4294967296, 2] x) => (float[2] y) { y = Relu (x) })");
  EXPECT_THAT(s.message(), HasSubstr("graph input 'x': the product of dims"));
  EXPECT_THAT(s.message(), HasSubstr("overflows int64"));
}

TEST(ImporterDomainTest, UnusedDomainsAreIgnoredAndNodesOfThemRejected) {
  // Exporters list ai.onnx.ml even when no node uses it: that model imports.
  auto g = ImportText(R"(<ir_version: 8, opset_import: ["" : 13, "ai.onnx.ml" : 3]>
g (float[2] x) => (float[2] y) { y = Relu (x) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->opsets.count("ai.onnx.ml"), 0u);

  Status bad = ImportError(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
g (float[2] x) => (float[2] y) { y = com.microsoft.FastGelu (x) })");
  EXPECT_EQ(bad.code(), StatusCode::kUnsupported);
  EXPECT_THAT(bad.message(),
              HasSubstr("(com.microsoft.FastGelu): ops of domain 'com.microsoft' are "
                        "not supported"));
}

}  // namespace
}  // namespace a8::testing
