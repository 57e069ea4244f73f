#include "compiler/onnx/import_control_flow.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

namespace a8::onnx_import {

namespace {

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

StatusOr<const onnx::GraphProto*> GraphAttr(const onnx::NodeProto& n, const std::string& name,
                                            const std::string& where) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (a == nullptr || !a->has_g()) {
    return InvalidInput("{}: the graph attribute '{}' is missing", where, name);
  }
  return &a->g();
}

StatusOr<std::vector<int64_t>> IntsAttr(const onnx::NodeProto& n, const std::string& name,
                                        size_t count, int64_t def, const std::string& where) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (a == nullptr) return std::vector<int64_t>(count, def);
  std::vector<int64_t> v(a->ints().begin(), a->ints().end());
  if (v.size() != count) {
    return InvalidInput("{}: attribute '{}' has {} values, expected {}", where, name, v.size(),
                        count);
  }
  return v;
}

// Scan's required attribute num_scan_inputs.
StatusOr<int> NumScanInputs(const onnx::NodeProto& n, const std::string& where) {
  const onnx::AttributeProto* a = FindAttr(n, "num_scan_inputs");
  if (a == nullptr) return InvalidInput("{}: attribute 'num_scan_inputs' is missing", where);
  return static_cast<int>(a->i());
}

// Renames the free names that `g` (and the subgraphs in it) read: names bound by `g` itself
// (inputs, initializers, node outputs) shadow the outer ones.
void RenameFree(onnx::GraphProto* g, const std::map<std::string, std::string>& rename,
                std::set<std::string> shadow) {
  for (const onnx::ValueInfoProto& in : g->input()) shadow.insert(in.name());
  for (const onnx::TensorProto& t : g->initializer()) shadow.insert(t.name());
  for (const onnx::NodeProto& n : g->node()) {
    for (const std::string& out : n.output()) shadow.insert(out);
  }
  auto renamed = [&](std::string* name) {
    if (name->empty() || shadow.count(*name)) return;
    auto it = rename.find(*name);
    if (it != rename.end()) *name = it->second;
  };
  for (onnx::NodeProto& n : *g->mutable_node()) {
    for (std::string& in : *n.mutable_input()) renamed(&in);
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) RenameFree(a.mutable_g(), rename, shadow);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) RenameFree(&sub, rename, shadow);
    }
  }
  for (onnx::ValueInfoProto& out : *g->mutable_output()) renamed(out.mutable_name());
}

