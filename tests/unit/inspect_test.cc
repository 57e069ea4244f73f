// a800c-inspect's views (runtime/inspect/inspect.h) on plans built in memory.
#include "runtime/inspect/inspect.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/plan_proto_util.h"

namespace a8 {
namespace {

plan::Buffer* AddBuffer(plan::Plan& p, const std::string& name, plan::Buffer::Role role,
                        std::vector<int64_t> dims, int first, int last, uint64_t offset) {
  const bool persistent = role == plan::Buffer::PARAMETER || role == plan::Buffer::STATE ||
                          role == plan::Buffer::CONSTANT;
  return testing::AddPlanBuffer(p, name, plan::F32, dims,
                                persistent ? plan::Buffer::PERSISTENT : plan::Buffer::ARENA, role,
                                offset, first, last);
}

// x[4x8] -> Gemm(w[8x16], bias[16]) -> h[4x16] -> Relu -> y[4x16] (in place over h).
PlanFile TinyPlan() {
  PlanFile pf;
  plan::Plan& p = pf.plan;
  testing::SetPlanHeader(p, "0.1.0", "tiny", "fnv1a64:0123456789abcdef", "any", "fp32");
  AddBuffer(p, "x", plan::Buffer::INPUT, {4, 8}, -1, 0, 0);           // 128 bytes
  AddBuffer(p, "w", plan::Buffer::PARAMETER, {8, 16}, -1, 2, 0);      // 512
  AddBuffer(p, "bias", plan::Buffer::PARAMETER, {16}, -1, 2, 512);    // 64
  AddBuffer(p, "h", plan::Buffer::INTERMEDIATE, {4, 16}, 0, 1, 128);  // 256
  AddBuffer(p, "y", plan::Buffer::OUTPUT, {4, 16}, 1, 2, 128)->set_alias_of(3);
  p.set_arena_bytes(384);
  p.set_arena_lower_bound(384);
  p.set_persistent_bytes(576);
  plan::Kernel* g =
      testing::AddPlanKernel(p, "Gemm:f32,f32,f32->f32", "Gemm", 13, {0, 1, 2}, {3}, "fc");
  g->add_onnx_nodes("fc");
  g->add_onnx_nodes("fc_bias");
  g->set_why("fp32 by request");
  plan::Attribute* a = g->add_attrs();
  a->set_name("transB");
  a->set_i(0);
  testing::AddPlanKernel(p, "Relu:f32->f32", "Relu", 14, {3}, {4}, "relu");
  testing::BindPlanIo(p, "x", 0, "y", 4);
  return pf;
}

TEST(InspectTest, LargestLiveSetCountsAliasOnce) {
  PlanFile pf = TinyPlan();
  LiveSet s = LargestLiveSet(pf.plan);
  // Kernel 0: x (128) + h (256) live = 384. Kernel 1: h + y (alias, counted once) = 256.
  EXPECT_EQ(s.kernel, 0);
  EXPECT_EQ(s.bytes, 384u);
  EXPECT_EQ(s.buffers, (std::vector<int>{0, 3}));
}

TEST(InspectTest, LargestLiveSetMovesWithSizes) {
  PlanFile pf = TinyPlan();
  // Make y not an alias and large: the peak moves to kernel 1.
  pf.plan.mutable_buffers(4)->set_alias_of(-1);
  pf.plan.mutable_buffers(4)->set_bytes(1000);
  LiveSet s = LargestLiveSet(pf.plan);
  EXPECT_EQ(s.kernel, 1);
  EXPECT_EQ(s.bytes, 256u + 1024u);  // 1000 rounded up to 64
  EXPECT_EQ(s.buffers, (std::vector<int>{3, 4}));
}

TEST(InspectTest, LargestLiveSetCountsAChainWhoseRootIsDead) {
  PlanFile pf = TinyPlan();
  // h dies at kernel 0 but y (in place over h) is live at kernel 1: the chain's bytes still
  // count there, once, together with another buffer live only at kernel 1.
  pf.plan.mutable_buffers(3)->set_last(0);
  AddBuffer(pf.plan, "extra", plan::Buffer::INTERMEDIATE, {4, 16}, 1, 1, 384);
  LiveSet s = LargestLiveSet(pf.plan);
  EXPECT_EQ(s.kernel, 1);
  EXPECT_EQ(s.bytes, 256u + 256u);
  EXPECT_EQ(s.buffers, (std::vector<int>{4, 5}));
}

TEST(InspectTest, RoleTotals) {
  PlanFile pf = TinyPlan();
  RoleTotals t = TotalsForRole(pf.plan, plan::Buffer::PARAMETER);
  EXPECT_EQ(t.count, 2);
  EXPECT_EQ(t.bytes, 576u);
}

TEST(InspectTest, JsonHasSchemaAndIsDeterministic) {
  PlanFile pf = TinyPlan();
  std::string a = InspectJson(pf), b = InspectJson(pf);
  EXPECT_EQ(a, b);
  auto j = nlohmann::json::parse(a);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["plan"]["model_name"], "tiny");
  EXPECT_EQ(j["parameters"]["count"], 2);
  EXPECT_EQ(j["memory"]["arena_bytes"], 384);
  EXPECT_DOUBLE_EQ(j["memory"]["ratio"].get<double>(), 1.0);
  EXPECT_EQ(j["memory"]["largest_live_set"]["kernel"], 0);
  EXPECT_EQ(j["memory"]["largest_live_set"]["buffers"], nlohmann::json({"x", "h"}));
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["kernel"], "Gemm:f32,f32,f32->f32");
  EXPECT_EQ(j["kernels"][0]["signature"], "f32,f32,f32->f32");
  EXPECT_EQ(j["kernels"][0]["onnx_nodes"], nlohmann::json({"fc", "fc_bias"}));
  EXPECT_EQ(j["kernels"][0]["why"], "fp32 by request");
  EXPECT_EQ(j["kernels"][0]["attrs"]["transB"], 0);
  EXPECT_EQ(j["buffers"][4]["alias_of"], "h");
  EXPECT_TRUE(j["buffers"][3]["alias_of"].is_null());
  EXPECT_EQ(j["buffers"][1]["region"], "persistent");
  EXPECT_EQ(j["scaler"]["mode"], "none");
}

