// The signal ops, for static sizes, as nodes of ops a800c has (import_decompose.h):
//   HannWindow, HammingWindow, BlackmanWindow-17 (size) -> a constant: a0 - a1 cos(2 pi n / N)
//       + a2 cos(4 pi n / N), N = size (periodic) or size - 1, computed in double at import
//       (size must be a compile-time constant), Cast to output_datatype;
//   DFT-17/20 (x, dft_length?, axis) -> the signal axis moved last, zero-padded or cut to the
//       DFT length, and MatMuls in double by constant [in, out] cos and sin matrices (their angles
//       reduced mod 2 pi exactly, j k mod n), rounded once to x's type, real and imaginary parts
//       put back as the last dim; inverse
//       (1/n and the conjugate sign), onesided (the first n/2 + 1 bins), and inverse onesided
//       (onnx's irfft: the Hermitian half weighted 1, 2, .., 2, 1, a real output);
//   STFT-17 (signal, frame_step, window?, frame_length?) -> the frames gathered by a constant
//       [frames, frame_length] index, times the window, then the DFT above along the frame;
//   MelWeightMatrix-17 (all inputs constant) -> a constant, computed as onnx's reference does.
// The DFT matrices are O(n^2): n is limited (kMaxDftLength). Gradients come from the MatMuls.
#include <cmath>
#include <numbers>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {

namespace {

constexpr int64_t kMaxDftLength = 8192;

StatusOr<int64_t> ConstantScalar(const DecomposeRequest& req, int i, std::string_view field) {
  A8_RETURN_IF_ERROR(RequireConstant(req, i, field));
  const TensorData& d = *req.inputs[static_cast<size_t>(i)]->data();
  if (d.num_elements() != 1) {
    return InvalidInput("{}: input '{}' must hold one value, got {}", req.where, field,
                        d.num_elements());
  }
  return static_cast<int64_t>(d.GetDouble(0));
}


StatusOr<std::vector<DecomposedNode>> DecomposeWindow(Graph& g, const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 1));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"periodic", "output_datatype"}));
  A8_ASSIGN_OR_RETURN(int64_t size, ConstantScalar(req, 0, "size"));
  if (size < 0 || size > (int64_t{1} << 24)) {
    return InvalidInput("{}: size {} is out of range [0, 2^24]", req.where, size);
  }
  A8_ASSIGN_OR_RETURN(int64_t periodic, IntAttr(req, "periodic", 1));
  A8_ASSIGN_OR_RETURN(int64_t out_type, IntAttr(req, "output_datatype", 1));
  StatusOr<DType> dtype = DTypeFromOnnx(static_cast<int>(out_type));
  if (!dtype.ok()) return dtype.status().WithContext(req.where + ": output_datatype");
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (req.op == "HammingWindow") {
    a0 = 25.0 / 46.0;
    a1 = 1 - a0;
  } else if (req.op == "BlackmanWindow") {
    a0 = 0.42, a1 = 0.5, a2 = 0.08;
  }
  const double n = static_cast<double>(periodic ? size : size - 1);
  std::vector<float> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double t = 2 * std::numbers::pi * static_cast<double>(i) / n;
    w[static_cast<size_t>(i)] = static_cast<float>(a0 - a1 * std::cos(t) + a2 * std::cos(2 * t));
  }
  Emitter e(g, req);
  Value* window = e.Constant("window", TensorData::FromFloats(w, {size}));
  if (*dtype == DType::kF32) {
    e.Emit("Identity", 16, {window}, {}, "", true);
  } else {
    e.Emit("Cast", 13, {window}, {{"to", Attribute(out_type)}}, "", true);
  }
  return e.nodes();
}

