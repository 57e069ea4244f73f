// Attention-23/24/25 imported as nodes of ops a800c has (see import_decompose.h), following the
// ONNX specification and its reference implementation (onnx/reference/ops/op_attention.py):
//
//   Attention (Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen? [24+];
//              is_causal, q_num_heads, kv_num_heads, scale, softcap, softmax_precision,
//              qk_matmul_output_mode, left_window_size and right_window_size [25])
//       -> 3-D inputs [B, S, H * D] are split into heads (Reshape [0, 0, H, -1], Transpose
//          [0, 2, 1, 3]); present_key/value = Concat(past, K/V, axis 2) (or K/V itself);
//          GQA repeats each KV head q_num_heads / kv_num_heads times ([h0, h0, h1, h1, ..]:
//          Unsqueeze, Expand, Reshape); s = sqrt(scale) (default 1 / sqrt(head_size));
//          qk = MatMul(Q * s, Transpose(K) * s); softcap c > 0: c * Tanh(qk / c);
//          the additive bias (Q's type) is the sum of: the mask (a bool mask as Where(m, 0,
//          -inf)) padded with -inf to the total kv length; the bottom-right causal mask
//          Where(j <= i + offset, 0, -inf), offset = past length, or nonpad_kv_seqlen - q length
//          per batch, or 0; the sliding window (25); the padding of nonpad_kv_seqlen;
//          P = Softmax(qk + bias) (in softmax_precision when given) with rows whose bias is all
//          -inf set to zero (the spec's fully-masked rows: their logits are replaced by 0 first,
//          so that neither the values nor the gradients see a NaN); Y = MatMul(P, V), merged
//          back to [B, S, H * Dv] for 3-D inputs. qk_matmul_output is qk (mode 0), after softcap
//          (1), with the bias (2), or P (3). Mode 0 with softcap is the raw qk, as the spec's
//          text and onnxruntime have it (onnx's reference implementation returns it softcapped;
//          no node test has that combination).
//       The fused path: without qk_matmul_output, softcap, a softmax_precision other than
//       float and a Q declared f16/bf16 (see Fused), Y is one a8.FusedAttention (Q, present K,
//       present V, bias?) instead (op_table_attention.cc: online softmax in f32, no [B, H, Sq, Skv]
//       score tensor; GQA, the scale, the top-left causal mask (no past) and the fully masked rows
//       in the kernel; the bias above carries the rest). It exports back as Attention-23
//       (exporter.cc). The nodes above are the fallback.
//       Differentiable: Y, present_key, present_value and qk_matmul_output with respect to Q,
//       K, V, past_key, past_value and a float attn_mask; not a bool mask or nonpad_kv_seqlen.
// RotaryEmbedding-23 is in import_decompose_rotary.cc.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers

// A 4-D value's head count (dim 1) when its type is already known (a declared graph input).
std::optional<int64_t> KnownHeads(const Value* v) {
  if (v->dims().size() == 4 && v->dims()[1] > 0) return v->dims()[1];
  return std::nullopt;
}

void NoteRank(const DecomposeRequest& req, const Value* v, int64_t rank) {
  if (req.note_rank) req.note_rank(v, rank);
}

// Q's rank; K's or V's when Q's is not known (the spec gives the three the same rank).
StatusOr<int64_t> AttentionRank(const DecomposeRequest& req) {
  for (int i = 0; i < 3 && req.known_rank; ++i) {
    if (std::optional<int64_t> rank = req.known_rank(req.inputs[i])) return *rank;
  }
  return Unsupported(
      "{}: Attention needs the rank of Q, K or V (3-D or 4-D), which the model does not declare "
      "for '{}'",
      req.where, req.inputs[0]->name());
}

std::optional<DType> KnownDType(const DecomposeRequest& req, const Value* v) {
  if (v->data() != nullptr) return v->data()->type.dtype;
  if (req.known_dtype) return req.known_dtype(v);
  return std::nullopt;
}