onnx::AttributeProto IntAttribute(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

// Emits the nodes of the expansion.
class Builder {
 public:
  explicit Builder(const ControlFlowContext& ctx) : ctx_(ctx) {}

  // op(inputs) -> `out`; returns `out`.
  std::string AddTo(const std::string& op, const std::vector<std::string>& inputs,
                    const std::string& out, std::vector<onnx::AttributeProto> attrs = {}) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(ctx_.fresh_node_name(fmt::format("{}.{}", ctx_.name, op)));
    for (const std::string& in : inputs) n.add_input(in);
    n.add_output(out);
    for (onnx::AttributeProto& a : attrs) *n.add_attribute() = std::move(a);
    nodes.push_back(std::move(n));
    return out;
  }
  // op(inputs) -> a fresh value named after `base`.
  std::string Add(const std::string& op, const std::vector<std::string>& inputs,
                  const std::string& base, std::vector<onnx::AttributeProto> attrs = {}) {
    return AddTo(op, inputs, ctx_.fresh_name(base), std::move(attrs));
  }
  std::string Constant(onnx::TensorProto t, const std::string& base) {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    t.clear_name();
    *a.mutable_t() = std::move(t);
    return Add("Constant", {}, base, {std::move(a)});
  }
  std::string ScalarInt64(int64_t v, const std::string& base) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(v);
    return Constant(std::move(t), base);
  }
  std::string ScalarTrue(const std::string& base) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::BOOL);
    t.add_int32_data(1);
    return Constant(std::move(t), base);
  }
  // x with a size-1 dim inserted at `axis` (Unsqueeze's attribute form before opset 13).
  std::string Unsqueeze(const std::string& x, int64_t axis) {
    if (ctx_.opset < 13) {
      onnx::AttributeProto a;
      a.set_name("axes");
      a.set_type(onnx::AttributeProto::INTS);
      a.add_ints(axis);
      return Add("Unsqueeze", {x}, x + ".unsqueezed", {std::move(a)});
    }
    onnx::TensorProto axes;
    axes.set_data_type(onnx::TensorProto::INT64);
    axes.add_dims(1);
    axes.add_int64_data(axis);
    return Add("Unsqueeze", {x, Constant(std::move(axes), x + ".axes")}, x + ".unsqueezed");
  }
  // The pieces stacked along a new dim `axis` -> `out`.
  void StackTo(const std::vector<std::string>& pieces, int64_t axis, const std::string& out) {
    std::vector<std::string> parts;
    for (const std::string& p : pieces) parts.push_back(Unsqueeze(p, axis));
    if (parts.size() == 1) {
      AddTo("Identity", parts, out);
    } else {
      AddTo("Concat", parts, out, {IntAttribute("axis", axis)});
    }
  }
  std::string Stack(const std::vector<std::string>& pieces, int64_t axis, const std::string& base) {
    const std::string out = ctx_.fresh_name(base);
    StackTo(pieces, axis, out);
    return out;
  }
  // Slice `pos` of x along `axis`, the axis dropped.
  std::string Take(const std::string& x, int64_t pos, int64_t axis) {
    return Add("Gather", {x, ScalarInt64(pos, x + ".index")}, fmt::format("{}.{}", x, pos),
               {IntAttribute("axis", axis)});
  }

  // Appends the nodes of `body` with its inputs bound to the outer names `inputs` and every
  // name it defines fresh; returns the outer names of its outputs.
  StatusOr<std::vector<std::string>> Inline(const onnx::GraphProto& body,
                                            const std::vector<std::string>& inputs,
                                            const std::string& copy) {
    if (body.input_size() != static_cast<int>(inputs.size())) {
      return InvalidInput("{}: the subgraph '{}' has {} inputs, expected {}", ctx_.where,
                          body.name(), body.input_size(), inputs.size());
    }
    if (body.sparse_initializer_size() > 0) {
      return Unsupported("{}: the subgraph '{}' has sparse initializers", ctx_.where, body.name());
    }
    unrolled_ += body.node_size() + body.initializer_size();
    if (unrolled_ > kMaxUnrolledNodes) {
      return Unsupported("{}: unrolled, it would make more than {} nodes", ctx_.where,
                         kMaxUnrolledNodes);
    }
    std::map<std::string, std::string> rename;
    for (int i = 0; i < body.input_size(); ++i) rename[body.input(i).name()] = inputs[i];
    for (const onnx::TensorProto& t : body.initializer()) {
      rename[t.name()] = Constant(t, t.name());
    }
    for (const onnx::NodeProto& n : body.node()) {
      onnx::NodeProto c = n;
      for (std::string& in : *c.mutable_input()) {
        auto it = rename.find(in);
        if (!in.empty() && it != rename.end()) in = it->second;
      }
      for (std::string& out : *c.mutable_output()) {
        if (out.empty()) continue;
        const std::string fresh = ctx_.fresh_name(out);
        rename[out] = fresh;
        out = fresh;
      }
      c.set_name(ctx_.fresh_node_name(
          fmt::format("{}.{}.{}", ctx_.name, copy, n.name().empty() ? n.op_type() : n.name())));
      for (onnx::AttributeProto& a : *c.mutable_attribute()) {
        if (a.has_g()) RenameFree(a.mutable_g(), rename, {});
        for (onnx::GraphProto& sub : *a.mutable_graphs()) RenameFree(&sub, rename, {});
      }
      nodes.push_back(std::move(c));
    }
    std::vector<std::string> outs;
    for (const onnx::ValueInfoProto& o : body.output()) {
      auto it = rename.find(o.name());
      outs.push_back(it == rename.end() ? o.name() : it->second);
    }
    return outs;
  }

  std::vector<onnx::NodeProto> nodes;

 private:
  const ControlFlowContext& ctx_;
  int64_t unrolled_ = 0;
};

