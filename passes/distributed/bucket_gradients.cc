// bucket-gradients: all-reduce start/wait nodes around the gradients (see bucket_gradients.h).
#include "passes/distributed/bucket_gradients.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/autodiff/build_training.h"

namespace a8 {
namespace {

// The gradients the step reduces, deduplicated, in no particular order. With --accumulate=k
// they are the accumulators' new values (a8.GradAccumulate's outputs), reduced only on the
// update steps (`*every` = k): each rank sums its own micro-batches, and the window's sum is
// averaged across ranks once, k times less traffic than reducing every micro-step. Between
// updates the accumulators differ by rank, and nothing but the next accumulation reads them.
std::vector<Value*> Gradients(const Graph& graph, const std::vector<Node*>& nodes, int64_t* every) {
  std::vector<Value*> grads;
  std::vector<bool> seen(graph.value_id_bound(), false);  // by Value::id()
  *every = 1;
  auto add = [&](Value* v) {
    if (v != nullptr && v->producer() != nullptr && v->producer()->IsInternal("GradAccumulate")) {
      *every = std::max<int64_t>(*every, v->producer()->GetInt("accumulate", 1));
    }
    if (v != nullptr && v->role() == ValueRole::kIntermediate && !seen[v->id()]) {
      seen[v->id()] = true;
      grads.push_back(v);
    }
  };
  bool scaled = false;
  for (Node* n : nodes) {
    if (!n->IsInternal("UnscaleCheckFinite")) continue;
    scaled = true;
    for (int i = 1; i < n->num_inputs(); ++i) add(n->input(i));
  }
  if (scaled) return grads;
  for (Node* n : nodes) {
    if (n->IsInternal("SgdUpdate") || n->IsInternal("AdamUpdate")) add(n->input(1));
    if (n->IsInternal("GlobalNormSq")) {
      for (Value* v : n->inputs()) add(v);
    }
  }
  return grads;
}

}  // namespace

StatusOr<bool> BucketGradients::Run(Graph& graph) {
  A8_RETURN_IF_ERROR(CheckTrainingRecord(graph, "bucket-gradients"));
  if (!graph.train_step) return false;
  // --bucket-mb and --allreduce-dtype were checked with the other flags (CheckTrainingConfig).
  const TrainingConfig& cfg = config().training_or_defaults();
  const std::vector<Node*> nodes = graph.NodeList();
  std::vector<int> by_id(graph.node_id_bound(), 0);  // program position, by Node::id()
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) by_id[nodes[i]->id()] = i;
  auto position = [&](const Node* n) { return by_id[n->id()]; };
  int64_t every = 1;
  std::vector<Value*> grads = Gradients(graph, nodes, &every);
  // A gradient the user reads as a graph output stays this rank's own (an accumulator that is
  // only an update source, is_graph_output() too, is reduced).
  const std::set<const Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  grads.erase(std::remove_if(grads.begin(), grads.end(),
                             [&](const Value* v) { return outputs.count(v) > 0; }),
              grads.end());
  if (grads.empty()) return false;
  auto produced = [&](const Value* v) { return position(v->producer()); };
  auto first_read = [&](const Value* v) {
    int first = static_cast<int>(nodes.size());
    for (const Use& u : v->uses()) first = std::min(first, position(u.node));
    return first;
  };
  std::stable_sort(grads.begin(), grads.end(),
                   [&](const Value* a, const Value* b) { return produced(a) < produced(b); });

