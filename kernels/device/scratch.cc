// Scratch memory of the device kernels (device.h): one definition for the CUDA backend and its
// host emulation, over their Malloc/Free.
#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

DevStatus Scratch(DevCtx& ctx, size_t bytes, void** out) {
  if (bytes > ctx.scratch_bytes) {
    if (ctx.capturing)
      return DevError(
          "a kernel needs more scratch memory during CUDA graph capture than the "
          "eager first step sized");
    // The old scratch may still be read by queued kernels or by a graph captured earlier (an
    // earlier sequence): keep it until teardown.
    if (ctx.scratch != nullptr) ctx.retired_scratch.push_back(ctx.scratch);
    ctx.scratch = nullptr;
    ctx.scratch_bytes = 0;
    void* p = nullptr;
    A8_DEV_RETURN_IF_ERROR(Malloc(&p, bytes));
    ctx.scratch = static_cast<uint8_t*>(p);
    ctx.scratch_bytes = bytes;
  }
  *out = ctx.scratch;
  return DevOk();
}

void ReleaseScratch(DevCtx& ctx) {
  for (void* p : ctx.retired_scratch) Free(p);
  ctx.retired_scratch.clear();
  if (ctx.scratch != nullptr) Free(ctx.scratch);
  ctx.scratch = nullptr;
  ctx.scratch_bytes = 0;
}

}  // namespace a8::A8_DEV_NS
