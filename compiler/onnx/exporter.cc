// IR -> ONNX (see exporter.h).
#include "compiler/onnx/exporter.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <map>

#include "compiler/ir/op_table.h"
#include "compiler/onnx/onnx_util.h"

namespace a8 {
namespace {

// Opset of the default domain when the graph has neither opsets nor nodes that imply one.
constexpr int64_t kDefaultOpset = 17;

// The lowest IR version that can carry `opset` of ai.onnx (onnx.helper.VERSION_TABLE), but
// at least 8: a800c writes the fields of IR 8 and onnxruntime reads every version from 3 up.
int64_t IrVersionForOpset(int64_t opset) {
  int64_t ir = 8;
  if (opset >= 19) ir = 9;
  if (opset >= 21) ir = 10;
  if (opset >= 23) ir = 11;
  if (opset >= 24) ir = 12;
  if (opset >= 25) ir = 13;
  if (opset >= 28) ir = 14;
  return ir;
}

void SetValueInfo(const Value* v, onnx::ValueInfoProto* vi) {
  vi->set_name(v->name());
  TensorTypeToOnnx(v->type(), vi->mutable_type());
}

// A Cast node `in` -> `out` (to `to`) named `name`, with `out`'s value_info.
void AddCast(onnx::GraphProto* graph, const std::string& name, const std::string& in,
             const std::string& out, const TensorType& out_type) {
  onnx::NodeProto* c = graph->add_node();
  c->set_name(name);
  c->set_op_type("Cast");
  c->add_input(in);
  c->add_output(out);
  onnx::AttributeProto* to = c->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(DTypeToOnnx(out_type.dtype));
  onnx::ValueInfoProto* vi = graph->add_value_info();
  vi->set_name(out);
  TensorTypeToOnnx(out_type, vi->mutable_type());
}

// A LayerNormalization with FP16 X and FP32 Scale (pin-fp32's `a8.edge`) is not ONNX, which types
// X and Scale alike. It computes in FP32 and rounds Y once, so the exact ONNX form is Cast(X) to
// FP32, the LayerNormalization in FP32, and Cast(Y) back: the names of the wrapped node's X and
// Y, or "" when the node needs no wrapping.
std::pair<std::string, std::string> WrapMixedLayerNorm(const Node& n, onnx::GraphProto* graph) {
  if (!n.domain().empty() || n.op() != "LayerNormalization" || !n.has_input(1) ||
      n.input(0)->dtype() == n.input(1)->dtype()) {
    return {"", ""};
  }
  const DType compute = n.input(1)->dtype();
  const std::string x =
      n.input(0)->name() + "__" + n.name() + "_" + std::string(DTypeName(compute));
  AddCast(graph, n.name() + "__cast_x", n.input(0)->name(), x,
          TensorType{compute, n.input(0)->dims()});
  return {x, n.output(0)->name() + "__" + std::string(DTypeName(compute))};
}

// a8.FusedAttention (import_decompose_attention.cc's fused path) is exported as the ONNX
// Attention-23 it computes: 4-D Q, K, V (kv heads repeated by Attention's GQA), the bias as a
// float attn_mask, is_causal (top-left: causal_offset 0), scale, softmax_precision float under
// f16/bf16 (the kernel's softmax is f32). Its LSE has no ONNX form: a
// graph that reads it (a training graph) cannot be exported.
constexpr int kAttentionOpset = 23;

Status CheckFusedAttentionExport(const Node& n) {
  if (n.GetInt("causal_offset", 0) != 0) {
    return Unsupported("{}: a8.FusedAttention with causal_offset {} has no ONNX form", n.Where(),
                       n.GetInt("causal_offset", 0));
  }
  if (!n.output(1)->uses().empty() || n.output(1)->is_graph_output()) {
    return Unsupported("{}: a8.FusedAttention's LSE output is read, which ONNX cannot express",
                       n.Where());
  }
  return Status::Ok();
}

bool IsFusedAttention(const Node& n) { return n.domain() == "a8" && n.op() == "FusedAttention"; }

}  // namespace

Status ExportOnnxModel(const Graph& g, onnx::ModelProto* model) {
  model->Clear();
  // Opsets: the model's, raised to the canonical version of every op used.
  std::map<std::string, int64_t> opsets;
  for (const auto& [domain, version] : g.opsets) {
    opsets[domain == "ai.onnx" ? std::string() : domain] = version;
  }
  std::vector<const OpDef*> defs;
  for (const Node* n : g.nodes()) {
    if (IsFusedAttention(*n)) {
      A8_RETURN_IF_ERROR(CheckFusedAttentionExport(*n));
      opsets[""] = std::max<int64_t>(opsets[""], kAttentionOpset);
      defs.push_back(nullptr);
      continue;
    }
    if (n->domain() == "a8") {
      return Unsupported("{}: internal op {} has no ONNX form yet and cannot be exported",
                         n->Where(), n->qualified_op());
    }
    const OpDef* def = FindOp(n->domain(), n->op());
    if (!def) {
      return Unsupported("{}: op {} is not in a800c's op table and cannot be exported", n->Where(),
                         n->qualified_op());
    }
    defs.push_back(def);
    int64_t& opset = opsets[n->domain()];
    opset = std::max<int64_t>(opset, def->canonical);
  }
  if (!opsets.count("") || opsets[""] < 1) {
    opsets[""] = std::max<int64_t>(opsets.count("") ? opsets[""] : 0, kDefaultOpset);
  }
  size_t i = 0;
  for (const Node* n : g.nodes()) {
    const OpDef* def = defs[i++];
    if (def == nullptr) continue;  // a8.FusedAttention: Attention-23
    auto v = ResolveOpVersion(*def, opsets[n->domain()]);
    if (!v.ok()) return v.status().WithContext(n->Where());
    if (*v < def->canonical) {
      return Internal("{}: resolves to version {} at opset {}, older than its canonical form {}",
                      n->Where(), *v, opsets[n->domain()], def->canonical);
    }
  }

  model->set_ir_version(IrVersionForOpset(opsets[""]));
  model->set_producer_name("a800c");
  model->set_producer_version(A800C_VERSION);
  for (const auto& [domain, version] : opsets) {
    onnx::OperatorSetIdProto* o = model->add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }

  onnx::GraphProto* graph = model->mutable_graph();
  graph->set_name(g.name.empty() ? "a800c" : g.name);
  for (const Value* v : g.graph_values()) {
    if (v->role() == ValueRole::kInput) {
      SetValueInfo(v, graph->add_input());
      continue;
    }
    if (!v->data()) {
      return InvalidInput("{} '{}' has no data (elided in IR text) and cannot be exported",
                          ValueRoleName(v->role()), v->name());
    }
    if (v->data()->type != v->type()) {
      return Internal("{} '{}': data {} does not match its type {}", ValueRoleName(v->role()),
                      v->name(), v->data()->type.ToString(), v->type().ToString());
    }
    TensorToOnnx(*v->data(), v->name(), graph->add_initializer());
  }
  for (const Node* n : g.nodes()) {
    auto [wrapped_x, wrapped_y] = WrapMixedLayerNorm(*n, graph);
    onnx::NodeProto* p = graph->add_node();
    p->set_name(n->name());
    const bool attention = IsFusedAttention(*n);
    p->set_op_type(attention ? "Attention" : n->op());
    p->set_domain(attention ? "" : n->domain());
    for (const Value* in : n->inputs()) p->add_input(in ? in->name() : std::string());
    if (attention) {
      p->add_output(n->output(0)->name());
      for (const char* name : {"is_causal", "scale"}) {
        if (const Attribute* a = n->attr(name)) {
          A8_RETURN_IF_ERROR(AttributeToOnnx(*n, name, *a, p->add_attribute()));
        }
      }
      // The kernel's softmax is f32 under f16/bf16 Q, K and V.
      const DType t = n->input(0)->dtype();
      if (t == DType::kF16 || t == DType::kBF16) {
        A8_RETURN_IF_ERROR(AttributeToOnnx(
            *n, "softmax_precision", Attribute(static_cast<int64_t>(DTypeToOnnx(DType::kF32))),
            p->add_attribute()));
      }
      if (!n->output(0)->is_graph_output()) SetValueInfo(n->output(0), graph->add_value_info());
      continue;
    }
    for (const Value* out : n->outputs()) p->add_output(out->name());
    if (!wrapped_x.empty()) {
      p->set_input(0, wrapped_x);
      p->set_output(0, wrapped_y);
      AddCast(graph, n->name() + "__cast_y", wrapped_y, n->output(0)->name(), n->output(0)->type());
      onnx::ValueInfoProto* vi = graph->add_value_info();
      vi->set_name(wrapped_y);
      TensorTypeToOnnx(TensorType{n->input(1)->dtype(), n->output(0)->dims()}, vi->mutable_type());
    }
    for (const auto& [name, attr] : n->attrs()) {
      // a800c's own annotations (`a8.why`) are not ONNX attributes.
      if (name.rfind("a8.", 0) == 0) continue;
      A8_RETURN_IF_ERROR(AttributeToOnnx(*n, name, attr, p->add_attribute()));
    }
    for (const Value* out : n->outputs()) {
      if (!out->is_graph_output()) SetValueInfo(out, graph->add_value_info());
    }
  }
  for (const Value* v : g.outputs()) SetValueInfo(v, graph->add_output());
  return Status::Ok();
}

StatusOr<std::string> ExportOnnxBytes(const Graph& g) {
  onnx::ModelProto model;
  A8_RETURN_IF_ERROR(ExportOnnxModel(g, &model));
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return Unsupported("the exported model is {} bytes; ONNX protobuf files hold at most 2 GiB",
                       model.ByteSizeLong());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return Internal("serializing the ONNX model failed");
  return bytes;
}

}  // namespace a8
