// A plan's loss scaler (see plan_scaler.h).
#include "compiler/plan/plan_scaler.h"

#include <cstring>

namespace a8 {

StatusOr<PlanScaler> PlanScalerOf(const PlanFile& pf) {
  const plan::Plan& p = pf.plan;
  PlanScaler s;
  if (!p.training() || (p.scaler().mode() != "static" && p.scaler().mode() != "dynamic")) {
    return s;
  }
  s.mode = p.scaler().mode();
  const int id = p.train().scale_buffer();
  if (id < 0 || id >= p.buffers_size()) {
    return InvalidInput("train.scale_buffer: buffer id {} out of range [0, {})", id,
                        p.buffers_size());
  }
  const plan::Buffer& b = p.buffers(id);
  const uint8_t* init = b.has_init() && b.bytes() == sizeof(float)
                            ? pf.BlobBytes(b.blob_offset(), sizeof(float))
                            : nullptr;
  if (b.type().dtype() != plan::F32 || init == nullptr) {
    return InvalidInput("train.scale_buffer: {} is not an f32 scalar with an initial value",
                        PlanBufferWhere(b, id));
  }
  std::memcpy(&s.init_scale, init, sizeof(float));
  if (s.mode != "dynamic") return s;
  const plan::Kernel* update = nullptr;
  for (const plan::Kernel& k : p.kernels()) {
    if (k.op() != "a8.UpdateScale") continue;
    if (update != nullptr) {
      return InvalidInput("scaler: the plan has more than one a8.UpdateScale kernel");
    }
    update = &k;
  }
  if (update == nullptr) {
    return InvalidInput("scaler: mode dynamic, but the plan has no a8.UpdateScale kernel");
  }
  for (const plan::Attribute& a : update->attrs()) {
    const std::string& n = a.name();
    if (n == "growth_factor") s.update.growth_factor = a.f();
    if (n == "backoff_factor") s.update.backoff_factor = a.f();
    if (n == "growth_interval") s.update.growth_interval = a.i();
    if (n == "min_scale") s.update.min_scale = a.f();
    if (n == "max_scale") s.update.max_scale = a.f();
    if (n == "accumulate") s.update.accumulate = a.i();
  }
  return s;
}

}  // namespace a8
