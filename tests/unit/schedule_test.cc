// ScheduleTest: the order is topological and deterministic, the peak live bytes never grow
// (computed here independently of passes/memory/liveness), independent branches run one after
// the other, and ordered nodes (no results, random ops) keep their relative order.
#include "passes/memory/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/pass/pass_manager.h"

namespace a8 {
namespace {

// Peak of the sum of 64-aligned sizes of graph inputs and node outputs live at a position.
int64_t IndependentPeak(const Graph& g) {
  std::vector<Node*> nodes = g.NodeList();
  const int n = static_cast<int>(nodes.size());
  std::map<const Node*, int> pos;
  for (int i = 0; i < n; ++i) pos[nodes[i]] = i;
  std::vector<int64_t> live(n + 2, 0);
  auto add = [&](const Value* v, int first) {
    int last = first;
    for (const Use& u : v->uses()) last = std::max(last, pos.at(u.node));
    if (v->is_graph_output()) last = n;
    int64_t bytes = static_cast<int64_t>(DTypeSize(v->dtype()));
    for (int64_t d : v->dims()) bytes *= d;
    for (int p = first; p <= last; ++p) live[p + 1] += (bytes + 63) / 64 * 64;
  };
  for (const Value* v : g.inputs()) add(v, -1);
  for (int i = 0; i < n; ++i) {
    for (const Value* v : nodes[i]->outputs()) add(v, i);
  }
  int64_t peak = 0;
  for (int64_t l : live) peak = std::max(peak, l);
  return peak;
}

bool IsTopological(const Graph& g) {
  std::set<const Node*> done;
  for (const Node* n : g.nodes()) {
    for (const Value* v : n->inputs()) {
      if (v && v->producer() && !done.count(v->producer())) return false;
    }
    done.insert(n);
  }
  return true;
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node* n : g.nodes()) names.push_back(n->name());
  return names;
}

StatusOr<bool> RunSchedule(Graph& g, std::map<std::string, int64_t>* stats = nullptr) {
  Schedule pass;
  StatusOr<bool> changed = pass.Run(g);
  if (stats) *stats = pass.stats();
  return changed;
}

// Two branches from %x, each a big intermediate reduced to a small one; the original order
// interleaves them, so both big intermediates are live at once.
constexpr const char* kTwoBranches = R"(graph @branches opsets {"" = 17} {
  input %x : f32[8,16]
  param %w : f32[16,1024] = <elided>
  param %v : f32[1024,4] = <elided>
  %a1 = MatMul(%x, %w) : f32[8,1024] loc("a1")
  %b1 = MatMul(%x, %w) : f32[8,1024] loc("b1")
  %a2 = Relu(%a1) : f32[8,1024] loc("a2")
  %b2 = Tanh(%b1) : f32[8,1024] loc("b2")
  %a3 = MatMul(%a2, %v) : f32[8,4] loc("a3")
  %b3 = MatMul(%b2, %v) : f32[8,4] loc("b3")
  %y = Add(%a3, %b3) : f32[8,4] loc("y")
  output %y
})";

TEST(ScheduleTest, RunsIndependentBranchesOneAfterTheOther) {
  auto g = ParseIr(kTwoBranches);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int64_t before = IndependentPeak(**g);
  std::map<std::string, int64_t> stats;
  StatusOr<bool> changed = RunSchedule(**g, &stats);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(NodeNames(**g), (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2", "b3", "y"}));
  const int64_t after = IndependentPeak(**g);
  EXPECT_LT(after, before);
  EXPECT_EQ(stats["peak-bytes-before"], before);
  EXPECT_EQ(stats["peak-bytes-after"], after);
  EXPECT_EQ(stats["nodes-moved"], 4);
}

TEST(ScheduleTest, KeepsTheOriginalWhenNotBetterAndClearsThePlan) {
  auto g = ParseIr(kTwoBranches);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(RunSchedule(**g).ok());
  const std::string scheduled = PrintIrToString(**g);
  (*g)->memory_plan.emplace();
  StatusOr<bool> again = RunSchedule(**g);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);  // the plan was cleared
  EXPECT_FALSE((*g)->memory_plan.has_value());
  EXPECT_EQ(PrintIrToString(**g), scheduled);
  EXPECT_FALSE(*RunSchedule(**g));
}

TEST(ScheduleTest, OrderedNodesKeepTheirRelativeOrder) {
  auto g = ParseIr(R"(graph @ordered opsets {"" = 17} {
  input %x : f32[8,256]
  %d1, %m1 = Dropout(%x) : f32[8,256], bool[8,256] loc("d1")
  %big = Exp(%x) : f32[8,256] loc("big")
  %d2, %m2 = Dropout(%big) : f32[8,256], bool[8,256] loc("d2")
  %y = Add(%d1, %d2) : f32[8,256] loc("y")
  output %y
  output %m1
  output %m2
})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(RunSchedule(**g).ok());
  std::vector<std::string> names = NodeNames(**g);
  auto at = [&](const std::string& s) { return std::find(names.begin(), names.end(), s); };
  EXPECT_LT(at("d1"), at("d2"));
  EXPECT_TRUE(IsTopological(**g));
}

// Random DAGs: topological, deterministic, never a higher peak.
TEST(ScheduleTest, RandomDagsTopologicalDeterministicNeverWorse) {
  int improved = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    auto build = [&]() {
      std::mt19937 rng(seed);
      auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
      auto g = std::make_unique<Graph>();
      std::vector<Value*> values;
      for (int i = 0, k = pick(1, 3); i < k; ++i) {
        values.push_back(g->AddInput("in" + std::to_string(i),
                                     TensorType{DType::kF32, {pick(1, 64), pick(1, 64)}}));
      }
      for (int i = 0, n = pick(2, 60); i < n; ++i) {
        std::vector<Value*> ins;
        for (int k = 0, m = pick(1, 3); k < m; ++k) {
          ins.push_back(values[pick(0, static_cast<int>(values.size()) - 1)]);
        }
        TensorType t{pick(0, 3) ? DType::kF32 : DType::kF16, {pick(1, 64), pick(1, 64)}};
        values.push_back(
            g->AddNode("Sum", "", ins, {{"v" + std::to_string(i), t}}, {}, "n" + std::to_string(i))
                ->output(0));
      }
      g->AddOutput(values.back());
      if (pick(0, 1)) g->AddOutput(values[pick(0, static_cast<int>(values.size()) - 1)]);
      return g;
    };
    auto g = build();
    const int64_t before = IndependentPeak(*g);
    ASSERT_TRUE(RunSchedule(*g).ok()) << "seed " << seed;
    ASSERT_TRUE(IsTopological(*g)) << "seed " << seed;
    const int64_t after = IndependentPeak(*g);
    ASSERT_LE(after, before) << "seed " << seed;
    improved += after < before;
    auto again = build();
    ASSERT_TRUE(RunSchedule(*again).ok());
    ASSERT_EQ(PrintIrToString(*again), PrintIrToString(*g)) << "seed " << seed;
  }
  EXPECT_GT(improved, 10);
  std::printf("[ random DAGs ] schedule lowered the peak on %d of 300\n", improved);
}

TEST(ScheduleTest, DynamicShapeIsAnError) {
  auto g = ParseIr(R"(graph @g {
  input %x : f32[4]
  %y = Relu(%x) : f32[4]
  output %y
})");
  ASSERT_TRUE(g.ok());
  // A dim that shape inference never bound.
  (*g)->FindValue("y")->set_type(TensorType{DType::kF32, {-1}});
  StatusOr<bool> r = RunSchedule(**g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("schedule: value '%y'"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace a8