struct AttentionAttrs {
  int64_t rank = 4;
  int64_t q_heads = 0;   // from the attribute (3-D inputs), 0 when absent
  int64_t kv_heads = 0;  // idem
  bool is_causal = false;
  std::optional<float> scale;
  float softcap = 0;
  std::optional<int64_t> softmax_precision;
  int64_t mode = 0;
  int64_t left_window = -1;
  int64_t right_window = -1;
};

StatusOr<AttentionAttrs> ReadAttentionAttrs(const DecomposeRequest& req) {
  if (req.version >= 25) {
    A8_RETURN_IF_ERROR(CheckAttrs(
        req, {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale",
              "softcap", "softmax_precision", "left_window_size", "right_window_size"}));
  } else {
    A8_RETURN_IF_ERROR(
        CheckAttrs(req, {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
                         "scale", "softcap", "softmax_precision"}));
  }
  AttentionAttrs a;
  A8_ASSIGN_OR_RETURN(a.rank, AttentionRank(req));
  if (a.rank != 3 && a.rank != 4) {
    return InvalidInput(
        "{}: Q must be 3-D [batch, seq, hidden] or 4-D [batch, heads, seq, head], got rank {}",
        req.where, a.rank);
  }
  A8_ASSIGN_OR_RETURN(a.q_heads, IntAttr(req, "q_num_heads", 0));
  A8_ASSIGN_OR_RETURN(a.kv_heads, IntAttr(req, "kv_num_heads", 0));
  if (a.rank == 3 && (a.q_heads <= 0 || a.kv_heads <= 0)) {
    return InvalidInput(
        "{}: 3-D inputs need positive attributes q_num_heads and kv_num_heads, got {} and {}",
        req.where, a.q_heads, a.kv_heads);
  }
  if (a.rank == 4 && req.version >= 25 &&
      (req.attrs.count("q_num_heads") || req.attrs.count("kv_num_heads"))) {
    return InvalidInput("{}: q_num_heads and kv_num_heads must not be given for 4-D inputs",
                        req.where);
  }
  if (a.q_heads > 0 && a.kv_heads > 0 && a.q_heads % a.kv_heads != 0) {
    return InvalidInput("{}: q_num_heads {} is not a multiple of kv_num_heads {}", req.where,
                        a.q_heads, a.kv_heads);
  }
  A8_ASSIGN_OR_RETURN(int64_t causal, IntAttr(req, "is_causal", 0));
  if (causal != 0 && causal != 1) {
    return InvalidInput("{}: attribute 'is_causal' must be 0 or 1, got {}", req.where, causal);
  }
  a.is_causal = causal == 1;
  A8_ASSIGN_OR_RETURN(a.scale, AttentionScaleAttr(req));
  A8_ASSIGN_OR_RETURN(a.softcap, FloatAttr(req, "softcap", 0));
  if (req.attrs.count("softmax_precision")) {
    A8_ASSIGN_OR_RETURN(int64_t p, IntAttr(req, "softmax_precision", std::nullopt));
    // TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16: the float types the spec allows.
    if (p != 1 && p != 10 && p != 11 && p != 16) {
      return InvalidInput(
          "{}: attribute 'softmax_precision' {} is not a float type (1, 10, 11, 16)", req.where, p);
    }
    a.softmax_precision = p;
  }
  A8_ASSIGN_OR_RETURN(a.mode, IntAttr(req, "qk_matmul_output_mode", 0));
  if (a.mode < 0 || a.mode > 3) {
    return InvalidInput("{}: attribute 'qk_matmul_output_mode' must be 0, 1, 2 or 3, got {}",
                        req.where, a.mode);
  }
  A8_ASSIGN_OR_RETURN(a.left_window, IntAttr(req, "left_window_size", -1));
  A8_ASSIGN_OR_RETURN(a.right_window, IntAttr(req, "right_window_size", -1));
  if (a.left_window < -1 || a.right_window < -1) {
    return InvalidInput(
        "{}: left_window_size and right_window_size must be -1 or non-negative, got {} and {}",
        req.where, a.left_window, a.right_window);
  }
  return a;
}

