// The checks of a plan's training fields (see plan_file.h: ValidateTrainingFields).
#include <fmt/format.h>

#include <set>

#include "compiler/plan/plan_file.h"

namespace a8 {

// Updates and the Training message: ids in range, update targets persistent params or state of
// the source's type, the step and control buffers of the documented types, eval kernels
// ascending, and the named loss/logits/labels bound.
Status ValidateTrainingFields(const plan::Plan& p, const std::string& src) {
  const int nb = p.buffers_size();
  std::set<int> targets;
  for (int i = 0; i < p.updates_size(); ++i) {
    const plan::Update& u = p.updates(i);
    if (u.target() < 0 || u.target() >= nb || u.source() < 0 || u.source() >= nb) {
      return InvalidInput("{}: updates[{}]: buffer ids {} <- {} out of range [0, {})", src, i,
                          u.target(), u.source(), nb);
    }
    const plan::Buffer& t = p.buffers(u.target());
    const plan::Buffer& v = p.buffers(u.source());
    if (t.region() != plan::Buffer::PERSISTENT ||
        (t.role() != plan::Buffer::PARAMETER && t.role() != plan::Buffer::STATE)) {
      return InvalidInput("{}: updates[{}]: target {} is not a parameter or state buffer", src, i,
                          PlanBufferWhere(t, u.target()));
    }
    if (v.type().SerializeAsString() != t.type().SerializeAsString() || v.bytes() != t.bytes()) {
      return InvalidInput("{}: updates[{}]: source {} does not have the type of target {}", src, i,
                          PlanBufferWhere(v, u.source()), PlanBufferWhere(t, u.target()));
    }
    if (v.region() == plan::Buffer::PERSISTENT && v.role() != plan::Buffer::PARAMETER &&
        v.role() != plan::Buffer::STATE && v.role() != plan::Buffer::CONSTANT &&
        v.alias_of() != u.target()) {
      return InvalidInput("{}: updates[{}]: source {} is written in place over another buffer", src,
                          i, PlanBufferWhere(v, u.source()));
    }
    if (v.region() == plan::Buffer::ARENA && v.last() != p.kernels_size()) {
      return InvalidInput("{}: updates[{}]: source {} is not live to the end of the step", src, i,
                          PlanBufferWhere(v, u.source()));
    }
    if (!targets.insert(u.target()).second) {
      return InvalidInput("{}: updates[{}]: target {} is updated twice", src, i,
                          PlanBufferWhere(t, u.target()));
    }
  }
  for (int id = 0; id < nb; ++id) {
    const plan::Buffer& b = p.buffers(id);
    if (b.region() != plan::Buffer::PERSISTENT || b.alias_of() < 0) continue;
    bool is_source = false;
    for (const plan::Update& u : p.updates()) is_source |= u.source() == id;
    if (!is_source) {
      return InvalidInput("{}: {}: written in place over buffer {} but not an update source", src,
                          PlanBufferWhere(b, id), b.alias_of());
    }
  }
  if (!p.training()) {
    if (p.has_train()) return InvalidInput("{}: train: set in an inference plan", src);
    return Status::Ok();
  }
  const plan::Training& t = p.train();
  auto check_state = [&](const char* field, int id, plan::DType dtype, int64_t elems) -> Status {
    if (id == -1) return Status::Ok();
    if (id < 0 || id >= nb) {
      return InvalidInput("{}: train.{}: buffer id {} out of range [0, {})", src, field, id, nb);
    }
    const plan::Buffer& b = p.buffers(id);
    int64_t n = 1;
    for (int64_t d : b.type().dims()) n *= d;
    if (b.role() != plan::Buffer::STATE || b.type().dtype() != dtype || n != elems) {
      return InvalidInput("{}: train.{}: {} is not the expected state buffer", src, field,
                          PlanBufferWhere(b, id));
    }
    return Status::Ok();
  };
  A8_RETURN_IF_ERROR(check_state("step_buffer", t.step_buffer(), plan::I64, 1));
  A8_RETURN_IF_ERROR(check_state("control_buffer", t.control_buffer(), plan::F32, 5));
  const std::string& scaler = p.scaler().mode();
  if (scaler == "static" || scaler == "dynamic") {
    const int id = t.scale_buffer();
    if (id < 0 || id >= nb) {
      return InvalidInput(
          "{}: train.scale_buffer: buffer id {} out of range [0, {}) with a {} "
          "loss scaler",
          src, id, nb, scaler);
    }
    const plan::Buffer& b = p.buffers(id);
    const auto role = scaler == "dynamic" ? plan::Buffer::STATE : plan::Buffer::CONSTANT;
    if (b.role() != role || b.type().dtype() != plan::F32 || b.type().dims_size() != 0) {
      return InvalidInput("{}: train.scale_buffer: {} is not an f32 scalar {} buffer", src,
                          PlanBufferWhere(b, id), scaler == "dynamic" ? "state" : "constant");
    }
  }
  int prev = -1;
  for (int k : t.eval_kernels()) {
    if (k <= prev || k >= p.kernels_size()) {
      return InvalidInput("{}: train.eval_kernels: {} is out of order or not a kernel index", src,
                          k);
    }
    prev = k;
  }
  if (t.accumulate() < 1) {
    return InvalidInput("{}: train.accumulate: {} must be >= 1", src, t.accumulate());
  }
  auto bound = [&](const google::protobuf::RepeatedPtrField<plan::Binding>& bs,
                   const std::string& name) {
    for (const plan::Binding& b : bs) {
      if (b.name() == name) return true;
    }
    return false;
  };
  if (!bound(p.outputs(), t.loss())) {
    return InvalidInput("{}: train.loss: '{}' is not a plan output", src, t.loss());
  }
  if (!t.logits().empty() && !bound(p.outputs(), t.logits())) {
    return InvalidInput("{}: train.logits: '{}' is not a plan output", src, t.logits());
  }
  if (!t.labels().empty() && !bound(p.inputs(), t.labels())) {
    return InvalidInput("{}: train.labels: '{}' is not a plan input", src, t.labels());
  }
  return Status::Ok();
}

}  // namespace a8
