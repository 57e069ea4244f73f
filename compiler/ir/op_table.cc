// The op table: one entry per op (see op_table.h), plus version resolution and the generic
// arity/attribute check every node goes through before its shape rule runs.
#include "compiler/ir/op_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "compiler/ir/op_table_builder.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
namespace {

struct VersionHistory {
  std::string_view domain, name;
  std::vector<int> versions;
};

#define A8_ONNX_OP(domain, name, ...) VersionHistory{domain, name, __VA_ARGS__},
#define A8_ONNX_NEWEST(domain, opset)
const std::vector<VersionHistory>& Histories() {
  static const std::vector<VersionHistory> kHistories = {
#include "compiler/ir/onnx_versions.inc"
  };
  return kHistories;
}
#undef A8_ONNX_OP
#undef A8_ONNX_NEWEST

struct NewestOpset {
  std::string_view domain;
  int opset;
};
#define A8_ONNX_OP(domain, name, ...)
#define A8_ONNX_NEWEST(domain, opset) NewestOpset{domain, opset},
const std::vector<NewestOpset>& NewestOpsets() {
  static const std::vector<NewestOpset> kNewest = {
#include "compiler/ir/onnx_versions.inc"
  };
  return kNewest;
}
#undef A8_ONNX_OP
#undef A8_ONNX_NEWEST

std::string_view DomainName(std::string_view domain) {
  return domain.empty() ? std::string_view("ai.onnx") : domain;
}

void AddElementwiseOps(std::vector<OpDef>* ops) {
  // The common "unary math" history is {1, 6, 13}; 1 had `consumed_inputs` (dropped at import).
  const std::vector<int> kUnary6{1, 6, 13};
  // 1 and 6 have the legacy `broadcast`/`axis` attributes (import_upgrade_legacy.h).
  const std::vector<int> kArithmetic{1, 6, 7, 13, 14};
  // Every op of this family is elementwise (with broadcasting); `in_place` marks those whose
  // kernels may write over input 0 (unary, variadic: the CPU folds the inputs into the output one
  // after another, starting from a copy of input 0) or over any input (binary).
  auto add = [&](OpDef op, InPlace in_place = InPlace::kNo) {
    op.elementwise = true;
    op.in_place = in_place;
    ops->push_back(std::move(op));
  };
  constexpr InPlace kIn0 = InPlace::kInput0, kAny = InPlace::kAnyInput;
  AddActivations(ops);
  AddBitwiseOps(ops);
  add(Op("Abs", kUnary, {}, kUnary6, 6, InferNumericUnary, "|x|"), kIn0);
  add(Op("Neg", kUnary, {}, kUnary6, 6, InferNumericUnary, "-x"), kIn0);
  add(Op("Exp", kUnary, {}, kUnary6, 6, InferFloatUnary, "e^x"), kIn0);
  add(Op("Log", kUnary, {}, kUnary6, 6, InferFloatUnary, "natural logarithm"), kIn0);
  add(Op("Sqrt", kUnary, {}, kUnary6, 6, InferFloatUnary, "square root"), kIn0);
  add(Op("Reciprocal", kUnary, {}, kUnary6, 6, InferFloatUnary, "1 / x"), kIn0);
  add(NotDifferentiable(Op("Floor", kUnary, {}, kUnary6, 6, InferFloatUnary, "round down")), kIn0);
  add(NotDifferentiable(Op("Ceil", kUnary, {}, kUnary6, 6, InferFloatUnary, "round up")), kIn0);
  add(Op("Sin", kUnary, {}, {7, 22}, 7, InferFloatUnary, "sine"), kIn0);
  add(Op("Cos", kUnary, {}, {7, 22}, 7, InferFloatUnary, "cosine"), kIn0);
  add(NotDifferentiable(
          Op("Round", kUnary, {}, {11, 22}, 11, InferFloatUnary, "round half to even")),
      kIn0);
  add(NotDifferentiable(
          Op("Not", kUnary, {}, {1}, 1, InferLogicalNot, "logical not of a bool tensor")),
      kIn0);
  add(Op("Identity", kUnary, {}, {1, 13, 14, 16, 19, 21, 23, 24, 25}, 1, InferSameAsInput0,
         "y = x"),
      InPlace::kView);
  add(NotDifferentiable(Op("Sign", kUnary, {}, {9, 13}, 9, InferNumericUnary, "-1, 0 or 1")), kIn0);
  add(NotDifferentiable(
      Op("IsNaN", kUnary, {}, {9, 13, 20}, 9, InferBoolUnary, "x != x, as bool")));
  add(NotDifferentiable(Op("IsInf", kUnary, {Opt("detect_negative", 1), Opt("detect_positive", 1)},
                           {10, 20}, 10, InferBoolUnary, "x is +-inf, as bool")));

  add(Op("Add", kBinary, {}, kArithmetic, 7, InferBroadcastBinary, "a + b (broadcasting)"), kAny);
  add(Op("Sub", kBinary, {}, kArithmetic, 7, InferBroadcastBinary, "a - b (broadcasting)"), kAny);
  add(Op("Mul", kBinary, {}, kArithmetic, 7, InferBroadcastBinary, "a * b (broadcasting)"), kAny);
  add(Op("Div", kBinary, {}, kArithmetic, 7, InferBroadcastBinary, "a / b (broadcasting)"), kAny);
  add(Op("Pow", kBinary, {}, {1, 7, 12, 13, 15}, 7, InferPow, "x ^ y (broadcasting)"), kAny);
  add(NotDifferentiable(Op("Mod", kBinary, {Opt("fmod", 0)}, {10, 13, 28}, 10, InferMod,
                           "remainder (fmod=0: sign of divisor, fmod=1: C fmod)")));
  add(NotDifferentiable(
      Op("Equal", kBinary, {}, {1, 7, 11, 13, 19}, 7, InferCompareBinary, "a == b, as bool")));
  add(NotDifferentiable(
      Op("Less", kBinary, {}, {1, 7, 9, 13}, 7, InferCompareBinary, "a < b, as bool")));
  add(NotDifferentiable(
      Op("LessOrEqual", kBinary, {}, {12, 16}, 12, InferCompareBinary, "a <= b, as bool")));
  add(NotDifferentiable(
      Op("Greater", kBinary, {}, {1, 7, 9, 13}, 7, InferCompareBinary, "a > b, as bool")));
  add(NotDifferentiable(
      Op("GreaterOrEqual", kBinary, {}, {12, 16}, 12, InferCompareBinary, "a >= b, as bool")));
  add(NotDifferentiable(
          Op("And", kBinary, {}, {1, 7}, 7, InferLogicalBinary, "logical and (broadcasting)")),
      kAny);
  add(NotDifferentiable(
          Op("Or", kBinary, {}, {1, 7}, 7, InferLogicalBinary, "logical or (broadcasting)")),
      kAny);
  add(NotDifferentiable(
          Op("Xor", kBinary, {}, {1, 7}, 7, InferLogicalBinary, "logical xor (broadcasting)")),
      kAny);

  // Version 8 introduced multidirectional broadcasting for the variadic ops; 1 and 6 require
  // equal shapes, which it accepts unchanged.
  add(Op("Max", kVariadic, {}, {1, 6, 8, 12, 13}, 8, InferVariadic, "elementwise max of N inputs"),
      kIn0);
  add(Op("Min", kVariadic, {}, {1, 6, 8, 12, 13}, 8, InferVariadic, "elementwise min of N inputs"),
      kIn0);
  add(Op("Sum", kVariadic, {}, {1, 6, 8, 13}, 8, InferVariadic, "elementwise sum of N inputs"),
      kIn0);
  add(Op("Mean", kVariadic, {}, {1, 6, 8, 13}, 8, InferVariadic, "elementwise mean of N inputs"),
      kIn0);
  add(Op("Where", {3, 3, 1, 1}, {}, {9, 16}, 9, InferWhere, "condition ? x : y (broadcasting)"));
  // Clip-1/6 have min/max attributes; the importer moves them to inputs (canonical 11).
  add(Op("Clip", {1, 3, 1, 1},
         {OptNoDefault("min", AttrKind::kFloat), OptNoDefault("max", AttrKind::kFloat)},
         {1, 6, 11, 12, 13}, 11, InferClip, "clamp to [min, max] (optional scalar inputs)"),
      kIn0);
  add(Op("Cast", kUnary, {Req("to", AttrKind::kInt), Opt("saturate", 1), Opt("round_mode", "up")},
         {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}, 6, InferCast, "convert to element type `to`"),
      kIn0);
  add(Op("CastLike", kBinary, {Opt("saturate", 1), Opt("round_mode", "up")},
         {15, 19, 21, 23, 24, 25}, 15, InferCastLike, "convert to the element type of input 1"));
}

std::vector<AttrSpec> PoolAttrs(bool max_pool) {
  std::vector<AttrSpec> attrs = {Opt("auto_pad", "NOTSET"),
                                 Opt("ceil_mode", 0),
                                 OptNoDefault("dilations", AttrKind::kInts),
                                 Req("kernel_shape", AttrKind::kInts),
                                 OptNoDefault("pads", AttrKind::kInts),
                                 OptNoDefault("strides", AttrKind::kInts)};
  if (max_pool) {
    attrs.push_back(Opt("storage_order", 0));
  } else {
    attrs.push_back(Opt("count_include_pad", 0));
  }
  return attrs;
}

std::vector<AttrSpec> LossAttrs() {
  return {OptNoDefault("ignore_index", AttrKind::kInt), Opt("reduction", "mean")};
}

void AddNnOps(std::vector<OpDef>* ops) {
  auto add = [&](OpDef op) { ops->push_back(std::move(op)); };
  add(Multiplies({0, 1}, Op("MatMul", kBinary, {}, {1, 9, 13}, 1, InferMatMul,
                            "numpy matmul: 1-D operands, batch broadcasting")));
  // Gemm-1/6 have the legacy `broadcast` attribute (dropped at import: Gemm-7's broadcast).
  add(Multiplies(
      {0, 1},
      Op("Gemm", {2, 3, 1, 1},
         {Opt("alpha", 1.0f), Opt("beta", 1.0f), Opt("transA", 0), Opt("transB", 0)},
         {1, 6, 7, 9, 11, 13}, 7, InferGemm, "alpha * A' * B' + beta * C (C broadcast to [M,N])")));
  add(Multiplies({0, 1},
                 Op("Conv", {2, 3, 1, 1}, ConvAttrs(false), {1, 11, 22}, 1, InferConv,
                    "1-D/2-D/3-D convolution (pads, strides, dilations, group, auto_pad)")));
  add(WithGradient(
      GradDecision::kNotImplemented,
      Multiplies({0, 1},
                 Op("ConvTranspose", {2, 3, 1, 1}, ConvAttrs(true), {1, 11, 22}, 1,
                    InferConvTranspose, "transposed convolution (output_padding, output_shape)"))));
  // 1-9: one output in inference, more in training (import_upgrade.cc: 14's form); 14:
  // training_mode -> 3.
  add(WithLowEdges(
      {0}, Op("BatchNormalization", {5, 5, 1, 5},
              {Opt("epsilon", 1e-5f), Opt("momentum", 0.9f), Opt("training_mode", 0)},
              {1, 6, 7, 9, 14, 15}, 14, InferBatchNormalization,
              "batch normalization over N and spatial dims (training_mode: batch statistics)")));
  add(WithLowEdges({0}, Op("LayerNormalization", {2, 3, 1, 3},
                           {Opt("axis", -1), Opt("epsilon", 1e-5f), Opt("stash_type", 1)}, {17}, 17,
                           InferLayerNormalization,
                           "normalize over dims [axis, rank); outputs Y, Mean, InvStdDev")));
  add(Op("InstanceNormalization", {3, 3, 1, 1}, {Opt("epsilon", 1e-5f)}, {1, 6, 22}, 6,
         InferInstanceNormalization, "normalize each (n, c) over the spatial dims"));
  add(Op("MaxPool", {1, 1, 1, 2}, PoolAttrs(true), {1, 8, 10, 11, 12, 22}, 8, InferPool,
         "max pooling (ceil_mode, dilations; optional Indices output)"));
  add(Op("AveragePool", {1, 1, 1, 1}, PoolAttrs(false), {1, 7, 10, 11, 19, 22}, 7, InferPool,
         "average pooling (count_include_pad, ceil_mode)"));
  add(Op("GlobalAveragePool", kUnary, {}, {1, 22}, 1, InferGlobalPool,
         "mean over all spatial dims"));
  add(Op("GlobalMaxPool", kUnary, {}, {1, 22}, 1, InferGlobalPool, "max over all spatial dims"));
  // Softmax < 13 normalizes over the flattened dims [axis, rank); the importer writes that
  // coercion out as Reshape -> Softmax(axis=-1) -> Reshape (import_upgrade_legacy.h).
  add(Op("Softmax", kUnary, {Opt("axis", -1)}, {1, 11, 13}, 13, InferSoftmax,
         "softmax along axis"));
  add(Op("LogSoftmax", kUnary, {Opt("axis", -1)}, {1, 11, 13}, 13, InferSoftmax,
         "log of softmax along axis"));
  // Dropout-1/6/7/10 have a `ratio` attribute (moved to an input by the importer); 1/6 also
  // `is_test`; 1/6/7's mask has the data's type (a Cast of the bool mask at import).
  OpDef dropout =
      Op("Dropout", {1, 3, 1, 2},
         {OptNoDefault("seed", AttrKind::kInt), OptNoDefault("ratio", AttrKind::kFloat)},
         {1, 6, 7, 10, 12, 13, 22}, 12, InferDropout,
         "random zeroing in training mode, identity otherwise; optional bool mask");
  dropout.random = true;
  add(std::move(dropout));
  add(Op("SoftmaxCrossEntropyLoss", {2, 3, 1, 2}, LossAttrs(), {12, 13}, 12,
         InferSoftmaxCrossEntropyLoss,
         "softmax + negative log likelihood (reduction, ignore_index, weights; log_prob)"));
  add(Op("NegativeLogLikelihoodLoss", {2, 3, 1, 1}, LossAttrs(), {12, 13, 22}, 12,
         InferNegativeLogLikelihoodLoss,
         "negative log likelihood of log-probabilities (reduction, ignore_index, weight)"));
}

void AddReductionOps(std::vector<OpDef>* ops) {
  // Reductions take `axes` as an input since ReduceSum-13 and the others' 18; the legacy
  // attribute stays declared so that not-yet-upgraded nodes pass the arity/attribute check.
  const std::vector<AttrSpec> attrs = {Opt("keepdims", 1), Opt("noop_with_empty_axes", 0),
                                       OptNoDefault("axes", AttrKind::kInts)};
  const Arity arity{1, 2, 1, 1};
  auto add = [&](const char* name, std::vector<int> versions, int canonical, const char* doc,
                 GradDecision gradient = GradDecision::kUndeclared) {
    ops->push_back(WithGradient(
        gradient, Op(name, arity, attrs, std::move(versions), canonical, InferReduce, doc)));
  };
  add("ReduceSum", {1, 11, 13}, 13, "sum over axes");
  add("ReduceMean", {1, 11, 13, 18}, 18, "mean over axes");
  add("ReduceMax", {1, 11, 12, 13, 18, 20}, 18, "max over axes");
  add("ReduceMin", {1, 11, 12, 13, 18, 20}, 18, "min over axes");
  add("ReduceProd", {1, 11, 13, 18}, 18, "product over axes", GradDecision::kNotImplemented);
  add("ReduceSumSquare", {1, 11, 13, 18}, 18, "sum of squares over axes");
  add("ReduceL1", {1, 11, 13, 18}, 18, "sum of absolute values over axes");
  add("ReduceL2", {1, 11, 13, 18}, 18, "Euclidean norm over axes");
  add("ReduceLogSumExp", {1, 11, 13, 18, 28}, 18, "log(sum(exp(x))) over axes");
  const std::vector<AttrSpec> arg_attrs = {Opt("axis", 0), Opt("keepdims", 1),
                                           Opt("select_last_index", 0)};
  ops->push_back(NotDifferentiable(Op("ArgMax", kUnary, arg_attrs, {1, 11, 12, 13}, 1,
                                      InferArgReduce, "index of the max along axis (i64)")));
  ops->push_back(NotDifferentiable(Op("ArgMin", kUnary, arg_attrs, {1, 11, 12, 13}, 1,
                                      InferArgReduce, "index of the min along axis (i64)")));
  ops->push_back(Op("CumSum", kBinary, {Opt("exclusive", 0), Opt("reverse", 0)}, {11, 14}, 11,
                    InferCumSum, "cumulative sum along an axis (exclusive, reverse)"));
}

void AddShapeOps(std::vector<OpDef>* ops) {
  auto add = [&](OpDef op) { ops->push_back(std::move(op)); };
  // The views: the output is the input's bytes (plan-memory lets it take them).
  auto view = [&](OpDef op) {
    op.in_place = InPlace::kView;
    add(std::move(op));
  };
  view(Op("Reshape", kBinary, {Opt("allowzero", 0)}, {1, 5, 13, 14, 19, 21, 23, 24, 25}, 5,
          InferReshape, "reshape to a constant shape (0 copies a dim, -1 infers one)"));
  view(Op("Flatten", kUnary, {Opt("axis", 1)}, {1, 9, 11, 13, 21, 23, 24, 25}, 1, InferFlatten,
          "reshape to 2-D at axis"));
  add(Op("Transpose", kUnary, {OptNoDefault("perm", AttrKind::kInts)}, {1, 13, 21, 23, 24, 25}, 1,
         InferTranspose, "permute dims (default: reverse)"));
  add(Op("Concat", {1, kMany, 1, 1}, {Req("axis", AttrKind::kInt)}, {1, 4, 11, 13}, 4, InferConcat,
         "concatenate along axis"));
  // Split-1 takes `split` as an attribute or an input, 2/11 as an attribute, 13 as an input, 18
  // adds num_outputs.
  add(Op("Split", {1, 2, 1, kMany},
         {Opt("axis", 0), OptNoDefault("num_outputs", AttrKind::kInt),
          OptNoDefault("split", AttrKind::kInts)},
         {1, 2, 11, 13, 18}, 18, InferSplit,
         "split along axis (sizes, num_outputs or equal parts)"));
  // Slice-1 takes starts/ends/axes as attributes; the importer moves them to inputs.
  add(Op("Slice", {1, 5, 1, 1},
         {OptNoDefault("starts", AttrKind::kInts), OptNoDefault("ends", AttrKind::kInts),
          OptNoDefault("axes", AttrKind::kInts)},
         {1, 10, 11, 13}, 10, InferSlice, "strided slice with constant starts/ends/axes/steps"));
  add(Op("Gather", kBinary, {Opt("axis", 0)}, {1, 11, 13}, 1, InferGather,
         "take slices along axis at indices"));
  add(WithGradient(GradDecision::kNotImplemented,
                   Op("GatherElements", kBinary, {Opt("axis", 0)}, {11, 13}, 11,
                      InferGatherElements, "take elements along axis at same-rank indices")));
  const std::vector<int> squeeze_versions{1, 11, 13, 21, 23, 24, 25};
  view(Op("Squeeze", {1, 2, 1, 1}, {OptNoDefault("axes", AttrKind::kInts)}, squeeze_versions, 13,
          InferSqueeze, "remove size-1 dims (constant axes, default all)"));
  view(Op("Unsqueeze", {1, 2, 1, 1}, {OptNoDefault("axes", AttrKind::kInts)}, squeeze_versions, 13,
          InferUnsqueeze, "insert size-1 dims at constant axes"));
  add(Op("Expand", kBinary, {}, {8, 13}, 8, InferExpand,
         "broadcast to a constant shape (bidirectional)"));
  // Pad-1 (`paddings`) and Pad-2 take pads/value as attributes; 18 adds the axes input; 19 adds
  // mode=wrap (numpy's: non-negative pads only).
  add(Op("Pad", {1, 4, 1, 1},
         {Opt("mode", "constant"), OptNoDefault("pads", AttrKind::kInts),
          OptNoDefault("value", AttrKind::kFloat)},
         {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}, 18, InferPad,
         "pad with constant pads (modes constant, reflect, edge, wrap)"));
  // Tile-1 takes (input, tiles, axis); the importer makes them Tile-6's repeats.
  add(Op("Tile", kBinary, {}, {1, 6, 13}, 6, InferTile,
         "repeat along each dim (constant repeats)"));
  add(NotDifferentiable(Op("Shape", kUnary, {Opt("start", 0), OptNoDefault("end", AttrKind::kInt)},
                           {1, 13, 15, 19, 21, 23, 24, 25}, 1, InferShape,
                           "the input's dims [start, end) as i64")));
  add(NotDifferentiable(Op("Size", kUnary, {}, {1, 13, 19, 21, 23, 24, 25}, 1, InferSize,
                           "the input's element count as an i64 scalar")));
  add(NotDifferentiable(Op("ConstantOfShape", kUnary, {OptNoDefault("value", AttrKind::kTensor)},
                           {9, 20, 21, 23, 24, 25}, 9, InferConstantOfShape,
                           "a tensor of constant shape filled with `value`")));
  add(WithGradient(
      GradDecision::kNone,
      Op("Constant", {0, 0, 1, 1},
         {OptNoDefault("value", AttrKind::kTensor), OptNoDefault("value_float", AttrKind::kFloat),
          OptNoDefault("value_floats", AttrKind::kFloats),
          OptNoDefault("value_int", AttrKind::kInt), OptNoDefault("value_ints", AttrKind::kInts),
          OptNoDefault("value_string", AttrKind::kString),
          OptNoDefault("value_strings", AttrKind::kStrings)},
         {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}, 1, InferConstant,
         "a constant tensor (the importer turns it into a constant value)")));
  add(NotDifferentiable(Op("Range", {3, 3, 1, 1}, {Opt("stash_type", 1)}, {11, 27}, 11, InferRange,
                           "start, start + delta, ... below limit (constant operands)")));
  add(Op("Trilu", {1, 2, 1, 1}, {Opt("upper", 1)}, {14}, 14, InferTrilu,
         "upper or lower triangle of the last two dims"));
  add(NotDifferentiable(Op("OneHot", {3, 3, 1, 1}, {Opt("axis", -1)}, {9, 11, 28}, 9, InferOneHot,
                           "one-hot encoding with a constant depth")));
}

void AddTrainingOps(std::vector<OpDef>* ops) {
  const std::string domain = "ai.onnx.preview.training";
  ops->push_back(Op("Gradient", {1, kMany, 1, kMany},
                    {Req("xs", AttrKind::kStrings), Req("y", AttrKind::kString),
                     OptNoDefault("zs", AttrKind::kStrings)},
                    {1}, 1, InferGradient, "gradients of y with respect to the xs", domain));
  ops->push_back(Op("Adam", {3, kMany, 1, kMany},
                    {Opt("alpha", 0.9f), Opt("beta", 0.999f), Opt("epsilon", 1e-6f),
                     Opt("norm_coefficient", 0.0f), Opt("norm_coefficient_post", 0.0f)},
                    {1}, 1, InferAdam, "Adam update of N tensors: (R, T, X.., G.., V.., H..)",
                    domain));
  ops->push_back(Op("Momentum", {3, kMany, 1, kMany},
                    {Req("alpha", AttrKind::kFloat), Req("beta", AttrKind::kFloat),
                     Req("mode", AttrKind::kString), Req("norm_coefficient", AttrKind::kFloat)},
                    {1}, 1, InferMomentum,
                    "momentum (standard | nesterov) update of N tensors: (R, T, X.., G.., V..)",
                    domain));
  ops->push_back(
      Op("Adagrad", {3, kMany, 1, kMany},
         {Opt("decay_factor", 0.0f), Opt("epsilon", 1e-6f), Opt("norm_coefficient", 0.0f)}, {1}, 1,
         InferAdagrad, "Adagrad update of N tensors: (R, T, X.., G.., H..)", domain));
}

std::vector<OpDef> BuildTable() {
  std::vector<OpDef> ops;
  AddElementwiseOps(&ops);
  AddNnOps(&ops);
  AddReductionOps(&ops);
  AddShapeOps(&ops);
  AddTrainingOps(&ops);
  AddGradMathOps(&ops);
  AddGradNnOps(&ops);
  AddOptimizerOps(&ops);
  AddFusedOps(&ops);
  AddGatherNdOps(&ops);
  AddScatterOps(&ops);
  AddGridSampleOps(&ops);
  AddValueShapedOps(&ops);
  AddLinalgOps(&ops);
  AddRoiPoolOps(&ops);
  AddRandomOps(&ops);
  AddAttentionOps(&ops);
  for (OpDef& op : ops) {
    for (const VersionHistory& h : Histories()) {
      if (h.domain == op.domain && h.name == op.name) op.onnx_versions = h.versions;
    }
  }
  ClassifyPrecision(&ops);
  DeclareKernelRows(&ops);
  std::sort(ops.begin(), ops.end(), [](const OpDef& a, const OpDef& b) {
    return std::tie(a.domain, a.name) < std::tie(b.domain, b.name);
  });
  return ops;
}

}  // namespace

