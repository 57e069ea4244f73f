// Lowering a memory-planned graph to a plan, and the kernel catalog.
#include "passes/lowering/lower.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "compiler/ir/op_table.h"
#include "compiler/ir/op_table_value_shaped.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/kernel_catalog.h"
#include "compiler/plan/plan_file.h"

namespace a8 {
namespace {

std::string Floats(std::mt19937* rng, int n) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::string s;
  for (int i = 0; i < n; ++i) s += fmt::format("{}{}", i ? ", " : "", dist(*rng));
  return s;
}

// A small graph with a memory plan written by hand: Gemm -> Relu (in place) -> Add of a
// ConstantOfShape (tensor attribute), and a strided SAME_UPPER Conv.
std::string TestGraphText(std::mt19937* rng) {
  return fmt::format(R"(graph @t opsets {{"" = 17}} {{
  input %x : f32[2,3]
  param %w : f32[3,4] = [{}]
  param %b : f32[4] = [{}]
  input %img : f32[1,1,5,5]
  param %k : f32[2,1,3,3] = [{}]
  const %s : i64[2] = [2, 4]
  %h = Gemm(%x, %w, %b) : f32[2,4] loc("gemm0")
  %y = Relu(%h) : f32[2,4] loc("relu0")
  %c = ConstantOfShape(%s) {{value=tensor<f32[1]: [0.5]>}} : f32[2,4] loc("cos0")
  %y2 = Add(%y, %c) : f32[2,4] loc("add0")
  %co = Conv(%img, %k) {{auto_pad="SAME_UPPER", strides=[2, 2]}} : f32[1,2,3,3] loc("conv0")
  output %y2
  output %co
  memory {{alignment=64, arena=392, lower_bound=384}} {{
    %x offset=0 bytes=24 live=[-1, 0]
    %img offset=64 bytes=100 live=[-1, 4]
    %h offset=192 bytes=32 live=[0, 1]
    %y offset=192 bytes=32 live=[1, 3] alias=%h
    %c offset=256 bytes=32 live=[2, 3]
    %y2 offset=0 bytes=32 live=[3, 5]
    %co offset=320 bytes=72 live=[4, 5]
  }}
}}
)",
                     Floats(rng, 12), Floats(rng, 4), Floats(rng, 18));
}

std::unique_ptr<Graph> Parse(const std::string& text) {
  auto g = ParseIr(text, "t.a8ir");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return std::make_unique<Graph>();
  Status v = Verify(**g);
  EXPECT_TRUE(v.ok()) << v.message();
  return std::move(g).value();
}

std::vector<int64_t> Ints(const plan::Attribute* a) {
  if (a == nullptr) return {-999};
  return {a->ints().values().begin(), a->ints().values().end()};
}

