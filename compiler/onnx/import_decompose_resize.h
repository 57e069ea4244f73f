// Resize (and Upsample's linear and non-integer forms) as per-axis linear maps: with static
// shapes, resizing one axis of length `in` to `out` is y[i] = sum_j W[i, j] x[j] (plus a constant
// for tf_crop_and_resize's positions outside the input), W computed as onnx's reference
// implementation (onnx/reference/ops/op_resize.py) does. Internal to compiler/onnx; the unit tests
// check W against a direct implementation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {

struct ResizeAxisOptions {
  std::string mode = "nearest";                     // nearest, linear, cubic
  std::string coordinate_mode = "half_pixel";       // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";  // or round_prefer_ceil, floor, ceil
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize only
};

struct ResizeAxisMap {
  std::vector<double> weights;        // [out, in], row-major
  std::vector<uint8_t> extrapolated;  // [out]: 1 where the row is extrapolation_value
};

// The map along one axis: `scale` is the scale factor as onnx's reference uses it (the `scales`
// value, or out / in when `sizes` is given).
StatusOr<ResizeAxisMap> ResizeAxisWeights(int64_t in, int64_t out, double scale,
                                          const ResizeAxisOptions& o);

// Resize (import_decompose_resize.cc), added to the table.
void AddResizeDecompositions(DecomposeTable* t);
// Upsample-1/7/9 with `scales` (one per dim) in `mode` (nearest, linear, bilinear) as Resize-10.
StatusOr<std::vector<DecomposedNode>> DecomposeUpsampleByResize(Graph& g,
                                                                const DecomposeRequest& req,
                                                                const std::vector<double>& scales,
                                                                const std::string& mode);

}  // namespace a8::decompose_internal
