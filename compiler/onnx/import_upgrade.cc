#include "compiler/onnx/import_upgrade.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <string_view>

#include "compiler/onnx/import_upgrade_legacy.h"
#include "kernels/common/float16.h"

namespace a8 {
namespace {

// The ops that had `broadcast`/`axis` attributes before version 7.
bool HasLegacyBroadcast(std::string_view op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" ||
         op == "Greater" || op == "Less" || op == "And" || op == "Or" || op == "Xor";
}

// Cast-1's `to` is the name of a TensorProto.DataType ("FLOAT"); from Cast-6 on, its number.
Status CastToAsNumber(Node* node) {
  const Attribute* a = node->attr("to");
  if (!a || a->kind() != AttrKind::kString) return Status::Ok();
  onnx::TensorProto_DataType value = onnx::TensorProto_DataType_UNDEFINED;
  if (!onnx::TensorProto_DataType_Parse(a->s(), &value) ||
      value == onnx::TensorProto_DataType_UNDEFINED) {
    return InvalidInput("{}: attribute 'to' = '{}' is not an ONNX element type name", node->Where(),
                        a->s());
  }
  node->SetAttr("to", Attribute(static_cast<int64_t>(value)));
  return Status::Ok();
}

// Tile-1 (input, tiles, axis), tiles and axis scalars of the input's type: `tiles` copies along
// `axis`. Tile-6 takes one count per dim (repeats, i64).
Status TileRepeatsFromAxis(Node* node, const UpgradeContext& ctx) {
  const Value* tiles = node->input(1);
  const Value* axis = node->input(2);
  // Float initializers are parameters: what counts is that the data is known.
  if (!tiles || !axis || !tiles->data() || !axis->data() || tiles->data()->num_elements() != 1 ||
      axis->data()->num_elements() != 1) {
    return Unsupported("{}: Tile-1's 'tiles' and 'axis' must be constant scalars", node->Where());
  }
  std::optional<int64_t> rank = node->has_input(0) ? ctx.known_rank(node->input(0)) : std::nullopt;
  if (!rank) {
    return Unsupported("{}: Tile-1 needs the input's rank (declare it in value_info)",
                       node->Where());
  }
  const int64_t a = static_cast<int64_t>(axis->data()->GetDouble(0));
  const int64_t n = static_cast<int64_t>(tiles->data()->GetDouble(0));
  if (a < 0 || a >= *rank || n < 0) {
    return InvalidInput("{}: Tile-1 with tiles={} along axis {} of a rank-{} input", node->Where(),
                        n, a, *rank);
  }
  std::vector<int64_t> repeats(static_cast<size_t>(*rank), 1);
  repeats[static_cast<size_t>(a)] = n;
  Value* r = ctx.graph->AddConstant(ctx.fresh_name(node->name() + ".repeats"),
                                    TensorData::FromInt64s(repeats, {*rank}));
  node->RemoveTrailingInputs(1);
  node->SetInput(1, r);
  return Status::Ok();
}

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
    case DType::kI16:
      *d->mutable_data<int16_t>() = static_cast<int16_t>(v);
      break;
    case DType::kU16:
      *d->mutable_data<uint16_t>() = static_cast<uint16_t>(v);
      break;
    case DType::kU32:
      *d->mutable_data<uint32_t>() = static_cast<uint32_t>(v);
      break;
    case DType::kU64:
      *d->mutable_data<uint64_t>() = static_cast<uint64_t>(v);
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
    return AttrToInput(attr, AttrKind::kInts, "ints", index, field, [](const Attribute& a) {
      return TensorData::FromInt64s(a.ints(), {static_cast<int64_t>(a.ints().size())});
    });
  }

  // Moves the int attribute `attr` (if present) to input `index` as an i64[1] constant.
  Status IntToInput(const std::string& attr, int index, const std::string& field) {
    return AttrToInput(attr, AttrKind::kInt, "an int", index, field,
                       [](const Attribute& a) { return TensorData::FromInt64s({a.i()}, {1}); });
  }

  // Moves the float attribute `attr` (if present) to input `index` as a scalar of `dtype`.
  Status FloatToInput(const std::string& attr, int index, const std::string& field, DType dtype) {
    return AttrToInput(attr, AttrKind::kFloat, "a float", index, field,
                       [&](const Attribute& a) { return Scalar(dtype, a.f()); });
  }

