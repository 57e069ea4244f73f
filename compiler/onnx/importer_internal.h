// The ONNX importer's state (compiler/onnx/importer.cc: model checks, names, outputs and the
// entry points; importer_nodes.cc: graph inputs, initializers and nodes). Internal to those two
// files: everything else calls importer.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/onnx/import_control_flow.h"
#include "compiler/onnx/import_sequence.h"
#include "compiler/onnx/import_upgrade.h"
#include "compiler/onnx/importer.h"
#include "compiler/onnx/onnx_util.h"

namespace a8::onnx_import {

// Newest IR version a800c reads (onnx 1.23). Newer fields would be silently dropped by the
// protobuf classes of Debian's libonnx, so a newer model is refused instead.
constexpr int64_t kMaxIrVersion = 14;
constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
constexpr std::string_view kPreviewDomain = "ai.onnx.preview";

std::string DomainName(std::string_view domain);
// "ai.onnx" -> "" (the IR's name of the default domain).
std::string NormalizeDomain(const std::string& domain);
std::string NodeWhere(const std::string& name, const std::string& domain, const std::string& op);
// Ops that onnx defines (its full history, onnx_versions.inc): an op there but not in a800c's
// table is "not supported", anything else is "unknown".
bool OnnxKnowsOp(std::string_view domain, std::string_view name);
// The since_version of ONNX op `name` at `opset` (onnx_versions.inc), if it is defined there.
std::optional<int> OnnxSinceVersion(std::string_view domain, std::string_view name, int64_t opset);
// Operands that carry what older opsets had as attributes (shapes, axes, bounds, rates). A float
// initializer used only there is a constant, not a trainable parameter.
bool IsAttributeLikeOperand(const std::string& domain, const std::string& op, int index);
// The element type of a graph input's or output's declared type, which must be a tensor of a
// dtype a800c supports; errors start with `what` ("graph input 'x'").
StatusOr<DType> TensorElemType(const onnx::ValueInfoProto& vi, const std::string& what);

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source, std::string model_dir,
           const ImportOptions& opts)
      : model_(model),
        graph_(model.graph()),
        source_(std::move(source)),
        model_dir_(std::move(model_dir)),
        opts_(opts) {}

  // Float initializers' bytes are freed from `graph` (the graph being imported) as soon as the IR
  // holds them, so that a model with its weights inside the protobuf is not held twice.
  void ReleaseFloatDataFrom(onnx::GraphProto* graph) { release_float_data_ = graph; }
  // Initializer i's raw_data is `(*raw_data)[i]` where set: left out of the message by
  // StripInitializerData (model_scan.h), a view of the mapped model file. `owner` keeps that
  // memory alive (the mapping): the IR's weights are views of it where aligned, else copies.
  void UseRawDataOutside(const std::vector<std::optional<std::string_view>>* raw_data,
                         std::shared_ptr<const void> owner) {
    raw_outside_ = raw_data;
    raw_owner_ = std::move(owner);
  }

  StatusOr<std::unique_ptr<Graph>> Run() {
    g_ = std::make_unique<Graph>();
    g_->source = source_;
    A8_RETURN_IF_ERROR(CheckModel());
    g_->name = graph_.name();
    A8_RETURN_IF_ERROR(CollectNames());
    A8_RETURN_IF_ERROR(ImportInputs());
    A8_RETURN_IF_ERROR(ImportInitializers());
    // Control flow is replaced in the node list by its unrolled nodes, which import in turn.
    for (int i = 0; i < static_cast<int>(nodes_.size());) {
      if (IsControlFlowNode(*nodes_[i])) {
        A8_RETURN_IF_ERROR(ExpandControlFlowNode(i));
        continue;
      }
      A8_RETURN_IF_ERROR(ImportNode(i));
      ++i;
    }
    A8_RETURN_IF_ERROR(ImportOutputs());
    return std::move(g_);
  }

 private:
  Status CheckModel();
  Status CollectNames();
  // The flags that name inputs and dims (--shape, --bind, --dim) name ones the model has.
  Status CheckInputFlags();
  // The type of a graph input: --shape, else its declared dims with symbolic ones bound from
  // `named` (--dim and --batch's names) or, for dim 0, --batch; each dim left unbound is appended
  // to `unbound` (with the flags that set it) and given a placeholder.
  StatusOr<TensorType> BindInputType(const onnx::ValueInfoProto& vi,
                                     const std::map<std::string, int64_t>& named,
                                     std::vector<std::string>* unbound);
  // A graph input frozen by --bind: a constant, checked against the declared type.
  Status ImportBoundInput(const onnx::ValueInfoProto& vi, TensorDataPtr data);
  Status ImportInputs();
  Status ImportInitializers();
  Status ImportNode(int index);
  // Replaces If/Loop/Scan node `index` in nodes_ by the nodes that unroll it
  // (import_control_flow.h).
  Status ExpandControlFlowNode(int index);
  // The static dims of `v` when known: a constant, a graph input, a declared intermediate or one
  // onnx's inference gives before node `index`.
  std::optional<std::vector<int64_t>> KnownDims(const Value* v, int index);
  // Unsupported (naming the node, the output and `why`) when a later node or a graph output
  // reads one of node `index`'s outputs from `from` on: for outputs the import drops.
  Status UnreadOutputs(int index, int from, const char* why) const;
  Status ImportConstantNode(const onnx::NodeProto& n, const std::string& where);
  // An op imported as nodes of other ops (import_decompose.h).
  Status ImportDecomposedNode(int index, const std::string& where, std::vector<Value*> inputs,
                              std::map<std::string, Attribute> attrs);
  // SplitToSequence is recorded in sequences_; each SequenceAt becomes a Slice (import_sequence.h).
  Status ImportSplitToSequence(int index, const std::string& where,
                               const std::vector<Value*>& inputs,
                               const std::map<std::string, Attribute>& attrs);
  Status ImportSequenceAt(int index, const std::string& where);
  // Upgrades and checks nodes made at import from one ONNX node (decompositions, SequenceAt).
  Status FinishMadeNodes(int index, const std::string& where,
                         const std::vector<DecomposedNode>& nodes);
  UpgradeContext MakeUpgradeContext(int index);
  Status ImportOutputs();

  void RecordDeclaredType(const Value* v, const onnx::TypeProto& type) {
    if (!type.has_tensor_type()) return;
    const auto& tt = type.tensor_type();
    if (tt.has_shape()) known_rank_[v] = tt.shape().dim_size();
    auto dtype = DTypeFromOnnx(tt.elem_type());
    if (dtype.ok()) known_dtype_[v] = *dtype;
  }
  void RecordGraphValue(const Value* v) {
    known_rank_[v] = v->type().rank();
    known_dtype_[v] = v->dtype();
  }
  // The fully static type `type` declares, if it does.
  static std::optional<TensorType> StaticType(const onnx::TypeProto& type) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
    auto dtype = DTypeFromOnnx(type.tensor_type().elem_type());
    if (!dtype.ok()) return std::nullopt;
    TensorType t{*dtype, {}};
    for (const auto& d : type.tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
      t.dims.push_back(d.dim_value());
    }
    if (!t.NumElements().ok()) return std::nullopt;
    return t;
  }
  // The rank onnx's own shape inference gives a value, for the few upgrades that need a rank the
  // model does not declare (Softmax-11). Runs on demand on the nodes before `upto`, on a copy
  // without float weights.
  std::optional<int64_t> OnnxInferredRank(const std::string& name, int upto);
  // The static dims onnx's inference gives a value (the same run), for decompositions that build
  // constants from them (Resize of an undeclared intermediate).
  std::optional<std::vector<int64_t>> OnnxInferredDims(const std::string& name, int upto);
  // The element type onnx's inference gives a value (as OnnxInferredRank), when it gives one.
  std::optional<DType> OnnxInferredDType(const std::string& name, int upto);

  // A value name unused by the model and the graph: `base`, `base.1`, ...
  std::string FreshName(const std::string& base) {
    std::string n = base;
    for (int i = 1; onnx_names_.count(n) || g_->FindValue(n); ++i)
      n = fmt::format("{}.{}", base, i);
    return n;
  }

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  onnx::GraphProto* release_float_data_ = nullptr;
  const std::vector<std::optional<std::string_view>>* raw_outside_ = nullptr;
  std::shared_ptr<const void> raw_owner_;
  const std::string source_;
  const std::string model_dir_;
  const ImportOptions& opts_;
  std::unique_ptr<Graph> g_;

  // The nodes to import, in order: the graph's, with control flow replaced by the nodes that
  // unroll it (owned by made_nodes_).
  std::vector<const onnx::NodeProto*> nodes_;
  std::deque<onnx::NodeProto> made_nodes_;
  std::set<std::string> used_node_names_;
  std::set<std::string> onnx_names_;     // every value name in the model
  std::map<std::string, int> producer_;  // node output -> node index
  std::set<std::string> initializers_;
  std::map<std::string, const onnx::ValueInfoProto*> input_decls_;
  std::map<std::string, const onnx::TypeProto*> value_info_;  // intermediates' declared types
  std::vector<std::string> node_names_;
  std::map<const Value*, int64_t> known_rank_;
  std::map<const Value*, DType> known_dtype_;
  std::map<std::string, int64_t> onnx_ranks_;  // from onnx's inference over nodes [0, upto)
  std::map<std::string, std::vector<int64_t>> onnx_dims_;  // the fully static ones of those
  std::map<std::string, DType> onnx_dtypes_;
  int onnx_ranks_upto_ = 0;
  std::map<std::string, SequenceSplit> sequences_;  // SplitToSequence outputs
};

}  // namespace a8::onnx_import
