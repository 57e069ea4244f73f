// a800c-inspect's views (runtime/inspect/inspect.h) on plans built in memory.
#include "runtime/inspect/inspect.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace a8 {
namespace {

plan::Buffer* AddBuffer(plan::Plan& p, const std::string& name, plan::Buffer::Role role,
                        std::vector<int64_t> dims, int first, int last, uint64_t offset) {
  plan::Buffer* b = p.add_buffers();
  b->set_id(p.buffers_size() - 1);
  b->set_name(name);
  b->mutable_type()->set_dtype(plan::F32);
  uint64_t n = 1;
  for (int64_t d : dims) {
    b->mutable_type()->add_dims(d);
    n *= d;
  }
  b->set_bytes(n * 4);
  b->set_role(role);
  const bool persistent = role == plan::Buffer::PARAMETER || role == plan::Buffer::STATE ||
                          role == plan::Buffer::CONSTANT;
  b->set_region(persistent ? plan::Buffer::PERSISTENT : plan::Buffer::ARENA);
  b->set_offset(offset);
  b->set_first(first);
  b->set_last(last);
  b->set_alias_of(-1);
  return b;
}

// x[4x8] -> Gemm(w[8x16], bias[16]) -> h[4x16] -> Relu -> y[4x16] (in place over h).
PlanFile TinyPlan() {
  PlanFile pf;
  plan::Plan& p = pf.plan;
  p.set_format_version(kPlanFormatVersion);
  p.set_compiler_version("0.1.0");
  p.set_model_name("tiny");
  p.set_model_hash("fnv1a64:0123456789abcdef");
  p.set_target("any");
  p.set_precision("fp32");
  p.set_alignment(64);
  AddBuffer(p, "x", plan::Buffer::INPUT, {4, 8}, -1, 0, 0);           // 128 bytes
  AddBuffer(p, "w", plan::Buffer::PARAMETER, {8, 16}, -1, 2, 0);      // 512
  AddBuffer(p, "bias", plan::Buffer::PARAMETER, {16}, -1, 2, 512);    // 64
  AddBuffer(p, "h", plan::Buffer::INTERMEDIATE, {4, 16}, 0, 1, 128);  // 256
  AddBuffer(p, "y", plan::Buffer::OUTPUT, {4, 16}, 1, 2, 128)->set_alias_of(3);
  p.set_arena_bytes(384);
  p.set_arena_lower_bound(384);
  p.set_persistent_bytes(576);
  plan::Kernel* g = p.add_kernels();
  g->set_name("Gemm:f32,f32,f32->f32");
  g->set_op("Gemm");
  g->set_version(13);
  for (int i : {0, 1, 2}) g->add_inputs(i);
  g->add_outputs(3);
  g->set_node("fc");
  g->add_onnx_nodes("fc");
  g->add_onnx_nodes("fc_bias");
  g->set_why("fp32 by request");
  plan::Attribute* a = g->add_attrs();
  a->set_name("transB");
  a->set_i(0);
  plan::Kernel* r = p.add_kernels();
  r->set_name("Relu:f32->f32");
  r->set_op("Relu");
  r->set_version(14);
  r->add_inputs(3);
  r->add_outputs(4);
  r->set_node("relu");
  plan::Binding* in = p.add_inputs();
  in->set_name("x");
  in->set_buffer(0);
  plan::Binding* out = p.add_outputs();
  out->set_name("y");
  out->set_buffer(4);
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
       {"plan: tiny (format 2", "fnv1a64:0123456789abcdef", "precision: fp32", "training: no",
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