StatusOr<bool> ConstantBool(const ControlFlowContext& ctx, const std::string& value,
                            const std::string& field) {
  A8_ASSIGN_OR_RETURN(TensorDataPtr data, ctx.constant(value, field));
  if (data->num_elements() != 1) {
    return InvalidInput("{}: {} '{}' has {} elements, expected one", ctx.where, field, value,
                        data->num_elements());
  }
  return data->GetDouble(0) != 0;
}

StatusOr<std::vector<onnx::NodeProto>> ExpandIf(const onnx::NodeProto& n,
                                                const ControlFlowContext& ctx) {
  if (n.input_size() != 1 || n.input(0).empty()) {
    return InvalidInput("{}: If takes one input, cond", ctx.where);
  }
  A8_ASSIGN_OR_RETURN(bool cond, ConstantBool(ctx, n.input(0), "cond"));
  const std::string branch = cond ? "then_branch" : "else_branch";
  A8_ASSIGN_OR_RETURN(const onnx::GraphProto* g, GraphAttr(n, branch, ctx.where));
  if (g->output_size() != n.output_size()) {
    return InvalidInput("{}: {} has {} outputs, the If {}", ctx.where, branch, g->output_size(),
                        n.output_size());
  }
  Builder b(ctx);
  A8_ASSIGN_OR_RETURN(std::vector<std::string> outs, b.Inline(*g, {}, branch));
  for (int i = 0; i < n.output_size(); ++i) {
    if (!n.output(i).empty()) b.AddTo("Identity", {outs[i]}, n.output(i));
  }
  return std::move(b.nodes);
}

// Whether `name`, read inside `body`, is `cond_in` passed through Identity nodes or a constant
// true: a loop condition that never changes.
bool StaysTrue(const onnx::GraphProto& body, const std::string& cond_in, std::string name) {
  for (int hops = 0; hops <= body.node_size(); ++hops) {
    if (name == cond_in) return true;
    const onnx::NodeProto* producer = nullptr;
    for (const onnx::NodeProto& n : body.node()) {
      for (const std::string& out : n.output()) {
        if (out == name) producer = &n;
      }
    }
    if (producer == nullptr) return false;
    if (producer->op_type() == "Identity" && producer->input_size() == 1) {
      name = producer->input(0);
      continue;
    }
    if (producer->op_type() == "Constant" && producer->attribute_size() == 1) {
      const onnx::AttributeProto& a = producer->attribute(0);
      if (a.name() == "value_int") return a.i() != 0;
      if (a.name() == "value" && a.t().data_type() == onnx::TensorProto::BOOL) {
        if (a.t().int32_data_size() == 1) return a.t().int32_data(0) != 0;
        if (a.t().raw_data().size() == 1) return a.t().raw_data()[0] != 0;
      }
    }
    return false;
  }
  return false;
}