std::vector<AttrSpec> ConvAttrs(bool transpose) {
  std::vector<AttrSpec> attrs = {Opt("auto_pad", "NOTSET"),
                                 OptNoDefault("dilations", AttrKind::kInts),
                                 Opt("group", 1),
                                 OptNoDefault("kernel_shape", AttrKind::kInts),
                                 OptNoDefault("pads", AttrKind::kInts),
                                 OptNoDefault("strides", AttrKind::kInts)};
  if (transpose) {
    attrs.push_back(OptNoDefault("output_padding", AttrKind::kInts));
    attrs.push_back(OptNoDefault("output_shape", AttrKind::kInts));
  }
  return attrs;
}

void StopOnTableErrors(const char* list, const std::string& errors) {
  if (errors.empty()) return;
  std::fprintf(stderr, "a800c: internal error: the op table's %s:%s\n", list, errors.c_str());
  std::abort();
}

const std::vector<OpDef>& AllOps() {
  static const std::vector<OpDef> kOps = BuildTable();
  return kOps;
}

const OpDef* FindOp(std::string_view domain, std::string_view name) {
  const std::vector<OpDef>& ops = AllOps();
  auto it = std::lower_bound(
      ops.begin(), ops.end(), std::make_pair(domain, name),
      [](const OpDef& op, const std::pair<std::string_view, std::string_view>& key) {
        return std::make_pair(std::string_view(op.domain), std::string_view(op.name)) < key;
      });
  if (it == ops.end() || it->domain != domain || it->name != name) return nullptr;
  return &*it;
}