// The nodes of one Attention: the emitter and the small constants they share.
class AttentionBuilder : public DecomposeBuilder<AttentionAttrs> {
 public:
  using DecomposeBuilder::DecomposeBuilder;

  StatusOr<std::vector<DecomposedNode>> Build() {
    Value* q = Input(req_, 0);
    Value* k = Input(req_, 1);
    Value* v = Input(req_, 2);
    Value* past_key = Input(req_, 4);
    Value* past_value = Input(req_, 5);
    Value* nonpad = Input(req_, 6);
    if (s_.rank == 3) {
      q = SplitHeads(q, s_.q_heads, "q");
      k = SplitHeads(k, s_.kv_heads, "k");
      v = SplitHeads(v, s_.kv_heads, "v");
    }
    zero_ = Like(0.0f, q, "zero");
    neg_inf_ = Like(-std::numeric_limits<float>::infinity(), q, "neg_inf");
    // The cache: present = Concat(past, new) along the sequence axis.
    Value* present_k = Present(past_key, k, 1, "present_key");
    Value* present_v = Present(past_value, v, 2, "present_value");
    if (Fused()) return BuildFused(q, present_k, present_v, past_key, nonpad);
    A8_ASSIGN_OR_RETURN(Value * k_heads, RepeatKvHeads(q, present_k, "k"));
    A8_ASSIGN_OR_RETURN(Value * v_heads, RepeatKvHeads(q, present_v, "v"));

    Value* s = SqrtScale(q);
    Value* q_scaled = Emit("Mul", 14, {q, s}, "q_scaled");
    Value* k_t = Emit("Transpose", 13, {k_heads}, "k_t", {{"perm", Ints({0, 1, 3, 2})}});
    Value* k_scaled = Emit("Mul", 14, {k_t, s}, "k_scaled");
    Value* qk = Emit("MatMul", 13, {q_scaled, k_scaled}, "qk");
    Value* capped = qk;
    if (s_.softcap > 0) {
      Value* c = Like(s_.softcap, q, "softcap");
      Value* t = Emit("Tanh", 13, {Emit("Div", 14, {qk, c}, "qk_over_softcap")}, "qk_tanh");
      capped = Emit("Mul", 14, {t, c}, "qk_softcapped");
    }
    A8_ASSIGN_OR_RETURN(Value * bias, Bias(q, present_k, past_key, nonpad, s_.is_causal));
    Value* logits = bias ? Emit("Add", 14, {capped, bias}, "qk_biased") : capped;
    if (WantsOutput(req_, 3) && s_.mode < 3) {
      Value* shown = s_.mode == 0 ? qk : s_.mode == 1 ? capped : logits;
      e_.EmitOutput(3, "Identity", 16, {shown}, {}, "qk_matmul_output");
    }
    // A row whose bias is -inf everywhere attends to nothing: its probabilities are 0 (not the
    // NaN of a softmax of -inf). Its logits become 0 before the softmax so that no NaN reaches
    // the values or the gradients, and its probabilities 0 after.
    Value* masked_row = nullptr;
    if (bias) {
      Value* row_max = Emit("ReduceMax", 18, {bias, e_.Int64s("last_axis", {-1}, {1})},
                            "bias_row_max", {{"keepdims", Attribute(int64_t{1})}});
      masked_row = Emit("Equal", 13, {row_max, neg_inf_}, "row_masked");
      logits = Emit("Where", 16, {masked_row, zero_, logits}, "logits_safe");
    }
    Value* softmax_in = logits;
    if (s_.softmax_precision) {
      softmax_in = Emit("Cast", 13, {logits}, "softmax_in", {{"to", *s_.softmax_precision}});
    }
    Value* p = Emit("Softmax", 13, {softmax_in}, "probs", {{"axis", Attribute(int64_t{-1})}});
    if (s_.softmax_precision) p = Emit("CastLike", 15, {p, q}, "probs_t");
    if (masked_row) p = Emit("Where", 16, {masked_row, zero_, p}, "probs_safe");
    if (WantsOutput(req_, 3) && s_.mode == 3) {
      e_.EmitOutput(3, "Identity", 16, {p}, {}, "qk_matmul_output");
    }
    Value* out;
    if (s_.rank == 4) {
      out = e_.EmitOutput(0, "MatMul", 13, {p, v_heads}, {}, "");
    } else {
      Value* y = Emit("MatMul", 13, {p, v_heads}, "y_heads");
      Value* y_t = Emit("Transpose", 13, {y}, "y_t", {{"perm", Ints({0, 2, 1, 3})}});
      out = e_.EmitOutput(0, "Reshape", 14, {y_t, e_.Int64s("merged_shape", {0, 0, -1}, {3})}, {},
                          "");
    }
    return Finish(out);
  }

