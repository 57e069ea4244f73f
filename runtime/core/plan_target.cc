// Plan target check (see plan_target.h).
#include "runtime/core/plan_target.h"

namespace a8 {

Status CheckPlanTarget(std::string_view target, std::string_view backend) {
  if (target.empty() || target == "any") return Status::Ok();
  const bool cuda_backend = backend == "cuda" || backend == "cuda-emu";
  const bool gpu_target = target == "sm_80" || target == "sm_90";
  if (target == "cpu" && backend == "cpu") return Status::Ok();
  if (gpu_target && cuda_backend) return Status::Ok();
  if (target != "cpu" && !gpu_target) {
    return InvalidInput("the plan's target '{}' is not one of any, cpu, sm_80, sm_90", target);
  }
  return InvalidInput(
      "the plan was compiled for --target={} and cannot run on the {} backend; run it with "
      "--backend={}, or recompile with --target={} (or without --target: a plan every backend "
      "runs)",
      target, backend, gpu_target ? "cuda" : "cpu", cuda_backend ? "sm_80|sm_90" : "cpu");
}

}  // namespace a8
