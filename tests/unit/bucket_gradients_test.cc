// bucket-gradients (BucketGradients) on a 3-layer MLP, for several bucket sizes: every gradient
// the step reads is the average an a8.AllReduceWait returns; each bucket starts after the last of
// its gradients is produced and each wait comes before the first reader; buckets hold one dtype,
// follow backward's order and close once they reach --bucket-mb.
#include "passes/distributed/bucket_gradients.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "driver/driver.h"

namespace a8 {
namespace {

constexpr const char* kMlp = R"(graph @mlp opsets {"" = 17} {
  input %x : f32[4,4]
  param %w1 : f32[4,8] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5, 0.75, -1.0, 0.5, 0.25, -0.125, 0.625, -0.375, 0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5, 0.75, -1.0, 0.5, 0.25, -0.125, 0.625, -0.375]
  param %b1 : f32[8] = [0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4]
  param %w2 : f32[8,4] = [0.25, 0.5, -0.5, 0.75, -0.25, 1.0, 0.125, -0.625, 0.375, -0.75, 0.5, 0.25, 1.25, 0.5, -0.25, 0.125, 0.25, 0.5, -0.5, 0.75, -0.25, 1.0, 0.125, -0.625, 0.375, -0.75, 0.5, 0.25, 1.25, 0.5, -0.25, 0.125]
  param %w3 : f32[4,4] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5, 0.75, -1.0, 0.5, 0.25, -0.125, 0.625, -0.375]
  %h = MatMul(%x, %w1) : f32[4,8]
  %hb = Add(%h, %b1) : f32[4,8]
  %r = Relu(%hb) : f32[4,8]
  %h2 = MatMul(%r, %w2) : f32[4,4]
  %r2 = Tanh(%h2) : f32[4,4]
  %y = MatMul(%r2, %w3) : f32[4,4]
  output %y
})";

struct Bucketed {
  std::unique_ptr<Graph> graph;
  std::vector<const Node*> starts;  // in node order
  std::vector<const Node*> waits;
};

Bucketed Compile(double bucket_mb, const char* ir = kMlp) {
  Bucketed out;
  auto g = ParseIr(ir);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return out;
  out.graph = std::move(*g);
  TrainingConfig training;
  training.loss = "mse";
  training.logits = "y";
  training.optimizer = "sgd";
  training.bucket_mb = bucket_mb;
  CompileConfig config;
  config.training = training;
  PassManagerOptions pm;
  pm.verify_each = true;
  pm.config = &config;
  Status s = RunPasses(
      *out.graph, {"shape-inference", "build-training", "loss-scaling", "bucket-gradients"}, pm);
  EXPECT_TRUE(s.ok()) << s.message();
  for (const Node* n : out.graph->nodes()) {
    if (n->IsInternal("AllReduceStart")) out.starts.push_back(n);
    if (n->IsInternal("AllReduceWait")) out.waits.push_back(n);
  }
  return out;
}

int64_t Bytes(const Value* v) {
  int64_t n = 4;
  for (int64_t d : v->dims()) n *= d;
  return n;
}

TEST(BucketGradientsTest, EveryGradientIsAveragedOnceAndReadOnlyAsTheAverage) {
  for (double mb : {25.0, 0.0001, 0.00005}) {
    SCOPED_TRACE(mb);
    Bucketed b = Compile(mb);
    ASSERT_NE(b.graph, nullptr);
    // Four parameters, four gradients, each in exactly one bucket and waited for once.
    std::set<const Value*> started;
    for (const Node* s : b.starts) {
      for (const Value* v : s->inputs()) EXPECT_TRUE(started.insert(v).second) << v->name();
    }
    EXPECT_EQ(started.size(), 4u);
    ASSERT_EQ(b.waits.size(), 4u);
    for (const Node* w : b.waits) {
      const Value* grad = w->input(1);
      EXPECT_EQ(started.count(grad), 1u) << grad->name();
      // Nobody but the bucket's start and its wait reads the raw gradient.
      for (const Use& u : grad->uses()) {
        EXPECT_TRUE(u.node->IsInternal("AllReduceStart") || u.node == w)
            << grad->name() << " read by " << u.node->Where();
      }
      EXPECT_EQ(w->output(0)->name(), grad->name() + ".avg");
      EXPECT_FALSE(w->output(0)->uses().empty());
    }
    EXPECT_TRUE(Verify(*b.graph).ok());
  }
}

