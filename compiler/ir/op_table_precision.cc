// The precision classes of the ops whose entries do not set OpDef::precision themselves:
// PRECISION.md's op policy as data, applied once when the table is built (op_table.cc).
// PRECISION.md also names Einsum, GroupNormalization and LpNormalization: the importer writes
// them out as ops of this table (import_decompose_*.cc), which carry the classes.
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table_builder.h"

namespace a8 {
namespace {

struct ClassList {
  OpPrecisionClass precision;
  std::vector<const char*> ops;  // qualified names
};

std::vector<ClassList> Lists() {
  return {
      // allow: the low type (tensor-core work)
      {OpPrecisionClass::kAllow, {"MatMul", "Gemm", "Conv", "ConvTranspose", "a8.ConvGradFilter"}},
      // deny: FP32, numerically sensitive (normalizations, softmax, losses, reductions,
      // exp/log/pow/sqrt, and their gradients)
      {OpPrecisionClass::kDeny,
       {"LayerNormalization",
        "BatchNormalization",
        "InstanceNormalization",
        "Softmax",
        "LogSoftmax",
        "SoftmaxCrossEntropyLoss",
        "NegativeLogLikelihoodLoss",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceProd",
        "ReduceSum",
        "ReduceSumSquare",
        "Exp",
        "Log",
        "Pow",
        "Sqrt",
        "Reciprocal",
        "CumSum",
        "TopK",
        "Range",
        "a8.LayerNormalizationGrad",
        "a8.BatchNormalizationGrad",
        "a8.InstanceNormalizationGrad",
        "a8.SoftmaxGrad",
        "a8.LogSoftmaxGrad",
        "a8.SoftmaxCrossEntropyLossGrad",
        "a8.NegativeLogLikelihoodLossGrad"}},
      // follow: the type of the inputs, the widest wins (elementwise, activations, pooling, data
      // movement, comparisons)
      {OpPrecisionClass::kFollow,
       {"Abs",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Mod",
        "Neg",
        "Sign",
        "Ceil",
        "Floor",
        "Round",
        "Max",
        "Min",
        "Mean",
        "Sum",
        "Sin",
        "Cos",
        "Clip",
        "Where",
        "Dropout",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "Reshape",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Expand",
        "Identity",
        "Pad",
        "Tile",
        "Trilu",
        "OneHot",
        "ArgMax",
        "ArgMin",
        "Equal",
        "Greater",
        "GreaterOrEqual",
        "Less",
        "LessOrEqual",
        "IsInf",
        "IsNaN",
        "a8.DropoutGrad",
        "a8.MaxPoolGrad",
        "a8.AveragePoolGrad",
        "a8.GatherGrad",
        "a8.SliceGrad"}},
      // pinned: FP32 whatever the mode or the user asks (optimizers, step control, the a8 losses)
      {OpPrecisionClass::kPinned,
       {"a8.AdamUpdate", "a8.SgdUpdate", "a8.GradAccumulate", "a8.GlobalNormSq", "a8.TrainControl",
        "a8.MseLoss", "a8.MseLossGrad", "a8.L1Loss", "a8.L1LossGrad", "a8.BceWithLogitsLoss",
        "a8.BceWithLogitsLossGrad", "ai.onnx.preview.training.Adam",
        "ai.onnx.preview.training.Adagrad", "ai.onnx.preview.training.Momentum"}},
      // none: no float math of their own (casts, constants, shapes, logic)
      {OpPrecisionClass::kNone,
       {"Cast", "CastLike", "Constant", "ConstantOfShape", "Shape", "Size", "Not", "And", "Or",
        "Xor", "ai.onnx.preview.training.Gradient"}},
  };
}

}  // namespace

void ClassifyPrecision(std::vector<OpDef>* ops) {
  std::vector<std::pair<std::string, OpPrecisionClass>> classes;
  for (const ClassList& list : Lists()) {
    for (const char* name : list.ops) classes.emplace_back(name, list.precision);
  }
  SetFromList(ops, "precision lists", &OpDef::precision, std::move(classes));
  // An internal op nobody classed is pinned: FP32 is always correct, so an a8 op added later is
  // safe until it is classified. An ONNX op without a class stays without one, and the precision
  // policy refuses to put it in a mixed-precision plan (op_registry_test: there is none).
  for (OpDef& op : *ops) {
    if (!op.precision && op.domain == "a8") op.precision = OpPrecisionClass::kPinned;
  }
}

}  // namespace a8
