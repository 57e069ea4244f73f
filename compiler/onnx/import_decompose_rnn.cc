// RNN-1/7/14/22, GRU-1/3/7/14/22 and LSTM-1/7/14/22 imported as their recurrence unrolled over
// the static sequence length, in ops a800c has (see import_decompose.h), following the ONNX
// specification and its reference implementation (onnx/reference/ops/op_rnn.py, op_gru.py,
// op_lstm.py). Training through them is autodiff through the unrolled ops.
//
//   X [S, B, I] (layout 0; layout 1 [B, S, I] is transposed first), per direction d (forward;
//   reverse; bidirectional = forward then reverse, num_directions D = 2):
//     W_d = W[d] [G * H, I], R_d = R[d] [G * H, H] (G gates: RNN 1, GRU 3 [zrh], LSTM 4 [iofc]),
//     XW = MatMul(X, W_d^T) + Wb + Rb ([S, B, G * H], one GEMM for every step; GRU with
//          linear_before_reset keeps Rbh apart);
//     for t in 0 .. S - 1 (S - 1 .. 0 when reversed), xw = XW[t]:
//       RNN:  H = f(xw + H R^T)
//       GRU:  z = f(xw_z + H Rz^T), r = f(xw_r + H Rr^T),
//             h = g(xw_h + (r . H) Rh^T)          (linear_before_reset = 0)
//             h = g(xw_h + r . (H Rh^T + Rbh))     (linear_before_reset = 1),
//             H = h + z . (H - h)                  (= (1 - z) . h + z . H)
//       LSTM: i = f(xw_i + H Ri^T + Pi . C), f = f(xw_f + H Rf^T + Pf . C) (1 - i when
//             input_forget), c = g(xw_c + H Rc^T), C = f . C + i . c,
//             o = f(xw_o + H Ro^T + Po . C), H = o . h(C)
//     with `clip` bounding every gate's pre-activation to [-clip, clip];
//     sequence_lens (when given and not all S): step t keeps H (and C) where t >= lens[b] and
//     writes 0 to Y there; the reverse direction then starts at lens[b] - 1, as ONNX says.
//   Y [S, D, B, H] = the H of each step; Y_h, Y_c [D, B, H] the last step's (layout 1:
//   Y [B, S, D, H], Y_h and Y_c [B, D, H]).
//   Activations (per direction: RNN f, GRU f g, LSTM f g h; case-insensitive): Relu, Tanh,
//   Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign,
//   Softplus; activation_alpha/beta are read at the activation's position in `activations`,
//   with the defaults of the ONNX ops (LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2 and
//   0.5, Elu 1, Affine and ScaledTanh 1 and 0 / 1 and 1).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers

enum class Cell { kRnn, kGru, kLstm };

constexpr int64_t kOnnxInt64 = 7;  // TensorProto.INT64

struct Activation {
  std::string name;  // lower case
  float alpha = 0;
  float beta = 0;
};