StatusOr<std::vector<onnx::NodeProto>> ExpandLoop(const onnx::NodeProto& n,
                                                  const ControlFlowContext& ctx) {
  A8_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body", ctx.where));
  if (n.input_size() < 2)
    return InvalidInput("{}: Loop takes M, cond and the carried values", ctx.where);
  const int carried_count = n.input_size() - 2;
  const int scan_count = body->output_size() - 1 - carried_count;
  if (body->input_size() != 2 + carried_count || scan_count < 0 ||
      n.output_size() > carried_count + scan_count) {
    return InvalidInput("{}: the body has {} inputs and {} outputs for {} carried values",
                        ctx.where, body->input_size(), body->output_size(), carried_count);
  }
  if (n.input(0).empty()) {
    return Unsupported(
        "{}: has no trip count M (a loop until a condition); a800c unrolls only compile-time "
        "trip counts",
        ctx.where);
  }
  A8_ASSIGN_OR_RETURN(TensorDataPtr m, ctx.constant(n.input(0), "trip count M"));
  if (m->num_elements() != 1) {
    return InvalidInput("{}: trip count M has {} elements, expected one", ctx.where,
                        m->num_elements());
  }
  int64_t trips = std::max<int64_t>(0, m->ToInt64Vector()[0]);
  if (!n.input(1).empty()) {
    A8_ASSIGN_OR_RETURN(bool cond, ConstantBool(ctx, n.input(1), "cond"));
    if (!cond) trips = 0;
  }
  const std::string& cond_out = body->output(0).name();
  if (trips > 1 && !StaysTrue(*body, body->input(1).name(), cond_out)) {
    return Unsupported(
        "{}: the body computes the loop condition '{}' (an exit that depends on data); a800c "
        "unrolls only loops whose condition stays true",
        ctx.where, cond_out);
  }
  if (trips == 0 && scan_count > 0) {
    return Unsupported("{}: runs zero times, so its scan outputs are empty tensors", ctx.where);
  }
  Builder b(ctx);
  std::vector<std::string> carried(n.input().begin() + 2, n.input().end());
  std::vector<std::vector<std::string>> pieces(static_cast<size_t>(scan_count));
  for (int64_t k = 0; k < trips; ++k) {
    std::vector<std::string> inputs = {b.ScalarInt64(k, body->input(0).name()),
                                       b.ScalarTrue(body->input(1).name())};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    A8_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                        b.Inline(*body, inputs, fmt::format("iter{}", k)));
    carried.assign(outs.begin() + 1, outs.begin() + 1 + carried_count);
    for (int j = 0; j < scan_count; ++j) pieces[j].push_back(outs[1 + carried_count + j]);
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    if (i < carried_count) {
      b.AddTo("Identity", {carried[i]}, n.output(i));
    } else {
      b.StackTo(pieces[i - carried_count], 0, n.output(i));
    }
  }
  return std::move(b.nodes);
}

// Scan-9 and later: states, then scan inputs sliced along their axes.
StatusOr<std::vector<onnx::NodeProto>> ExpandScan(const onnx::NodeProto& n,
                                                  const ControlFlowContext& ctx) {
  A8_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body", ctx.where));
  A8_ASSIGN_OR_RETURN(const int m, NumScanInputs(n, ctx.where));
  const int states = n.input_size() - m;
  const int scan_outputs = n.output_size() - states;
  if (m < 1 || states < 0 || scan_outputs < 0 || body->input_size() != states + m ||
      body->output_size() != states + scan_outputs) {
    return InvalidInput(
        "{}: {} inputs, {} outputs and a body of {} inputs and {} outputs do not "
        "fit num_scan_inputs {}",
        ctx.where, n.input_size(), n.output_size(), body->input_size(), body->output_size(), m);
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs,
                      IntsAttr(n, "scan_input_directions", m, 0, ctx.where));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes,
                      IntsAttr(n, "scan_input_axes", m, 0, ctx.where));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs,
                      IntsAttr(n, "scan_output_directions", scan_outputs, 0, ctx.where));
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes,
                      IntsAttr(n, "scan_output_axes", scan_outputs, 0, ctx.where));
  int64_t length = -1;
  for (int i = 0; i < m; ++i) {
    const std::string& x = n.input(states + i);
    std::optional<std::vector<int64_t>> dims = ctx.dims(x);
    if (!dims) {
      return Unsupported("{}: the dims of scan input '{}' are not known at compile time", ctx.where,
                         x);
    }
    const int64_t rank = static_cast<int64_t>(dims->size());
    int64_t& axis = in_axes[i];
    if (axis < -rank || axis >= rank) {
      return InvalidInput("{}: scan_input_axes {} is out of range for '{}' of rank {}", ctx.where,
                          axis, x, rank);
    }
    if (axis < 0) axis += rank;
    if (length >= 0 && (*dims)[axis] != length) {
      return InvalidInput("{}: scan input '{}' has length {} along its axis, another has {}",
                          ctx.where, x, (*dims)[axis], length);
    }
    length = (*dims)[axis];
  }
  if (length == 0 && scan_outputs > 0) {
    return Unsupported("{}: the sequence is empty, so its scan outputs are empty tensors",
                       ctx.where);
  }
  Builder b(ctx);
  std::vector<std::string> carried(n.input().begin(), n.input().begin() + states);
  std::vector<std::vector<std::string>> pieces(static_cast<size_t>(scan_outputs));
  for (int64_t t = 0; t < length; ++t) {
    std::vector<std::string> inputs = carried;
    for (int i = 0; i < m; ++i) {
      inputs.push_back(b.Take(n.input(states + i), in_dirs[i] ? length - 1 - t : t, in_axes[i]));
    }
    A8_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                        b.Inline(*body, inputs, fmt::format("iter{}", t)));
    carried.assign(outs.begin(), outs.begin() + states);
    for (int j = 0; j < scan_outputs; ++j) pieces[j].push_back(outs[states + j]);
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    if (i < states) {
      b.AddTo("Identity", {carried[i]}, n.output(i));
      continue;
    }
    std::vector<std::string>& p = pieces[i - states];
    if (out_dirs[i - states]) std::reverse(p.begin(), p.end());
    b.StackTo(p, out_axes[i - states], n.output(i));
  }
  return std::move(b.nodes);
}

