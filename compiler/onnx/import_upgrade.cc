#include "compiler/onnx/import_upgrade.h"

#include <cstring>
#include <string_view>

#include "kernels/common/float16.h"

namespace a8 {
namespace {

bool IsReduce(std::string_view op) {
  return op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
         op == "ReduceMax" || op == "ReduceMean" || op == "ReduceMin" || op == "ReduceProd" ||
         op == "ReduceSum" || op == "ReduceSumSquare";
}

// A scalar of `dtype` holding `v` (rounded as the dtype rounds).
std::shared_ptr<TensorData> Scalar(DType dtype, double v) {
  auto d = TensorData::Make(TensorType{dtype, {}});
  switch (dtype) {
    case DType::kF32:
      *d->mutable_data<float>() = static_cast<float>(v);
      break;
    case DType::kF16:
      *d->mutable_data<uint16_t>() = FloatToHalfBits(static_cast<float>(v));
      break;
    case DType::kBF16:
      *d->mutable_data<uint16_t>() = FloatToBFloat16Bits(static_cast<float>(v));
      break;
    case DType::kF64:
      *d->mutable_data<double>() = v;
      break;
    case DType::kI64:
      *d->mutable_data<int64_t>() = static_cast<int64_t>(v);
      break;
    case DType::kI32:
      *d->mutable_data<int32_t>() = static_cast<int32_t>(v);
      break;
    case DType::kI8:
      *d->mutable_data<int8_t>() = static_cast<int8_t>(v);
      break;
    case DType::kU8:
      *d->mutable_data<uint8_t>() = static_cast<uint8_t>(v);
      break;
    case DType::kBool:
      *d->mutable_data<uint8_t>() = v != 0;
      break;
  }
  return d;
}

class Upgrader {
 public:
  Upgrader(Node* node, const UpgradeContext& ctx) : node_(node), ctx_(ctx) {}

  // Moves the ints attribute `attr` (if present) to input `index` as an i64[n] constant.
  Status IntsToInput(const std::string& attr, int index, const std::string& field) {
    const Attribute* a = node_->attr(attr);
    if (!a) return Status::Ok();
    if (a->kind() != AttrKind::kInts) {
      return InvalidInput("{}: attribute '{}' must be ints, got {}", node_->Where(), attr,
                          AttrKindName(a->kind()));
    }
    std::vector<int64_t> v = a->ints();
    const int64_t n = static_cast<int64_t>(v.size());
    A8_RETURN_IF_ERROR(SetNewInput(index, field, TensorData::FromInt64s(v, {n})));
    node_->RemoveAttr(attr);
    return Status::Ok();
  }

  // Moves the float attribute `attr` (if present) to input `index` as a scalar of `dtype`.
  Status FloatToInput(const std::string& attr, int index, const std::string& field, DType dtype) {
    const Attribute* a = node_->attr(attr);
    if (!a) return Status::Ok();
    if (a->kind() != AttrKind::kFloat) {
      return InvalidInput("{}: attribute '{}' must be a float, got {}", node_->Where(), attr,
                          AttrKindName(a->kind()));
    }
    A8_RETURN_IF_ERROR(SetNewInput(index, field, Scalar(dtype, a->f())));
    node_->RemoveAttr(attr);
    return Status::Ok();
  }

  // The element type of input 0 when the model declares it, else f32.
  DType Input0DType() const {
    if (!node_->has_input(0)) return DType::kF32;
    return ctx_.known_dtype(node_->input(0)).value_or(DType::kF32);
  }

  Status SoftmaxLastAxisOnly(int from) {
    const int64_t axis = node_->GetInt("axis", 1);
    std::optional<int64_t> rank =
        node_->has_input(0) ? ctx_.known_rank(node_->input(0)) : std::nullopt;
    if (!rank) {
      return Unsupported(
          "{}: {}-{} flattens its input to 2D at axis {}; a800c accepts that only "
          "when axis is the last axis, and the input's rank is unknown "
          "(add a value_info for '{}' or use opset 13)",
          node_->Where(), node_->op(), from, axis,
          node_->has_input(0) ? node_->input(0)->name() : "");
    }
    const int64_t normalized = axis < 0 ? axis + *rank : axis;
    if (normalized != *rank - 1) {
      return Unsupported(
          "{}: {}-{} with axis={} on a rank-{} input flattens several axes into "
          "one; a800c supports it only when axis is the last axis",
          node_->Where(), node_->op(), from, axis, *rank);
    }
    node_->SetAttr("axis", Attribute(normalized));
    return Status::Ok();
  }