TEST(LowerTest, BuffersKernelsAttrsAndBlob) {
  std::mt19937 rng(7);
  auto g = Parse(TestGraphText(&rng));
  LowerOptions opts;
  opts.model_name = "t.a8ir";
  opts.model_hash = "fnv1a64:0123456789abcdef";
  auto pf = LowerToPlan(*g, opts);
  ASSERT_TRUE(pf.ok()) << pf.status().message();
  const plan::Plan& p = pf->plan;
  EXPECT_EQ(p.format_version(), kPlanFormatVersion);
  EXPECT_EQ(p.compiler_version(), A800C_VERSION);
  EXPECT_EQ(p.model_name(), "t.a8ir");
  EXPECT_EQ(p.model_hash(), "fnv1a64:0123456789abcdef");
  EXPECT_EQ(p.target(), "any");
  EXPECT_EQ(p.precision(), "fp32");
  EXPECT_FALSE(p.training());
  EXPECT_EQ(p.alignment(), 64u);
  EXPECT_EQ(p.arena_bytes(), 448u);  // 392 rounded up
  EXPECT_EQ(p.arena_lower_bound(), 384u);
  EXPECT_EQ(p.scaler().mode(), "none");

  // Buffers: graph values, node outputs, tensor attributes.
  const std::vector<std::string> names = {"x", "w", "b", "img", "k",  "s",
                                          "h", "y", "c", "y2",  "co", "cos0.value"};
  ASSERT_EQ(p.buffers_size(), static_cast<int>(names.size()));
  for (int i = 0; i < p.buffers_size(); ++i) {
    EXPECT_EQ(p.buffers(i).name(), names[i]);
    EXPECT_EQ(p.buffers(i).id(), i);
  }
  auto buf = [&](int i) -> const plan::Buffer& { return p.buffers(i); };
  EXPECT_EQ(buf(0).region(), plan::Buffer::ARENA);
  EXPECT_EQ(buf(0).role(), plan::Buffer::INPUT);
  EXPECT_EQ(buf(0).first(), -1);
  EXPECT_EQ(buf(0).last(), 0);
  EXPECT_EQ(buf(3).offset(), 64u);
  EXPECT_EQ(buf(7).role(), plan::Buffer::INTERMEDIATE);
  EXPECT_EQ(buf(7).alias_of(), 6);  // y over h
  EXPECT_EQ(buf(6).alias_of(), -1);
  EXPECT_EQ(buf(9).role(), plan::Buffer::OUTPUT);
  EXPECT_EQ(buf(9).last(), 5);
  EXPECT_EQ(buf(10).bytes(), 72u);
  // Persistent: w, b, k, s, cos0.value packed at 64-byte alignment, all with initial values.
  const std::vector<std::pair<int, uint64_t>> persistent = {
      {1, 0}, {2, 64}, {4, 128}, {5, 256}, {11, 320}};
  for (auto [id, offset] : persistent) {
    EXPECT_EQ(buf(id).region(), plan::Buffer::PERSISTENT) << id;
    EXPECT_EQ(buf(id).offset(), offset) << id;
    EXPECT_TRUE(buf(id).has_init()) << id;
    EXPECT_EQ(buf(id).blob_offset(), offset) << id;
    EXPECT_EQ(buf(id).first(), -1);
    EXPECT_EQ(buf(id).last(), 5);
  }
  EXPECT_EQ(buf(1).role(), plan::Buffer::PARAMETER);
  EXPECT_EQ(buf(5).role(), plan::Buffer::CONSTANT);
  EXPECT_EQ(buf(11).role(), plan::Buffer::CONSTANT);
  EXPECT_EQ(p.persistent_bytes(), 384u);
  EXPECT_EQ(p.blob_bytes(), 324u);
  ASSERT_EQ(pf->blob.size(), 324u);
  // The blob holds the values' bytes exactly.
  const std::vector<std::pair<int, std::string>> data = {{1, "w"}, {2, "b"}, {4, "k"}, {5, "s"}};
  for (const auto& [id, name] : data) {
    const TensorData& d = *g->FindValue(name)->data();
    ASSERT_LE(buf(id).blob_offset() + d.bytes.size(), pf->blob.size());
    EXPECT_EQ(std::memcmp(pf->blob.data() + buf(id).blob_offset(), d.bytes.data(), d.bytes.size()),
              0)
        << name;
  }
  float half = 0;
  std::memcpy(&half, pf->blob.data() + 320, 4);
  EXPECT_EQ(half, 0.5f);

  // Kernels in node order with explicit attributes.
  ASSERT_EQ(p.kernels_size(), 5);
  const std::vector<std::string> kernels = {"Gemm:f32,f32,f32->f32", "Relu:f32->f32",
                                            "ConstantOfShape:i64->f32", "Add:f32,f32->f32",
                                            "Conv:f32,f32->f32"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.kernels(i).name(), kernels[i]);
  const plan::Kernel& gemm = p.kernels(0);
  EXPECT_EQ(gemm.op(), "Gemm");
  EXPECT_EQ(gemm.version(), 7);
  EXPECT_EQ(gemm.node(), "gemm0");
  ASSERT_EQ(gemm.onnx_nodes_size(), 1);
  EXPECT_EQ(gemm.onnx_nodes(0), "gemm0");
  EXPECT_EQ(std::vector<int>(gemm.inputs().begin(), gemm.inputs().end()),
            (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(std::vector<int>(gemm.outputs().begin(), gemm.outputs().end()), std::vector<int>{6});
  std::vector<std::string> gemm_attrs;
  for (const auto& a : gemm.attrs()) gemm_attrs.push_back(a.name());
  EXPECT_EQ(gemm_attrs, (std::vector<std::string>{"alpha", "beta", "transA", "transB"}));
  EXPECT_EQ(FindPlanAttr(gemm, "alpha")->f(), 1.0f);
  EXPECT_EQ(FindPlanAttr(gemm, "transB")->i(), 0);
  const plan::Attribute* value = FindPlanAttr(p.kernels(2), "value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->tensor_buffer(), 11);
  const plan::Kernel& conv = p.kernels(4);
  EXPECT_EQ(FindPlanAttr(conv, "auto_pad")->s(), "NOTSET");
  EXPECT_EQ(Ints(FindPlanAttr(conv, "pads")), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(Ints(FindPlanAttr(conv, "strides")), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Ints(FindPlanAttr(conv, "dilations")), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(FindPlanAttr(conv, "kernel_shape")), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(FindPlanAttr(conv, "group")->i(), 1);

  ASSERT_EQ(p.inputs_size(), 2);
  EXPECT_EQ(p.inputs(0).name(), "x");
  EXPECT_EQ(p.inputs(1).buffer(), 3);
  ASSERT_EQ(p.outputs_size(), 2);
  EXPECT_EQ(p.outputs(0).buffer(), 9);
  EXPECT_EQ(p.outputs(1).buffer(), 10);
  EXPECT_TRUE(ValidatePlan(*pf, "t").ok());
}

TEST(LowerTest, DeterministicBytes) {
  std::mt19937 rng(11);
  const std::string text = TestGraphText(&rng);
  auto a = LowerToPlan(*Parse(text), {});
  auto b = LowerToPlan(*Parse(text), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*SerializePlan(*a), *SerializePlan(*b));
}

TEST(LowerTest, NeedsMemoryPlan) {
  std::mt19937 rng(3);
  auto g = Parse(TestGraphText(&rng));
  g->memory_plan.reset();
  auto pf = LowerToPlan(*g, {});
  ASSERT_FALSE(pf.ok());
  EXPECT_EQ(pf.status().code(), StatusCode::kInternal);
  EXPECT_EQ(pf.status().message(), "lower: the graph has no memory plan; run plan-memory first");
}

TEST(LowerTest, MissingMemoryPlanEntryIsInternal) {
  std::mt19937 rng(3);
  auto g = Parse(TestGraphText(&rng));
  g->memory_plan->values.erase("c");
  auto pf = LowerToPlan(*g, {});
  ASSERT_FALSE(pf.ok());
  EXPECT_EQ(pf.status().code(), StatusCode::kInternal);
  EXPECT_NE(pf.status().message().find("'c'"), std::string::npos) << pf.status().message();
}

TEST(LowerTest, KernelOutsideTheCatalogIsUnsupported) {
  auto g = Parse(R"(graph @u opsets {"" = 17} {
  input %x : u8[4]
  %y = Relu(%x) : u8[4] loc("r")
  output %y
  memory {alignment=64, arena=128, lower_bound=128} {
    %x offset=0 bytes=4 live=[-1, 0]
    %y offset=64 bytes=4 live=[0, 1]
  }
})");
  auto pf = LowerToPlan(*g, {});
  ASSERT_FALSE(pf.ok());
  EXPECT_EQ(pf.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(pf.status().message().find("node 'r' (Relu)"), std::string::npos)
      << pf.status().message();
  EXPECT_NE(pf.status().message().find("Relu:u8->u8"), std::string::npos);
}

TEST(KernelCatalogTest, Examples) {
  using In = std::vector<std::optional<DType>>;
  const DType f32 = DType::kF32, f16 = DType::kF16, i64 = DType::kI64;
  EXPECT_TRUE(CheckKernel("Gemm", In{f32, f32, f32}, {f32}).ok());
  EXPECT_TRUE(CheckKernel("Gemm", In{f32, f32}, {f32}).ok());
  EXPECT_TRUE(CheckKernel("Clip", In{f16, std::nullopt, f16}, {f16}).ok());
  EXPECT_TRUE(CheckKernel("Cast", In{i64}, {DType::kBF16}).ok());
  EXPECT_TRUE(CheckKernel("Less", In{i64, i64}, {DType::kBool}).ok());
  EXPECT_TRUE(CheckKernel("Concat", In{f32, f32, f32}, {f32}).ok());
  EXPECT_TRUE(CheckKernel("Split", In{f32, i64}, {f32, f32, f32}).ok());
  EXPECT_TRUE(CheckKernel("MaxPool", In{f32}, {f32, i64}).ok());
  EXPECT_TRUE(CheckKernelName("Clip:f16,_,f16->f16").ok());

  auto err = [](Status s) { return s.ok() ? std::string("ok") : s.message(); };
  EXPECT_NE(err(CheckKernel("Frob", In{f32}, {f32})).find("unknown kernel op 'Frob'"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Relu", In{DType::kU8}, {DType::kU8})).find("T must be one of"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Gemm", In{f32}, {f32})).find("expects 2 to 3 inputs, got 1"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Add", In{f32, f16}, {f32})).find("inputs 1 must have type T"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Less", In{f32, f32}, {f32})).find("outputs 0 must be bool"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Gemm", In{std::nullopt, f32, f32}, {f32})).find("required"),
            std::string::npos);
  EXPECT_NE(err(CheckKernel("Clip", In{f32, std::nullopt}, {f32})).find("trailing"),
            std::string::npos);
  EXPECT_FALSE(CheckKernelName("Relu").ok());
  EXPECT_FALSE(CheckKernelName("Relu:f32").ok());
  EXPECT_FALSE(CheckKernelName("Relu:f33->f32").ok());
  EXPECT_FALSE(CheckKernelName(":f32->f32").ok());
}

TEST(KernelCatalogTest, CoversTheOpTable) {
  std::set<std::string> ops;
  for (const KernelPattern& k : AllKernelPatterns()) {
    EXPECT_TRUE(ops.insert(k.op).second) << k.op;
    EXPECT_EQ(k.pattern.rfind(k.op + ":", 0), 0u) << k.pattern;
  }
  for (const OpDef& def : AllOps()) {
    const std::string op = def.domain.empty() ? def.name : def.domain + "." + def.name;
    // Constant becomes a constant value; Gradient is expanded (expand-gradient); value-shaped
    // ops are folded at compile time (op_table_value_shaped.h); the ONNX optimizers run as
    // kernels.
    const bool expected = op != "Constant" && op != "ai.onnx.preview.training.Gradient" &&
                          FindFoldRule(def.domain, def.name) == nullptr;
    EXPECT_EQ(ops.count(op) > 0, expected) << op;
    EXPECT_EQ(IsCatalogOp(op), expected) << op;
    ops.erase(op);
  }
  EXPECT_TRUE(ops.empty()) << "catalog rows without an op: " << *ops.begin();
}

TEST(KernelCatalogTest, EveryEnumeratedNameChecksAndRoundTrips) {
  size_t total = 0;
  for (const KernelPattern& k : AllKernelPatterns()) {
    std::vector<std::string> names = KernelNamesForOp(k.op);
    EXPECT_FALSE(names.empty()) << k.op;
    for (const std::string& name : names) {
      auto sig = ParseKernelName(name);
      ASSERT_TRUE(sig.ok()) << name;
      EXPECT_EQ(KernelName(*sig), name);
      EXPECT_EQ(sig->op, k.op);
      Status s = CheckKernel(*sig);
      EXPECT_TRUE(s.ok()) << s.message();
    }
    total += names.size();
  }
  EXPECT_GT(total, 300u);
  EXPECT_TRUE(KernelNamesForOp("Constant").empty());
  const std::vector<std::string> relu = KernelNamesForOp("Relu");
  EXPECT_EQ(relu.size(), 8u);  // ONNX Relu-14: f32 f16 bf16 f64 i8 i16 i32 i64
}

}  // namespace
}  // namespace a8