// Scan-8: (sequence_lens?, states.., scans..), every input with a batch axis first and the scan
// axis second; the body runs per batch element.
StatusOr<std::vector<onnx::NodeProto>> ExpandScan8(const onnx::NodeProto& n,
                                                   const ControlFlowContext& ctx) {
  A8_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body", ctx.where));
  A8_ASSIGN_OR_RETURN(const int m, NumScanInputs(n, ctx.where));
  if (n.input_size() < 1) return InvalidInput("{}: Scan-8 has no inputs", ctx.where);
  if (!n.input(0).empty()) {
    return Unsupported("{}: sequence_lens is given; a800c unrolls Scan-8 only over whole sequences",
                       ctx.where);
  }
  const int states = n.input_size() - 1 - m;
  const int scan_outputs = n.output_size() - states;
  if (m < 1 || states < 0 || scan_outputs < 0 || body->input_size() != states + m ||
      body->output_size() != states + scan_outputs) {
    return InvalidInput("{}: the inputs, outputs and body do not fit num_scan_inputs {}", ctx.where,
                        m);
  }
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, IntsAttr(n, "directions", m, 0, ctx.where));
  std::optional<std::vector<int64_t>> dims = ctx.dims(n.input(1 + states));
  if (!dims || dims->size() < 2) {
    return Unsupported("{}: the dims of scan input '{}' are not known at compile time", ctx.where,
                       n.input(1 + states));
  }
  const int64_t batch = (*dims)[0], length = (*dims)[1];
  if (length == 0 || batch == 0) {
    return Unsupported("{}: an empty batch or sequence gives empty tensors", ctx.where);
  }
  Builder b(ctx);
  std::vector<std::vector<std::string>> final_states(static_cast<size_t>(states));
  std::vector<std::vector<std::string>> stacked(static_cast<size_t>(scan_outputs));
  for (int64_t e = 0; e < batch; ++e) {
    std::vector<std::string> carried, seqs;
    for (int s = 0; s < states; ++s) carried.push_back(b.Take(n.input(1 + s), e, 0));
    for (int i = 0; i < m; ++i) seqs.push_back(b.Take(n.input(1 + states + i), e, 0));
    std::vector<std::vector<std::string>> pieces(static_cast<size_t>(scan_outputs));
    for (int64_t t = 0; t < length; ++t) {
      std::vector<std::string> inputs = carried;
      for (int i = 0; i < m; ++i)
        inputs.push_back(b.Take(seqs[i], dirs[i] ? length - 1 - t : t, 0));
      A8_ASSIGN_OR_RETURN(std::vector<std::string> outs,
                          b.Inline(*body, inputs, fmt::format("b{}.iter{}", e, t)));
      carried.assign(outs.begin(), outs.begin() + states);
      for (int j = 0; j < scan_outputs; ++j) pieces[j].push_back(outs[states + j]);
    }
    for (int s = 0; s < states; ++s) final_states[s].push_back(carried[s]);
    for (int j = 0; j < scan_outputs; ++j) {
      stacked[j].push_back(b.Stack(pieces[j], 0, n.output(states + j) + ".b"));
    }
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    b.StackTo(i < states ? final_states[i] : stacked[i - states], 0, n.output(i));
  }
  return std::move(b.nodes);
}

