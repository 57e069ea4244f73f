// Resize as per-axis linear maps (import_decompose_resize.h): the interpolation matrix against
// a direct implementation of onnx's scalar reference (the n nearest neighbours found by sorting,
// the cubic kernel evaluated at each distance), values computed by hand from onnx's reference,
// the errors, and gradients against finite differences. The ONNX node tests check whole models.
#include "compiler/onnx/import_decompose_resize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/decompose_test_util.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/onnx_test_util.h"

namespace a8::testing {
namespace {

using decompose_internal::ResizeAxisMap;
using decompose_internal::ResizeAxisOptions;
using decompose_internal::ResizeAxisWeights;
using ::testing::HasSubstr;

// onnx's _interpolate_1d_with_x for one output position, on the unit vectors: row i of W.
// Returns an empty row for tf_crop_and_resize's extrapolated positions.
std::vector<double> DirectRow(int64_t in, int64_t out, double scale, const ResizeAxisOptions& o,
                              int64_t i) {
  const double y = static_cast<double>(i), iw = static_cast<double>(in), ow = scale * iw;
  const std::string& cm = o.coordinate_mode;
  double x;
  if (cm == "align_corners") {
    x = ow == 1 ? 0 : y * (iw - 1) / (ow - 1);
  } else if (cm == "asymmetric") {
    x = y / scale;
  } else if (cm == "tf_crop_and_resize") {
    x = (ow == 1 ? (o.roi_end - o.roi_start) * (iw - 1) / 2
                 : y * (o.roi_end - o.roi_start) * (iw - 1) / (ow - 1)) +
        o.roi_start * (iw - 1);
    if (x < 0 || x > iw - 1) return {};
  } else if (cm == "pytorch_half_pixel") {
    x = ow == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  } else if (cm == "half_pixel_symmetric") {
    x = iw / 2 * (1 - static_cast<double>(out) / ow) + (y + 0.5) / scale - 0.5;
  } else {
    x = (y + 0.5) / scale - 0.5;
  }
  const double ratio = x == std::floor(x) ? 1 : x - std::floor(x);
  const double s = std::min(scale, 1.0);
  std::vector<double> c;
  if (o.mode == "nearest") {
    bool right = ratio == 1 || o.nearest_mode == "ceil" ||
                 (o.nearest_mode == "round_prefer_floor" && ratio > 0.5) ||
                 (o.nearest_mode == "round_prefer_ceil" && ratio >= 0.5);
    c = {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
  } else if (o.mode == "linear" && !o.antialias) {
    c = {1 - ratio, ratio};
  } else if (o.mode == "linear") {
    for (int64_t k = static_cast<int64_t>(std::floor(-1 / s)) + 1;
         k <= -static_cast<int64_t>(std::floor(-1 / s)); ++k) {
      c.push_back(std::max(0.0, 1 - std::abs((static_cast<double>(k) - ratio) * s)));
    }
  } else {
    const double a = o.cubic_coeff_a;
    auto kernel = [a](double t) {
      t = std::abs(t);
      return t <= 1 ? (a + 2) * t * t * t - (a + 3) * t * t + 1
                    : (t < 2 ? a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a : 0.0);
    };
    if (!o.antialias) {
      for (double t : {ratio + 1, ratio, 1 - ratio, 2 - ratio}) c.push_back(kernel(t));
    } else {
      const int64_t lo = static_cast<int64_t>(std::floor(-2 / s)) + 1;
      for (int64_t k = lo; k < 2 - lo; ++k) {
        c.push_back(kernel(s * (static_cast<double>(k) - ratio)));
      }
    }
  }
  if (o.antialias) {
    const double sum = std::accumulate(c.begin(), c.end(), 0.0);
    for (double& v : c) v /= sum;
  }
  // The n indices of the edge-padded input nearest to x, ties to the smaller.
  const int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2;
  std::vector<int64_t> idx;
  for (int64_t k = 0; k < in + 2 * pad; ++k) idx.push_back(k);
  const double xp = x + static_cast<double>(pad);
  std::stable_sort(idx.begin(), idx.end(), [xp](int64_t p, int64_t q) {
    return std::abs(xp - static_cast<double>(p)) < std::abs(xp - static_cast<double>(q));
  });
  idx.resize(static_cast<size_t>(n));
  std::sort(idx.begin(), idx.end());
  if (o.exclude_outside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t j = idx[static_cast<size_t>(k)] - pad;
      if (j < 0 || j >= in) c[static_cast<size_t>(k)] = 0;
      sum += c[static_cast<size_t>(k)];
    }
    for (double& v : c) v /= sum;
  }
  std::vector<double> row(static_cast<size_t>(in), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = std::clamp<int64_t>(idx[static_cast<size_t>(k)] - pad, 0, in - 1);
    row[static_cast<size_t>(j)] += c[static_cast<size_t>(k)];
  }
  return row;
}

TEST(ImportDecomposeResizeTest, WeightsMatchADirectImplementation) {
  struct Size {
    int64_t in, out;
    double scale;
  };
  // Up, down, by a non-integer, to one element, and scales that do not give out exactly.
  const std::vector<Size> sizes = {{4, 8, 2.0},  {4, 2, 0.5},  {5, 3, 0.6},   {3, 7, 7.0 / 3},
                                   {4, 1, 0.25}, {4, 6, 1.7f}, {8, 3, 0.375}, {2, 5, 2.6f}};
  int checked = 0;
  for (const char* cm : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                         "align_corners", "asymmetric", "tf_crop_and_resize"}) {
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      for (int variant = 0; variant < 4; ++variant) {
        ResizeAxisOptions o;
        o.coordinate_mode = cm;
        o.mode = mode;
        o.roi_start = 0.2;
        o.roi_end = 1.1;
        if (o.mode == "nearest") {
          o.nearest_mode = std::vector<std::string>{"round_prefer_floor", "round_prefer_ceil",
                                                    "floor", "ceil"}[variant];
        } else {
          o.antialias = variant & 1;
          o.exclude_outside = variant & 2;
          o.cubic_coeff_a = variant & 2 ? -0.5 : -0.75;
        }
        for (const Size& s : sizes) {
          SCOPED_TRACE(fmt::format("{} {} variant {} {} -> {}", cm, mode, variant, s.in, s.out));
          auto map = ResizeAxisWeights(s.in, s.out, s.scale, o);
          ASSERT_TRUE(map.ok()) << map.status().message();
          ASSERT_EQ(map->weights.size(), static_cast<size_t>(s.in * s.out));
          for (int64_t i = 0; i < s.out; ++i) {
            std::vector<double> row = DirectRow(s.in, s.out, s.scale, o, i);
            EXPECT_EQ(map->extrapolated[static_cast<size_t>(i)] != 0, row.empty()) << i;
            if (row.empty()) row.assign(static_cast<size_t>(s.in), 0.0);
            for (int64_t j = 0; j < s.in; ++j) {
              EXPECT_NEAR(map->weights[static_cast<size_t>(i * s.in + j)],
                          row[static_cast<size_t>(j)], 1e-12)
                  << "row " << i << " col " << j;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Rows from onnx's reference (op_resize.py, onnx 1.23.2) on the unit vectors, by hand.
TEST(ImportDecomposeResizeTest, WeightsMatchOnnxReferenceValues) {
  ResizeAxisOptions o;
  o.mode = "cubic";  // half_pixel, a = -0.75: 4 -> 8
  auto m = ResizeAxisWeights(4, 8, 2.0, o);
  ASSERT_TRUE(m.ok());
  const std::vector<double> row1 = {0.7734375, 0.26171875, -0.03515625, 0};  // x = 0.25
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(m->weights[4 + j], row1[j], 1e-12) << j;
  o.mode = "linear";
  o.coordinate_mode = "align_corners";
  m = ResizeAxisWeights(3, 5, 5.0 / 3, o);
  ASSERT_TRUE(m.ok());
  const std::vector<double> row3 = {0, 0.5, 0.5};  // x = 3 * 2 / 4 = 1.5
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(m->weights[9 + j], row3[j], 1e-12) << j;
}

TEST(ImportDecomposeResizeTest, ImportsAsMatMulsPerResizedAxis) {
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {
  roi = Constant <value = float[0] {}> ()
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <mode = "linear"> (x, roi, scales) })");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<std::string> ops;
  for (Node* n : (*g)->NodeList()) ops.push_back(n->op());
  EXPECT_EQ(ops, (std::vector<std::string>{"Reshape", "MatMul", "Reshape", "MatMul"}));
  EXPECT_EQ((*g)->outputs()[0]->producer()->name(), "Resize_2");  // after the two Constants
}

// An intermediate the model does not declare: its dims come from onnx's inference, on the graph
// inputs as a800c bound them (--batch).
TEST(ImportDecomposeResizeTest, DimsOfAnUndeclaredIntermediate) {
  ImportOptions opts;
  opts.batch = 2;
  auto g = ImportText(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[N, 3, 4] x) => (float[N, 3, 8] y) {
  r = Relu (x)
  scales = Constant <value = float[3] {1.0, 1.0, 2.0}> ()
  y = Resize <mode = "linear"> (r, , scales) })",
                      opts);
  ASSERT_TRUE(g.ok()) << g.status().message();
  Node* mm = (*g)->outputs()[0]->producer();
  ASSERT_EQ(mm->op(), "MatMul");
  ASSERT_NE(mm->input(1)->data(), nullptr);
  EXPECT_EQ(mm->input(1)->data()->type.dims, (std::vector<int64_t>{4, 8}));
}

TEST(ImportDecomposeResizeTest, ErrorsNameTheNodeAndField) {
  Status s = ImportError(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[1, 2, 3, 4] x, float[4] scales) => (float[1, 2, 6, 8] y) {
  y = Resize <mode = "linear"> (x, , scales) })");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("node 'Resize_0' (Resize): input 'scales' must be a constant "
                                     "(a800c needs static shapes); freeze graph input 'scales'"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <mode = "nearest", antialias = 1> (x, , scales) })");
  EXPECT_THAT(s.message(), HasSubstr("(Resize): attribute 'antialias' applies to modes linear and "
                                     "cubic, not nearest"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 18]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <coordinate_transformation_mode = "half_pixel_symmetric"> (x, , scales) })");
  EXPECT_THAT(s.message(), HasSubstr("'half_pixel_symmetric' is not defined in Resize-18"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {
  scales = Constant <value = float[3] {1.0, 2.0, 2.0}> ()
  y = Resize (x, , scales) })");
  EXPECT_THAT(s.message(), HasSubstr("input 'scales' has 3 elements for 4 axes"));
  s = ImportError(R"(<ir_version: 10, opset_import: ["" : 19]>
g (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <coordinate_transformation_mode = "tf_crop_and_resize"> (x, , scales) })");
  EXPECT_THAT(s.message(), HasSubstr("tf_crop_and_resize needs input 'roi' with 8 elements"));
}

// A gradient check of Resize with constant scales or sizes, the nodes typed as the importer and
// shape inference would.
GradCheckCase ResizeCase(int version, std::map<std::string, Attribute> attrs, TensorType x,
                         std::vector<double> roi, std::vector<double> scales,
                         std::vector<double> sizes) {
  GradCheckCase c;
  c.op = "Resize";
  GradCheckInput in;
  in.type = x;
  c.inputs.push_back(in);
  // roi, scales, sizes: the empty ones are absent (nullptr inputs of the request).
  std::vector<bool> present;
  auto constant = [&](DType t, const std::vector<double>& v) {
    present.push_back(!v.empty());
    if (v.empty()) return;
    GradCheckInput k;
    k.type = TensorType{t, {static_cast<int64_t>(v.size())}};
    k.values = v;
    k.constant = true;
    c.inputs.push_back(k);
  };
  constant(DType::kF32, roi);
  constant(DType::kF32, scales);
  constant(DType::kI64, sizes);
  c.build = [version, attrs, present](
                Graph& g, const std::vector<Value*>& operands) -> StatusOr<std::vector<Value*>> {
    DecomposeRequest req;
    req.op = "Resize";
    req.version = version;
    req.inputs = {operands[0]};
    size_t next = 1;
    for (bool p : present) req.inputs.push_back(p ? operands[next++] : nullptr);
    req.attrs = attrs;
    req.known_dims = [](const Value* v) -> std::optional<std::vector<int64_t>> {
      return v->dims();
    };
    return DecomposeAsImported(g, std::move(req));
  };
  return c;
}

TEST(ImportDecomposeResizeTest, GradientsMatchFiniteDifferences) {
  const TensorType x{DType::kF64, {1, 2, 3, 4}};
  ExpectGradientsMatch(ResizeCase(19, {{"mode", Attribute("linear")}}, x, {}, {1, 1, 2, 1.5}, {}));
  ExpectGradientsMatch(ResizeCase(19, {{"mode", Attribute("cubic")}, {"antialias", Attribute(1)}},
                                  x, {}, {}, {1, 2, 2, 3}));
  ExpectGradientsMatch(
      ResizeCase(13,
                 {{"mode", Attribute("linear")},
                  {"coordinate_transformation_mode", Attribute("tf_crop_and_resize")},
                  {"extrapolation_value", Attribute(0.5f)}},
                 x, {0, 0, 0.1, -0.2, 1, 1, 1.3, 0.9}, {1, 1, 1.5, 2}, {}));
  ExpectGradientsMatch(ResizeCase(18,
                                  {{"mode", Attribute("nearest")},
                                   {"axes", Attribute(std::vector<int64_t>{3, 1})},
                                   {"keep_aspect_ratio_policy", Attribute("not_larger")}},
                                  x, {}, {}, {7, 3}));
}

}  // namespace
}  // namespace a8::testing
