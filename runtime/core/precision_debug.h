// `a800c debug-precision`: which ONNX nodes must stay in FP32 for a low-precision (amp, fp16 or
// bf16) training run to follow its FP32 reference. Both plans are compiled in process (the
// driver's Compile, into a scratch folder) and trained on the CPU backend on the same batches
// (same data, seed and step count).
//
// A low-precision run FAILS when
// - its loss deviates from the reference: max over steps of |loss - ref| / max(|ref|, 1e-3) above
//   the tolerance (a non-finite loss is an infinite deviation);
// - it skips more than half of its updates for overflow; or
// - its loss scale collapses (the trainer stops it at --min-scale).
//
// The candidates are the ONNX nodes the low-precision plan computes in FP16/BF16 (its forward
// kernels other than casts, by Kernel.onnx_nodes: a fused kernel's nodes count one by one). A
// failing run is diagnosed: the first forward kernel output (else, the first output of the last
// step) holding an Inf or NaN names the candidate that produced it (in a fused kernel, the member
// that made it, as --check-numerics finds it: BlameOnnxNode in numerics.h). The search (precision_search.h) then finds
// a minimal set, forcing nodes to FP32 with an `fp32_nodes` regex of exact names; each distinct
// set is compiled once, and sets whose plans are the same (kernels, buffers and initial values;
// the kernels' reasons aside) share one training run.
//
// The result is written as a --policy file (WritePrecisionPolicy): `fp32_nodes` matching exactly
// the nodes found, and `evidence`, one object per node with the deviation of the final run (all
// found nodes in FP32) and of a failing run without it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/status.h"
#include "driver/driver.h"
#include "runtime/core/backend.h"

namespace a8 {

struct PrecisionDebugOptions {
  // The model, import, training and target options; `compile.precision` is the low-precision
  // configuration under test (mode amp, fp16 or bf16, and any user overrides).
  CompileOptions compile;
  std::vector<std::pair<std::string, std::string>> inputs;  // (input, .npy path)
  bool synthetic = false;  // seeded random data for inputs without --input
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t steps = 20;
  double tolerance = 0.05;
  bool compare_activations = false;  // also compare the first step's per-node outputs
  // false (--search=bisect): failing runs blame no node, so the search only bisects.
  bool guided = true;
  std::string work_dir;  // where plans are written ("": a fresh temporary folder)
  std::function<void(const std::string&)> progress;  // one line per event
  // The backend every training run uses (the tool passes the CPU backend's factory; runtime/core
  // sits below the backends, so it cannot name one itself).
  std::function<std::unique_ptr<Backend>()> make_backend;
};

// One training run's loss curve and verdict.
struct PrecisionRun {
  std::vector<double> losses;
  int64_t skipped = 0;
  double final_scale = 1;
  double deviation = 0;  // against the reference (0 for the reference itself)
  bool passes = true;
  std::string failure;          // why it fails ("" when it passes)
  std::string first_nonfinite;  // the diagnosis: "step S: node N (op) output 'B' is inf"
  std::string suspect;          // the candidate the diagnosis blames ("" when none)
};

struct NodeEvidence {
  std::string node, op;
  double deviation_without = 0;
  std::string failure_without;
};

struct ActivationDiff {
  std::string node;  // the output value's name
  std::string op;    // "op (ONNX nodes)" of the kernel that wrote it in the low-precision plan
  double max_abs_diff = 0, max_abs_ref = 0;  // over the node's first output, first step
};

struct PrecisionDebugResult {
  PrecisionRun reference, low;
  std::vector<std::string> candidates;   // the low-precision ONNX nodes, in plan order
  bool needed_search = false;            // the low-precision run failed
  std::vector<NodeEvidence> fp32_nodes;  // the minimal set, with evidence
  PrecisionRun fixed;                    // the run with the set in FP32
  std::string fp32_regex;                // the policy's fp32_nodes
  int runs = 0;                          // training runs, the reference included
  int plans_compiled = 0;
  std::vector<ActivationDiff> activations;  // with compare_activations, in plan order
};

StatusOr<PrecisionDebugResult> DebugPrecision(const PrecisionDebugOptions& options);

// The --policy file of a result (see the header comment); written atomically.
Status WritePrecisionPolicy(const std::string& path, const PrecisionDebugOptions& options,
                            const PrecisionDebugResult& result);

// "^(?:a|b\.c)$": a regex matching exactly these names.
std::string ExactNamesRegex(const std::vector<std::string>& names);

}  // namespace a8
