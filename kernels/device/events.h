// Timing events on the backend's stream, for traced steps (a800c-run --trace): CUDA events on
// the GPU (kernels/cuda/events.cu), the host clock at record time in the emulation, which runs
// every launch at once (kernels/emu/events.cc).
#pragma once

#include "kernels/device/device.h"

namespace a8::A8_DEV_NS {

DevStatus EventCreate(void** event);
void EventDestroy(void* event);
// Records `event` on `stream`: it completes when the work queued before it has.
DevStatus EventRecord(void* event, void* stream);
// Waits for `event`.
DevStatus EventSync(void* event);
// Milliseconds between two completed events.
DevStatus EventElapsedMs(void* from, void* to, float* ms);

}  // namespace a8::A8_DEV_NS