 private:
  // Whether a8.FusedAttention computes this Attention: not when qk_matmul_output is asked for
  // (the kernel keeps no score matrix), with a softcap (not in the kernel yet), with a
  // softmax_precision other than float (the kernel's softmax is f32, f64 for f64 inputs), or
  // when the model declares Q in f16/bf16: onnx's results for those round every intermediate
  // to f16 and the node tests hold them to the float tolerance, which neither the kernel's
  // f32 softmax nor the Attention-23 it exports as meets in onnxruntime (a known gap: such
  // models keep the score tensor; --precision=amp/bf16 models, f32 at import, are fused).
  bool Fused() const {
    const std::optional<DType> t = KnownDType(req_, Input(req_, 0));
    const bool low = t && (*t == DType::kF16 || *t == DType::kBF16);
    return !low && !WantsOutput(req_, 3) && s_.softcap == 0 &&
           (!s_.softmax_precision || *s_.softmax_precision == kOnnxFloat);
  }

  // Y = a8.FusedAttention (Q, K, V, bias?): the kernel repeats the kv heads (GQA), applies the
  // scale (default 1 / sqrt(head_size) there too), the causal mask when it is top-left (no past,
  // no nonpad_kv_seqlen: offset 0, which exports as Attention's is_causal), and gives fully
  // masked rows zeros; the bias holds the mask, the padding, the window and the causal mask
  // offset by a past.
  StatusOr<std::vector<DecomposedNode>> BuildFused(Value* q, Value* present_k, Value* present_v,
                                                   Value* past_key, Value* nonpad) {
    const bool causal_in_kernel = s_.is_causal && !past_key && !nonpad;
    A8_ASSIGN_OR_RETURN(Value * bias,
                        Bias(q, present_k, past_key, nonpad, s_.is_causal && !causal_in_kernel));
    std::map<std::string, Attribute> attrs;
    if (s_.scale) attrs["scale"] = Attribute(*s_.scale);
    if (causal_in_kernel) attrs["is_causal"] = Attribute(int64_t{1});
    std::vector<Value*> ins = {q, present_k, present_v};
    if (bias) ins.push_back(bias);
    Value* out;
    if (s_.rank == 4) {
      out = e_.EmitInternal("FusedAttention", ins, attrs, "fused", 2, true)[0];
    } else {
      Value* y = e_.EmitInternal("FusedAttention", ins, attrs, "fused", 2, false)[0];
      Value* y_t = Emit("Transpose", 13, {y}, "y_t", {{"perm", Ints({0, 2, 1, 3})}});
      out = e_.EmitOutput(0, "Reshape", 14, {y_t, e_.Int64s("merged_shape", {0, 0, -1}, {3})}, {},
                          "");
    }
    return Finish(out);
  }

