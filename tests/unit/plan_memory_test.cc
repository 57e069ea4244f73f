// PlanMemoryTest: the memory plan checked by an independent checker (written here from the
// contract in compiler/ir/memory_plan.h, sharing no code with passes/memory/) on hand-made
// graphs, hundreds of random DAGs and the three example models; and the IR text round trip of
// the `memory` block.
#include "passes/memory/plan_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "compiler/ir/op_table.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/onnx/importer.h"
#include "compiler/pass/pass_manager.h"
#include "passes/memory/schedule.h"
#include "passes/registry.h"

namespace a8 {
namespace {

int64_t Align64(int64_t b) { return (b + 63) / 64 * 64; }

// The ops whose kernels the op table declares able to run in place (OpDef::in_place).
bool ElementwiseForChecker(const std::string& op) {
  const OpDef* def = FindOp("", op);
  return def != nullptr && def->in_place != InPlace::kNo;
}

// Every violation of the contract, one line each; empty when the plan is valid.
std::vector<std::string> CheckPlan(const Graph& g) {
  std::vector<std::string> errors;
  if (!g.memory_plan) return {"no memory plan"};
  const MemoryPlan& plan = *g.memory_plan;
  std::vector<Node*> nodes = g.NodeList();
  const int n = static_cast<int>(nodes.size());
  std::map<const Node*, int> pos;
  for (int i = 0; i < n; ++i) pos[nodes[i]] = i;

  struct Expect {
    const Value* v;
    int first, last;
    int64_t bytes;
  };
  std::map<std::string, Expect> expected;
  auto expect = [&](const Value* v, int first) {
    int last = first;
    for (const Use& u : v->uses()) last = std::max(last, pos.at(u.node));
    if (v->is_graph_output()) last = n;
    int64_t elems = 1;
    for (int64_t d : v->dims()) elems *= d;
    expected[v->name()] = {v, first, last, elems * static_cast<int64_t>(DTypeSize(v->dtype()))};
  };
  for (const Value* v : g.inputs()) expect(v, -1);
  for (int i = 0; i < n; ++i) {
    for (const Value* v : nodes[i]->outputs()) expect(v, i);
  }
  for (const auto& [name, a] : plan.values) {
    if (!expected.count(name)) errors.push_back("not an arena value: " + name);
  }
  for (const auto& [name, e] : expected) {
    auto it = plan.values.find(name);
    if (it == plan.values.end()) {
      errors.push_back("no assignment: " + name);
      continue;
    }
    const BufferAssignment& a = it->second;
    if (a.first != e.first || a.last != e.last) errors.push_back("wrong live range: " + name);
    if (a.bytes != e.bytes) errors.push_back("wrong bytes: " + name);
    if (a.offset < 0 || a.offset % 64 != 0) errors.push_back("misaligned: " + name);
    if (a.offset + a.bytes > plan.arena_bytes) errors.push_back("outside the arena: " + name);
  }
  if (!errors.empty()) return errors;

  // Legal aliases: b overwrites its operand a at b's defining node.
  std::map<std::string, int> overwritten;
  auto legal_alias = [&](const std::string& a_name, const std::string& b_name) {
    const BufferAssignment& a = plan.values.at(a_name);
    const BufferAssignment& b = plan.values.at(b_name);
    if (b.alias_of != a_name || a.last != b.first || a.offset != b.offset || a.bytes != b.bytes) {
      return false;
    }
    const Value* av = expected.at(a_name).v;
    const Value* bv = expected.at(b_name).v;
    const Node* node = bv->producer();
    if (!node || node->num_outputs() != 1 || !ElementwiseForChecker(node->op())) return false;
    if (av->role() != ValueRole::kIntermediate || av->is_graph_output()) return false;
    // A view (Reshape and its kin) is its operand 0's bytes under any dims; other in-place ops
    // keep the dims.
    const bool view = FindOp("", node->op())->in_place == InPlace::kView;
    if (view ? node->input(0) != av : av->dims() != bv->dims()) return false;
    bool operand = false;
    for (const Value* in : node->inputs()) operand = operand || in == av;
    return operand;
  };
  for (const auto& [name, a] : plan.values) {
    if (a.alias_of.empty()) continue;
    if (!plan.values.count(a.alias_of) || !legal_alias(a.alias_of, name)) {
      errors.push_back("illegal alias: " + name + " of " + a.alias_of);
    }
    if (++overwritten[a.alias_of] > 1) errors.push_back("overwritten twice: " + a.alias_of);
  }
  for (auto i = plan.values.begin(); i != plan.values.end(); ++i) {
    for (auto j = std::next(i); j != plan.values.end(); ++j) {
      const BufferAssignment &a = i->second, &b = j->second;
      if (a.bytes == 0 || b.bytes == 0) continue;
      bool time = a.first <= b.last && b.first <= a.last;
      bool space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (time && space && !legal_alias(i->first, j->first) && !legal_alias(j->first, i->first)) {
        errors.push_back("overlap: " + i->first + " and " + j->first);
      }
    }
  }
  // The lower bound, aliases counted once at the node they share.
  std::vector<int64_t> live(n + 2, 0);
  for (const auto& [name, a] : plan.values) {
    for (int p = a.first; p <= a.last; ++p) live[p + 1] += Align64(a.bytes);
    if (!a.alias_of.empty()) live[a.first + 1] -= Align64(a.bytes);
  }
  int64_t bound = 0;
  for (int64_t l : live) bound = std::max(bound, l);
  if (plan.lower_bound != bound) {
    errors.push_back("lower bound " + std::to_string(plan.lower_bound) + ", expected " +
                     std::to_string(bound));
  }
  if (plan.arena_bytes < bound) errors.push_back("arena below the lower bound");
  return errors;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + "\n";
  return out;
}

// A random DAG of a few op kinds with random sizes: same-shape elementwise ops (in-place
// candidates), size-changing ops, a same-size Cast, a two-result op, dead values, empty tensors,
// parameters, and random graph outputs.
std::unique_ptr<Graph> RandomDag(uint32_t seed, int num_nodes) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto g = std::make_unique<Graph>();
  g->name = "random";
  auto random_type = [&]() {
    TensorType t{DType::kF32, {pick(1, 8), pick(1, 40)}};
    if (pick(0, 19) == 0) t.dims[0] = 0;
    return t;
  };
  std::vector<Value*> values;
  for (int i = 0, k = pick(1, 3); i < k; ++i) {
    values.push_back(g->AddInput("in" + std::to_string(i), random_type()));
  }
  values.push_back(g->AddParameter("w", TensorData::Make(TensorType{DType::kF32, {4}})));
  for (int i = 0; i < num_nodes; ++i) {
    const std::string name = "v" + std::to_string(i);
    // Operands mostly from recent values, so live ranges vary in length.
    auto operand = [&]() {
      int lo = std::max(0, static_cast<int>(values.size()) - pick(1, 12));
      return values[pick(lo, static_cast<int>(values.size()) - 1)];
    };
    Value* a = operand();
    switch (pick(0, 5)) {
      case 0:
      case 1: {
        static const char* kUnary[] = {"Relu", "Tanh", "Sigmoid", "Neg"};
        values.push_back(g->AddNode(kUnary[pick(0, 3)], "", {a}, {{name, a->type()}})->output(0));
        break;
      }
      case 2: {
        Value* b = operand();
        values.push_back(
            g->AddNode(pick(0, 1) ? "Add" : "Mul", "", {a, b}, {{name, a->type()}})->output(0));
        break;
      }
      case 3:
        values.push_back(
            g->AddNode("MatMul", "", {a, operand()}, {{name, random_type()}})->output(0));
        break;
      case 4: {
        TensorType t = a->type();
        t.dtype = pick(0, 1) ? DType::kI32 : DType::kF16;
        values.push_back(g->AddNode("Cast", "", {a}, {{name, t}})->output(0));
        break;
      }
      case 5: {
        Node* s = g->AddNode("Split", "", {a},
                             {{name + "a", random_type()}, {name + "b", random_type()}});
        values.push_back(s->output(0));
        values.push_back(s->output(1));
        break;
      }
    }
  }
  g->AddOutput(values.back());
  for (Value* v : values) {
    if (v->role() != ValueRole::kParameter && pick(0, 15) == 0 && !v->is_graph_output()) {
      g->AddOutput(v);
    }
  }
  return g;
}

Status RunPasses(Graph& g, const std::vector<std::string>& names) {
  PassManagerOptions opts;
  opts.registry = &RegisteredPasses();
  PassManager pm(opts);
  A8_RETURN_IF_ERROR(pm.AddPasses(names));
  return pm.Run(g);
}

// Parses `text`, plans its memory and checks the plan; null (a failure) where a step fails.
std::unique_ptr<Graph> PlannedOrFail(const std::string& text) {
  auto g = ParseIr(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return nullptr;
  const Status planned = RunPasses(**g, {"plan-memory"});
  EXPECT_TRUE(planned.ok()) << planned.message();
  if (!planned.ok()) return nullptr;
  EXPECT_EQ(Join(CheckPlan(**g)), "");
  return std::move(*g);
}

TEST(PlanMemoryTest, ChainUsesTwoBuffersAndRunsInPlace) {
  auto g = PlannedOrFail(R"(graph @chain opsets {"" = 17} {
  input %x : f32[4,32]
  param %w : f32[32,32] = <elided>
  %h = MatMul(%x, %w) : f32[4,32]
  %r = Relu(%h) : f32[4,32]
  %t = Tanh(%r) : f32[4,32]
  %y = MatMul(%t, %w) : f32[4,32]
  output %y
})");
  ASSERT_NE(g, nullptr);
  const MemoryPlan& plan = *g->memory_plan;
  EXPECT_EQ(plan.values.count("w"), 0u);
  EXPECT_EQ(plan.values.at("r").alias_of, "h");
  EXPECT_EQ(plan.values.at("t").alias_of, "r");
  EXPECT_EQ(plan.values.at("t").offset, plan.values.at("h").offset);
  EXPECT_EQ(plan.values.at("x").first, -1);
  EXPECT_EQ(plan.values.at("y").last, 4);
  EXPECT_EQ(plan.lower_bound, 2 * 512);
  EXPECT_EQ(plan.arena_bytes, 2 * 512);
}

TEST(PlanMemoryTest, NoInPlaceOverGraphInputsOutputsOrLiveOperands) {
  auto g = PlannedOrFail(R"(graph @g opsets {"" = 17} {
  input %x : f32[16]
  %a = Relu(%x) : f32[16]
  %b = Neg(%a) : f32[16]
  %c = Add(%a, %b) : f32[16]
  %d = Exp(%c) : f32[16]
  %e = Add(%d, %b) : f32[1,16]
  output %c
  output %e
})");
  ASSERT_NE(g, nullptr);
  const MemoryPlan& plan = *g->memory_plan;
  EXPECT_EQ(plan.values.at("a").alias_of, "");  // %x is a graph input
  EXPECT_EQ(plan.values.at("b").alias_of, "");  // %a is still used by %c
  EXPECT_EQ(plan.values.at("c").alias_of, "a");
  EXPECT_EQ(plan.values.at("d").alias_of, "");  // %c is a graph output
  EXPECT_EQ(plan.values.at("e").alias_of, "");  // dims differ: broadcast
}

