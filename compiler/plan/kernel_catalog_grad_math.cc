// Kernel catalog rows of the elementwise / shape gradient ops (see kernel_catalog_rows.h and
// compiler/ir/op_table_grad_math.cc).
#include "compiler/plan/kernel_catalog_rows.h"

namespace a8 {

void AddGradMathKernelRows(std::vector<Row>* rows) {
  // The activation gradients' rows come from the op table (AddActivation).
  rows->push_back(
      {"a8.GatherGrad", "T,I", "T", {{'T', kFloat}, {'I', {DType::kI64, DType::kI32}}}});
  rows->push_back(
      {"a8.GatherNDGrad", "T,I", "T", {{'T', kFloat}, {'I', {DType::kI64, DType::kI32}}}});
  rows->push_back({"a8.SliceGrad", "T", "T", {{'T', kFloat}}});
}

}  // namespace a8
