// Checks gradient rules against central finite differences in float64 (GradCheckTest).
//
// ExpectGradientsMatch builds a graph with one node of `op` on graph inputs, a loss
// L = sum_k ReduceSum(out_k * r_k) over the chosen outputs with fixed random r_k, runs
// BuildGradients (autodiff.h) with respect to every differentiable input, compiles the graph to
// a plan (shape-inference, schedule, plan-memory, lower) and runs it on the CPU backend. Each
// gradient element is compared with (L(x + eps) - L(x - eps)) / (2 eps) computed by running the
// same plan on perturbed inputs: |analytic - numeric| <= atol + rtol * |numeric|.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/types.h"

namespace a8::testing {

struct GradCheckInput {
  TensorType type;  // usually f64; integer inputs (indices, labels) are never differentiated
  // Fixed values (row-major, as doubles; converted to `type`): required for non-differentiable
  // inputs, optional for differentiable ones (default: uniform in [-1, 1] from the case's seed).
  std::vector<double> values;
  bool differentiable = true;
  // A graph constant instead of an input (shape-like operands: Reshape's shape, axes, ...);
  // implies not differentiable, `values` required.
  bool constant = false;
  bool absent = false;  // an absent optional input (the other fields are ignored)
};

struct GradCheckCase {
  std::string op;  // qualified: "MatMul", "a8.MseLoss"
  // Instead of one node of `op`: builds the nodes on the operands (an op imported as several
  // nodes, import_decompose.h) and returns the outputs, typed.
  std::function<StatusOr<std::vector<Value*>>(Graph& g, const std::vector<Value*>& operands)> build;
  std::vector<GradCheckInput> inputs;
  std::map<std::string, Attribute> attrs;
  int num_outputs = 1;
  // Outputs that feed the loss (default: every float output).
  std::vector<int> loss_outputs;
  double eps = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-7;
  uint64_t seed = 1;
};

// Inputs of a case: a differentiable one (no values: uniform in [-1, 1] from the case's seed).
inline GradCheckInput Input(DType t, std::vector<int64_t> dims, std::vector<double> values = {}) {
  GradCheckInput in;
  in.type = {t, std::move(dims)};
  in.values = std::move(values);
  return in;
}

// A non-differentiable input with fixed values.
inline GradCheckInput Fixed(DType t, std::vector<int64_t> dims, std::vector<double> values) {
  GradCheckInput in = Input(t, std::move(dims), std::move(values));
  in.differentiable = false;
  return in;
}

// A graph constant with fixed values (shapes, axes, pads).
inline GradCheckInput Const(DType t, std::vector<int64_t> dims, std::vector<double> values) {
  GradCheckInput in = Fixed(t, std::move(dims), std::move(values));
  in.constant = true;
  return in;
}

inline GradCheckInput Absent() {
  GradCheckInput in;
  in.absent = true;
  return in;
}

// A differentiable f64 input with values in [0.5, 2] (Log, Sqrt, divisors, Pow's base).
inline GradCheckInput Positive(std::vector<int64_t> dims, uint64_t seed = 11) {
  GradCheckInput in = Input(DType::kF64, std::move(dims));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(0.5, 2.0);
  in.values.resize(static_cast<size_t>(in.type.CheckedNumElements()));
  for (double& x : in.values) x = d(rng);
  return in;
}

// Adds GoogleTest failures naming the input, the element, and both values.
void ExpectGradientsMatch(const GradCheckCase& c);

}  // namespace a8::testing