// The DFT along the last axis of the real parts `re` and imaginary parts `im` (null: a real
// signal) of length `in_len`: returns the real and imaginary parts of the result (imaginary null
// for irfft), `out_len` long.
struct DftParts {
  Value* re;
  Value* im;
};
DftParts LastAxisDft(Emitter& e, Value* re, Value* im, int64_t n, int64_t in_len, int64_t out_len,
                     bool inverse, bool irfft) {
  // In double, as onnx's reference (numpy's FFT) computes, then rounded once to x's type.
  std::shared_ptr<TensorData> c = TensorData::Make(TensorType{DType::kF64, {in_len, out_len}});
  std::shared_ptr<TensorData> s = TensorData::Make(TensorType{DType::kF64, {in_len, out_len}});
  double* cv = reinterpret_cast<double*>(c->bytes.data());
  double* sv = reinterpret_cast<double*>(s->bytes.data());
  for (int64_t j = 0; j < in_len; ++j) {
    for (int64_t k = 0; k < out_len; ++k) {
      const double theta = 2 * std::numbers::pi * static_cast<double>((j * k) % n) / n;
      double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
      // irfft: bin j of the Hermitian half stands for j and n - j, but for 0 and n / 2.
      if (irfft && j != 0 && !(n % 2 == 0 && j == n / 2)) scale *= 2;
      cv[j * out_len + k] = scale * std::cos(theta);
      sv[j * out_len + k] = scale * std::sin(theta);
    }
  }
  Value* like = re;
  Value* cm = e.Constant("cos", c);
  Value* sm = e.Constant("sin", s);
  const std::map<std::string, Attribute> to_f64 = {{"to", Attribute(int64_t{11})}};
  re = e.Emit("Cast", 13, {re}, to_f64, "re_f64", false);
  if (im != nullptr) im = e.Emit("Cast", 13, {im}, to_f64, "im_f64", false);
  auto back = [&](Value* v, const std::string& suffix) {
    return e.Emit("CastLike", 15, {v, like}, {}, suffix, false);
  };
  Value* re_c = e.Emit("MatMul", 13, {re, cm}, {}, "re_cos", false);
  Value* re_s = e.Emit("MatMul", 13, {re, sm}, {}, "re_sin", false);
  if (irfft) {
    // Real part of sum X e^{+i theta}: re cos - im sin.
    Value* im_s = e.Emit("MatMul", 13, {im, sm}, {}, "im_sin", false);
    return {back(e.Emit("Sub", 14, {re_c, im_s}, {}, "y_re_f64", false), "y_re"), nullptr};
  }
  if (im == nullptr) {
    // x real: forward (re cos, -re sin), inverse (re cos, re sin).
    Value* y_im = inverse ? re_s : e.Emit("Neg", 13, {re_s}, {}, "y_im_f64", false);
    return {back(re_c, "y_re"), back(y_im, "y_im")};
  }
  Value* im_c = e.Emit("MatMul", 13, {im, cm}, {}, "im_cos", false);
  Value* im_s = e.Emit("MatMul", 13, {im, sm}, {}, "im_sin", false);
  if (inverse) {
    return {back(e.Emit("Sub", 14, {re_c, im_s}, {}, "y_re_f64", false), "y_re"),
            back(e.Emit("Add", 14, {im_c, re_s}, {}, "y_im_f64", false), "y_im")};
  }
  return {back(e.Emit("Add", 14, {re_c, im_s}, {}, "y_re_f64", false), "y_re"),
          back(e.Emit("Sub", 14, {im_c, re_s}, {}, "y_im_f64", false), "y_im")};
}

// Part `part` (0 real, 1 imaginary) of x's last dim, that dim dropped.
Value* Part(Emitter& e, Value* x, int64_t rank, int64_t part) {
  return e.Emit("Gather", 13, {x, e.Int64s(part ? "im_index" : "re_index", {part}, {})},
                {{"axis", Attribute(rank - 1)}}, part ? "im" : "re", false);
}

// y's real (and imaginary) parts as its last dim: the op's output.
void Join(Emitter& e, DftParts y) {
  Value* axis = e.Int64s("complex_axis", {-1}, {1});
  Value* re = e.Emit("Unsqueeze", 13, {y.re, axis}, {}, "y_re_last", y.im == nullptr);
  if (y.im == nullptr) return;
  Value* im = e.Emit("Unsqueeze", 13, {y.im, axis}, {}, "y_im_last", false);
  e.Emit("Concat", 13, {re, im}, {{"axis", Attribute(int64_t{-1})}}, "", true);
}

