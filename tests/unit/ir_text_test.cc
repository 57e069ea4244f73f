// The IR text printer and parser: exact format of small graphs, bit-exact round trips of every
// attribute kind and every element type (random data, all f16/bf16 values, NaN, Inf), odd names,
// forward references, and parse errors with their line and column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "kernels/common/float16.h"
#include "tests/unit/graph_values_util.h"

namespace a8 {
namespace {

using ::a8::testing::ExpectSameGraphValues;

std::shared_ptr<TensorData> RandomData(DType dtype, std::vector<int64_t> dims, std::mt19937* rng) {
  auto d = TensorData::Make(TensorType{dtype, std::move(dims)});
  std::uniform_int_distribution<uint32_t> bits;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t i = 0; i < d->num_elements(); ++i) {
    switch (dtype) {
      case DType::kF32:
        d->mutable_data<float>()[i] = normal(*rng);
        break;
      case DType::kF16:
        d->mutable_data<uint16_t>()[i] = FloatToHalfBits(normal(*rng));
        break;
      case DType::kBF16:
        d->mutable_data<uint16_t>()[i] = FloatToBFloat16Bits(normal(*rng));
        break;
      case DType::kF64:
        d->mutable_data<double>()[i] = normal(*rng) * 1e-3;
        break;
      case DType::kBool:
        d->mutable_data<uint8_t>()[i] = bits(*rng) & 1;
        break;
      default: {
        // An integer: the low bytes of one draw, of two for 64 bits (U64: above INT64_MAX too),
        // little-endian as TensorData stores them.
        const size_t size = DTypeSize(dtype);
        const uint64_t draw =
            size == 8 ? (static_cast<uint64_t>(bits(*rng)) << 32) | bits(*rng) : bits(*rng);
        std::memcpy(d->bytes.data() + i * size, &draw, size);
        break;
      }
    }
  }
  return d;
}

std::unique_ptr<Graph> ParseOrDie(const std::string& text) {
  auto g = ParseIr(text, "test.a8ir");
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return g.ok() ? std::move(g).value() : std::make_unique<Graph>();
}

// Parses `text` and checks that it prints back identically, then returns the graph.
std::unique_ptr<Graph> RoundTrip(const Graph& g, const PrintOptions& opts = {}) {
  std::string text = PrintIrToString(g, opts);
  auto parsed = ParseOrDie(text);
  EXPECT_EQ(PrintIrToString(*parsed, opts), text);
  return parsed;
}

TEST(IrTextTest, PrintsTheDocumentedFormat) {
  Graph g;
  g.name = "mlp";
  g.opsets[""] = 17;
  g.opsets["ai.onnx.preview.training"] = 1;
  Value* x = g.AddInput("x", {DType::kF32, {2, 3}});
  Value* w =
      g.AddParameter("w1", TensorData::FromFloats({1, -2.5f, 1e-5f, 3, 0.1f, 1e20f}, {3, 2}));
  Value* shape = g.AddConstant("shape", TensorData::FromInt64s({2, -1}, {2}));
  Node* mm = g.AddNode("MatMul", "", {x, w}, {{"h1", {DType::kF32, {2, 2}}}}, {}, "MatMul_0");
  Node* split = g.AddNode("Split", "", {mm->output(0)},
                          {{"a", {DType::kF32, {2, 1}}}, {"b", {DType::kF32, {2, 1}}}},
                          {{"axis", Attribute(1)}}, "Split_1");
  Node* clip = g.AddNode("Clip", "", {split->output(0), nullptr, split->output(1)},
                         {{"y", {DType::kF32, {2, 1}}}}, {}, "");
  Node* ln = g.AddNode(
      "LayerNormalization", "", {x, shape}, {{"ln", {DType::kF32, {2, 3}}}},
      {{"epsilon", Attribute(1e-5f)}, {"axis", Attribute(-1)}, {"a8.why", Attribute("deny")}});
  (void)ln;
  g.AddOutput(clip->output(0));
  EXPECT_EQ(PrintIrToString(g),
            "graph @mlp opsets {\"\" = 17, \"ai.onnx.preview.training\" = 1} {\n"
            "  input %x : f32[2,3]\n"
            "  param %w1 : f32[3,2] = [1.0, -2.5, 1e-05, 3.0, 0.1, 1e+20]\n"
            "  const %shape : i64[2] = [2, -1]\n"
            "  %h1 = MatMul(%x, %w1) : f32[2,2] loc(\"MatMul_0\")\n"
            "  %a, %b = Split(%h1) {axis=1} : f32[2,1], f32[2,1] loc(\"Split_1\")\n"
            "  %y = Clip(%a, _, %b) : f32[2,1]\n"
            "  %ln = LayerNormalization(%x, %shape) {a8.why=\"deny\", axis=-1, epsilon=1e-05} : "
            "f32[2,3]\n"
            "  output %y\n"
            "}\n");
  EXPECT_EQ(PrintNode(*split),
            "%a, %b = Split(%h1) {axis=1} : f32[2,1], f32[2,1] loc(\"Split_1\")");
  auto parsed = RoundTrip(g);
  EXPECT_EQ(parsed->name, "mlp");
  EXPECT_EQ(parsed->opsets, g.opsets);
  EXPECT_EQ(parsed->source, "test.a8ir");
  ExpectSameGraphValues(g, *parsed);
  // Structure: the optional input stays absent, the use lists are rebuilt.
  std::vector<Node*> nodes = parsed->NodeList();
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[2]->num_inputs(), 3);
  EXPECT_FALSE(nodes[2]->has_input(1));
  EXPECT_EQ(nodes[2]->input(2), nodes[1]->output(1));
  EXPECT_EQ(parsed->FindValue("x")->uses().size(), 2u);
  EXPECT_EQ(nodes[1]->name(), "Split_1");
  EXPECT_EQ(nodes[2]->name(), "");
  ASSERT_EQ(parsed->outputs().size(), 1u);
  EXPECT_EQ(parsed->outputs()[0], nodes[2]->output(0));
  EXPECT_EQ(nodes[3]->attrs(), ln->attrs());
}

