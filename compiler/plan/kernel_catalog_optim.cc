// Kernel catalog rows of the optimizer ops (see kernel_catalog_rows.h): a800c's internal step
// control and updates (op_table_optim.cc) and the ONNX ai.onnx.preview.training optimizers, which a
// single-node ONNX model runs as they are.
#include "compiler/plan/kernel_catalog_rows.h"

namespace a8 {

void AddOptimizerKernelRows(std::vector<Row>* rows) {
  // Parameters, accumulators and moments P; gradients G may be narrower (f16/bf16 gradients of f32
  // master weights).
  rows->push_back({"a8.TrainControl", "i64,f32,f32?,f32?", "f32,i64,f32", {}});
  rows->push_back({"a8.GlobalNormSq", "T*", "f32", {{'T', kFloat}}});
  rows->push_back({"a8.GradAccumulate", "P,G,i64", "P", {{'P', kFloat}, {'G', kFloat}}});
  rows->push_back({"a8.SgdUpdate", "P,G,f32,P?", "P,P?", {{'P', kFloat}, {'G', kFloat}}});
  // The optional scale and working copy L (f16/bf16 of an f32 P; the shape rule checks P).
  rows->push_back({"a8.AdamUpdate", "P,G,f32,P,P,f32?", "P,P,P,L?",
                   {{'P', kFloat}, {'G', kFloat}, {'L', {DType::kF16, DType::kBF16}}}});
  // Loss scaling: gradients of one float type in, FP32 master gradients and found_inf out.
  rows->push_back({"a8.UnscaleCheckFinite", "f32,G*", "f32*", {{'G', kFloat}}});
  rows->push_back({"a8.CheckFinite", "G*", "f32", {{'G', kFloat}}});
  rows->push_back({"a8.AllReduceStart", "G*", "f32", {{'G', kFloat}}});
  rows->push_back({"a8.AllReduceWait", "f32,G", "G", {{'G', kFloat}}});
  rows->push_back({"a8.UpdateScale", "f32,i32,f32,i64", "f32,i32", {}});

  // (R, T, then the groups X.., G.., and the states), as in their ONNX type constraints.
  const DTypes kOnnxFloat = {DType::kF32, DType::kF64};
  for (const char* op : {"ai.onnx.preview.training.Adam", "ai.onnx.preview.training.Momentum",
                         "ai.onnx.preview.training.Adagrad"}) {
    rows->push_back({op, "R,i64,T*", "T*", {{'R', kOnnxFloat}, {'T', kOnnxFloat}}});
  }
}

}  // namespace a8