TEST(PlanMemoryTest, ViewsTakeTheirOperandsBytes) {
  auto g = PlannedOrFail(R"(graph @views opsets {"" = 17} {
  input %x : f32[4,32]
  param %shape : i64[3] = <elided>
  %a = Relu(%x) : f32[4,32]
  %b = Reshape(%a, %shape) : f32[4,4,8]
  %c = Neg(%b) : f32[4,4,8]
  %d = Flatten(%c) : f32[4,32]
  %e = Reshape(%x, %shape) : f32[4,4,8]
  %f = Relu(%d) : f32[4,32]
  %g = Unsqueeze(%f) {axes=[0]} : f32[1,4,32]
  %h = Add(%f, %d) : f32[4,32]
  output %e
  output %g
  output %h
})");
  ASSERT_NE(g, nullptr);
  const MemoryPlan& plan = *g->memory_plan;
  EXPECT_EQ(plan.values.at("b").alias_of, "a");  // a view of a dying intermediate: its bytes
  EXPECT_EQ(plan.values.at("b").offset, plan.values.at("a").offset);
  EXPECT_EQ(plan.values.at("c").alias_of, "b");
  EXPECT_EQ(plan.values.at("d").alias_of, "c");
  EXPECT_EQ(plan.values.at("d").offset, plan.values.at("a").offset);  // one buffer, a to d
  EXPECT_EQ(plan.values.at("e").alias_of, "");                        // %x is a graph input
  EXPECT_EQ(plan.values.at("f").alias_of, "");                        // %d is read again by %h
  EXPECT_EQ(plan.values.at("g").alias_of, "");                        // %f is read again by %h
}

