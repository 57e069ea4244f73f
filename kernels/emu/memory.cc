// Memory and streams of the host emulation (device.h): plain host memory, copies done at once,
// no streams or graphs (a "graph" replays nothing: the emulated backend runs eagerly).
#include <cstdlib>
#include <cstring>

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

std::string DeviceDescription() { return "host emulation of the CUDA kernels"; }
DevStatus DeviceAvailable() { return DevOk(); }
bool MemoryIsHost() { return true; }

DevStatus Malloc(void** p, size_t bytes) {
  // 256-byte alignment, as cudaMalloc gives at least.
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *p != nullptr ? DevOk() : DevError("out of host memory");
}
void Free(void* p) { std::free(p); }
DevStatus MallocHost(void** p, size_t bytes) { return Malloc(p, bytes); }
void FreeHost(void* p) { std::free(p); }

DevStatus CopyToDevice(void* dst, const void* src, size_t bytes, void*) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return DevOk();
}
DevStatus CopyToHost(void* dst, const void* src, size_t bytes, void*) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return DevOk();
}
DevStatus CopyOnDevice(void* dst, const void* src, size_t bytes, void*) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return DevOk();
}
DevStatus Fill(void* dst, uint8_t byte, size_t bytes, void*) {
  if (bytes > 0) std::memset(dst, byte, bytes);
  return DevOk();
}
DevStatus StreamCreate(void** stream) {
  *stream = nullptr;
  return DevOk();
}
void StreamDestroy(void*) {}
DevStatus StreamSync(void*) { return DevOk(); }
DevStatus GraphBegin(void*) { return DevError("the host emulation has no CUDA graphs"); }
DevStatus GraphEnd(void*, void**) { return DevError("the host emulation has no CUDA graphs"); }
DevStatus GraphLaunch(void*, void*) { return DevError("the host emulation has no CUDA graphs"); }
void GraphDestroy(void*) {}
size_t PeakMemory() { return 0; }

}  // namespace a8::A8_DEV_NS
