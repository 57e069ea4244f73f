// RotaryEmbedding-23 imported as nodes of ops a800c has (see import_decompose.h), following the
// ONNX specification and its reference implementation (onnx/reference/ops/op_rotary_embedding.py);
// registered with Attention's decomposition (import_decompose_attention.cc):
//
//   RotaryEmbedding (X, cos_cache, sin_cache, position_ids?; interleaved, rotary_embedding_dim,
//                    num_heads)
//       -> X as [B, S, H, D] (Transpose of 4-D [B, H, S, D], Reshape of 3-D [B, S, H * D]);
//          cos, sin = Gather(cache, position_ids) (or the caches as given, [B, S, rd / 2]),
//          unsqueezed at the head axis; the first rd of D rotate: halves x1, x2 (Slice; every
//          other element when interleaved), real = cos x1 - sin x2, imag = sin x1 + cos x2,
//          concatenated back (interleaved: stacked on a new last axis and reshaped), followed by
//          the D - rd dims that do not rotate, then the layout of X.
//       Differentiable with respect to X, cos_cache and sin_cache.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/onnx/import_decompose.h"
#include "compiler/onnx/import_decompose_internal.h"

namespace a8 {
namespace {

using namespace decompose_internal;  // Emitter, Input, the attribute readers

constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

}  // namespace

StatusOr<std::vector<DecomposedNode>> decompose_internal::DecomposeRotaryEmbedding(
    Graph& g, const DecomposeRequest& req) {
  if (req.inputs.size() < 3 || req.inputs.size() > 4 || req.outputs.size() != 1) {
    return InvalidInput("{}: RotaryEmbedding takes 3 or 4 inputs and 1 output, got {} and {}",
                        req.where, req.inputs.size(), req.outputs.size());
  }
  A8_RETURN_IF_ERROR(RequireLeadingInputs(req, {"X", "cos_cache", "sin_cache"}));
  A8_RETURN_IF_ERROR(CheckAttrs(req, {"interleaved", "rotary_embedding_dim", "num_heads"}));
  A8_ASSIGN_OR_RETURN(int64_t interleaved, IntAttr(req, "interleaved", 0));
  A8_ASSIGN_OR_RETURN(int64_t rd, IntAttr(req, "rotary_embedding_dim", 0));
  A8_ASSIGN_OR_RETURN(int64_t heads, IntAttr(req, "num_heads", 0));
  A8_ASSIGN_OR_RETURN(int64_t rank, RankOf(req, "RotaryEmbedding"));
  if (rank != 3 && rank != 4) {
    return InvalidInput(
        "{}: X must be 3-D [batch, seq, hidden] or 4-D [batch, heads, seq, head], got rank {}",
        req.where, rank);
  }
  if (rank == 3 && heads <= 0) {
    return InvalidInput("{}: a 3-D X needs a positive attribute 'num_heads', got {}", req.where,
                        heads);
  }
  if (rd < 0 || rd % 2 != 0) {
    return InvalidInput(
        "{}: attribute 'rotary_embedding_dim' must be even and non-negative, got {}", req.where,
        rd);
  }
  if (interleaved != 0 && interleaved != 1) {
    return InvalidInput("{}: attribute 'interleaved' must be 0 or 1, got {}", req.where,
                        interleaved);
  }
  Emitter e(g, req);
  auto emit = [&](const std::string& op, int version, std::vector<Value*> inputs,
                  const std::string& suffix, std::map<std::string, Attribute> attrs = {}) {
    return e.Emit(op, version, std::move(inputs), std::move(attrs), suffix, false);
  };
  auto ints = [&](const std::string& suffix, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return e.Int64s(suffix, v, {n});
  };
  auto slice = [&](Value* x, Value* start, Value* end, const std::string& suffix,
                   int64_t step = 1) {
    return emit("Slice", 13,
                {x, start, end, ints(suffix + "_axes", {3}), ints(suffix + "_steps", {step})},
                suffix);
  };
  const std::map<std::string, Attribute> swap_seq_heads = {
      {"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}};
  Value* x = req.inputs[0];
  // [B, S, H, D]
  Value* x4 = rank == 4
                  ? emit("Transpose", 13, {x}, "x_bshd", swap_seq_heads)
                  : emit("Reshape", 14, {x, ints("heads_shape", {0, 0, heads, -1})}, "x_bshd");
  Value* cos = req.inputs[1];
  Value* sin = req.inputs[2];
  if (Value* pos = Input(req, 3)) {
    cos = emit("Gather", 13, {cos, pos}, "cos_at", {{"axis", Attribute(int64_t{0})}});
    sin = emit("Gather", 13, {sin, pos}, "sin_at", {{"axis", Attribute(int64_t{0})}});
  }
  cos = emit("Unsqueeze", 13, {cos, ints("cos_axes", {2})}, "cos_b");
  sin = emit("Unsqueeze", 13, {sin, ints("sin_axes", {2})}, "sin_b");
  Value* x_rot = x4;
  Value* x_pass = nullptr;
  if (rd > 0) {
    x_rot = slice(x4, ints("rot_start", {0}), ints("rot_end", {rd}), "x_rot");
    x_pass = slice(x4, ints("pass_start", {rd}), ints("pass_end", {kMaxIndex}), "x_pass");
  }
  Value* x1;
  Value* x2;
  if (interleaved) {
    x1 = slice(x_rot, ints("even_start", {0}), ints("even_end", {kMaxIndex}), "x1", 2);
    x2 = slice(x_rot, ints("odd_start", {1}), ints("odd_end", {kMaxIndex}), "x2", 2);
  } else {
    Value* half = rd > 0
                      ? ints("half", {rd / 2})
                      : emit("Div", 14,
                             {emit("Shape", 15, {x_rot}, "head_size", {{"start", 3}, {"end", 4}}),
                              ints("two", {2})},
                             "half");
    x1 = slice(x_rot, ints("x1_start", {0}), half, "x1");
    x2 = slice(x_rot, half, ints("x2_end", {kMaxIndex}), "x2");
  }
  Value* real =
      emit("Sub", 14, {emit("Mul", 14, {cos, x1}, "cos_x1"), emit("Mul", 14, {sin, x2}, "sin_x2")},
           "real");
  Value* imag =
      emit("Add", 14, {emit("Mul", 14, {sin, x1}, "sin_x1"), emit("Mul", 14, {cos, x2}, "cos_x2")},
           "imag");
  Value* rotated;
  if (interleaved) {
    Value* pairs = emit("Concat", 13,
                        {emit("Unsqueeze", 13, {real, ints("real_axes", {4})}, "real_pair"),
                         emit("Unsqueeze", 13, {imag, ints("imag_axes", {4})}, "imag_pair")},
                        "pairs", {{"axis", Attribute(int64_t{4})}});
    rotated = emit("Reshape", 14, {pairs, emit("Shape", 15, {x_rot}, "rot_shape")}, "rotated");
  } else {
    rotated = emit("Concat", 13, {real, imag}, "rotated", {{"axis", Attribute(int64_t{3})}});
  }
  Value* out =
      x_pass ? emit("Concat", 13, {rotated, x_pass}, "y_bshd", {{"axis", Attribute(int64_t{3})}})
             : rotated;
  Value* y = rank == 4
                 ? e.Emit("Transpose", 13, {out}, swap_seq_heads, "", true)
                 : e.Emit("Reshape", 14, {out, emit("Shape", 15, {x}, "x_shape")}, {}, "", true);
  if (req.note_rank) req.note_rank(y, rank);
  return e.nodes();
}

}  // namespace a8
