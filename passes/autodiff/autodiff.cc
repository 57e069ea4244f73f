// Reverse-mode autodiff over the IR (see autodiff.h).
#include "passes/autodiff/autodiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "compiler/ir/op_table.h"
#include "kernels/cpu/dtype.h"
#include "passes/autodiff/grad_rule.h"

namespace a8 {
namespace {

// A tensor of `type` with every element `value` (float types and integers).
TensorDataPtr Filled(const TensorType& type, double value) {
  auto data = TensorData::Make(type);
  const int64_t n = data->num_elements();
  (void)cpu::Dispatch<cpu::TypeSet::kAll>(type.dtype, "Filled", [&](auto tag) {
    using T = A8_TAG_TYPE(tag);
    if constexpr (sizeof(T) == 1) {  // i8, u8 and bool: the byte
      std::fill_n(data->mutable_data<uint8_t>(), n, static_cast<uint8_t>(value));
    } else {  // in float (f16, bf16, f32), double or the integer type, then stored
      std::fill_n(data->mutable_data<T>(), n, cpu::Store<T>(static_cast<cpu::Compute<T>>(value)));
    }
    return Status::Ok();
  });
  return data;
}

std::pair<std::string, std::string> SplitQualified(std::string_view qualified) {
  const size_t dot = qualified.rfind('.');
  if (dot == std::string_view::npos) return {"", std::string(qualified)};
  return {std::string(qualified.substr(0, dot)), std::string(qualified.substr(dot + 1))};
}

class Engine;

class Context : public GradContext {
 public:
  Context(Engine* engine, const Node* node) : engine_(engine), node_(node) {}
  const Node& node() const override { return *node_; }
  Value* output_grad(int i) const override;
  bool needs_grad(int i) const override;
  Status SetInputGrad(int i, Value* g) override;
  StatusOr<std::vector<Value*>> Emit(std::string_view qualified_op, std::vector<Value*> inputs,
                                     std::map<std::string, Attribute> attrs,
                                     int num_outputs) override;
  Value* ConstInts(const std::vector<int64_t>& values) override;
  Value* ConstScalar(DType dtype, double value) override;

 private:
  Engine* engine_;
  const Node* node_;
};

class Engine {
 public:
  Engine(Graph& graph, const GradientOptions& options) : graph_(graph), options_(options) {}

  StatusOr<std::vector<Value*>> Run(Value* loss, const std::vector<Value*>& wrt) {
    for (const Node* n : graph_.nodes()) node_names_.insert(n->name());
    if (!IsFloat(loss->dtype())) {
      return InvalidInput("the loss '{}' has type {}; it must be a float tensor", loss->name(),
                          loss->type().ToString());
    }
    const std::vector<Node*> nodes = graph_.NodeList();
    // Values that depend on a `wrt` value, and values the loss depends on.
    std::set<const Value*> from_wrt(wrt.begin(), wrt.end());
    for (const Node* n : nodes) {
      bool reached = false;
      for (const Value* v : n->inputs()) reached |= v != nullptr && from_wrt.count(v) > 0;
      if (!reached) continue;
      for (const Value* v : n->outputs()) {
        if (IsFloat(v->dtype())) from_wrt.insert(v);
      }
    }
    std::set<const Value*> to_loss = {loss};
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      bool reaches = false;
      for (const Value* v : (*it)->outputs()) reaches |= to_loss.count(v) > 0;
      if (!reaches) continue;
      for (const Value* v : (*it)->inputs()) {
        if (v != nullptr) to_loss.insert(v);
      }
    }
    for (const Value* v : from_wrt) {
      if (to_loss.count(v) > 0 && IsFloat(v->dtype())) active_.insert(v);
    }

    Value* seed = options_.seed;
    if (seed == nullptr) {
      seed = graph_.AddConstant(graph_.UniqueName(loss->name() + ".grad.seed"),
                                Filled(loss->type(), 1.0));
    } else if (seed->type() != loss->type()) {
      return Internal("autodiff: the seed {} does not have the loss's type {}",
                      seed->type().ToString(), loss->type().ToString());
    }
    if (active_.count(loss) > 0) contributions_[loss].push_back(seed);

    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      bool any_grad = false;
      output_grads_.clear();
      for (int i = 0; i < n->num_outputs(); ++i) {
        A8_ASSIGN_OR_RETURN(Value * g, Total(n->output(i)));
        output_grads_.push_back(g);
        any_grad |= g != nullptr;
      }
      if (!any_grad) continue;
      bool any_input = false;
      for (const Value* v : n->inputs()) any_input |= v != nullptr && active_.count(v) > 0;
      if (!any_input) continue;
      const GradRule rule = FindGradRule(n->qualified_op());
      if (rule == nullptr) {
        return Unsupported("{}: no gradient rule for {}; the loss depends on it through input '{}'",
                           n->Where(), n->qualified_op(), FirstActiveInput(*n));
      }
      Context ctx(this, n);
      A8_RETURN_IF_ERROR(rule(ctx));
    }

    std::vector<Value*> grads;
    for (Value* v : wrt) {
      A8_ASSIGN_OR_RETURN(Value * g, Total(v));
      if (g == nullptr) {
        g = graph_.AddConstant(graph_.UniqueName(v->name() + ".grad"), Filled(v->type(), 0.0));
      }
      grads.push_back(g);
    }
    return grads;
  }