  // The element type of input 0 when the model declares it, else f32.
  DType Input0DType() const {
    if (!node_->has_input(0)) return DType::kF32;
    return ctx_.known_dtype(node_->input(0)).value_or(DType::kF32);
  }

 private:
  // Moves attribute `attr` (if present; it must be of `kind`, which the error calls `what`) to
  // input `index` as the constant `make_data` makes of it.
  template <typename MakeData>
  Status AttrToInput(const std::string& attr, AttrKind kind, std::string_view what, int index,
                     const std::string& field, MakeData make_data) {
    const Attribute* a = node_->attr(attr);
    if (!a) return Status::Ok();
    if (a->kind() != kind) {
      return InvalidInput("{}: attribute '{}' must be {}, got {}", node_->Where(), attr, what,
                          AttrKindName(a->kind()));
    }
    A8_RETURN_IF_ERROR(SetNewInput(index, field, make_data(*a)));
    node_->RemoveAttr(attr);
    return Status::Ok();
  }

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
  // Version 1's `consumed_inputs` was a memory-reuse hint without meaning for the result.
  if (from < 6) node->RemoveAttr("consumed_inputs");
  if (HasLegacyBroadcast(op) && from < 7) return UpgradeLegacyBroadcast(node, from, ctx);
  if (op == "Gemm" && from < 7) {
    // broadcast=0 required C to be [M, N]; broadcast=1 is Gemm-7's unidirectional broadcast.
    node->RemoveAttr("broadcast");
    return Status::Ok();
  }
  if (op == "Concat" && from < 4 && !node->has_attr("axis")) {
    node->SetAttr("axis", Attribute(int64_t{1}));  // Concat-1's default
    return Status::Ok();
  }
  if (op == "Reshape" && from < 5) return u.IntsToInput("shape", 1, "shape");
  if (op == "Selu" && from < 6) {
    // Selu-1's defaults were rounded to 5 digits; Selu-6 changed them.
    if (!node->has_attr("alpha")) node->SetAttr("alpha", Attribute(1.6732f));
    if (!node->has_attr("gamma")) node->SetAttr("gamma", Attribute(1.0507f));
    return Status::Ok();
  }
  if (op == "Cast" && from < 6) return CastToAsNumber(node);
  if (op == "Tile" && from < 6) return TileRepeatsFromAxis(node, ctx);
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
    // Dropout-1/6's is_test: a800c's Dropout is active exactly when the graph is trained.
    node->RemoveAttr("is_test");
    A8_RETURN_IF_ERROR(UpgradeDropoutMask(node, from, ctx));
    return u.FloatToInput("ratio", 1, "ratio", DType::kF32);
  }
  if (op == "TopK" && from < 10) {
    if (!node->has_attr("k")) return InvalidInput("{}: TopK-1 needs attribute 'k'", node->Where());
    return u.IntToInput("k", 1, "K");
  }
  if (op == "BatchNormalization" && from < 14) return UpgradeBatchNormalization(node, from);
  if (op == "GridSample" && from < 20) {
    // GridSample-16's modes 'bilinear' and 'bicubic' are 20's 'linear' and 'cubic' (16 is 4-D).
    const std::string mode = node->GetString("mode", "bilinear");
    if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
      return InvalidInput(
          "{}: GridSample-16's attribute 'mode' '{}' must be bilinear, nearest or "
          "bicubic",
          node->Where(), mode);
    }
    node->SetAttr("mode", Attribute(mode == "bilinear"  ? std::string("linear")
                                    : mode == "bicubic" ? std::string("cubic")
                                                        : mode));
    return Status::Ok();
  }
  if (op == "RoiAlign" && from < 16) {
    // RoiAlign-10 samples as 16's 'output_half_pixel' (16 added the attribute, default
    // 'half_pixel').
    node->SetAttr("coordinate_transformation_mode", Attribute(std::string("output_half_pixel")));
    return Status::Ok();
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && from < 13) {
    return UpgradeSoftmaxCoercion(node, from, ctx);
  }
  return Status::Ok();
}

}  // namespace a8
