// The kernel-catalog signatures of the ops whose entries do not set OpDef::kernel themselves:
// ONNX's type constraints restricted to a800c's dtypes, and a800c's internal ops, applied once when
// the table is built (op_table.cc). compiler/plan/kernel_catalog.cc reads OpDef::kernel alone.
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/op_table_builder.h"

namespace a8 {
namespace {

using DTypes = std::vector<DType>;
const DTypes& kFloat = kKernelFloats;

const DTypes kSigned = DTypeVector(kSignedDTypes);
const DTypes kNumeric = DTypeVector(kNumericDTypes);
const DTypes kAll = DTypeVector(kAllDTypes);
const DTypes kFloatInt = {DType::kF32, DType::kF16, DType::kBF16,
                          DType::kF64, DType::kI64, DType::kI32};
// ONNX's set for the Reduce ops that sum (ReduceSum, ReduceL2, ...): kFloatInt and u32, u64.
const DTypes kReduceTypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                             DType::kI64, DType::kI32, DType::kU64,  DType::kU32};
const DTypes kIndex = {DType::kI64, DType::kI32};
const DTypes kOneHotIndex = {DType::kI64, DType::kI32, DType::kF32};

struct Row {
  std::string op;  // qualified
  std::string ins, outs;
  std::vector<std::pair<char, DTypes>> vars;
};

std::vector<Row> Rows() {
  std::vector<Row> rows;
  auto unary = [&](const char* op, const DTypes& t) { rows.push_back({op, "T", "T", {{'T', t}}}); };
  for (const char* op :
       {"Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos",
        "GlobalAveragePool", "GlobalMaxPool", "Softmax", "LogSoftmax", "AveragePool"}) {
    unary(op, kFloat);
  }
  unary("Abs", kNumeric);
  unary("Neg", kSigned);
  unary("Sign", kNumeric);
  unary("Identity", kAll);
  unary("Flatten", kAll);
  unary("Transpose", kAll);
  rows.push_back({"Not", "bool", "bool", {}});
  rows.push_back({"IsNaN", "T", "bool", {{'T', kFloat}}});
  rows.push_back({"IsInf", "T", "bool", {{'T', kFloat}}});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod"}) {
    rows.push_back({op, "T,T", "T", {{'T', kNumeric}}});
  }
  rows.push_back({"Pow", "T,U", "T", {{'T', kFloatInt}, {'U', kNumeric}}});
  rows.push_back({"Equal", "T,T", "bool", {{'T', kAll}}});
  for (const char* op : {"Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    rows.push_back({op, "T,T", "bool", {{'T', kNumeric}}});
  }
  for (const char* op : {"And", "Or", "Xor"}) rows.push_back({op, "bool,bool", "bool", {}});
  rows.push_back({"Max", "T*", "T", {{'T', kNumeric}}});
  rows.push_back({"Min", "T*", "T", {{'T', kNumeric}}});
  rows.push_back({"Sum", "T*", "T", {{'T', kFloat}}});
  rows.push_back({"Mean", "T*", "T", {{'T', kFloat}}});
  rows.push_back({"Where", "bool,T,T", "T", {{'T', kAll}}});
  rows.push_back({"Clip", "T,T?,T?", "T", {{'T', kNumeric}}});
  rows.push_back({"Cast", "A", "B", {{'A', kAll}, {'B', kAll}}});
  rows.push_back({"CastLike", "A,B", "B", {{'A', kAll}, {'B', kAll}}});
  // The random ops of two type variables (compiler/ir/op_table_random.cc has the others).
  for (const char* op : {"RandomUniformLike", "RandomNormalLike"}) {
    rows.push_back({op, "A", "T", {{'A', kAll}, {'T', kFloat}}});
  }
  rows.push_back({"Bernoulli", "T", "B", {{'T', kFloat}, {'B', kAll}}});

  rows.push_back({"MatMul", "T,T", "T", {{'T', kFloatInt}}});
  rows.push_back({"Gemm", "T,T,T?", "T", {{'T', kFloatInt}}});
  rows.push_back({"Conv", "T,T,T?", "T", {{'T', kFloat}}});
  rows.push_back({"ConvTranspose", "T,T,T?", "T", {{'T', kFloat}}});
  rows.push_back({"BatchNormalization",
                  "T,U,U,V,V",
                  "T,V?,V?,V?,V?",
                  {{'T', kFloat}, {'U', kFloat}, {'V', kFloat}}});
  // Scale and B of their own float type: FP32 under an FP16 X (pin-fp32's edges).
  rows.push_back({"LayerNormalization",
                  "T,P,P?",
                  "T,U?,U?",
                  {{'T', kFloat}, {'P', kFloat}, {'U', {DType::kF32, DType::kBF16}}}});
  rows.push_back({"InstanceNormalization", "T,T,T", "T", {{'T', kFloat}}});
  rows.push_back(
      {"MaxPool",
       "T",
       "T,i64?",
       {{'T', {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8}}}});
  rows.push_back({"Dropout", "T,R?,bool?", "T,bool?", {{'T', kFloat}, {'R', kFloat}}});
  rows.push_back({"SoftmaxCrossEntropyLoss", "T,I,T?", "T,T?", {{'T', kFloat}, {'I', kIndex}}});
  rows.push_back({"NegativeLogLikelihoodLoss", "T,I,T?", "T", {{'T', kFloat}, {'I', kIndex}}});

  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                         "ReduceL2", "ReduceLogSumExp"}) {
    rows.push_back({op, "T,i64?", "T", {{'T', kReduceTypes}}});
  }
  for (const char* op : {"ReduceMax", "ReduceMin"}) {  // bool: any / all
    rows.push_back({op, "T,i64?", "T", {{'T', kAll}}});
  }
  for (const char* op : {"ArgMax", "ArgMin"}) rows.push_back({op, "T", "i64", {{'T', kNumeric}}});
  rows.push_back({"CumSum", "T,I", "T", {{'T', kFloatInt}, {'I', kIndex}}});

  for (const char* op : {"Reshape", "Expand", "Tile"}) {
    rows.push_back({op, "T,i64", "T", {{'T', kAll}}});
  }
  for (const char* op : {"Squeeze", "Unsqueeze", "Trilu"}) {
    rows.push_back({op, "T,i64?", "T", {{'T', kAll}}});
  }
  for (const char* op : {"Gather", "GatherElements"}) {
    rows.push_back({op, "T,I", "T", {{'T', kAll}, {'I', kIndex}}});
  }
  for (const char* op : {"Shape", "Size"}) rows.push_back({op, "T", "i64", {{'T', kAll}}});
  rows.push_back({"Concat", "T*", "T", {{'T', kAll}}});
  rows.push_back({"Split", "T,i64?", "T*", {{'T', kAll}}});
  rows.push_back({"Slice", "T,I,I,I?,I?", "T", {{'T', kAll}, {'I', kIndex}}});
  rows.push_back({"Pad", "T,i64?,T?,I?", "T", {{'T', kAll}, {'I', kIndex}}});
  rows.push_back({"ConstantOfShape", "i64", "T", {{'T', kAll}}});
  rows.push_back(
      {"Range",
       "T,T,T",
       "T",
       {{'T', {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI64, DType::kI32}}}});
  rows.push_back({"OneHot", "I,D,T", "T", {{'I', kOneHotIndex}, {'D', kOneHotIndex}, {'T', kAll}}});

  // The elementwise and shape gradient ops (the activation gradients' rows come from
  // AddActivation).
  rows.push_back({"a8.GatherGrad", "T,I", "T", {{'T', kFloat}, {'I', kIndex}}});
  rows.push_back({"a8.SliceGrad", "T", "T", {{'T', kFloat}}});

  // The NN gradient ops and a800c's losses.
  rows.push_back({"a8.ConvGradFilter", "T,T", "T", {{'T', kFloat}}});
  rows.push_back({"a8.MaxPoolGrad", "T,T", "T", {{'T', kFloat}}});
  rows.push_back({"a8.AveragePoolGrad", "T", "T", {{'T', kFloat}}});
  // Scale/bias and statistics keep their own float dtypes, as in the forward.
  rows.push_back({"a8.BatchNormalizationGrad",
                  "T,T,U,V?,V?",
                  "T,U,U,V?,V?",
                  {{'T', kFloat}, {'U', kFloat}, {'V', kFloat}}});
  rows.push_back({"a8.LayerNormalizationGrad",
                  "T,T,P,U?,U?",
                  "T,P,P",
                  {{'T', kFloat}, {'P', kFloat}, {'U', kFloat}}});
  rows.push_back({"a8.InstanceNormalizationGrad", "T,T,T", "T,T,T", {{'T', kFloat}}});
  rows.push_back({"a8.SoftmaxGrad", "T,T", "T", {{'T', kFloat}}});
  rows.push_back({"a8.LogSoftmaxGrad", "T,T", "T", {{'T', kFloat}}});
  rows.push_back({"a8.DropoutGrad", "T,bool,R?,bool?", "T", {{'T', kFloat}, {'R', kFloat}}});
  rows.push_back(
      {"a8.SoftmaxCrossEntropyLossGrad", "T,T,I,T?", "T", {{'T', kFloat}, {'I', kIndex}}});
  rows.push_back(
      {"a8.NegativeLogLikelihoodLossGrad", "T,I,T?", "T", {{'T', kFloat}, {'I', kIndex}}});
  for (const char* op : {"a8.MseLoss", "a8.L1Loss", "a8.BceWithLogitsLoss"}) {
    rows.push_back({op, "T,T", "T", {{'T', kFloat}}});
  }
  for (const char* op : {"a8.MseLossGrad", "a8.L1LossGrad", "a8.BceWithLogitsLossGrad"}) {
    rows.push_back({op, "T,T,T", "T,T?", {{'T', kFloat}}});
  }

  // The optimizer ops: a800c's step control and updates, and the ONNX ai.onnx.preview.training
  // optimizers, which a single-node ONNX model runs as they are. Parameters, accumulators and
  // moments P; gradients G may be narrower (f16/bf16 gradients of f32 master weights).
  rows.push_back({"a8.TrainControl", "i64,f32,f32?,f32?", "f32,i64,f32", {}});
  rows.push_back({"a8.GlobalNormSq", "T*", "f32", {{'T', kFloat}}});
  rows.push_back({"a8.GradAccumulate", "P,G,i64", "P", {{'P', kFloat}, {'G', kFloat}}});
  rows.push_back({"a8.SgdUpdate", "P,G,f32,P?", "P,P?", {{'P', kFloat}, {'G', kFloat}}});
  // The optional scale and working copy L (f16/bf16 of an f32 P; the shape rule checks P).
  rows.push_back({"a8.AdamUpdate",
                  "P,G,f32,P,P,f32?",
                  "P,P,P,L?",
                  {{'P', kFloat}, {'G', kFloat}, {'L', {DType::kF16, DType::kBF16}}}});
  // Loss scaling: gradients of one float type in, FP32 master gradients and found_inf out.
  rows.push_back({"a8.UnscaleCheckFinite", "f32,G*", "f32*", {{'G', kFloat}}});
  rows.push_back({"a8.CheckFinite", "G*", "f32", {{'G', kFloat}}});
  rows.push_back({"a8.AllReduceStart", "G*", "f32", {{'G', kFloat}}});
  rows.push_back({"a8.AllReduceWait", "f32,G", "G", {{'G', kFloat}}});
  rows.push_back({"a8.UpdateScale", "f32,i32,f32,i64", "f32,i32", {}});

  // (R, T, then the groups X.., G.., and the states), as in their ONNX type constraints.
  const DTypes kOnnxFloat = {DType::kF32, DType::kF64};
  for (const char* op : {"ai.onnx.preview.training.Adam", "ai.onnx.preview.training.Momentum",
                         "ai.onnx.preview.training.Adagrad"}) {
    rows.push_back({op, "R,i64,T*", "T*", {{'R', kOnnxFloat}, {'T', kOnnxFloat}}});
  }

  // The fuse pass's ops.
  // (A, B, bias?, aux?) -> (Y, pre-activation | bias gradient?), one float type throughout.
  rows.push_back({"a8.FusedMatMul", "T,T,T?,T?", "T,T?", {{'T', kFloat}}});
  // (X, W, B?, Z?) -> Y, one float type throughout.
  rows.push_back({"a8.FusedConv", "T,T,T?,T?", "T", {{'T', kFloat}}});
  // Inputs of one float type; the output may be another float type (a Cast fused at the end).
  rows.push_back({"a8.FusedElementwise", "T*", "U", {{'T', kFloat}, {'U', kFloat}}});
  return rows;
}

}  // namespace

void DeclareKernelRows(std::vector<OpDef>* ops) {
  std::vector<std::pair<std::string, KernelRowSpec>> specs;
  for (Row& r : Rows()) {
    specs.emplace_back(std::move(r.op),
                       KernelRowSpec{std::move(r.ins), std::move(r.outs), std::move(r.vars)});
  }
  SetFromList(ops, "kernel signatures", &OpDef::kernel, std::move(specs));
}

}  // namespace a8