std::string QualifiedName(const OpDef& op) {
  return op.domain.empty() ? op.name : op.domain + "." + op.name;
}

const OpDef* FindQualifiedOp(std::string_view qualified_op) {
  const size_t dot = qualified_op.rfind('.');
  if (dot == std::string_view::npos) return FindOp("", qualified_op);
  return FindOp(qualified_op.substr(0, dot), qualified_op.substr(dot + 1));
}

int NewestKnownOpset(std::string_view domain) {
  for (const NewestOpset& n : NewestOpsets()) {
    if (n.domain == domain) return n.opset;
  }
  return 0;
}

StatusOr<int> ResolveOpVersion(const OpDef& op, int64_t opset) {
  const std::string_view domain = DomainName(op.domain);
  const int newest = NewestKnownOpset(op.domain);
  if (opset > newest) {
    return Unsupported("opset {} of {} is newer than the newest a800c knows ({})", opset, domain,
                       newest);
  }
  if (opset < 1) return InvalidInput("opset {} of {} is not a valid opset", opset, domain);
  int resolved = 0;
  for (int v : op.onnx_versions) {
    if (v <= opset) resolved = v;
  }
  if (resolved == 0) {
    if (op.onnx_versions.empty()) {
      return Internal("{} has no version history in onnx_versions.inc", op.name);
    }
    return InvalidInput("{} is not defined at opset {} of {} (it was added in opset {})", op.name,
                        opset, domain, op.onnx_versions.front());
  }
  if (std::find(op.implemented.begin(), op.implemented.end(), resolved) == op.implemented.end()) {
    return Unsupported("{}-{} (opset {}) is not supported; a800c implements versions {}", op.name,
                       resolved, opset, fmt::join(op.implemented, ", "));
  }
  return resolved;
}

