// The rows of the kernel catalog (internal to compiler/plan). kernel_catalog.cc holds the rows
// of the ONNX ops; a800c's internal ops add theirs from one file per family.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/types.h"

namespace a8 {

using DTypes = std::vector<DType>;

// Sets, in the order `--list-kernels` prints them.
inline const DTypes kFloat = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};

// One row. `ins` and `outs` are comma-separated tokens: a type variable (one capital letter,
// bound in `vars`) or a dtype name; suffix `?` optional, `*` one or more (last token only).
// `op` is qualified ("a8.ReluGrad").
struct Row {
  std::string op;
  std::string ins, outs;
  std::vector<std::pair<char, DTypes>> vars;
};

void AddGradMathKernelRows(std::vector<Row>* rows);   // kernel_catalog_grad_math.cc
void AddGradNnKernelRows(std::vector<Row>* rows);     // kernel_catalog_grad_nn.cc
void AddOptimizerKernelRows(std::vector<Row>* rows);  // kernel_catalog_optim.cc
void AddFusedKernelRows(std::vector<Row>* rows);      // kernel_catalog_fused.cc

}  // namespace a8