 private:
  Status SetNewInput(int index, const std::string& field, TensorDataPtr data) {
    if (node_->has_input(index)) {
      return InvalidInput("{}: has both attribute and input {} for '{}'", node_->Where(), index,
                          field);
    }
    Value* v = ctx_.graph->AddConstant(ctx_.fresh_name(node_->name() + "." + field),
                                       std::make_shared<TensorData>(*data));
    node_->SetInput(index, v);
    return Status::Ok();
  }

  Node* node_;
  const UpgradeContext& ctx_;
};

// BatchNormalization-1/6/7/9 to 14: `consumed_inputs` (1) goes; `spatial` (1-7) must be 1, its
// default (0 normalizes each element over N alone); `is_test` (1-6) must agree with the outputs.
// Before 14 the outputs say the mode: Y alone is inference, more is training, which 14 spells
// training_mode=1 with the outputs Y, running_mean, running_var (the importer drops the
// training form's saved_mean and saved_var when nothing reads them).
Status UpgradeBatchNormalization(Node* node, int from) {
  node->RemoveAttr("consumed_inputs");
  if (node->GetInt("spatial", 1) != 1) {
    return Unsupported(
        "{}: BatchNormalization-{} with spatial={} (statistics per element rather than per "
        "channel) is not supported",
        node->Where(), from, node->GetInt("spatial", 1));
  }
  node->RemoveAttr("spatial");
  const bool training = node->num_outputs() > 1;
  if (node->has_attr("is_test") && (node->GetInt("is_test", 0) != 0) == training) {
    return InvalidInput(
        "{}: is_test={} does not match its outputs: inference (is_test=1) has output Y "
        "alone, training (is_test=0) has Y, mean and var (and saved_mean, saved_var)",
        node->Where(), node->GetInt("is_test", 0));
  }
  node->RemoveAttr("is_test");
  if (training) node->SetAttr("training_mode", Attribute(static_cast<int64_t>(1)));
  return Status::Ok();
}

}  // namespace

Status UpgradeNode(Node* node, int from, int to, const UpgradeContext& ctx) {
  if (from >= to || !node->domain().empty()) return Status::Ok();
  Upgrader u(node, ctx);
  const std::string& op = node->op();
  if ((op == "Unsqueeze" || op == "Squeeze") && from < 13) {
    return u.IntsToInput("axes", 1, "axes");
  }
  if (IsReduce(op) && from < (op == "ReduceSum" ? 13 : 18)) {
    return u.IntsToInput("axes", 1, "axes");
  }
  if (op == "Split") {
    if (from < 13) A8_RETURN_IF_ERROR(u.IntsToInput("split", 1, "split"));
    // Split-18 needs `split` or `num_outputs`; before 18, no `split` meant equal parts.
    if (to >= 18 && from < 18 && !node->has_input(1) && !node->has_attr("num_outputs")) {
      node->SetAttr("num_outputs", Attribute(static_cast<int64_t>(node->num_outputs())));
    }
    return Status::Ok();
  }
  if (op == "Slice" && from < 10) {
    A8_RETURN_IF_ERROR(u.IntsToInput("starts", 1, "starts"));
    A8_RETURN_IF_ERROR(u.IntsToInput("ends", 2, "ends"));
    return u.IntsToInput("axes", 3, "axes");
  }
  if (op == "Clip" && from < 11) {
    const DType t = u.Input0DType();
    A8_RETURN_IF_ERROR(u.FloatToInput("min", 1, "min", t));
    return u.FloatToInput("max", 2, "max", t);
  }
  if (op == "Pad" && from < 11) {
    A8_RETURN_IF_ERROR(u.IntsToInput("pads", 1, "pads"));
    A8_RETURN_IF_ERROR(u.IntsToInput("paddings", 1, "pads"));  // Pad-1's name
    if (node->GetString("mode", "constant") != "constant") node->RemoveAttr("value");
    return u.FloatToInput("value", 2, "value", u.Input0DType());
  }
  if (op == "Dropout" && from < 12) {
    if (from < 10 && node->num_outputs() > 1) {
      return Unsupported(
          "{}: Dropout-{}'s mask output has the data's element type (bool from "
          "Dropout-10 on); a800c supports it only without the mask output",
          node->Where(), from);
    }
    return u.FloatToInput("ratio", 1, "ratio", DType::kF32);
  }
  if (op == "BatchNormalization" && from < 14) return UpgradeBatchNormalization(node, from);
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && from < 13) {
    return u.SoftmaxLastAxisOnly(from);
  }
  return Status::Ok();
}

}  // namespace a8