// FlexAttention with score_mod/prob_mod: its two halves (import_decompose_flex_attention.cc,
// attribute a8.stage) with the subgraphs inlined between them, around the Softmax.
StatusOr<std::vector<onnx::NodeProto>> ExpandFlexAttentionModifiers(const onnx::NodeProto& n,
                                                                    const ControlFlowContext& ctx) {
  if (n.input_size() != 3 || n.output_size() != 1) {
    return InvalidInput("{}: FlexAttention takes Q, K, V and one output, got {} and {}", ctx.where,
                        n.input_size(), n.output_size());
  }
  std::vector<onnx::AttributeProto> attrs;
  const onnx::GraphProto* mods[2] = {nullptr, nullptr};
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == "score_mod" || a.name() == "prob_mod") {
      if (!a.has_g()) {
        return InvalidInput("{}: attribute '{}' must be a graph", ctx.where, a.name());
      }
      mods[a.name() == "prob_mod"] = &a.g();
    } else if (a.has_g() || a.graphs_size() > 0) {
      return InvalidInput(
          "{}: attribute '{}' is a graph; FlexAttention's are score_mod and "
          "prob_mod",
          ctx.where, a.name());
    } else {
      attrs.push_back(a);
    }
  }
  auto staged = [&](const char* stage) {
    std::vector<onnx::AttributeProto> v = attrs;
    onnx::AttributeProto a;
    a.set_name("a8.stage");
    a.set_type(onnx::AttributeProto::STRING);
    a.set_s(stage);
    v.push_back(std::move(a));
    return v;
  };
  Builder b(ctx);
  // Each subgraph maps one tensor to one tensor of its shape and type.
  auto modify = [&](int which, const std::string& x) -> StatusOr<std::string> {
    const char* name = which == 0 ? "score_mod" : "prob_mod";
    if (mods[which] == nullptr) return x;
    if (mods[which]->output_size() != 1) {
      return InvalidInput("{}: the {} subgraph has {} outputs, expected one", ctx.where, name,
                          mods[which]->output_size());
    }
    A8_ASSIGN_OR_RETURN(std::vector<std::string> outs, b.Inline(*mods[which], {x}, name));
    return outs[0];
  };
  const std::string q = n.input(0), k = n.input(1), v = n.input(2);
  std::string scores = b.Add("FlexAttention", {q, k, v}, ctx.name + ".scores", staged("scores"));
  b.nodes.back().set_domain(n.domain());
  A8_ASSIGN_OR_RETURN(scores, modify(0, scores));
  std::string probs = b.Add("Softmax", {scores}, ctx.name + ".probs", {IntAttribute("axis", -1)});
  A8_ASSIGN_OR_RETURN(probs, modify(1, probs));
  b.AddTo("FlexAttention", {q, k, v, probs}, n.output(0), staged("output"));
  b.nodes.back().set_domain(n.domain());
  return std::move(b.nodes);
}

}  // namespace

bool IsControlFlowNode(const onnx::NodeProto& n) {
  if (n.domain() == "ai.onnx.preview" && n.op_type() == "FlexAttention") {
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) return true;
    }
    return false;
  }
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan";
}

StatusOr<std::vector<onnx::NodeProto>> ExpandControlFlow(const onnx::NodeProto& n,
                                                         const ControlFlowContext& ctx) {
  if (n.op_type() == "If") return ExpandIf(n, ctx);
  if (n.op_type() == "Loop") return ExpandLoop(n, ctx);
  if (n.op_type() == "Scan") return ctx.opset < 9 ? ExpandScan8(n, ctx) : ExpandScan(n, ctx);
  if (n.op_type() == "FlexAttention") return ExpandFlexAttentionModifiers(n, ctx);
  return Internal("{}: not a control-flow op", ctx.where);
}

}  // namespace a8::onnx_import