TEST(PlanMemoryTest, CheckerCatchesABrokenPlan) {
  auto g = RandomDag(7, 40);
  ASSERT_TRUE(RunPasses(*g, {"plan-memory"}).ok());
  ASSERT_EQ(Join(CheckPlan(*g)), "");
  // Put every value at offset 0: values live together now share bytes.
  for (auto& [name, a] : g->memory_plan->values) a.offset = 0;
  EXPECT_NE(Join(CheckPlan(*g)).find("overlap"), std::string::npos);
}

TEST(PlanMemoryTest, RandomDagsAreValidAndNearTheBound) {
  int64_t in_place = 0, at_bound = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    auto g = RandomDag(seed, 5 + seed % 80);
    ASSERT_TRUE(RunPasses(*g, {"schedule", "plan-memory"}).ok()) << "seed " << seed;
    std::string errors = Join(CheckPlan(*g));
    ASSERT_EQ(errors, "") << "seed " << seed << "\n" << PrintIrToString(*g);
    const MemoryPlan& plan = *g->memory_plan;
    for (const auto& [name, a] : plan.values) in_place += !a.alias_of.empty();
    at_bound += plan.arena_bytes == plan.lower_bound;
    EXPECT_LE(plan.arena_bytes, plan.lower_bound * 3 / 2) << "seed " << seed;
  }
  EXPECT_GT(in_place, 100);  // the in-place rule fires
  std::printf("[ random DAGs ] %lld of 300 plans at the lower bound, %lld in-place values\n",
              static_cast<long long>(at_bound), static_cast<long long>(in_place));
}

