// Kernel catalog rows of the NN gradient ops and a800c's losses (see kernel_catalog_rows.h and
// compiler/ir/op_table_grad_nn.cc).
#include "compiler/plan/kernel_catalog_rows.h"

namespace a8 {

void AddGradNnKernelRows(std::vector<Row>* rows) {
  const DTypes kIndex = {DType::kI64, DType::kI32};
  auto add = [&](Row r) { rows->push_back(std::move(r)); };
  add({"a8.ConvGradFilter", "T,T", "T", {{'T', kFloat}}});
  add({"a8.MaxPoolGrad", "T,T", "T", {{'T', kFloat}}});
  add({"a8.AveragePoolGrad", "T", "T", {{'T', kFloat}}});
  // Scale/bias and statistics keep their own float dtypes, as in the forward.
  add({"a8.BatchNormalizationGrad",
       "T,T,U,V?,V?",
       "T,U,U,V?,V?",
       {{'T', kFloat}, {'U', kFloat}, {'V', kFloat}}});
  add({"a8.LayerNormalizationGrad",
       "T,T,P,U?,U?",
       "T,P,P",
       {{'T', kFloat}, {'P', kFloat}, {'U', kFloat}}});
  add({"a8.InstanceNormalizationGrad", "T,T,T", "T,T,T", {{'T', kFloat}}});
  add({"a8.SoftmaxGrad", "T,T", "T", {{'T', kFloat}}});
  add({"a8.LogSoftmaxGrad", "T,T", "T", {{'T', kFloat}}});
  add({"a8.DropoutGrad", "T,bool,R?,bool?", "T", {{'T', kFloat}, {'R', kFloat}}});
  add({"a8.SoftmaxCrossEntropyLossGrad", "T,T,I,T?", "T", {{'T', kFloat}, {'I', kIndex}}});
  add({"a8.NegativeLogLikelihoodLossGrad", "T,I,T?", "T", {{'T', kFloat}, {'I', kIndex}}});
  for (const char* op : {"a8.MseLoss", "a8.L1Loss", "a8.BceWithLogitsLoss"}) {
    add({op, "T,T", "T", {{'T', kFloat}}});
  }
  for (const char* op : {"a8.MseLossGrad", "a8.L1LossGrad", "a8.BceWithLogitsLossGrad"}) {
    add({op, "T,T,T", "T,T?", {{'T', kFloat}}});
  }
}

}  // namespace a8
