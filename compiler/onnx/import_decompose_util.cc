// The helpers that the decomposition files share (import_decompose_internal.h): attribute
// readers, the rank and constant checks, and the iota along a dim.
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/onnx/import_decompose_internal.h"

namespace a8::decompose_internal {

Status CheckAttrs(const DecomposeRequest& req, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : req.attrs) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || key == k;
    if (!ok) return InvalidInput("{}: unknown attribute '{}'", req.where, key);
  }
  return Status::Ok();
}

namespace {

// Attribute `name` of the request: null when absent, an error when it is not of `kind` (`what`:
// "an int", as the message says it).
StatusOr<const Attribute*> AttrOfKind(const DecomposeRequest& req, const std::string& name,
                                      AttrKind kind, std::string_view what) {
  auto it = req.attrs.find(name);
  if (it == req.attrs.end()) return static_cast<const Attribute*>(nullptr);
  if (it->second.kind() != kind) {
    return InvalidInput("{}: attribute '{}' must be {}, got {}", req.where, name, what,
                        AttrKindName(it->second.kind()));
  }
  return &it->second;
}

}  // namespace

StatusOr<int64_t> IntAttr(const DecomposeRequest& req, const std::string& name,
                          std::optional<int64_t> def) {
  A8_ASSIGN_OR_RETURN(const Attribute* a, AttrOfKind(req, name, AttrKind::kInt, "an int"));
  if (a != nullptr) return a->i();
  if (def) return *def;
  return InvalidInput("{}: attribute '{}' is required", req.where, name);
}

StatusOr<float> FloatAttr(const DecomposeRequest& req, const std::string& name, float def) {
  A8_ASSIGN_OR_RETURN(const Attribute* a, AttrOfKind(req, name, AttrKind::kFloat, "a float"));
  return a != nullptr ? a->f() : def;
}

StatusOr<std::optional<float>> AttentionScaleAttr(const DecomposeRequest& req) {
  if (!req.attrs.count("scale")) return std::optional<float>();
  A8_ASSIGN_OR_RETURN(float scale, FloatAttr(req, "scale", 0));
  if (!(scale >= 0)) {
    return InvalidInput(
        "{}: attribute 'scale' {} is negative or NaN (Q and K are scaled by its square root)",
        req.where, scale);
  }
  return std::optional<float>(scale);
}

StatusOr<std::string> StringAttr(const DecomposeRequest& req, const std::string& name,
                                 const std::string& def) {
  A8_ASSIGN_OR_RETURN(const Attribute* a, AttrOfKind(req, name, AttrKind::kString, "a string"));
  return a != nullptr ? a->s() : def;
}

Status RequireLeadingInputs(const DecomposeRequest& req,
                            std::initializer_list<std::string_view> names) {
  size_t i = 0;
  for (std::string_view name : names) {
    if (req.inputs[i++] == nullptr) {
      return InvalidInput("{}: input '{}' is required", req.where, name);
    }
  }
  return Status::Ok();
}

// The rank of input 0, which the decomposition needs for `why`.
StatusOr<int64_t> RankOf(const DecomposeRequest& req, std::string_view why) {
  std::optional<int64_t> rank = req.known_rank ? req.known_rank(req.inputs[0]) : std::nullopt;
  if (!rank) {
    return Unsupported("{}: {} needs the rank of input '{}', which the model does not declare",
                       req.where, why, req.inputs[0]->name());
  }
  return *rank;
}

StatusOr<int64_t> NormalizedAxis(const DecomposeRequest& req, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return InvalidInput("{}: axis {} is out of range for rank {}", req.where, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

Value* Iota(Emitter& e, Value* x, int64_t start, const std::string& suffix) {
  Value* dim =
      e.Emit("Shape", 15, {x}, {{"start", start}, {"end", start + 1}}, suffix + "_dim", false);
  Value* ones = e.Emit("ConstantOfShape", 9, {dim},
                       {{"value", Attribute(TensorDataPtr(TensorData::FromInt64s({1}, {1})))}},
                       suffix + "_ones", false);
  Value* zero = e.Int64s(suffix + "_axis", {0}, {});
  return e.Emit("CumSum", 14, {ones, zero}, {{"exclusive", 1}}, suffix, false);
}

// Input `i` must be constant data: a graph input gets the --bind hint that run_node_tests.py
// and users follow.
Status RequireConstant(const DecomposeRequest& req, int i, std::string_view field) {
  const Value* v = req.inputs[i];
  if (v->data() != nullptr) return Status::Ok();
  const std::string hint =
      v->role() == ValueRole::kInput
          ? fmt::format("; freeze graph input '{}' with --bind={}=FILE.npy", v->name(), v->name())
          : std::string();
  return Unsupported("{}: input '{}' must be a constant (a800c needs static shapes){}", req.where,
                     field, hint);
}

}  // namespace a8::decompose_internal
