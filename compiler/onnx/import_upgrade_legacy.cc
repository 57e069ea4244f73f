#include "compiler/onnx/import_upgrade_legacy.h"

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table.h"

namespace a8 {
namespace {

// Adds the nodes of one rewrite around `node`, each in the canonical form of its op.
class Rewriter {
 public:
  Rewriter(Node* node, const UpgradeContext& ctx) : node_(node), ctx_(ctx) {}

  Value* Int64s(const std::string& what, const std::vector<int64_t>& v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return ctx_.graph->AddConstant(ctx_.fresh_name(node_->name() + "." + what),
                                   TensorData::FromInt64s(v, {n}));
  }

  // A one-output node right before the node; returns its output.
  Value* Before(const std::string& op, const std::string& what, std::vector<Value*> inputs,
                std::map<std::string, Attribute> attrs = {}) {
    const std::string name = node_->name() + "." + what;
    Node* n = ctx_.graph->AddNode(op, "", std::move(inputs), {{ctx_.fresh_name(name), {}}},
                                  std::move(attrs), name, node_);
    n->set_version(FindOp("", op)->canonical);
    return n->output(0);
  }

  // Moves output `i` of the node to a fresh name (its declared type dropped: the node now makes
  // something else) and returns the ONNX name and declared type for the node that will produce
  // it after the node.
  std::pair<std::string, TensorType> TakeOutput(int i, const std::string& what) {
    Value* v = node_->output(i);
    std::pair<std::string, TensorType> onnx_out{v->name(), v->type()};
    ctx_.graph->RenameValue(v, ctx_.fresh_name(node_->name() + "." + what));
    v->set_type(TensorType{});
    return onnx_out;
  }

  // A one-output node right after the node, producing `out` (a name TakeOutput freed).
  void After(const std::string& op, const std::string& what, std::vector<Value*> inputs,
             std::pair<std::string, TensorType> out, std::map<std::string, Attribute> attrs = {}) {
    Node* next = nullptr;
    std::vector<Node*> nodes = ctx_.graph->NodeList();
    for (size_t k = 0; k + 1 < nodes.size(); ++k) {
      if (nodes[k] == node_) next = nodes[k + 1];
    }
    Node* n = ctx_.graph->AddNode(op, "", std::move(inputs), {std::move(out)}, std::move(attrs),
                                  node_->name() + "." + what, next);
    n->set_version(FindOp("", op)->canonical);
  }

 private:
  Node* node_;
  const UpgradeContext& ctx_;
};

std::optional<int64_t> RankOf(const Node* node, int i, const UpgradeContext& ctx) {
  if (!node->has_input(i)) return std::nullopt;
  return ctx.known_rank(node->input(i));
}

}  // namespace

Status UpgradeLegacyBroadcast(Node* node, int from, const UpgradeContext& ctx) {
  const int64_t broadcast = node->GetInt("broadcast", 0);
  const Attribute* axis_attr = node->attr("axis");
  const bool has_axis = axis_attr != nullptr;
  const int64_t axis = node->GetInt("axis", 0);
  node->RemoveAttr("broadcast");
  node->RemoveAttr("axis");
  // broadcast=0: equal shapes; broadcast=1 without axis: B aligned with A's last dims. Numpy
  // broadcasting means the same for both.
  if (broadcast == 0 || !has_axis) return Status::Ok();
  std::optional<int64_t> ra = RankOf(node, 0, ctx), rb = RankOf(node, 1, ctx);
  if (!ra || !rb) {
    return Unsupported(
        "{}: {}-{} broadcasts B from axis {}, and the rank of {} is unknown (declare its "
        "shape in value_info, or use opset 7)",
        node->Where(), node->op(), from, axis, !ra ? "A" : "B");
  }
  const int64_t a = axis < 0 ? axis + *ra : axis;
  const int64_t trailing = *ra - a - *rb;
  if (a < 0 || trailing < 0) {
    return InvalidInput("{}: {}-{}: B of rank {} does not fit A of rank {} from axis {}",
                        node->Where(), node->op(), from, *rb, *ra, axis);
  }
  if (trailing == 0) return Status::Ok();
  Rewriter r(node, ctx);
  std::vector<int64_t> axes;
  for (int64_t k = 0; k < trailing; ++k) axes.push_back(*rb + k);
  Value* b = r.Before("Unsqueeze", "align_b", {node->input(1), r.Int64s("align_axes", axes)});
  node->SetInput(1, b);
  return Status::Ok();
}

Status UpgradeSoftmaxCoercion(Node* node, int from, const UpgradeContext& ctx) {
  const int64_t axis = node->GetInt("axis", 1);
  std::optional<int64_t> rank = RankOf(node, 0, ctx);
  if (axis < 0 && !rank) {
    return Unsupported(
        "{}: {}-{} flattens its input to 2D at axis {}, and the input's rank is unknown "
        "(add a value_info for '{}' or use opset 13)",
        node->Where(), node->op(), from, axis, node->has_input(0) ? node->input(0)->name() : "");
  }
  const int64_t a = axis < 0 ? axis + *rank : axis;
  if (rank && (a < 0 || a >= *rank)) {
    return InvalidInput("{}: axis {} is out of range for a rank-{} input", node->Where(), axis,
                        *rank);
  }
  if (rank && a == *rank - 1) {
    node->SetAttr("axis", Attribute(a));
    return Status::Ok();
  }
  // [d0, .., d(a-1), d(a) * .. * d(r-1)]: the 2-D coercion with the leading dims kept apart,
  // which normalizes the same elements together.
  Rewriter r(node, ctx);
  Value* x = node->input(0);
  std::vector<int64_t> shape(static_cast<size_t>(a), 0);
  shape.push_back(-1);
  Value* flat = r.Before("Reshape", "coerce", {x, r.Int64s("coerce_shape", shape)});
  Value* dims = r.Before("Shape", "shape", {x});
  node->SetInput(0, flat);
  node->SetAttr("axis", Attribute(int64_t{-1}));
  auto out = r.TakeOutput(0, "coerced");
  r.After("Reshape", "uncoerce", {node->output(0), dims}, std::move(out));
  return Status::Ok();
}

Status UpgradeDropoutMask(Node* node, int from, const UpgradeContext& ctx) {
  if (from >= 10 || node->num_outputs() < 2) return Status::Ok();
  DType t = DType::kF32;
  if (node->has_input(0)) t = ctx.known_dtype(node->input(0)).value_or(DType::kF32);
  Rewriter r(node, ctx);
  auto out = r.TakeOutput(1, "bool_mask");
  r.After("Cast", "mask", {node->output(1)}, std::move(out),
          {{"to", Attribute(static_cast<int64_t>(DTypeToOnnx(t)))}});
  return Status::Ok();
}

}  // namespace a8