StatusOr<std::vector<DecomposedNode>> DecomposeDft(Graph& g, const DecomposeRequest& req) {
  if (req.inputs.empty() || req.inputs.size() > 3 || req.inputs[0] == nullptr ||
      req.outputs.size() != 1) {
    return InvalidInput("{}: DFT takes input, optional dft_length{} and one output", req.where,
                        req.version >= 20 ? ", optional axis" : "");
  }
  if (req.version >= 20) {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"inverse", "onesided"}));
  } else {
    A8_RETURN_IF_ERROR(CheckAttrs(req, {"axis", "inverse", "onesided"}));
  }
  std::optional<std::vector<int64_t>> dims = req.known_dims(req.inputs[0]);
  if (!dims) return Unsupported("{}: DFT needs the static dims of its input", req.where);
  const int64_t rank = static_cast<int64_t>(dims->size());
  if (rank < 2 || (dims->back() != 1 && dims->back() != 2)) {
    return InvalidInput("{}: the input's last dim must be 1 (real) or 2 (complex), rank >= 2",
                        req.where);
  }
  int64_t axis = req.version >= 20 ? -2 : 1;
  if (req.version < 20) {
    A8_ASSIGN_OR_RETURN(axis, IntAttr(req, "axis", 1));
  } else if (Present(req, 2)) {
    A8_ASSIGN_OR_RETURN(axis, ConstantScalar(req, 2, "axis"));
  }
  if (axis < -rank || axis > rank - 2 || axis == -1) {
    return InvalidInput("{}: axis {} is out of range for rank {} (the last dim is the complex one)",
                        req.where, axis, rank);
  }
  if (axis < 0) axis += rank;
  A8_ASSIGN_OR_RETURN(int64_t inverse, IntAttr(req, "inverse", 0));
  A8_ASSIGN_OR_RETURN(int64_t onesided, IntAttr(req, "onesided", 0));
  const bool irfft = inverse && onesided;
  const int64_t length = (*dims)[static_cast<size_t>(axis)];
  int64_t n = irfft ? 2 * (length - 1) : length;
  if (Present(req, 1)) {
    A8_ASSIGN_OR_RETURN(n, ConstantScalar(req, 1, "dft_length"));
  }
  if (n < 1 || n > kMaxDftLength) {
    return Unsupported("{}: DFT length {} is out of a800c's range [1, {}] (a constant matrix)",
                       req.where, n, kMaxDftLength);
  }
  const int64_t in_len = irfft ? n / 2 + 1 : n;
  const int64_t out_len = irfft ? n : (onesided ? n / 2 + 1 : n);

  Emitter e(g, req);
  Value* x = req.inputs[0];
  const int64_t r = rank - 1;  // rank of each part
  std::vector<int64_t> perm, back(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.push_back(axis);
  for (int64_t d = 0; d < r; ++d) back[static_cast<size_t>(perm[static_cast<size_t>(d)])] = d;
  const bool moved = axis != r - 1;
  auto prepare = [&](Value* part, const std::string& tag) {
    if (moved) {
      part = e.Emit("Transpose", 13, {part}, {{"perm", Attribute(perm)}}, tag + "_moved", false);
    }
    if (length > in_len) {
      part = e.Emit("Slice", 13,
                    {part, e.Int64s(tag + "_start", {0}, {1}),
                     e.Int64s(tag + "_end", {in_len}, {1}), e.Int64s(tag + "_axis", {-1}, {1})},
                    {}, tag + "_cut", false);
    } else if (length < in_len) {
      std::vector<int64_t> pads(static_cast<size_t>(2 * r), 0);
      pads[static_cast<size_t>(2 * r - 1)] = in_len - length;
      part = e.Emit("Pad", 13, {part, e.Int64s(tag + "_pads", pads, {2 * r})}, {}, tag + "_padded",
                    false);
    }
    return part;
  };
  Value* re = prepare(Part(e, x, rank, 0), "re");
  Value* im = dims->back() == 2 ? prepare(Part(e, x, rank, 1), "im") : nullptr;
  if (irfft && im == nullptr) {
    return InvalidInput("{}: an inverse onesided DFT takes a complex input (last dim 2)",
                        req.where);
  }
  DftParts y = LastAxisDft(e, re, im, n, in_len, out_len, inverse != 0, irfft);
  if (moved) {
    y.re = e.Emit("Transpose", 13, {y.re}, {{"perm", Attribute(back)}}, "y_re_back", false);
    if (y.im) {
      y.im = e.Emit("Transpose", 13, {y.im}, {{"perm", Attribute(back)}}, "y_im_back", false);
    }
  }
  Join(e, y);
  return e.nodes();
}

