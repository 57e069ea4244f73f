// A plan's loss scaler, read from where the plan stores each setting once (plan.proto
// LossScaler): the mode in Plan.scaler, the scale in the initial value of Training.scale_buffer,
// the dynamic scaler's factors, interval and range in the a8.UpdateScale kernel's attributes
// (an attribute the kernel leaves out has the kernel's default, optim_math.h UpdateScaleParams).
// a800c-run's trainer and a800c-inspect read it.
#pragma once

#include <string>

#include "compiler/ir/status.h"
#include "compiler/plan/plan_file.h"
#include "kernels/common/optim_math.h"

namespace a8 {

struct PlanScaler {
  std::string mode = "none";      // "none", "static", "dynamic"
  float init_scale = 1.0f;        // static: the scale; dynamic: the first scale
  cpu::UpdateScaleParams update;  // dynamic: the a8.UpdateScale kernel's settings
};

// Errors (InvalidInput naming the field): a scaled plan whose scale buffer is not an f32 scalar
// with an initial value in the blob, or a dynamic plan with no a8.UpdateScale kernel, or more
// than one.
StatusOr<PlanScaler> PlanScalerOf(const PlanFile& pf);

}  // namespace a8
