// Memory, streams and CUDA graphs of the CUDA backend (device.h).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {
namespace {

DevStatus Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return DevOk();
  return DevError(std::string(what) + ": " + cudaGetErrorString(e));
}

std::atomic<size_t> g_in_use{0}, g_peak{0};

}  // namespace

std::string DeviceDescription() {
  int dev = 0;
  cudaDeviceProp prop;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
    return "no CUDA device";
  char gib[32];
  std::snprintf(gib, sizeof(gib), "%.0f", static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + gib + " GiB)";
}

bool MemoryIsHost() { return false; }

DevStatus DeviceAvailable() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return DevError(std::string("no usable CUDA device (cudaGetDeviceCount: ") +
                    cudaGetErrorString(e) + ")");
  if (count == 0) return DevError("no CUDA device is present");
  int dev = 0;
  cudaDeviceProp prop;
  A8_DEV_RETURN_IF_ERROR(Check(cudaGetDevice(&dev), "cudaGetDevice"));
  A8_DEV_RETURN_IF_ERROR(Check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties"));
  if (prop.major < 8)
    return DevError(std::string("GPU ") + prop.name + " is sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) +
                    "; a800c's CUDA kernels are built for sm_80 and "
                    "sm_90 (A100/A800/H100 class)");
  return DevOk();
}

DevStatus Malloc(void** p, size_t bytes) {
  A8_DEV_RETURN_IF_ERROR(Check(cudaMalloc(p, bytes == 0 ? 256 : bytes), "cudaMalloc"));
  size_t now = g_in_use += bytes, peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return DevOk();
}
void Free(void* p) { cudaFree(p); }
DevStatus MallocHost(void** p, size_t bytes) {
  return Check(cudaMallocHost(p, bytes == 0 ? 1 : bytes), "cudaMallocHost");
}
void FreeHost(void* p) { cudaFreeHost(p); }

DevStatus CopyToDevice(void* dst, const void* src, size_t bytes, void* s) {
  if (bytes == 0) return DevOk();
  return Check(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s)),
      "cudaMemcpyAsync (to the device)");
}
DevStatus CopyToHost(void* dst, const void* src, size_t bytes, void* s) {
  if (bytes == 0) return DevOk();
  return Check(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s)),
      "cudaMemcpyAsync (to the host)");
}
DevStatus CopyOnDevice(void* dst, const void* src, size_t bytes, void* s) {
  if (bytes == 0 || dst == src) return DevOk();
  return Check(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(s)),
      "cudaMemcpyAsync (on the device)");
}
DevStatus Fill(void* dst, uint8_t byte, size_t bytes, void* s) {
  if (bytes == 0) return DevOk();
  return Check(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(s)), "cudaMemsetAsync");
}
DevStatus StreamCreate(void** stream) {
  cudaStream_t s;
  A8_DEV_RETURN_IF_ERROR(
      Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
  *stream = s;
  return DevOk();
}
void StreamDestroy(void* s) {
  if (s != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(s));
}
DevStatus StreamSync(void* s) {
  return Check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
}

DevStatus GraphBegin(void* s) {
  return Check(
      cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal),
      "cudaStreamBeginCapture");
}
DevStatus GraphEnd(void* s, void** exec) {
  cudaGraph_t graph = nullptr;
  A8_DEV_RETURN_IF_ERROR(
      Check(cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph), "cudaStreamEndCapture"));
  cudaGraphExec_t ge = nullptr;
  cudaError_t e = cudaGraphInstantiate(&ge, graph, 0);
  cudaGraphDestroy(graph);
  A8_DEV_RETURN_IF_ERROR(Check(e, "cudaGraphInstantiate"));
  *exec = ge;
  return DevOk();
}
DevStatus GraphLaunch(void* exec, void* s) {
  return Check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), static_cast<cudaStream_t>(s)),
               "cudaGraphLaunch");
}
void GraphDestroy(void* exec) {
  if (exec != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}
size_t PeakMemory() { return g_peak.load(); }

}  // namespace a8::A8_DEV_NS