TEST(PlanMemoryTest, Deterministic) {
  auto a = RandomDag(42, 60);
  auto b = RandomDag(42, 60);
  ASSERT_TRUE(RunPasses(*a, {"schedule", "plan-memory"}).ok());
  ASSERT_TRUE(RunPasses(*b, {"schedule", "plan-memory"}).ok());
  EXPECT_EQ(PrintIrToString(*a), PrintIrToString(*b));
}

TEST(PlanMemoryTest, TextRoundTrip) {
  auto g = RandomDag(3, 30);
  ASSERT_TRUE(RunPasses(*g, {"schedule", "plan-memory"}).ok());
  const std::string text = PrintIrToString(*g);
  EXPECT_NE(text.find("  memory {alignment=64, arena="), std::string::npos);
  EXPECT_NE(text.find(" alias=%"), std::string::npos);
  auto parsed = ParseIr(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(PrintIrToString(**parsed), text);
  ASSERT_TRUE((*parsed)->memory_plan.has_value());
  EXPECT_EQ(Join(CheckPlan(**parsed)), "");
}

TEST(PlanMemoryTest, ParserRejectsBadMemoryBlocks) {
  const std::string head =
      "graph @g {\n  input %x : f32[4]\n  %y = Relu(%x) : f32[4]\n"
      "  output %y\n";
  const std::string ok = head +
                         "  memory {alignment=64, arena=128, lower_bound=128} {\n"
                         "    %x offset=0 bytes=16 live=[-1, 0]\n"
                         "    %y offset=64 bytes=16 live=[0, 1]\n  }\n}\n";
  auto parsed = ParseIr(ok);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(PrintIrToString(**parsed), "graph @g opsets {} {\n" + ok.substr(11));
  struct Case {
    std::string block, error;
  };
  const Case cases[] = {
      {"memory {alignment=64, arena=1} {\n %q offset=0 bytes=4 live=[0, 1]\n }",
       "expected alignment, arena and lower_bound"},
      {"memory {alignment=64, arena=1, lower_bound=1, arena=2} {}", "unexpected memory field"},
      {"memory {alignment=64, arena=1, lower_bound=1} {\n %q offset=0 bytes=4 live=[0, 1]\n }",
       "unknown value '%q' in the memory block"},
      {"memory {alignment=64, arena=1, lower_bound=1} {\n %y offset=0 bytes=4 live=[2, 1]\n }",
       "live range"},
      {"memory {alignment=64, arena=1, lower_bound=1} {\n %y offset=0 bytes=4 live=[0, 1] "
       "alias=%x\n }",
       "no memory entry"},
  };
  for (const Case& c : cases) {
    auto bad = ParseIr(head + "  " + c.block + "\n}\n", "bad.a8ir");
    ASSERT_FALSE(bad.ok()) << c.block;
    EXPECT_NE(bad.status().message().find(c.error), std::string::npos) << bad.status().message();
  }
}

std::filesystem::path ModelsDir() {
  if (const char* env = std::getenv("A8_MODELS_DIR")) return env;
  // bin/a8_unit_tests -> build/models
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "models";
}

TEST(PlanMemoryTest, ExampleModelsWithinTenPercentOfTheBound) {
  for (const char* model : {"mlp", "cnn", "bert"}) {
    std::filesystem::path path = ModelsDir() / (std::string(model) + ".onnx");
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " (build the `models` target)";
    ImportOptions opts;
    opts.batch = 32;
    auto g = ImportOnnxFile(path.string(), opts);
    ASSERT_TRUE(g.ok()) << g.status().message();
    PassManagerOptions pm_opts;
    pm_opts.input_typed = false;
    pm_opts.verify_each = true;
    pm_opts.registry = &RegisteredPasses();
    PassManager pm(pm_opts);
    ASSERT_TRUE(pm.AddPasses({"shape-inference", "canonicalize", "schedule", "plan-memory"}).ok());
    Status st = pm.Run(**g);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(Join(CheckPlan(**g)), "") << model;
    const MemoryPlan& plan = *(*g)->memory_plan;
    int64_t in_place = 0;
    for (const auto& [name, a] : plan.values) in_place += !a.alias_of.empty();
    double ratio = static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.lower_bound);
    std::printf(
        "[ %-4s b=32 ] arena %lld bytes, lower bound %lld bytes, ratio %.4f, %zu values, "
        "%lld in place\n",
        model, static_cast<long long>(plan.arena_bytes), static_cast<long long>(plan.lower_bound),
        ratio, plan.values.size(), static_cast<long long>(in_place));
    EXPECT_LE(plan.arena_bytes * 10, plan.lower_bound * 11) << model;
  }
}

}  // namespace
}  // namespace a8