struct RnnSpec {
  Cell cell = Cell::kRnn;
  int64_t gates = 1;
  int64_t directions = 1;
  bool reverse = false;  // the one direction is reverse
  int64_t layout = 0;
  int64_t seq = 0, batch = 0, hidden = 0;
  std::optional<float> clip;
  std::vector<Activation> acts;  // per direction, `per_dir` of them
  size_t per_dir = 1;
  bool linear_before_reset = false;
  bool input_forget = false;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The activation's ONNX default alpha and beta; nullopt for a name ONNX does not define.
std::optional<std::pair<float, float>> ActivationDefaults(const std::string& name) {
  if (name == "relu" || name == "tanh" || name == "sigmoid" || name == "softsign" ||
      name == "softplus") {
    return std::pair(0.0f, 0.0f);
  }
  if (name == "affine") return std::pair(1.0f, 0.0f);
  if (name == "leakyrelu") return std::pair(0.01f, 0.0f);
  if (name == "thresholdedrelu" || name == "elu") return std::pair(1.0f, 0.0f);
  if (name == "scaledtanh") return std::pair(1.0f, 1.0f);
  if (name == "hardsigmoid") return std::pair(0.2f, 0.5f);
  return std::nullopt;
}

StatusOr<std::vector<Activation>> ReadActivations(const DecomposeRequest& req, const RnnSpec& s) {
  std::vector<std::string> names;
  auto it = req.attrs.find("activations");
  if (it != req.attrs.end()) {
    if (it->second.kind() != AttrKind::kStrings) {
      return InvalidInput("{}: attribute 'activations' must be strings, got {}", req.where,
                          AttrKindName(it->second.kind()));
    }
    names = it->second.strings();
  } else {
    const std::vector<std::string> one = s.cell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
                                         : s.cell == Cell::kGru
                                             ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                             : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < s.directions; ++d) names.insert(names.end(), one.begin(), one.end());
  }
  const size_t want = s.per_dir * static_cast<size_t>(s.directions);
  if (names.size() != want) {
    return InvalidInput(
        "{}: attribute 'activations' has {} names; {} with {} direction(s) takes {} ({} per "
        "direction)",
        req.where, names.size(), req.op, s.directions, want, s.per_dir);
  }
  auto floats = [&](const char* key) -> StatusOr<std::vector<float>> {
    auto f = req.attrs.find(key);
    if (f == req.attrs.end()) return std::vector<float>{};
    if (f->second.kind() != AttrKind::kFloats) {
      return InvalidInput("{}: attribute '{}' must be floats, got {}", req.where, key,
                          AttrKindName(f->second.kind()));
    }
    return f->second.floats();
  };
  A8_ASSIGN_OR_RETURN(std::vector<float> alphas, floats("activation_alpha"));
  A8_ASSIGN_OR_RETURN(std::vector<float> betas, floats("activation_beta"));
  if (alphas.size() > want || betas.size() > want) {
    return InvalidInput(
        "{}: attributes 'activation_alpha' and 'activation_beta' have {} and {} values, more "
        "than the {} activations",
        req.where, alphas.size(), betas.size(), want);
  }
  std::vector<Activation> acts;
  for (size_t i = 0; i < names.size(); ++i) {
    Activation a;
    a.name = Lower(names[i]);
    std::optional<std::pair<float, float>> def = ActivationDefaults(a.name);
    if (!def) {
      return InvalidInput(
          "{}: attribute 'activations' names '{}', not an RNN activation (Relu, Tanh, Sigmoid, "
          "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
          req.where, names[i]);
    }
    a.alpha = i < alphas.size() ? alphas[i] : def->first;
    a.beta = i < betas.size() ? betas[i] : def->second;
    acts.push_back(a);
  }
  return acts;
}