StatusOr<std::vector<DecomposedNode>> DecomposeStft(Graph& g, const DecomposeRequest& req) {
  if (req.inputs.size() < 2 || req.inputs.size() > 4 || !Present(req, 0) || !Present(req, 1) ||
      req.outputs.size() != 1) {
    return InvalidInput("{}: STFT takes signal, frame_step, optional window and frame_length",
                        req.where);
  }
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"onesided"}));
  std::optional<std::vector<int64_t>> dims = req.known_dims(req.inputs[0]);
  if (!dims || dims->size() != 3 || (dims->back() != 1 && dims->back() != 2)) {
    return InvalidInput("{}: STFT needs a signal of static dims [batch, length, 1 or 2]",
                        req.where);
  }
  A8_ASSIGN_OR_RETURN(int64_t step, ConstantScalar(req, 1, "frame_step"));
  int64_t frame = -1;
  if (Present(req, 3)) {
    A8_ASSIGN_OR_RETURN(frame, ConstantScalar(req, 3, "frame_length"));
  }
  Value* window = Present(req, 2) ? req.inputs[2] : nullptr;
  if (window != nullptr) {
    std::optional<std::vector<int64_t>> w = req.known_dims(window);
    if (!w || w->size() != 1) {
      return InvalidInput("{}: the window must be 1-D with static dims", req.where);
    }
    if (frame >= 0 && frame != (*w)[0]) {
      return InvalidInput("{}: frame_length {} and the window's length {} differ", req.where, frame,
                          (*w)[0]);
    }
    frame = (*w)[0];
  }
  const int64_t length = (*dims)[1];
  if (frame < 1 || frame > std::min(length, kMaxDftLength) || step < 1) {
    return InvalidInput("{}: frame_length {} and frame_step {} do not fit a signal of {}",
                        req.where, frame, step, length);
  }
  A8_ASSIGN_OR_RETURN(int64_t onesided, IntAttr(req, "onesided", 1));
  const int64_t frames = 1 + (length - frame) / step;
  std::vector<int64_t> index;
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t t = 0; t < frame; ++t) index.push_back(f * step + t);
  }
  Emitter e(g, req);
  Value* frame_index = e.Int64s("frame_index", index, {frames, frame});
  auto frames_of = [&](Value* part, const std::string& tag) {
    Value* f = e.Emit("Gather", 13, {part, frame_index}, {{"axis", Attribute(int64_t{1})}},
                      tag + "_frames", false);
    return window ? e.Emit("Mul", 14, {f, window}, {}, tag + "_windowed", false) : f;
  };
  Value* re = frames_of(Part(e, req.inputs[0], 3, 0), "re");
  Value* im = dims->back() == 2 ? frames_of(Part(e, req.inputs[0], 3, 1), "im") : nullptr;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  Join(e, LastAxisDft(e, re, im, frame, frame, bins, false, false));
  return e.nodes();
}

