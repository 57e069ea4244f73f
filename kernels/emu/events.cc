// The host emulation's timing events (kernels/device/events.h): the steady clock when recorded
// (every emulated launch has finished when its call returns).
#include "kernels/device/events.h"

#include <chrono>

namespace a8::A8_DEV_NS {
namespace {
using Clock = std::chrono::steady_clock;
}

DevStatus EventCreate(void** event) {
  *event = new Clock::time_point();
  return DevOk();
}
void EventDestroy(void* event) { delete static_cast<Clock::time_point*>(event); }
DevStatus EventRecord(void* event, void*) {
  *static_cast<Clock::time_point*>(event) = Clock::now();
  return DevOk();
}
DevStatus EventSync(void*) { return DevOk(); }
DevStatus EventElapsedMs(void* from, void* to, float* ms) {
  *ms = std::chrono::duration<float, std::milli>(*static_cast<Clock::time_point*>(to) -
                                                 *static_cast<Clock::time_point*>(from))
            .count();
  return DevOk();
}

}  // namespace a8::A8_DEV_NS
