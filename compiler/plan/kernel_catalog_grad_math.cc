// Kernel catalog rows of the elementwise / shape gradient ops (see kernel_catalog_rows.h and
// compiler/ir/op_table_grad_math.cc).
#include "compiler/plan/kernel_catalog_rows.h"

namespace a8 {

void AddGradMathKernelRows(std::vector<Row>* rows) {
  for (const char* op :
       {"a8.ReluGrad", "a8.SigmoidGrad", "a8.TanhGrad", "a8.LeakyReluGrad", "a8.EluGrad",
        "a8.GeluGrad", "a8.ErfGrad", "a8.SoftplusGrad", "a8.HardSigmoidGrad"}) {
    rows->push_back({op, "T,T", "T", {{'T', kFloat}}});
  }
  rows->push_back(
      {"a8.GatherGrad", "T,I", "T", {{'T', kFloat}, {'I', {DType::kI64, DType::kI32}}}});
  rows->push_back({"a8.SliceGrad", "T", "T", {{'T', kFloat}}});
}

}  // namespace a8