  // Notes the outputs' ranks and returns the nodes.
  std::vector<DecomposedNode> Finish(Value* out) {
    NoteRank(req_, out, s_.rank);
    for (const DecomposedNode& d : e_.nodes()) {
      // present_key, present_value and qk_matmul_output are 4-D.
      Value* o = d.node->output(0);
      for (size_t i = 1; i < req_.outputs.size(); ++i) {
        if (WantsOutput(req_, i) && o->name() == req_.outputs[i].first) NoteRank(req_, o, 4);
      }
    }
    return e_.nodes();
  }

  // A float scalar in the type of `like`.
  Value* Like(float value, Value* like, const std::string& suffix) {
    Value* c = e_.Constant(suffix, TensorData::FromFloats({value}, {}));
    return Emit("CastLike", 15, {c, like}, suffix + "_t");
  }
  Value* Dims(Value* x, int64_t start, int64_t end, const std::string& suffix) {
    return Emit("Shape", 15, {x}, suffix, {{"start", start}, {"end", end}});
  }

  // [B, S, H * D] -> [B, H, S, D].
  Value* SplitHeads(Value* x, int64_t heads, const std::string& name) {
    Value* shape = e_.Int64s(name + "_heads_shape", {0, 0, heads, -1}, {4});
    Value* r = Emit("Reshape", 14, {x, shape}, name + "_split");
    return Emit("Transpose", 13, {r}, name + "_heads", {{"perm", Ints({0, 2, 1, 3})}});
  }

  // present_key / present_value: Concat(past, x) or x, written to output `out` when asked for.
  Value* Present(Value* past, Value* x, size_t out, const std::string& suffix) {
    if (past) {
      std::vector<Value*> parts = {past, x};
      if (WantsOutput(req_, out)) {
        return e_.EmitOutput(out, "Concat", 13, parts, {{"axis", Attribute(int64_t{2})}}, suffix);
      }
      return Emit("Concat", 13, parts, suffix, {{"axis", Attribute(int64_t{2})}});
    }
    if (WantsOutput(req_, out)) e_.EmitOutput(out, "Identity", 16, {x}, {}, suffix);
    return x;
  }

  // Group-query attention: each of the kv heads repeated q_heads / kv_heads times, in order
  // [h0, h0, h1, h1, ..]. Skipped when the head counts are known to be equal.
  StatusOr<Value*> RepeatKvHeads(Value* q, Value* kv, const std::string& name) {
    std::optional<int64_t> hq = s_.rank == 3 ? std::optional<int64_t>(s_.q_heads) : KnownHeads(q);
    std::optional<int64_t> hkv =
        s_.rank == 3 ? std::optional<int64_t>(s_.kv_heads) : KnownHeads(Input(req_, 1));
    if (hq && hkv && *hq == *hkv) return kv;
    if (hq && hkv && *hq % *hkv != 0) {
      return InvalidInput("{}: Q's {} heads are not a multiple of K's {}", req_.where, *hq, *hkv);
    }
    Value* one = e_.Int64s(name + "_one", {1}, {1});
    Value* reps = hq && hkv
                      ? e_.Int64s(name + "_group", {*hq / *hkv}, {1})
                      : Emit("Div", 14,
                             {Dims(q, 1, 2, name + "_q_heads"), Dims(kv, 1, 2, name + "_kv_heads")},
                             name + "_group");
    Value* expand_shape =
        Emit("Concat", 13, {one, one, reps, one, one}, name + "_expand_shape", {{"axis", 0}});
    Value* u =
        Emit("Unsqueeze", 13, {kv, e_.Int64s(name + "_group_axis", {2}, {1})}, name + "_grouped");
    Value* x = Emit("Expand", 13, {u, expand_shape}, name + "_repeated");
    Value* shape = Emit("Concat", 13,
                        {Dims(kv, 0, 1, name + "_batch"), e_.Int64s(name + "_minus1", {-1}, {1}),
                         Dims(kv, 2, 4, name + "_seq_head")},
                        name + "_q_heads_shape", {{"axis", 0}});
    return Emit("Reshape", 14, {x, shape}, name + "_q_heads");
  }