TEST(BucketGradientsTest, StartsFollowTheirLastGradientAndWaitsPrecedeTheFirstReader) {
  Bucketed b = Compile(0.0001);  // closes a bucket at 104.9 bytes: more than one bucket
  ASSERT_NE(b.graph, nullptr);
  EXPECT_GT(b.starts.size(), 1u);
  std::map<const Node*, size_t> order;
  for (const Node* n : b.graph->nodes()) order.emplace(n, order.size());
  for (const Node* s : b.starts) {
    size_t last_producer = 0;
    int64_t bytes = 0;
    for (const Value* v : s->inputs()) {
      last_producer = std::max(last_producer, order.at(v->producer()));
      bytes += Bytes(v);
      EXPECT_EQ(v->dtype(), s->input(0)->dtype());
    }
    // Right after the last gradient of the bucket (nothing else in between).
    EXPECT_EQ(order.at(s), last_producer + 1) << s->Where();
    // A bucket closes once it reaches the limit: without its last gradient it was under it.
    const int64_t before_last = bytes - Bytes(s->input(s->num_inputs() - 1));
    EXPECT_LT(before_last, 0.0001 * 1024 * 1024) << s->Where();
  }
  for (const Node* w : b.waits) {
    size_t first_reader = SIZE_MAX;
    for (const Use& u : w->output(0)->uses())
      first_reader = std::min(first_reader, order.at(u.node));
    EXPECT_EQ(order.at(w) + 1, first_reader) << w->Where();
  }
  // Buckets are numbered in the order they start, which is backward's order: w3 (the last
  // layer) is in the first bucket.
  for (size_t i = 0; i < b.starts.size(); ++i) {
    EXPECT_EQ(b.starts[i]->GetInt("bucket", -1), static_cast<int64_t>(i));
  }
  ASSERT_FALSE(b.starts.empty());
  bool w3_first = false;
  for (const Value* v : b.starts[0]->inputs()) {
    for (const Use& u : v->uses()) {
      if (u.node->IsInternal("AllReduceWait")) {
        for (const Use& r : u.node->output(0)->uses()) {
          for (const Value* in : r.node->inputs()) w3_first |= in != nullptr && in->name() == "w3";
        }
      }
    }
  }
  EXPECT_TRUE(w3_first);
}

TEST(BucketGradientsTest, ALargerLimitMakesFewerBuckets) {
  EXPECT_EQ(Compile(25.0).starts.size(), 1u);
  EXPECT_GT(Compile(0.00005).starts.size(), Compile(25.0).starts.size());
}

// With batch 1 a bias the shape of its activation has the activation's gradient as its own
// (no ReduceSum over the batch), and the node that reads it (MatMul's gradient) produces the
// next parameter's gradient: the two cannot share a bucket (one bucket was a cycle, found on the
// BERT-style example model at --batch=1).
TEST(BucketGradientsTest, AGradientReadByTheNextGradientsProducerClosesItsBucket) {
  constexpr const char* kBatchOne = R"(graph @b1 opsets {"" = 17} {
  input %x : f32[1,4]
  param %w1 : f32[4,4] = [0.5, -0.25, 0.125, 1.0, -0.75, 0.375, 0.25, -0.5, 1.5, 0.75, -1.0, 0.5, 0.25, -0.125, 0.625, -0.375]
  param %b1 : f32[1,4] = [0.1, -0.1, 0.2, -0.2]
  %h = MatMul(%x, %w1) : f32[1,4]
  %hb = Add(%h, %b1) : f32[1,4]
  %y = Tanh(%hb) : f32[1,4]
  output %y
})";
  Bucketed b = Compile(25.0, kBatchOne);
  ASSERT_NE(b.graph, nullptr);
  EXPECT_EQ(b.starts.size(), 2u);
  EXPECT_EQ(b.waits.size(), 2u);
  EXPECT_TRUE(Verify(*b.graph).ok());
}

}  // namespace
}  // namespace a8