StatusOr<RnnSpec> ReadSpec(const DecomposeRequest& req, Cell cell) {
  RnnSpec s;
  s.cell = cell;
  s.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  s.per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  const size_t max_inputs = cell == Cell::kLstm ? 8 : 6;
  const size_t max_outputs = cell == Cell::kLstm ? 3 : 2;
  if (req.inputs.size() < 3 || req.inputs.size() > max_inputs || req.outputs.empty() ||
      req.outputs.size() > max_outputs) {
    return InvalidInput("{}: {}-{} takes 3 to {} inputs and 1 to {} outputs, got {} and {}",
                        req.where, req.op, req.version, max_inputs, max_outputs, req.inputs.size(),
                        req.outputs.size());
  }
  A8_RETURN_IF_ERROR(RequireLeadingInputs(req, {"X", "W", "R"}));
  std::vector<std::string_view> known = {
      "activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size"};
  if (req.version == 1) known.push_back("output_sequence");  // Y is optional anyway
  if (req.version >= 14) known.push_back("layout");
  if (cell == Cell::kGru && req.version >= 3) known.push_back("linear_before_reset");
  if (cell == Cell::kLstm) known.push_back("input_forget");
  for (const auto& [key, value] : req.attrs) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return InvalidInput("{}: unknown attribute '{}' ({}-{})", req.where, key, req.op,
                          req.version);
    }
  }
  A8_ASSIGN_OR_RETURN(std::string direction, StringAttr(req, "direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return InvalidInput("{}: attribute 'direction' '{}' must be forward, reverse or bidirectional",
                        req.where, direction);
  }
  s.directions = direction == "bidirectional" ? 2 : 1;
  s.reverse = direction == "reverse";
  A8_ASSIGN_OR_RETURN(s.layout, IntAttr(req, "layout", 0));
  if (s.layout != 0 && s.layout != 1) {
    return InvalidInput("{}: attribute 'layout' must be 0 or 1, got {}", req.where, s.layout);
  }
  if (req.attrs.count("clip")) {
    A8_ASSIGN_OR_RETURN(float clip, FloatAttr(req, "clip", 0));
    if (!(clip > 0)) {
      return InvalidInput("{}: attribute 'clip' must be positive, got {}", req.where, clip);
    }
    s.clip = clip;
  }
  A8_ASSIGN_OR_RETURN(int64_t lbr, IntAttr(req, "linear_before_reset", 0));
  s.linear_before_reset = lbr != 0;
  A8_ASSIGN_OR_RETURN(int64_t input_forget, IntAttr(req, "input_forget", 0));
  s.input_forget = input_forget != 0;
  A8_ASSIGN_OR_RETURN(s.acts, ReadActivations(req, s));

  std::optional<std::vector<int64_t>> x_dims =
      req.known_dims ? req.known_dims(req.inputs[0]) : std::nullopt;
  if (!x_dims || x_dims->size() != 3) {
    return Unsupported(
        "{}: {} needs the static 3-D shape of input 'X' ('{}'): the recurrence is unrolled over "
        "the sequence length",
        req.where, req.op, req.inputs[0]->name());
  }
  s.seq = (*x_dims)[s.layout == 0 ? 0 : 1];
  s.batch = (*x_dims)[s.layout == 0 ? 1 : 0];
  A8_ASSIGN_OR_RETURN(int64_t hidden, IntAttr(req, "hidden_size", 0));
  std::optional<std::vector<int64_t>> r_dims =
      req.known_dims ? req.known_dims(req.inputs[2]) : std::nullopt;
  if (r_dims && r_dims->size() != 3) {
    return InvalidInput("{}: input 'R' must be 3-D [num_directions, {} * hidden, hidden]",
                        req.where, s.gates);
  }
  if (r_dims) {
    if (hidden > 0 && (*r_dims)[2] != hidden) {
      return InvalidInput("{}: attribute 'hidden_size' {} does not match R's last dim {}",
                          req.where, hidden, (*r_dims)[2]);
    }
    if ((*r_dims)[0] != s.directions || (*r_dims)[1] != s.gates * (*r_dims)[2]) {
      return InvalidInput(
          "{}: input 'R' has shape [{}, {}, {}]; direction '{}' needs [{}, {}, hidden]", req.where,
          (*r_dims)[0], (*r_dims)[1], (*r_dims)[2], direction, s.directions, s.gates);
    }
    hidden = (*r_dims)[2];
  }
  if (hidden <= 0) {
    return Unsupported(
        "{}: {} needs attribute 'hidden_size' or the static shape of input 'R' ('{}')", req.where,
        req.op, req.inputs[2]->name());
  }
  s.hidden = hidden;
  if (s.seq <= 0) {
    return InvalidInput("{}: the sequence length of X is {} (at least 1 is needed)", req.where,
                        s.seq);
  }
  return s;
}

// The nodes of one RNN, GRU or LSTM.
class RnnBuilder : public DecomposeBuilder<RnnSpec> {
 public:
  using DecomposeBuilder::DecomposeBuilder;