  bool Active(const Value* v) const { return v != nullptr && active_.count(v) > 0; }
  Value* OutputGrad(int i) const {
    return i < static_cast<int>(output_grads_.size()) ? output_grads_[i] : nullptr;
  }

  Status AddContribution(const Node& node, int i, Value* g) {
    Value* v = node.input(i);
    if (!Active(v)) return Status::Ok();
    if (g == nullptr) return Status::Ok();
    if (g->type() != v->type()) {
      return Internal("{}: gradient rule gave input {} ('{}') a gradient of type {}, expected {}",
                      node.Where(), i, v->name(), g->type().ToString(), v->type().ToString());
    }
    contributions_[v].push_back(g);
    return Status::Ok();
  }

  StatusOr<std::vector<Value*>> Emit(const Node& fwd, std::string_view qualified_op,
                                     std::vector<Value*> inputs,
                                     std::map<std::string, Attribute> attrs, int num_outputs) {
    const auto [domain, op] = SplitQualified(qualified_op);
    const OpDef* def = FindOp(domain, op);
    if (def == nullptr) {
      return Internal("{}: gradient rule emits unknown op '{}'", fwd.Where(), qualified_op);
    }
    const std::string base = fwd.outputs().empty() ? fwd.name() : fwd.output(0)->name();
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < num_outputs; ++i) outs.emplace_back(base + ".bwd", TensorType{});
    Node* node = graph_.AddNode(op, domain, std::move(inputs), outs, std::move(attrs),
                                UniqueNodeName(fwd.name() + ".grad"));
    node->set_version(def->canonical);
    A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*node, *def));
    std::vector<TensorType> types;
    Status st = def->infer(*node, &types);
    if (!st.ok()) {
      return Internal("{}: gradient rule emitted an invalid {}: {}", fwd.Where(), qualified_op,
                      st.message());
    }
    if (static_cast<int>(types.size()) != num_outputs) {
      return Internal("{}: {} infers {} outputs, the rule asked for {}", fwd.Where(), qualified_op,
                      types.size(), num_outputs);
    }
    for (int i = 0; i < num_outputs; ++i) node->output(i)->set_type(types[i]);
    return node->outputs();
  }

  Value* Constant(TensorDataPtr data, const std::string& hint) {
    return graph_.AddConstant(graph_.UniqueName(hint), std::move(data));
  }

 private:
  // The summed gradient of `v` (null when nothing reached it). Fan-out is summed once, named
  // `<v>.grad`.
  StatusOr<Value*> Total(Value* v) {
    auto done = totals_.find(v);
    if (done != totals_.end()) return done->second;
    auto it = contributions_.find(v);
    Value* total = nullptr;
    if (it != contributions_.end() && !it->second.empty()) {
      if (it->second.size() == 1) {
        total = it->second[0];
      } else {
        std::vector<std::pair<std::string, TensorType>> outs = {{v->name() + ".grad", v->type()}};
        const Node* producer = v->producer();
        Node* sum = graph_.AddNode(
            "Sum", "", it->second, outs, {},
            UniqueNodeName(producer ? producer->name() + ".grad.sum" : v->name() + ".grad"));
        sum->set_version(FindOp("", "Sum")->canonical);
        total = sum->output(0);
      }
    }
    totals_[v] = total;
    return total;
  }

  // Node names stay unique (ONNX export requires it): "<node>.grad", "<node>.grad.1", ...
  std::string UniqueNodeName(const std::string& base) {
    std::string name = base;
    for (int k = 1; node_names_.count(name) > 0; ++k) name = fmt::format("{}.{}", base, k);
    node_names_.insert(name);
    return name;
  }

  static std::string FirstActiveInput(const Node& n) {
    for (const Value* v : n.inputs()) {
      if (v != nullptr && IsFloat(v->dtype())) return v->name();
    }
    return n.num_inputs() > 0 && n.input(0) ? n.input(0)->name() : "";
  }

  Graph& graph_;
  const GradientOptions& options_;
  std::set<const Value*> active_;
  std::map<const Value*, std::vector<Value*>> contributions_;
  std::map<const Value*, Value*> totals_;
  std::vector<Value*> output_grads_;
  std::set<std::string> node_names_;
};

Value* Context::output_grad(int i) const { return engine_->OutputGrad(i); }
bool Context::needs_grad(int i) const { return engine_->Active(node_->input(i)); }
Status Context::SetInputGrad(int i, Value* g) { return engine_->AddContribution(*node_, i, g); }
StatusOr<std::vector<Value*>> Context::Emit(std::string_view qualified_op,
                                            std::vector<Value*> inputs,
                                            std::map<std::string, Attribute> attrs,
                                            int num_outputs) {
  return engine_->Emit(*node_, qualified_op, std::move(inputs), std::move(attrs), num_outputs);
}
Value* Context::ConstInts(const std::vector<int64_t>& values) {
  return engine_->Constant(TensorData::FromInt64s(values, {static_cast<int64_t>(values.size())}),
                           node_->name() + ".grad.c");
}
Value* Context::ConstScalar(DType dtype, double value) {
  return engine_->Constant(Filled(TensorType{dtype, {}}, value), node_->name() + ".grad.c");
}

}  // namespace

StatusOr<std::vector<Value*>> BuildGradients(Graph& graph, Value* loss,
                                             const std::vector<Value*>& wrt,
                                             const GradientOptions& options) {
  return Engine(graph, options).Run(loss, wrt);
}

}  // namespace a8
