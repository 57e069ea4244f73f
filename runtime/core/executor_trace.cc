// Executor::RunTraced: one step of a800c-run --trace (runtime/core/trace.h). Kept apart from
// executor.cc so that an untraced step's code path is the one it always was.
#include <cmath>

#include "kernels/common/optim_math.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/executor.h"
#include "runtime/core/trace.h"

namespace a8 {

Status Executor::RunTraced(const StepInfo& info) {
  const plan::Plan& p = file_.plan;
  Tracer& tracer = *options_.tracer;
  const std::string& mode = p.scaler().mode();
  const bool scaled = p.training() && (mode == "static" || mode == "dynamic");
  const double scale = scaled ? LossScale() : 1.0;
  const double start = SteadyNowUs();
  for (int k = 0; k < p.kernels_size(); ++k) {
    A8_RETURN_IF_ERROR(RunKernel(k, info, timer_.get()));
    if (info.comm != nullptr) info.comm->Progress();
  }
  A8_RETURN_IF_ERROR(backend_->RunSequence(kNoCapture, {}, update_copies_, info));
  A8_ASSIGN_OR_RETURN(std::vector<KernelSpan> spans, timer_->Collect());
  const double end = SteadyNowUs();
  tracer.AddStep(info.step, start, end, spans);
  if (!scaled) return Status::Ok();
  tracer.AddCounter("loss scale", start, scale);
  const int control = p.train().control_buffer();
  const int64_t accumulate = std::max<int64_t>(p.train().accumulate(), 1);
  if (control >= 0 && (info.step + 1) % accumulate == 0) {
    float ctl[cpu::kCtlSize] = {};
    A8_RETURN_IF_ERROR(ReadBuffer(control, ctl));
    tracer.CountSkippedUpdate(start, ctl[cpu::kCtlApplied] == 0.0f);
  }
  return Status::Ok();
}

}  // namespace a8