TEST(IrTextTest, EveryAttributeKindRoundTrips) {
  std::mt19937 rng(7);
  Graph g;
  g.name = "attrs";
  Value* x = g.AddInput("x", {DType::kF32, {4}});
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> floats;
  for (int i = 0; i < 200; ++i) {
    float f = BitsToFloat(bits(rng));
    if (!std::isnan(f)) floats.push_back(f);
  }
  floats.push_back(std::numeric_limits<float>::infinity());
  floats.push_back(-std::numeric_limits<float>::infinity());
  floats.push_back(std::numeric_limits<float>::denorm_min());
  floats.push_back(-0.0f);
  floats.push_back(16777216.0f);
  std::map<std::string, Attribute> attrs = {
      {"i", Attribute(int64_t{-42})},
      {"i_min", Attribute(std::numeric_limits<int64_t>::min())},
      {"i_max", Attribute(std::numeric_limits<int64_t>::max())},
      {"f", Attribute(0.1f)},
      {"f_int_valued", Attribute(3.0f)},
      {"f_inf", Attribute(-std::numeric_limits<float>::infinity())},
      {"s", Attribute("quote\" backslash\\ newline\n tab\t bell\x07 utf8 \xc3\xa9")},
      {"s_empty", Attribute("")},
      {"ints", Attribute(std::vector<int64_t>{1, -2, 3})},
      {"ints_empty", Attribute(std::vector<int64_t>{})},
      {"floats", Attribute(floats)},
      {"floats_whole", Attribute(std::vector<float>{1.0f, 2.0f})},
      {"floats_empty", Attribute(std::vector<float>{})},
      {"strings", Attribute(std::vector<std::string>{"a", "b c", ""})},
      {"strings_empty", Attribute(std::vector<std::string>{})},
      {"tensor", Attribute(TensorDataPtr(RandomData(DType::kF16, {2, 3}, &rng)))},
      {"tensor_scalar", Attribute(TensorDataPtr(RandomData(DType::kI64, {}, &rng)))},
      {"tensor_big", Attribute(TensorDataPtr(RandomData(DType::kF32, {40}, &rng)))},
      {"odd name!", Attribute(1)},
  };
  g.AddNode("Everything", "a8", {x}, {{"y", {DType::kF32, {4}}}}, attrs, "n");
  g.AddOutput(g.FindValue("y"));
  auto parsed = RoundTrip(g);
  ASSERT_EQ(parsed->num_nodes(), 1u);
  Node* n = parsed->NodeList()[0];
  EXPECT_EQ(n->op(), "Everything");
  EXPECT_EQ(n->domain(), "a8");
  EXPECT_EQ(n->version(), 0);  // not in the op table
  ASSERT_EQ(n->attrs().size(), attrs.size());
  for (const auto& [name, value] : attrs) {
    ASSERT_TRUE(n->has_attr(name)) << name;
    EXPECT_EQ(n->attr(name)->kind(), value.kind()) << name;
    EXPECT_TRUE(*n->attr(name) == value) << name;
  }
  // -0.0 keeps its sign (operator== on floats would not notice).
  EXPECT_TRUE(std::signbit(n->attr("floats")->floats()[floats.size() - 2]));
}

