// fuse, part 3: elementwise chains -> a8.FusedElementwise (see fuse.h; the program encoding is
// kernels/common/fused_elementwise.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/op_table.h"
#include "kernels/common/fused_elementwise.h"
#include "passes/fusion/fuse_internal.h"

namespace a8::fusion {
namespace {

// The opcode of an elementwise node (kFusedConst for a widening Cast, which is no instruction:
// its output aliases its input's register), or -1 when `n` is not one we fuse.
int32_t OpcodeOf(const Node* n) {
  // The fusable unary ops and activation gradients: the Fused column of
  // kernels/common/unary_math.h's lists (the Gelu variants are chosen by `approximate` below).
  static const std::map<std::string, int32_t> kOnnx = [] {
    // Sum(x_1..x_n) is the chain ((x_1 + x_2) + x_3) + ..., the CPU's and the device's order.
    std::map<std::string, int32_t> m = {{"Add", kFusedAdd},
                                        {"Sub", kFusedSub},
                                        {"Mul", kFusedMul},
                                        {"Div", kFusedDiv},
                                        {"Sum", kFusedAdd}};
#define A8_X(Name, Types, Cost, Fused) \
  if (Fused > 0) m[#Name] = Fused;
    A8_UNARY_OPS(A8_X)
#undef A8_X
    return m;
  }();
  static const std::map<std::string, int32_t> kA8 = [] {
    std::map<std::string, int32_t> m;
#define A8_X(Name, Reads, Cost, Fused) \
  if (Fused > 0) m[#Name "Grad"] = Fused;
    A8_ACT_GRAD_OPS(A8_X)
#undef A8_X
    return m;
  }();
  const std::string approx = n->GetString("approximate", "none");
  if (n->domain().empty()) {
    if (n->op() == "Gelu") {
      return approx == "none" ? kFusedGelu : approx == "tanh" ? kFusedGeluTanh : -1;
    }
    if (n->op() == "Cast") {
      const DType from = n->input(0)->dtype(), to = n->output(0)->dtype();
      if (to == DType::kF16) return kFusedRoundF16;
      if (to == DType::kBF16) return kFusedRoundBF16;
      if (to == DType::kF32 && from == DType::kF64) return kFusedRoundF32;
      return kFusedConst;  // f16/bf16 -> f32, anything -> f64: exact
    }
    auto it = kOnnx.find(n->op());
    return it == kOnnx.end() ? -1 : it->second;
  }
  if (n->domain() == "a8") {
    if (n->op() == "GeluGrad") {
      return approx == "none" ? kFusedGeluGrad : approx == "tanh" ? kFusedGeluTanhGrad : -1;
    }
    auto it = kA8.find(n->op());
    return it == kA8.end() ? -1 : it->second;
  }
  return -1;
}

bool OneElement(const Value* v) { return v->type().CheckedNumElements() == 1; }

bool IsSum(const Node* n) { return IsOnnxOp(n, "Sum"); }

// The instructions node `n` becomes: none for a widening Cast, n - 1 Adds for a Sum of n.
int InstructionsOf(const Node* n) {
  if (IsSum(n)) return n->num_inputs() - 1;
  return OpcodeOf(n) == kFusedConst ? 0 : 1;
}

// Whether `n` is a float elementwise node whose operands have its shape or one element.
bool Fusable(const Node* n) {
  if (n->num_outputs() != 1 || n->num_inputs() < 1 || OpcodeOf(n) < 0) return false;
  const Value* y = n->output(0);
  if (!IsFloat(y->dtype())) return false;
  const int arity = FusedOpcodeIsBinary(OpcodeOf(n)) ? 2 : 1;
  if (IsSum(n) ? n->num_inputs() < 2 : n->num_inputs() != arity) return false;
  for (const Value* in : n->inputs()) {
    if (in == nullptr || !IsFloat(in->dtype())) return false;
    if (in->dims() != y->dims() && (!OneElement(in) || in->dims().size() > y->dims().size())) {
      return false;
    }
  }
  return true;
}

// A one-element float constant whose value is exact in float: folded into the program.
bool Embeddable(const Value* v) {
  if (!v->is_constant() || !OneElement(v) || !IsFloat(v->dtype())) return false;
  const double d = v->data()->GetDouble(0);
  return static_cast<double>(static_cast<float>(d)) == d || d != d;
}

struct Group {
  std::vector<Node*> members;  // graph order
  std::vector<Value*> inputs;  // external, in first-use order
  std::vector<Value*> constants;
  int instructions = 0;
};

// The group's external inputs and constants, and its instruction count; false when it breaks a
// limit or mixes input dtypes.
bool Analyze(Group* g) {
  std::set<const Value*> internal;
  for (const Node* m : g->members) internal.insert(m->output(0));
  g->inputs.clear();
  g->constants.clear();
  g->instructions = 0;
  for (const Node* m : g->members) {
    g->instructions += InstructionsOf(m);
    for (Value* in : m->inputs()) {
      if (internal.count(in) > 0) continue;
      std::vector<Value*>& list = Embeddable(in) ? g->constants : g->inputs;
      if (std::find(list.begin(), list.end(), in) == list.end()) list.push_back(in);
    }
  }
  g->instructions += static_cast<int>(g->constants.size());
  if (g->inputs.empty() || static_cast<int>(g->inputs.size()) > kFusedMaxInputs ||
      static_cast<int>(g->constants.size()) > kFusedMaxConsts ||
      g->instructions > kFusedMaxInstrs) {
    return false;
  }
  for (const Value* in : g->inputs) {
    if (in->dtype() != g->inputs[0]->dtype()) return false;
  }
  return true;
}

// Grows the group of `root` backwards through single-use producers.
// `taken` and `position` are indexed by Node::id() (nodes made after they were filled are
// never a member's producer; they count as taken).
Group Grow(Node* root, const std::vector<char>& taken, const std::vector<size_t>& position) {
  auto is_taken = [&](const Node* n) {
    return static_cast<size_t>(n->id()) >= taken.size() || taken[n->id()] != 0;
  };
  auto before = [&](const Node* a, const Node* b) { return position[a->id()] < position[b->id()]; };
  Group g;
  g.members = {root};
  const std::vector<int64_t>& dims = root->output(0)->dims();
  for (size_t i = 0; i < g.members.size(); ++i) {
    std::vector<Value*> operands = g.members[i]->inputs();
    for (Value* v : operands) {
      Node* p = v->producer();
      if (p == nullptr || is_taken(p) || v->uses().size() != 1 || v->is_graph_output() ||
          v->dims() != dims || !Fusable(p) ||
          std::find(g.members.begin(), g.members.end(), p) != g.members.end()) {
        continue;
      }
      g.members.push_back(p);
      std::vector<Node*> sorted = g.members;
      std::sort(sorted.begin(), sorted.end(), before);
      Group trial = g;
      trial.members = sorted;
      if (!Analyze(&trial)) g.members.pop_back();
    }
  }
  std::sort(g.members.begin(), g.members.end(), before);
  return g;
}

// Whether the fused node's shape rule gives the root's dims: some input must have them.
bool ShapeAgrees(const Group& g, const Node* root) {
  for (const Value* in : g.inputs) {
    if (in->dims() == root->output(0)->dims()) return true;
  }
  return false;
}

// Whether the math precision (float unless the input or output dtype is f64) covers every member.
bool PrecisionAgrees(const Group& g, const Node* root) {
  const bool wide = g.inputs[0]->dtype() == DType::kF64 || root->output(0)->dtype() == DType::kF64;
  if (wide) return true;
  for (const Node* m : g.members) {
    if (m->output(0)->dtype() == DType::kF64) return false;
  }
  return true;
}

Status Emit(Graph& graph, const Group& g) {
  Node* root = g.members.back();
  std::map<const Value*, int64_t> reg;
  for (size_t i = 0; i < g.inputs.size(); ++i) reg[g.inputs[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> code;
  std::vector<float> constants;
  int64_t next = static_cast<int64_t>(g.inputs.size());
  for (size_t c = 0; c < g.constants.size(); ++c) {
    constants.push_back(static_cast<float>(g.constants[c]->data()->GetDouble(0)));
    code.insert(code.end(), {kFusedConst, next, static_cast<int64_t>(c), 0});
    reg[g.constants[c]] = next++;
  }
  for (const Node* m : g.members) {
    const int32_t op = OpcodeOf(m);
    if (op == kFusedConst) {
      reg[m->output(0)] = reg.at(m->input(0));
      continue;
    }
    if (IsSum(m)) {
      int64_t acc = reg.at(m->input(0));
      for (int k = 1; k < m->num_inputs(); ++k) {
        code.insert(code.end(), {kFusedAdd, next, acc, reg.at(m->input(k))});
        acc = next++;
      }
      reg[m->output(0)] = acc;
      continue;
    }
    const int64_t src1 = FusedOpcodeIsBinary(op) ? reg.at(m->input(1)) : 0;
    code.insert(code.end(), {op, next, reg.at(m->input(0)), src1});
    reg[m->output(0)] = next++;
  }
  // The result is the last instruction's register: the root must be an instruction.
  if (OpcodeOf(root) == kFusedConst) return Status::Ok();
  std::map<std::string, Attribute> attrs;
  attrs["program"] = Attribute(std::move(code));
  if (!constants.empty()) attrs["constants"] = Attribute(std::move(constants));
  const DType in_dtype = g.inputs[0]->dtype(), out_dtype = root->output(0)->dtype();
  if (out_dtype != in_dtype) attrs["to"] = Attribute(int64_t{DTypeToOnnx(out_dtype)});
  return EmitFused(graph, "FusedElementwise", g.inputs, std::move(attrs), root, root, g.members,
                   {root->output(0)});
}

}  // namespace

StatusOr<int> FuseElementwiseChains(Graph& graph, Stats* stats) {
  const std::vector<Node*> order = graph.NodeList();
  // By Node::id(): maps keyed by node grew faster than the graph.
  std::vector<size_t> position(graph.node_id_bound(), 0);
  // The ids of `order`, read now: a member of a group already fused is erased (and taken), so
  // the loop must not dereference it to ask.
  std::vector<int> ids(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    ids[i] = order[i]->id();
    position[ids[i]] = i;
  }
  std::vector<char> taken(graph.node_id_bound(), 0);
  int fused = 0;
  // Last to first: a group grows from its root (the node whose result leaves it) backwards.
  for (size_t i = order.size(); i-- > 0;) {
    if (taken[ids[i]]) continue;
    Node* root = order[i];
    if (!Fusable(root)) continue;
    Group g = Grow(root, taken, position);
    // A lone Sum fuses too: the Sum kernel copies its accumulator every input.
    if ((g.members.size() < 2 && !IsSum(root)) || !Analyze(&g) || !ShapeAgrees(g, root) ||
        !PrecisionAgrees(g, root) || OpcodeOf(root) == kFusedConst) {
      continue;
    }
    for (const Node* m : g.members) taken[m->id()] = 1;
    A8_RETURN_IF_ERROR(Emit(graph, g));
    (*stats)["elementwise-nodes-fused"] += static_cast<int64_t>(g.members.size());
    ++(*stats)["elementwise-chains-fused"];
    ++fused;
  }
  return fused;
}

}  // namespace a8::fusion