// MelWeightMatrix-17: a constant [dft_length / 2 + 1, num_mel_bins] of triangular filters,
// computed as onnx's reference does (its float32 steps where it takes them), all inputs constant.
StatusOr<std::vector<DecomposedNode>> DecomposeMelWeightMatrix(Graph& g,
                                                               const DecomposeRequest& req) {
  A8_RETURN_IF_ERROR(CheckArity(req, 5));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"output_datatype"}));
  A8_ASSIGN_OR_RETURN(int64_t mel_bins, ConstantScalar(req, 0, "num_mel_bins"));
  A8_ASSIGN_OR_RETURN(int64_t dft_length, ConstantScalar(req, 1, "dft_length"));
  A8_ASSIGN_OR_RETURN(int64_t sample_rate, ConstantScalar(req, 2, "sample_rate"));
  for (int i : {3, 4})
    A8_RETURN_IF_ERROR(RequireConstant(req, i, i == 3 ? "lower_edge_hertz" : "upper_edge_hertz"));
  const float lower = static_cast<float>(req.inputs[3]->data()->GetDouble(0));
  const float upper = static_cast<float>(req.inputs[4]->data()->GetDouble(0));
  if (mel_bins < 1 || mel_bins > 65536 || dft_length < 1 || dft_length > (1 << 20) ||
      sample_rate < 1) {
    return InvalidInput("{}: num_mel_bins {}, dft_length {}, sample_rate {} out of range",
                        req.where, mel_bins, dft_length, sample_rate);
  }
  A8_ASSIGN_OR_RETURN(int64_t out_type, IntAttr(req, "output_datatype", 1));
  StatusOr<DType> dtype = DTypeFromOnnx(static_cast<int>(out_type));
  if (!dtype.ok()) return dtype.status().WithContext(req.where + ": output_datatype");
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  auto mel = [](float hz) {
    return static_cast<double>(2595.0f * std::log1p(hz / 700.0f)) / std::log(10.0);
  };
  const double low = mel(lower), high = mel(upper);
  const double step = (high - low) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> bins;
  for (int64_t k = 0; k < mel_bins + 2; ++k) {
    const double hz =
        700 * std::expm1((static_cast<double>(k) * step + low) / 2595 * std::log(10.0));
    bins.push_back(static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate))));
  }
  std::vector<float> w(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0f);
  auto at = [&](int64_t j, int64_t i) -> StatusOr<float*> {
    if (j < 0 || j >= spectrogram_bins) {
      return InvalidInput("{}: a filter edge falls on bin {}, outside [0, {})", req.where, j,
                          spectrogram_bins);
    }
    return &w[static_cast<size_t>(j * mel_bins + i)];
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = bins[i], center = bins[i + 1], right = bins[i + 2];
    if (center == left) {
      A8_ASSIGN_OR_RETURN(float* p, at(center, i));
      *p = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        A8_ASSIGN_OR_RETURN(float* p, at(j, i));
        *p = static_cast<float>(static_cast<double>(j - left) / static_cast<double>(center - left));
      }
    }
    for (int64_t j = center; j < right; ++j) {
      A8_ASSIGN_OR_RETURN(float* p, at(j, i));
      *p = static_cast<float>(static_cast<double>(right - j) / static_cast<double>(right - center));
    }
  }
  Emitter e(g, req);
  Value* m = e.Constant("matrix", TensorData::FromFloats(w, {spectrogram_bins, mel_bins}));
  if (*dtype == DType::kF32) {
    e.Emit("Identity", 16, {m}, {}, "", true);
  } else {
    e.Emit("Cast", 13, {m}, {{"to", Attribute(out_type)}}, "", true);
  }
  return e.nodes();
}

}  // namespace

void AddSignalDecompositions(DecomposeTable* t) {
  t->emplace("MelWeightMatrix", DecomposeMelWeightMatrix);
  t->emplace("HannWindow", DecomposeWindow);
  t->emplace("HammingWindow", DecomposeWindow);
  t->emplace("BlackmanWindow", DecomposeWindow);
  t->emplace("DFT", DecomposeDft);
  t->emplace("STFT", DecomposeStft);
}

}  // namespace a8::decompose_internal