  StatusOr<std::vector<DecomposedNode>> Build() {
    x_ = req_.inputs[0];
    if (s_.layout == 1) x_ = Emit("Transpose", 13, {x_}, "x_sbi", {{"perm", Ints({1, 0, 2})}});
    zeros_ = Emit("CastLike", 15,
                  {Emit("ConstantOfShape", 9,
                        {e_.Int64s("state_shape", {s_.batch, s_.hidden}, {2})}, "zeros_f"),
                   x_},
                  "zeros");
    A8_RETURN_IF_ERROR(ReadLengths());
    std::vector<Value*> ys, hs, cs;
    for (int64_t d = 0; d < s_.directions; ++d) {
      A8_RETURN_IF_ERROR(Direction(d, &ys, &hs, &cs));
    }
    auto stack = [&](const std::vector<Value*>& parts, int64_t axis, const std::string& name) {
      if (parts.size() == 1) return parts[0];
      return Emit("Concat", 13, parts, name, {{"axis", Attribute(axis)}});
    };
    if (WantsOutput(req_, 0)) {
      Value* y = stack(ys, 1, "y_sdbh");
      if (s_.layout == 1) y = Emit("Transpose", 13, {y}, "y_bsdh", {{"perm", Ints({2, 0, 1, 3})}});
      e_.EmitOutput(0, "Identity", 16, {y}, {}, "Y");
    }
    auto state_out = [&](size_t i, const std::vector<Value*>& parts, const std::string& name) {
      if (!WantsOutput(req_, i)) return;
      Value* v = stack(parts, 0, name + "_dbh");
      if (s_.layout == 1)
        v = Emit("Transpose", 13, {v}, name + "_bdh", {{"perm", Ints({1, 0, 2})}});
      e_.EmitOutput(i, "Identity", 16, {v}, {}, name);
    };
    state_out(1, hs, "Y_h");
    if (s_.cell == Cell::kLstm) state_out(2, cs, "Y_c");
    return e_.nodes();
  }

 private:
  Value* Like(float value, const std::string& suffix) {
    Value* c = e_.Constant(suffix, TensorData::FromFloats({value}, {}));
    return Emit("CastLike", 15, {c, x_}, suffix + "_t");
  }
  // x[d] of a [D, ...] input.
  Value* Dir(Value* v, int64_t d, const std::string& suffix) {
    return Emit("Gather", 13, {v, e_.Int64s(suffix + "_index", {d}, {})}, suffix,
                {{"axis", Attribute(int64_t{0})}});
  }
  // x[..., begin:end] (the gates along the last axis).
  Value* Cols(Value* x, int64_t begin, int64_t end, const std::string& suffix) {
    return Emit("Slice", 13,
                {x, e_.Int64s(suffix + "_begin", {begin}, {1}),
                 e_.Int64s(suffix + "_end", {end}, {1}), e_.Int64s(suffix + "_axes", {-1}, {1})},
                suffix);
  }
  Value* Gate(Value* xw, int64_t k, const std::string& suffix) {
    return Cols(xw, k * s_.hidden, (k + 1) * s_.hidden, suffix);
  }

  // sequence_lens as int64 [B, 1], unless absent or a constant of full lengths.
  Status ReadLengths() {
    Value* lens = Input(req_, 4);
    if (lens == nullptr) return Status::Ok();
    if (lens->data() != nullptr) {
      bool full = true;
      if (lens->data()->num_elements() != s_.batch) {
        return InvalidInput("{}: input 'sequence_lens' has {} values for batch {}", req_.where,
                            lens->data()->num_elements(), s_.batch);
      }
      for (int64_t b = 0; b < s_.batch; ++b) {
        const int64_t n = lens->data()->GetInt64(b);
        if (n < 0 || n > s_.seq) {
          return InvalidInput("{}: sequence_lens[{}] = {} is outside [0, {}]", req_.where, b, n,
                              s_.seq);
        }
        full = full && n == s_.seq;
      }
      if (full) return Status::Ok();
    }
    Value* l64 = Emit("Cast", 13, {lens}, "lens_i64", {{"to", Attribute(kOnnxInt64)}});
    lens_col_ = Emit("Unsqueeze", 13, {l64, e_.Int64s("lens_axes", {1}, {1})}, "lens_col");
    return Status::Ok();
  }