TEST(IrTextTest, NanAttributesPrintAsNan) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kF32, {1}});
  float nan = std::numeric_limits<float>::quiet_NaN();
  g.AddNode("T", "a8", {x}, {{"y", {DType::kF32, {1}}}},
            {{"f", Attribute(nan)}, {"fs", Attribute(std::vector<float>{-nan, 1.0f})}});
  std::string text = PrintIrToString(g);
  EXPECT_NE(text.find("{f=nan, fs=[nan, 1.0]}"), std::string::npos) << text;
  auto parsed = RoundTrip(g);
  EXPECT_TRUE(std::isnan(parsed->NodeList()[0]->attr("f")->f()));
}

TEST(IrTextTest, DataOfEveryTypeRoundTripsBitExactly) {
  std::mt19937 rng(11);
  Graph g;
  g.name = "data";
  for (DType t : kAllDTypes) {
    g.AddParameter(fmt::format("p_{}", DTypeName(t)), RandomData(t, {3, 5}, &rng));
    g.AddState(fmt::format("s_{}", DTypeName(t)), RandomData(t, {7}, &rng));
    g.AddConstant(fmt::format("c_{}", DTypeName(t)), RandomData(t, {}, &rng));
    g.AddConstant(fmt::format("e_{}", DTypeName(t)), RandomData(t, {0, 3}, &rng));
  }
  auto f = TensorData::FromFloats(
      {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
       -std::numeric_limits<float>::infinity(), -0.0f, std::numeric_limits<float>::denorm_min(),
       std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), 1e-38f},
      {8});
  g.AddConstant("special_f32", f);
  auto h = TensorData::Make({DType::kF16, {6}});
  const uint16_t halves[] = {0x7e00, 0x7c00, 0xfc00, 0x0001, 0x7bff, 0x8000};
  std::memcpy(h->bytes.data(), halves, sizeof(halves));
  g.AddConstant("special_f16", h);
  auto i64 = TensorData::FromInt64s(
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0}, {3});
  g.AddConstant("extreme_i64", i64);
  auto parsed = RoundTrip(g);
  ExpectSameGraphValues(g, *parsed);
  std::string text = PrintIrToString(g);
  EXPECT_NE(text.find("const %special_f32 : f32[8] = [nan, inf, -inf, -0.0, 1e-45, "
                      "3.4028235e+38, -3.4028235e+38, 1e-38]"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("const %special_f16 : f16[6] = [nan, inf, -inf, 5.9604645e-08, 65504.0, -0.0]"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("const %c_bool : bool[] = ["), std::string::npos) << text;
  EXPECT_NE(text.find("const %e_f32 : f32[0,3] = []"), std::string::npos) << text;
}

TEST(IrTextTest, AllHalfAndBFloat16ValuesAndRandomFloatsRoundTrip) {
  Graph g;
  auto h = TensorData::Make({DType::kF16, {65536}});
  auto b = TensorData::Make({DType::kBF16, {65536}});
  for (uint32_t i = 0; i < 65536; ++i) {
    bool nan_h = (i & 0x7c00u) == 0x7c00u && (i & 0x3ffu);
    bool nan_b = (i & 0x7f80u) == 0x7f80u && (i & 0x7fu);
    // NaN payloads are not kept: NaNs read back as the canonical quiet NaN.
    h->mutable_data<uint16_t>()[i] = nan_h ? 0x7e00 : static_cast<uint16_t>(i);
    b->mutable_data<uint16_t>()[i] = nan_b ? 0x7fc0 : static_cast<uint16_t>(i);
  }
  g.AddParameter("h", h);
  g.AddParameter("b", b);
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<uint64_t> bits64;
  auto f = TensorData::Make({DType::kF32, {20000}});
  auto d = TensorData::Make({DType::kF64, {20000}});
  for (int i = 0; i < 20000; ++i) {
    float x;
    do x = BitsToFloat(bits(rng));
    while (std::isnan(x));
    f->mutable_data<float>()[i] = x;
    double y;
    do {
      uint64_t u = bits64(rng);
      std::memcpy(&y, &u, sizeof(y));
    } while (std::isnan(y));
    d->mutable_data<double>()[i] = y;
  }
  g.AddParameter("f", f);
  g.AddParameter("d", d);
  PrintOptions all;
  all.max_inline_elements = -1;
  auto parsed = RoundTrip(g, all);
  ExpectSameGraphValues(g, *parsed);
}

TEST(IrTextTest, LargeDataIsElidedAndReadsBackWithoutData) {
  std::mt19937 rng(5);
  Graph g;
  g.AddParameter("w", RandomData(DType::kF32, {4, 5}, &rng));
  g.AddParameter("small", RandomData(DType::kF32, {4, 4}, &rng));
  g.AddGraphValue("no_data", ValueRole::kState, {DType::kF16, {2}}, nullptr);
  std::string text = PrintIrToString(g);
  EXPECT_NE(text.find("param %w : f32[4,5] = <elided>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("param %small : f32[4,4] = ["), std::string::npos) << text;
  EXPECT_NE(text.find("state %no_data : f16[2] = <elided>\n"), std::string::npos) << text;
  auto parsed = RoundTrip(g);
  EXPECT_EQ(parsed->FindValue("w")->data(), nullptr);
  EXPECT_EQ(parsed->FindValue("w")->type(), (TensorType{DType::kF32, {4, 5}}));
  EXPECT_NE(parsed->FindValue("small")->data(), nullptr);

  PrintOptions opts;
  opts.max_inline_elements = 20;
  EXPECT_NE(PrintIrToString(g, opts).find("param %w : f32[4,5] = ["), std::string::npos);
  opts.max_inline_elements = 0;
  EXPECT_NE(PrintIrToString(g, opts).find("param %small : f32[4,4] = <elided>"), std::string::npos);
}

TEST(IrTextTest, OddNamesAreQuoted) {
  Graph g;
  g.name = "my model";
  Value* a = g.AddInput("weird name \"q\"", {DType::kF32, {1}});
  Value* b = g.AddInput("/enc/layer.0/Add:0", {DType::kF32, {1}});
  Value* c = g.AddInput("", {DType::kF32, {1}});  // the graph renames "" to "v"
  Value* u = g.AddInput("caf\xc3\xa9\n", {DType::kF32, {1}});
  Node* n = g.AddNode("Sum", "", {a, b, c, u}, {{"0out%", {DType::kF32, {1}}}}, {}, "node \"0\"\\");
  g.AddOutput(n->output(0));
  std::string text = PrintIrToString(g);
  EXPECT_NE(text.find("graph @\"my model\""), std::string::npos) << text;
  EXPECT_NE(text.find("%\"0out%\" = Sum(%\"weird name \\\"q\\\"\", %/enc/layer.0/Add:0, %v, "
                      "%\"caf\xc3\xa9\\n\") : f32[1] loc(\"node \\\"0\\\"\\\\\")"),
            std::string::npos)
      << text;
  auto parsed = RoundTrip(g);
  EXPECT_EQ(parsed->name, "my model");
  EXPECT_NE(parsed->FindValue("weird name \"q\""), nullptr);
  EXPECT_NE(parsed->FindValue("caf\xc3\xa9\n"), nullptr);
  EXPECT_EQ(parsed->NodeList()[0]->name(), "node \"0\"\\");
}

TEST(IrTextTest, ParsesDomainsVersionsCommentsAndForwardReferences) {
  const char* text = R"(// -----// IR Dump After shape-inference //----- //
graph @g opsets {"" = 17} {   # a trailing comment
  input %x : f32[2]
  // a comment line between statements
  %y = Relu(%z) : f32[2] loc("late")   # uses %z before its definition
  %z = Neg(%x) : f32[2]
  %p, %m1, %m2 = ai.onnx.preview.training.Adam(%x, %x, %x, %x, %x, %x) : f32[2], f32[2], f32[2]
  %q = a8.UnscaleCheckFinite(%y) : f32[2]
  %r = com.example.Thing(%q) : f32[2]
  output %y
  output %r
}
// trailing banner
)";
  auto g = ParseOrDie(text);
  std::vector<Node*> nodes = g->NodeList();
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(nodes[0]->op(), "Relu");
  EXPECT_EQ(nodes[0]->domain(), "");
  EXPECT_EQ(nodes[0]->version(), FindOp("", "Relu")->canonical);
  EXPECT_EQ(nodes[0]->input(0), nodes[1]->output(0));
  EXPECT_EQ(nodes[1]->output(0)->uses().size(), 1u);
  EXPECT_EQ(nodes[2]->domain(), "ai.onnx.preview.training");
  EXPECT_EQ(nodes[2]->op(), "Adam");
  EXPECT_EQ(nodes[2]->num_outputs(), 3);
  EXPECT_EQ(nodes[3]->domain(), "a8");
  EXPECT_EQ(nodes[3]->op(), "UnscaleCheckFinite");
  EXPECT_EQ(nodes[4]->domain(), "com.example");
  EXPECT_EQ(nodes[4]->version(), 0);
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->outputs()[1], nodes[4]->output(0));
  EXPECT_TRUE(g->outputs()[0]->is_graph_output());
  // It prints back in its own (comment-free) form, which again round-trips.
  RoundTrip(*g);
}

TEST(IrTextTest, AcceptsHandWrittenLiterals) {
  auto g = ParseOrDie(R"(graph @g {
  const %f : f16[3] = [1, -2, 0.1]
  const %b : bool[2] = [1, false]
  %y = a8.T() {f=-inf, fs=[1, 2.5], fi=floats[1, 2], e=ints[]} : f32[]
  a8.U()
})");
  auto f = g->FindValue("f")->data();
  EXPECT_EQ(f->data<uint16_t>()[0], FloatToHalfBits(1.0f));
  EXPECT_EQ(f->data<uint16_t>()[1], FloatToHalfBits(-2.0f));
  EXPECT_EQ(f->data<uint16_t>()[2], FloatToHalfBits(0.1f));
  EXPECT_EQ(g->FindValue("b")->data()->data<uint8_t>()[0], 1);
  Node* n = g->NodeList()[0];
  EXPECT_EQ(n->attr("fs")->floats(), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(n->attr("fi")->kind(), AttrKind::kFloats);
  EXPECT_EQ(n->attr("e")->kind(), AttrKind::kInts);
  EXPECT_TRUE(std::isinf(n->attr("f")->f()));
  EXPECT_EQ(g->NodeList()[1]->num_outputs(), 0);
  EXPECT_EQ(PrintNode(*g->NodeList()[1]), "a8.U()");
}

struct BadText {
  const char* text;
  const char* error;
};

TEST(IrTextTest, ErrorsNameLineAndColumn) {
  const BadText cases[] = {
      {"graph @g {\n  %y = Relu(%h3) : f32[2]\n}", "test.a8ir:2:13: unknown value '%h3'"},
      {"graph @g {\n  input %x : f32[2]\n  input %x : f32[2]\n}",
       "test.a8ir:3:9: redefinition of '%x'"},
      {"graph @g {\n  input %x : f32[2]\n  %x = Relu(%x) : f32[2]\n}",
       "test.a8ir:3:3: redefinition of '%x'"},
      {"graph @g {\n  input %x : f32[2]\n  %a, %a = Split(%x) : f32[1], f32[1]\n}",
       "test.a8ir:3:7: redefinition of '%a'"},
      {"graph @g {\n  input %x : f31[2]\n}", "test.a8ir:2:14: unknown element type 'f31'"},
      {"graph @g {\n  const %c : f32[2] = [1.5, 2.x]\n}", "test.a8ir:2:29: malformed number '2.x'"},
      {"graph @g {\n  const %c : f32[1] = [1e]\n}", "test.a8ir:2:24: malformed number '1e'"},
      {"graph @g {\n  const %c : f32[1] = [1e99]\n}",
       "test.a8ir:2:24: number '1e99' is out of range for f32"},
      {"graph @g {\n  const %c : f16[1] = [70000.0]\n}",
       "test.a8ir:2:24: 70000.0 is out of range for f16"},
      {"graph @g {\n  const %c : i8[2] = [1, 300]\n}",
       "test.a8ir:2:26: 300 is out of range for i8"},
      {"graph @g {\n  const %c : i64[1] = [9223372036854775808]\n}",
       "test.a8ir:2:24: integer '9223372036854775808' is out of range for i64"},
      {"graph @g {\n  const %c : f32[3] = [1.0, 2.0]\n}",
       "test.a8ir:2:23: f32[3] has 3 elements but the data has 2"},
      {"graph @g {\n  %y = a8.T() {s=\"abc} : f32[1]\n}", "test.a8ir:2:18: unterminated string"},
      {"graph @g {\n  %y = a8.T() {s=\"a\\qb\"} : f32[1]\n}",
       "test.a8ir:2:20: unknown escape sequence '\\q'"},
      {"graph @g {\n  input %x : f32[4]\n  %a, %b = Split(%x) : f32[2]\n}",
       "test.a8ir:3:22: 2 results but 1 type"},
      {"graph @g {\n  input %x : f32[4]\n  %a = Relu(%x) : f32[2], f32[2]\n}",
       "test.a8ir:3:17: 1 result but 2 types"},
      {"graph @g {\n  input %x : f32[4]\n  %a = Relu(%x)\n}",
       "test.a8ir:4:1: expected ':', found '}'"},
      {"graph @g {\n  input %x : f32[4] = [1.0, 2.0, 3.0, 4.0]\n}",
       "test.a8ir:2:21: graph input '%x' cannot have data"},
      {"graph @g {\n  %y = a8.T() {a=1, a=2} : f32[1]\n}",
       "test.a8ir:2:21: duplicate attribute 'a'"},
      {"graph @g {\n  %y = a8.T() {a=[]} : f32[1]\n}",
       "test.a8ir:2:18: an empty list needs its kind"},
      {"graph @g {\n  input %x : f32[-1]\n}", "test.a8ir:2:18: negative dimension -1"},
      {"graph @g {\n  input %x : f32[2] $\n}", "test.a8ir:2:21: unexpected character '$'"},
      {"graph @g {\n  input %x : f32[2]\n  output %nope\n}",
       "test.a8ir:3:10: unknown value '%nope'"},
      {"graph @g {\n  input %x : f32[2]\n", "test.a8ir:3:1: expected '}' closing the graph"},
      {"graph @g {\n}\ngraph @h {\n}", "test.a8ir:3:1: expected end of input after the graph"},
      {"graph @g opsets {\"\" = 17, \"\" = 18} {\n}",
       "test.a8ir:1:27: duplicate opset for domain \"\""},
      {"module @g {\n}", "test.a8ir:1:1: expected 'graph', found 'module'"},
      {"graph @g {\n  inptu %x : f32[2]\n}", "test.a8ir:2:3: unknown keyword 'inptu'"},
      {"graph @g {\n  const %c : f32[2] = [1.0, -x]\n}",
       "test.a8ir:2:29: expected a f32 element, found '-'"},
  };
  for (const BadText& c : cases) {
    auto g = ParseIr(c.text, "test.a8ir");
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(g.status().message().rfind(c.error, 0), 0u)
        << "text:\n"
        << c.text << "\ngot:      " << g.status().message() << "\nexpected: " << c.error;
  }
}

TEST(IrTextTest, HugeTypeWithShortDataIsAnErrorNotAnAllocation) {
  auto g = ParseIr("graph @g {\n  const %c : f32[1000000000000] = [1.0]\n}", "t");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has 1000000000000 elements but the data has 1"),
            std::string::npos)
      << g.status().message();
  auto overflow = ParseIr("graph @g {\n  const %c : f32[4294967296,4294967296] = [1.0]\n}", "t");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflows int64"), std::string::npos)
      << overflow.status().message();
}

// Random edits of a valid text never crash the parser: each gives an error or a graph that
// prints and parses again.
TEST(IrTextTest, MutatedTextNeverCrashes) {
  std::mt19937 rng(99);
  Graph g;
  g.opsets[""] = 17;
  Value* x = g.AddInput("x", {DType::kF32, {2, 2}});
  g.AddConstant("c", RandomData(DType::kF16, {2}, &rng));
  g.AddConstant("i", RandomData(DType::kI8, {3}, &rng));
  Node* n = g.AddNode("Split", "", {x, nullptr},
                      {{"a", {DType::kF32, {2, 1}}}, {"b", {DType::kF32, {2, 1}}}},
                      {{"axis", Attribute(1)},
                       {"fs", Attribute(std::vector<float>{0.5f, -1e-7f})},
                       {"s", Attribute("str")},
                       {"t", Attribute(TensorDataPtr(RandomData(DType::kBool, {2}, &rng)))}},
                      "split \"1\"");
  g.AddOutput(n->output(1));
  const std::string text = PrintIrToString(g);
  const std::string alphabet = "%@\"\\[]{}()<>,=:-_#/.0123456789eE abcfinxz\n";
  int parsed_ok = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string t = text;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
        case 0:
          t[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          t.erase(pos, 1 + rng() % 4);
          break;
        default:
          t.insert(pos, 1, alphabet[rng() % alphabet.size()]);
      }
      if (t.empty()) t = "x";
    }
    auto parsed = ParseIr(t, "m");
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().message().rfind("m:", 0), 0u) << parsed.status().message();
      continue;
    }
    ++parsed_ok;
    std::string again = PrintIrToString(**parsed);
    auto reparsed = ParseIr(again, "again");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << again;
    EXPECT_EQ(PrintIrToString(**reparsed), again);
  }
  EXPECT_GT(parsed_ok, 0);
}

}  // namespace
}  // namespace a8