  // past + new kv length, when the declared types of K (and past_key) give it.
  std::optional<int64_t> KnownKvLength() const {
    const Value* k = Input(req_, 1);
    const size_t seq_axis = s_.rank == 4 ? 2 : 1;
    if (k->dims().size() != static_cast<size_t>(s_.rank) || k->dims()[seq_axis] < 0) {
      return std::nullopt;
    }
    int64_t len = k->dims()[seq_axis];
    if (const Value* past = Input(req_, 4)) {
      if (past->dims().size() != 4 || past->dims()[2] < 0) return std::nullopt;
      len += past->dims()[2];
    }
    return len;
  }

  // sqrt(scale) in Q's type, scale defaulting to 1 / sqrt(head_size).
  Value* SqrtScale(Value* q) {
    if (s_.scale) {
      return Like(static_cast<float>(std::sqrt(static_cast<double>(*s_.scale))), q, "sqrt_scale");
    }
    Value* d = Emit("Cast", 13, {Dims(q, 3, 4, "head_size")}, "head_size_f",
                    {{"to", Attribute(kOnnxFloat)}});
    Value* one = e_.Constant("one_f", TensorData::FromFloats({1.0f}, {}));
    Value* scale = Emit("Div", 14, {one, Emit("Sqrt", 13, {d}, "sqrt_head_size")}, "scale");
    Value* s = Emit("Sqrt", 13, {scale}, "sqrt_scale");
    return Emit("CastLike", 15, {s, q}, "sqrt_scale_t");
  }

  // The additive bias in Q's type, broadcastable to [B, H, Sq, Skv]; null when there is none.
  // `causal`: the causal mask is part of the bias.
  StatusOr<Value*> Bias(Value* q, Value* present_k, Value* past_key, Value* nonpad, bool causal) {
    Value* bias = nullptr;
    auto add = [&](Value* b, const std::string& suffix) {
      bias = bias ? Emit("Add", 14, {bias, b}, suffix) : b;
    };
    auto select = [&](Value* allowed, const std::string& suffix) {
      return Emit("Where", 16, {allowed, zero_, neg_inf_}, suffix);
    };
    Value* mask = Input(req_, 3);
    Value* total_kv = Dims(present_k, 2, 3, "total_kv_len");
    if (mask) {
      std::optional<DType> dt = KnownDType(req_, mask);
      if (!dt) {
        return Unsupported(
            "{}: the element type of input 'attn_mask' ('{}') is not declared (a bool mask and a "
            "float bias decompose differently)",
            req_.where, mask->name());
      }
      Value* m = *dt == DType::kBool ? select(mask, "mask_bias")
                                     : Emit("CastLike", 15, {mask, q}, "mask_bias");
      // A mask shorter than the total kv length is padded with -inf (disallowed); no Pad when
      // the lengths are known to be equal at import.
      const std::optional<int64_t> kv_len = KnownKvLength();
      const std::optional<int64_t> mask_len = mask->dims().empty() || mask->dims().back() <= 0
                                                  ? std::nullopt
                                                  : std::optional(mask->dims().back());
      if (kv_len && mask_len && *mask_len > *kv_len) {
        return InvalidInput("{}: attn_mask's last dim {} is longer than the total kv length {}",
                            req_.where, *mask_len, *kv_len);
      }
      if (kv_len && mask_len && *mask_len == *kv_len) {
        add(m, "bias_mask");
      } else {
        Value* pad =
            Emit("Sub", 14, {total_kv, Emit("Shape", 15, {mask}, "mask_len", {{"start", -1}})},
                 "mask_pad");
        Value* pads = Emit("Concat", 13, {e_.Int64s("mask_pad_begin", {0}, {1}), pad}, "mask_pads",
                           {{"axis", 0}});
        add(Emit("Pad", 18, {m, pads, neg_inf_, e_.Int64s("mask_pad_axes", {-1}, {1})},
                 "mask_padded"),
            "bias_mask");
      }
    }
    const bool window = s_.left_window >= 0 || s_.right_window >= 0;
    if (!causal && !window && !nonpad) return bias;
    // Query i (of Sq) at absolute position i + offset, key j (of the total kv length).
    Value* i =
        Emit("Reshape", 14, {Iota(e_, q, 2, "q_pos"), e_.Int64s("col", {-1, 1}, {2})}, "q_pos_col");
    Value* j = Iota(e_, present_k, 2, "kv_pos");
    Value* pos = i;
    if (past_key) {
      pos = Emit("Add", 14, {i, Dims(past_key, 2, 3, "past_len")}, "q_abs_pos");
    } else if (nonpad) {
      Value* off = Emit("Sub", 14, {nonpad, Dims(q, 2, 3, "q_len")}, "offset");
      Value* off4 =
          Emit("Reshape", 14, {off, e_.Int64s("offset_shape", {-1, 1, 1, 1}, {4})}, "offset_b");
      pos = Emit("Add", 14, {i, off4}, "q_abs_pos");
    }
    if (causal) {
      add(select(Emit("LessOrEqual", 16, {j, pos}, "causal_allowed"), "causal_bias"),
          "bias_causal");
    }
    if (s_.left_window >= 0) {
      Value* lo = Emit("Sub", 14, {pos, e_.Int64s("left_window", {s_.left_window}, {})}, "lo");
      add(select(Emit("GreaterOrEqual", 16, {j, lo}, "left_allowed"), "left_bias"), "bias_left");
    }
    if (s_.right_window >= 0) {
      Value* hi = Emit("Add", 14, {pos, e_.Int64s("right_window", {s_.right_window}, {})}, "hi");
      add(select(Emit("LessOrEqual", 16, {j, hi}, "right_allowed"), "right_bias"), "bias_right");
    }
    if (nonpad) {
      Value* lens = Emit("Unsqueeze", 13, {nonpad, e_.Int64s("lens_axes", {1}, {1})}, "lens");
      Value* valid = Emit("Less", 13, {j, lens}, "kv_valid");
      Value* valid4 =
          Emit("Unsqueeze", 13, {valid, e_.Int64s("valid_axes", {1, 2}, {2})}, "kv_valid_b");
      add(select(valid4, "padding_bias"), "bias_padding");
    }
    return bias;
  }

