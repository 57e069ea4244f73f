// CUDA events for traced steps (kernels/device/events.h).
#include <cuda_runtime.h>

#include "kernels/device/events.h"

namespace a8::A8_DEV_NS {
namespace {

DevStatus Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return DevOk();
  return DevError(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

DevStatus EventCreate(void** event) {
  cudaEvent_t e;
  A8_DEV_RETURN_IF_ERROR(Check(cudaEventCreate(&e), "cudaEventCreate"));
  *event = e;
  return DevOk();
}
void EventDestroy(void* event) {
  if (event != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event));
}
DevStatus EventRecord(void* event, void* stream) {
  return Check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
               "cudaEventRecord");
}
DevStatus EventSync(void* event) {
  return Check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
}
DevStatus EventElapsedMs(void* from, void* to, float* ms) {
  return Check(
      cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to)),
      "cudaEventElapsedTime");
}

}  // namespace a8::A8_DEV_NS