  Value* Act(size_t d, size_t k, Value* x, const std::string& suffix) {
    const Activation& a = s_.acts[d * s_.per_dir + k];
    // The clip bounds the gates' pre-activations (f and g), not LSTM's h(C).
    if (s_.clip && !(s_.cell == Cell::kLstm && k == 2)) {
      x = Emit("Clip", 13, {x, Like(-*s_.clip, suffix + "_lo"), Like(*s_.clip, suffix + "_hi")},
               suffix + "_clipped");
    }
    const std::string& n = a.name;
    if (n == "relu") return Emit("Relu", 14, {x}, suffix);
    if (n == "tanh") return Emit("Tanh", 13, {x}, suffix);
    if (n == "sigmoid") return Emit("Sigmoid", 13, {x}, suffix);
    if (n == "softsign") return Emit("Softsign", 1, {x}, suffix);
    if (n == "softplus") return Emit("Softplus", 1, {x}, suffix);
    if (n == "leakyrelu") return Emit("LeakyRelu", 16, {x}, suffix, {{"alpha", a.alpha}});
    if (n == "thresholdedrelu") {
      return Emit("ThresholdedRelu", 10, {x}, suffix, {{"alpha", a.alpha}});
    }
    if (n == "elu") return Emit("Elu", 6, {x}, suffix, {{"alpha", a.alpha}});
    if (n == "hardsigmoid") {
      return Emit("HardSigmoid", 6, {x}, suffix, {{"alpha", a.alpha}, {"beta", a.beta}});
    }
    if (n == "affine") {
      Value* ax = Emit("Mul", 14, {x, Like(a.alpha, suffix + "_alpha")}, suffix + "_ax");
      return Emit("Add", 14, {ax, Like(a.beta, suffix + "_beta")}, suffix);
    }
    // scaledtanh: alpha * Tanh(beta * x)
    Value* bx = Emit("Mul", 14, {x, Like(a.beta, suffix + "_beta")}, suffix + "_bx");
    return Emit("Mul", 14,
                {Emit("Tanh", 13, {bx}, suffix + "_tanh"), Like(a.alpha, suffix + "_alpha")},
                suffix);
  }