  Value* zero_ = nullptr;
  Value* neg_inf_ = nullptr;
};

StatusOr<std::vector<DecomposedNode>> DecomposeAttention(Graph& g, const DecomposeRequest& req) {
  const size_t max_inputs = req.version >= 24 ? 7 : 6;
  if (req.inputs.size() < 3 || req.inputs.size() > max_inputs || req.outputs.empty() ||
      req.outputs.size() > 4) {
    return InvalidInput("{}: Attention-{} takes 3 to {} inputs and 1 to 4 outputs, got {} and {}",
                        req.where, req.version, max_inputs, req.inputs.size(), req.outputs.size());
  }
  A8_RETURN_IF_ERROR(RequireLeadingInputs(req, {"Q", "K", "V"}));
  if ((Input(req, 4) == nullptr) != (Input(req, 5) == nullptr)) {
    return InvalidInput("{}: inputs 'past_key' and 'past_value' must be given together", req.where);
  }
  if (Input(req, 6) && Input(req, 4)) {
    return InvalidInput("{}: input 'nonpad_kv_seqlen' cannot be combined with 'past_key'",
                        req.where);
  }
  A8_ASSIGN_OR_RETURN(AttentionAttrs a, ReadAttentionAttrs(req));
  return AttentionBuilder(g, req, a).Build();
}

}  // namespace

void decompose_internal::AddAttentionDecompositions(decompose_internal::DecomposeTable* t) {
  t->insert({{"Attention", DecomposeAttention},
             {"RotaryEmbedding", decompose_internal::DecomposeRotaryEmbedding}});
}

}  // namespace a8