TEST(InspectTest, TextNamesEverything) {
  std::string t = InspectText(TinyPlan());
  for (const char* want :
       {"plan: tiny (format 3", "fnv1a64:0123456789abcdef", "precision: fp32", "training: no",
        "parameters: 2 (576 bytes)", "arena: 384 bytes  lower bound: 384 bytes  ratio: 1.0000",
        "largest live set: 384 bytes at kernel 0", "[0] h = Gemm(x, w, bias)",
        "kernel Gemm:f32,f32,f32->f32", "onnx: fc, fc_bias", "why: fp32 by request", "alias_of=h",
        "kernels: 2 (0 casts)"}) {
    EXPECT_NE(t.find(want), std::string::npos) << "missing '" << want << "' in:\n" << t;
  }
}

TEST(InspectTest, DotIsADigraphWithEdges) {
  std::string d = InspectDot(TinyPlan());
  EXPECT_EQ(d.rfind("digraph plan {", 0), 0u);
  EXPECT_NE(d.find("b0 -> k0;"), std::string::npos);
  EXPECT_NE(d.find("k1 -> b4;"), std::string::npos);
  EXPECT_EQ(d.back(), '\n');
}

TEST(InspectTest, FormatNames) {
  EXPECT_TRUE(ParseInspectFormat("json").ok());
  EXPECT_TRUE(ParseInspectFormat("dot").ok());
  auto bad = ParseInspectFormat("yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ExitCode(), 2);
  EXPECT_NE(bad.status().message().find("yaml"), std::string::npos);
}

}  // namespace
}  // namespace a8
