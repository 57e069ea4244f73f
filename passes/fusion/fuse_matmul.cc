// fuse, part 1: GEMM epilogues -> a8.FusedMatMul (see fuse.h).
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "passes/fusion/fuse_internal.h"

namespace a8::fusion {
namespace {

// A product the epilogue can follow: A [..., M, K] (rank >= 2) times a 2-D B, all one float dtype.
struct Product {
  Node* node = nullptr;
  Value* a = nullptr;
  Value* b = nullptr;
  Value* bias = nullptr;  // Gemm's C, when it is a bias
  bool trans_b = false;
};

bool IsBias(const Value* v, int64_t n, DType dtype) {
  if (v == nullptr || v->dtype() != dtype) return false;
  const std::vector<int64_t>& d = v->dims();
  return (d.size() == 1 && d[0] == n) || (d.size() == 2 && d[0] == 1 && d[1] == n);
}

// `n` as a Product, or nullopt-like (node null) when it is not one we fuse.
Product AsProduct(Node* n) {
  Product p;
  if (n->num_outputs() != 1) return p;
  const bool matmul = IsOnnxOp(n, "MatMul");
  const bool gemm = IsOnnxOp(n, "Gemm");
  if (!matmul && !gemm) return p;
  Value* a = n->input(0);
  Value* b = n->input(1);
  const DType t = n->output(0)->dtype();
  if (a == nullptr || b == nullptr || !IsFloat(t) || a->dtype() != t || b->dtype() != t) return p;
  if (a->dims().size() < 2 || b->dims().size() != 2) return p;
  if (gemm) {
    if (n->GetInt("transA", 0) != 0 || n->GetFloat("alpha", 1.0f) != 1.0f ||
        a->dims().size() != 2) {
      return p;
    }
    p.trans_b = n->GetInt("transB", 0) != 0;
    if (n->has_input(2)) {
      const int64_t cols = n->output(0)->dims().back();
      if (n->GetFloat("beta", 1.0f) != 1.0f || !IsBias(n->input(2), cols, t)) return p;
      p.bias = n->input(2);
    }
  }
  p.node = n;
  p.a = a;
  p.b = b;
  return p;
}

// A Relu / Gelu reading `v` (same type), or null.
Node* ActivationOf(const Value* v) {
  for (const Use& u : v->uses()) {
    Node* n = u.node;
    if ((IsOnnxOp(n, "Relu") || IsOnnxOp(n, "Gelu")) && n->num_outputs() == 1 &&
        n->output(0)->type() == v->type()) {
      return n;
    }
  }
  return nullptr;
}

// A ReduceSum(keepdims=0) of `v` over every dim but the last, or null.
Node* BiasGradientOf(const Value* v) {
  const int64_t rank = static_cast<int64_t>(v->dims().size());
  for (const Use& u : v->uses()) {
    Node* n = u.node;
    if (!IsOnnxOp(n, "ReduceSum") || u.operand != 0 || n->GetInt("keepdims", 1) != 0) continue;
    const Value* axes = n->input(1);
    if (axes == nullptr || !axes->is_constant()) continue;
    std::set<int64_t> seen;
    for (int64_t ax : axes->data()->ToInt64Vector()) seen.insert(ax < 0 ? ax + rank : ax);
    bool all_but_last = static_cast<int64_t>(seen.size()) == rank - 1;
    for (int64_t d = 0; d + 1 < rank; ++d) all_but_last = all_but_last && seen.count(d) > 0;
    if (all_but_last && n->output(0)->dtype() == v->dtype()) return n;
  }
  return nullptr;
}

struct Plan {
  Product product;
  std::string epilogue;
  std::string approximate = "none";
  Value* aux = nullptr;         // backward: the grad's saved operand
  std::vector<Node*> members;   // in graph order
  std::vector<Value*> outputs;  // replaced by the fused node's outputs 0 (and 1)
  Node* insert_before = nullptr;
};

// Forward: product [+ bias] [+ activation].
bool PlanForward(const Product& p, Plan* plan) {
  plan->product = p;
  plan->members = {p.node};
  Value* pre = p.node->output(0);
  bool bias = p.bias != nullptr;
  plan->insert_before = p.node;
  if (!bias) {
    int operand = 0;
    Node* add = SoleUser(pre, &operand);
    if (IsOnnxOp(add, "Add") && add->output(0)->type() == pre->type() &&
        IsBias(add->input(1 - operand), pre->dims().back(), pre->dtype()) &&
        add->input(1 - operand)->dims().size() == 1) {
      plan->product.bias = add->input(1 - operand);
      plan->members.push_back(add);
      pre = add->output(0);
      plan->insert_before = add;
      bias = true;
    }
  }
  Node* act = ActivationOf(pre);
  if (act == nullptr) {
    // A lone Gemm is one kernel already; MatMul + Add becomes one.
    if (p.bias != nullptr || !bias) return false;
    plan->epilogue = "bias";
    plan->outputs = {pre};
    return true;
  }
  const bool gelu = IsOnnxOp(act, "Gelu");
  if (gelu) {
    plan->approximate = act->GetString("approximate", "none");
    if (plan->approximate != "none" && plan->approximate != "tanh") return false;
  }
  plan->epilogue = std::string(bias ? "bias_" : "") + (gelu ? "gelu" : "relu");
  plan->members.push_back(act);
  plan->outputs = {act->output(0)};
  // The pre-activation as output 1 when anything else reads it (a8.GeluGrad reads x).
  if (pre->uses().size() > 1 || pre->is_graph_output()) plan->outputs.push_back(pre);
  return true;
}

// Backward: product -> a8.ReluGrad / a8.GeluGrad as dy [-> bias-gradient ReduceSum].
bool PlanBackward(const Product& p, Plan* plan) {
  if (p.bias != nullptr) return false;
  int operand = -1;
  Node* grad = SoleUser(p.node->output(0), &operand);
  if (grad == nullptr || operand != 0 || grad->domain() != "a8" || grad->num_outputs() != 1) {
    return false;
  }
  const bool relu = grad->op() == "ReluGrad";
  if (!relu && grad->op() != "GeluGrad") return false;
  Value* aux = grad->input(1);
  if (aux == nullptr || aux->type() != p.node->output(0)->type() ||
      grad->output(0)->type() != aux->type()) {
    return false;
  }
  plan->product = p;
  plan->aux = aux;
  plan->epilogue = relu ? "drelu" : "dgelu";
  if (!relu) {
    plan->approximate = grad->GetString("approximate", "none");
    if (plan->approximate != "none" && plan->approximate != "tanh") return false;
  }
  plan->members = {p.node, grad};
  plan->outputs = {grad->output(0)};
  plan->insert_before = grad;
  if (Node* sum = BiasGradientOf(grad->output(0))) {
    plan->epilogue += "_bgrad";
    plan->members.push_back(sum);
    plan->outputs.push_back(sum->output(0));
  }
  return true;
}

Status Emit(Graph& graph, const Plan& plan) {
  std::map<std::string, Attribute> attrs;
  attrs["epilogue"] = Attribute(plan.epilogue);
  if (plan.product.trans_b) attrs["trans_b"] = Attribute(int64_t{1});
  if (plan.epilogue.find("gelu") != std::string::npos) {
    attrs["approximate"] = Attribute(plan.approximate);
  }
  std::vector<Value*> inputs = {plan.product.a, plan.product.b};
  if (plan.product.bias != nullptr) inputs.push_back(plan.product.bias);
  if (plan.aux != nullptr) {
    inputs.push_back(nullptr);
    inputs.push_back(plan.aux);
  }
  return EmitFused(graph, "FusedMatMul", std::move(inputs), std::move(attrs), plan.product.node,
                   plan.insert_before, plan.members, plan.outputs);
}

}  // namespace

StatusOr<int> FuseMatMulEpilogues(Graph& graph, Stats* stats) {
  int fused = 0;
  std::set<const Node*> gone;
  for (Node* n : graph.NodeList()) {
    if (gone.count(n) > 0) continue;
    const Product p = AsProduct(n);
    if (p.node == nullptr) continue;
    Plan plan;
    const bool forward = PlanForward(p, &plan);
    if (!forward) {
      plan = Plan();
      if (!PlanBackward(p, &plan)) continue;
    }
    for (const Node* m : plan.members) gone.insert(m);
    A8_RETURN_IF_ERROR(Emit(graph, plan));
    ++(*stats)[forward ? "gemm-epilogues-fused" : "gemm-backward-epilogues-fused"];
    ++fused;
  }
  return fused;
}

}  // namespace a8::fusion