  // Buckets in production order, one open bucket per dtype.
  struct Bucket {
    std::vector<Value*> grads;
    int64_t bytes = 0;
    int first_read = 0;  // the earliest reader of any of its gradients
  };
  const int64_t limit = static_cast<int64_t>(cfg.bucket_mb * 1024 * 1024);
  std::vector<Bucket> buckets;
  std::map<DType, Bucket> open;
  auto close = [&](DType t) {
    auto it = open.find(t);
    if (it == open.end()) return;
    buckets.push_back(std::move(it->second));
    open.erase(it);
  };
  for (Value* g : grads) {
    const DType t = g->dtype();
    // A bucket must be waited for before its first reader, so a gradient produced at or after
    // that reader starts a new one. "At": with batch 1 a parameter's gradient can be an
    // activation gradient too (a ReduceSum over a batch axis of 1 folds away), read by the very
    // node that produces the next parameter's gradient; one bucket for both was a cycle.
    if (open.count(t) > 0 && open[t].first_read <= produced(g)) close(t);
    Bucket& b = open[t];
    if (b.grads.empty()) b.first_read = first_read(g);
    b.grads.push_back(g);
    b.bytes += g->type().CheckedNumElements() * static_cast<int64_t>(DTypeSize(t));
    b.first_read = std::min(b.first_read, first_read(g));
    if (b.bytes >= limit) close(t);
  }
  while (!open.empty()) close(open.begin()->first);
  std::stable_sort(buckets.begin(), buckets.end(), [&](const Bucket& a, const Bucket& b) {
    return produced(a.grads.back()) < produced(b.grads.back());
  });

  const OpDef* start_def = FindOp("a8", "AllReduceStart");
  const OpDef* wait_def = FindOp("a8", "AllReduceWait");
  if (start_def == nullptr || wait_def == nullptr) {
    return Internal("bucket-gradients: the op table has no a8.AllReduceStart/Wait");
  }
  int64_t bytes = 0, gradients = 0;
  for (int k = 0; k < static_cast<int>(buckets.size()); ++k) {
    const Bucket& b = buckets[k];
    int last = 0;
    for (Value* g : b.grads) last = std::max(last, produced(g));
    Node* after_last = last + 1 < static_cast<int>(nodes.size()) ? nodes[last + 1] : nullptr;
    const std::string bucket_name = "a8.bucket" + std::to_string(k);
    std::map<std::string, Attribute> start_attrs = {{"bucket", Attribute(static_cast<int64_t>(k))},
                                                    {"dtype", Attribute(cfg.allreduce_dtype)}};
    std::map<std::string, Attribute> wait_attrs = {{"bucket", Attribute(static_cast<int64_t>(k))}};
    if (every > 1) {
      start_attrs.emplace("every", Attribute(every));
      wait_attrs.emplace("every", Attribute(every));
    }
    Node* start =
        graph.AddNode("AllReduceStart", "a8", b.grads,
                      {{graph.UniqueName(bucket_name + ".token"), TensorType{DType::kF32, {}}}},
                      start_attrs, graph.UniqueName(bucket_name), after_last);
    start->set_version(start_def->canonical);
    const std::string wait_name = graph.UniqueName(bucket_name + ".wait");
    for (Value* g : b.grads) {
      std::vector<Use> uses;
      for (const Use& u : g->uses()) {
        if (u.node != start) uses.push_back(u);
      }
      Node* first = nullptr;
      for (const Use& u : uses) {
        if (first == nullptr || position(u.node) < position(first)) first = u.node;
      }
      // (AddNode gives the output a unique name: `<g>.avg`, else `<g>.avg.1`, ...)
      Node* wait = graph.AddNode("AllReduceWait", "a8", {start->output(0), g},
                                 {{g->name() + ".avg", g->type()}}, wait_attrs, wait_name, first);
      wait->set_version(wait_def->canonical);
      for (const Use& u : uses) u.node->SetInput(u.operand, wait->output(0));
      bytes += g->type().CheckedNumElements() * static_cast<int64_t>(DTypeSize(g->dtype()));
    }
    gradients += static_cast<int64_t>(b.grads.size());
  }
  stats_["bytes"] = bytes;
  stats_["gradients"] = gradients;
  stats_["buckets"] = static_cast<int64_t>(buckets.size());
  graph.memory_plan.reset();
  return true;
}

}  // namespace a8