  Status Direction(int64_t d, std::vector<Value*>* ys, std::vector<Value*>* hs,
                   std::vector<Value*>* cs) {
    const std::string p = fmt::format("d{}_", d);
    const int64_t gh = s_.gates * s_.hidden;
    const int64_t h = s_.hidden;
    const bool gru = s_.cell == Cell::kGru;
    const bool lstm = s_.cell == Cell::kLstm;
    const std::map<std::string, Attribute> swap = {{"perm", Ints({1, 0})}};
    Value* wt = Emit("Transpose", 13, {Dir(req_.inputs[1], d, p + "w")}, p + "w_t", swap);
    Value* rt = Emit("Transpose", 13, {Dir(req_.inputs[2], d, p + "r")}, p + "r_t", swap);
    Value* xw = Emit("MatMul", 13, {x_, wt}, p + "xw");
    Value* rbh = nullptr;  // GRU with linear_before_reset: Rbh added inside the reset product
    if (Value* b = Input(req_, 3)) {
      Value* bd = Dir(b, d, p + "b");
      Value* wb = Cols(bd, 0, gh, p + "wb");
      Value* rb = Cols(bd, gh, 2 * gh, p + "rb");
      Value* bias;
      if (gru && s_.linear_before_reset) {
        Value* zr =
            Emit("Add", 14, {Cols(wb, 0, 2 * h, p + "wb_zr"), Cols(rb, 0, 2 * h, p + "rb_zr")},
                 p + "b_zr");
        bias = Emit("Concat", 13, {zr, Cols(wb, 2 * h, 3 * h, p + "wb_h")}, p + "bias",
                    {{"axis", Attribute(int64_t{0})}});
        rbh = Cols(rb, 2 * h, 3 * h, p + "rb_h");
      } else {
        bias = Emit("Add", 14, {wb, rb}, p + "bias");
      }
      xw = Emit("Add", 14, {xw, bias}, p + "xw_b");
    }
    Value* rt_zr = gru ? Cols(rt, 0, 2 * h, p + "r_zr_t") : nullptr;
    Value* rt_h = gru ? Cols(rt, 2 * h, 3 * h, p + "r_h_t") : nullptr;
    Value* pi = nullptr;
    Value* po = nullptr;
    Value* pf = nullptr;
    if (Value* peep = lstm ? Input(req_, 7) : nullptr) {
      Value* pd = Dir(peep, d, p + "p");
      pi = Cols(pd, 0, h, p + "p_i");
      po = Cols(pd, h, 2 * h, p + "p_o");
      pf = Cols(pd, 2 * h, 3 * h, p + "p_f");
    }
    Value* hcur = zeros_;
    if (Value* h0 = Input(req_, 5)) hcur = InitialState(h0, d, p + "h0");
    Value* ccur = zeros_;
    if (Value* c0 = lstm ? Input(req_, 6) : nullptr) ccur = InitialState(c0, d, p + "c0");

    const bool backward = s_.reverse || d == 1;
    std::vector<Value*> y_steps(static_cast<size_t>(s_.seq));
    for (int64_t step = 0; step < s_.seq; ++step) {
      const int64_t t = backward ? s_.seq - 1 - step : step;
      const std::string q = fmt::format("{}t{}_", p, t);
      Value* xt = Emit("Gather", 13, {xw, e_.Int64s(q + "index", {t}, {})}, q + "xw",
                       {{"axis", Attribute(int64_t{0})}});
      Value* hnew;
      Value* cnew = nullptr;
      const size_t di = static_cast<size_t>(d);
      if (gru) {
        Value* hr = Emit("MatMul", 13, {hcur, rt_zr}, q + "hr_zr");
        Value* zr = Emit("Add", 14, {Cols(xt, 0, 2 * h, q + "xw_zr"), hr}, q + "zr_in");
        Value* z = Act(di, 0, Gate(zr, 0, q + "z_in"), q + "z");
        Value* r = Act(di, 0, Gate(zr, 1, q + "r_in"), q + "r");
        Value* rec;
        if (s_.linear_before_reset) {
          Value* hrh = Emit("MatMul", 13, {hcur, rt_h}, q + "hr_h");
          if (rbh) hrh = Emit("Add", 14, {hrh, rbh}, q + "hr_h_b");
          rec = Emit("Mul", 14, {r, hrh}, q + "reset_hr_h");
        } else {
          rec = Emit("MatMul", 13, {Emit("Mul", 14, {r, hcur}, q + "reset_h"), rt_h}, q + "rh_r_h");
        }
        Value* hh =
            Act(di, 1, Emit("Add", 14, {Gate(xt, 2, q + "xw_h"), rec}, q + "h_in"), q + "h");
        Value* diff = Emit("Sub", 14, {hcur, hh}, q + "h_diff");
        hnew = Emit("Add", 14, {hh, Emit("Mul", 14, {z, diff}, q + "z_diff")}, q + "h_new");
      } else {
        Value* gates = Emit("Add", 14, {xt, Emit("MatMul", 13, {hcur, rt}, q + "hr")}, q + "gates");
        if (!lstm) {
          hnew = Act(di, 0, gates, q + "h_new");
        } else {
          Value* gi = Gate(gates, 0, q + "i_in");
          Value* go = Gate(gates, 1, q + "o_in");
          Value* gf = Gate(gates, 2, q + "f_in");
          Value* gc = Gate(gates, 3, q + "c_in");
          if (pi) gi = Emit("Add", 14, {gi, Emit("Mul", 14, {pi, ccur}, q + "pi_c")}, q + "i_peep");
          if (pf) gf = Emit("Add", 14, {gf, Emit("Mul", 14, {pf, ccur}, q + "pf_c")}, q + "f_peep");
          Value* i = Act(di, 0, gi, q + "i");
          Value* f = s_.input_forget ? Emit("Sub", 14, {Like(1.0f, q + "one"), i}, q + "f")
                                     : Act(di, 0, gf, q + "f");
          Value* c = Act(di, 1, gc, q + "c");
          cnew = Emit("Add", 14,
                      {Emit("Mul", 14, {f, ccur}, q + "f_c"), Emit("Mul", 14, {i, c}, q + "i_c")},
                      q + "c_new");
          if (po) go = Emit("Add", 14, {go, Emit("Mul", 14, {po, cnew}, q + "po_c")}, q + "o_peep");
          Value* o = Act(di, 0, go, q + "o");
          hnew = Emit("Mul", 14, {o, Act(di, 2, cnew, q + "h_c")}, q + "h_new");
        }
      }
      Value* y = hnew;
      if (lens_col_) {
        Value* valid = Emit("Less", 13, {e_.Int64s(q + "t", {t}, {}), lens_col_}, q + "valid");
        y = Emit("Where", 16, {valid, hnew, zeros_}, q + "y");
        hnew = Emit("Where", 16, {valid, hnew, hcur}, q + "h");
        if (cnew) cnew = Emit("Where", 16, {valid, cnew, ccur}, q + "c_kept");
      }
      hcur = hnew;
      if (cnew) ccur = cnew;
      if (WantsOutput(req_, 0)) {
        y_steps[static_cast<size_t>(t)] =
            Emit("Unsqueeze", 13, {y, e_.Int64s(q + "y_axes", {0, 1}, {2})}, q + "y_sd");
      }
    }
    if (WantsOutput(req_, 0)) {
      ys->push_back(s_.seq == 1
                        ? y_steps[0]
                        : Emit("Concat", 13, y_steps, p + "y", {{"axis", Attribute(int64_t{0})}}));
    }
    hs->push_back(Emit("Unsqueeze", 13, {hcur, e_.Int64s(p + "h_axes", {0}, {1})}, p + "h_last"));
    if (lstm) {
      cs->push_back(Emit("Unsqueeze", 13, {ccur, e_.Int64s(p + "c_axes", {0}, {1})}, p + "c_last"));
    }
    return Status::Ok();
  }

  // initial_h / initial_c of direction d: [D, B, H] (layout 1: [B, D, H]) -> [B, H].
  Value* InitialState(Value* v, int64_t d, const std::string& suffix) {
    if (s_.layout == 1) {
      return Emit("Gather", 13, {v, e_.Int64s(suffix + "_index", {d}, {})}, suffix,
                  {{"axis", Attribute(int64_t{1})}});
    }
    return Dir(v, d, suffix);
  }

  Value* x_ = nullptr;
  Value* zeros_ = nullptr;
  Value* lens_col_ = nullptr;
};

template <Cell kCell>
StatusOr<std::vector<DecomposedNode>> DecomposeRecurrent(Graph& g, const DecomposeRequest& req) {
  A8_ASSIGN_OR_RETURN(RnnSpec s, ReadSpec(req, kCell));
  return RnnBuilder(g, req, s).Build();
}

}  // namespace

void decompose_internal::AddRnnDecompositions(decompose_internal::DecomposeTable* t) {
  t->insert({{"RNN", DecomposeRecurrent<Cell::kRnn>},
             {"GRU", DecomposeRecurrent<Cell::kGru>},
             {"LSTM", DecomposeRecurrent<Cell::kLstm>}});
}

}  // namespace a8
