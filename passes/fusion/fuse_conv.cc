// fuse, part 2: convolution epilogues -> a8.FusedConv (see fuse.h).
#include <set>
#include <string>
#include <vector>

#include "passes/fusion/fuse_internal.h"

namespace a8::fusion {
namespace {

// A Conv, then an Add of a tensor of its output's type (the residual) and / or a Relu, each the
// sole reader of the value before it.
struct ConvPlan {
  Node* conv = nullptr;
  Value* z = nullptr;
  bool relu = false;
  std::vector<Node*> members;  // in graph order
  Value* output = nullptr;     // replaced by the fused node's output
};

bool PlanConv(Node* conv, ConvPlan* plan) {
  if (!IsOnnxOp(conv, "Conv") || conv->num_outputs() != 1) return false;
  Value* y = conv->output(0);
  if (!IsFloat(y->dtype())) return false;
  plan->conv = conv;
  plan->members = {conv};
  int operand = 0;
  Node* next = SoleUser(y, &operand);
  if (IsOnnxOp(next, "Add") && next->num_inputs() == 2 && next->output(0)->type() == y->type()) {
    Value* z = next->input(1 - operand);
    if (z != nullptr && z != y && z->type() == y->type()) {
      plan->z = z;
      plan->members.push_back(next);
      y = next->output(0);
      next = SoleUser(y);
    }
  }
  if (IsOnnxOp(next, "Relu") && next->output(0)->type() == y->type()) {
    plan->relu = true;
    plan->members.push_back(next);
    y = next->output(0);
  }
  plan->output = y;
  return plan->members.size() > 1;
}

Status Emit(Graph& graph, const ConvPlan& plan) {
  std::map<std::string, Attribute> attrs = plan.conv->attrs();
  attrs["activation"] = Attribute(plan.relu ? "relu" : "none");
  std::vector<Value*> inputs = {plan.conv->input(0), plan.conv->input(1),
                                plan.conv->has_input(2) ? plan.conv->input(2) : nullptr};
  if (plan.z != nullptr) inputs.push_back(plan.z);
  while (inputs.back() == nullptr) inputs.pop_back();
  return EmitFused(graph, "FusedConv", std::move(inputs), std::move(attrs), plan.conv,
                   plan.members.back(), plan.members, {plan.output});
}

}  // namespace

StatusOr<int> FuseConvEpilogues(Graph& graph, Stats* stats) {
  int fused = 0;
  std::set<const Node*> gone;  // erased members later in the snapshot
  for (Node* n : graph.NodeList()) {
    if (gone.count(n) > 0) continue;
    ConvPlan plan;
    if (!PlanConv(n, &plan)) continue;
    gone.insert(plan.members.begin(), plan.members.end());
    A8_RETURN_IF_ERROR(Emit(graph, plan));
    ++(*stats)["conv-epilogues-fused"];
    ++fused;
  }
  return fused;
}

}  // namespace a8::fusion
