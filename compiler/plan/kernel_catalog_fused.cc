// Kernel catalog rows of the fuse pass's ops (see kernel_catalog_rows.h; op_table_fused.cc).
#include "compiler/plan/kernel_catalog_rows.h"

namespace a8 {

void AddFusedKernelRows(std::vector<Row>* rows) {
  // (A, B, bias?, aux?) -> (Y, pre-activation | bias gradient?), one float type throughout.
  rows->push_back({"a8.FusedMatMul", "T,T,T?,T?", "T,T?", {{'T', kFloat}}});
  // (X, W, B?, Z?) -> Y, one float type throughout.
  rows->push_back({"a8.FusedConv", "T,T,T?,T?", "T", {{'T', kFloat}}});
  // Inputs of one float type; the output may be another float type (a Cast fused at the end).
  rows->push_back({"a8.FusedElementwise", "T*", "U", {{'T', kFloat}, {'U', kFloat}}});
}

}  // namespace a8