Status CheckNodeAgainstOpDef(const OpNode& node, const OpDef& def) {
  // Absent optional inputs are null; trailing ones do not count towards the arity.
  int present = node.num_inputs();
  while (present > 0 && !node.has_input(present - 1)) --present;
  if (present < def.min_inputs) {
    return InvalidInput("{}: has {} inputs, expected at least {}", node.Where(), present,
                        def.min_inputs);
  }
  if (def.max_inputs >= 0 && present > def.max_inputs) {
    return InvalidInput("{}: has {} inputs, expected at most {}", node.Where(), present,
                        def.max_inputs);
  }
  for (int i = 0; i < def.min_inputs; ++i) {
    if (!node.has_input(i)) {
      return InvalidInput("{}: required input {} is missing", node.Where(), i);
    }
  }
  if (node.num_outputs() < def.min_outputs) {
    return InvalidInput("{}: has {} outputs, expected at least {}", node.Where(),
                        node.num_outputs(), def.min_outputs);
  }
  if (def.max_outputs >= 0 && node.num_outputs() > def.max_outputs) {
    return InvalidInput("{}: has {} outputs, expected at most {}", node.Where(), node.num_outputs(),
                        def.max_outputs);
  }
  for (const auto& attr : node.attrs()) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture those in a lambda.
    const std::string& name = attr.first;
    const Attribute& value = attr.second;
    // a800c's own annotations (`a8.why=deny`) ride along on any op.
    if (name.rfind("a8.", 0) == 0) continue;
    auto spec = std::find_if(def.attrs.begin(), def.attrs.end(),
                             [&](const AttrSpec& s) { return s.name == name; });
    if (spec == def.attrs.end()) {
      return InvalidInput("{}: unknown attribute '{}'", node.Where(), name);
    }
    if (spec->kind != value.kind()) {
      return InvalidInput("{}: attribute '{}' must be {}, got {}", node.Where(), name,
                          AttrKindName(spec->kind), AttrKindName(value.kind()));
    }
  }
  for (const AttrSpec& spec : def.attrs) {
    if (spec.required && !node.has_attr(spec.name)) {
      return InvalidInput("{}: required attribute '{}' is missing", node.Where(), spec.name);
    }
  }
  return Status::Ok();
}

}  // namespace a8
