// DeviceBackend::NewKernelTimer: kernel spans of a traced step from events recorded on the
// backend's stream (CUDA events on the GPU; runtime/core/backend.h KernelTimer).
#include <chrono>
#include <utility>

#include "kernels/device/events.h"
#include "runtime/device/device_backend.h"

namespace a8::A8_DEV_NS {
namespace {

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One base event per step (recorded with the host clock beside it) and two events per kernel;
// a span's start is the host time of the base plus the elapsed time from the base to its start
// event. The events are kept for the next step.
class DeviceKernelTimer : public KernelTimer {
 public:
  explicit DeviceKernelTimer(void* stream) : stream_(stream) {}
  ~DeviceKernelTimer() override {
    for (void* e : events_) EventDestroy(e);
  }

  void Start(int kernel) override {
    if (!error_.ok()) return;
    if (used_ == 0) {
      base_us_ = NowUs();
      Record();
    }
    kernels_.push_back(kernel);
    Record();
  }
  void Stop(int) override {
    if (error_.ok()) Record();
  }

  StatusOr<std::vector<KernelSpan>> Collect() override {
    std::vector<KernelSpan> spans;
    const size_t used = used_;
    std::vector<int> kernels = std::move(kernels_);
    kernels_.clear();
    used_ = 0;
    if (!error_.ok()) return Internal("--trace: CUDA events: {}", std::exchange(error_, {}).what);
    if (used == 0) return spans;
    if (DevStatus s = EventSync(events_[used - 1]); !s.ok())
      return Internal("--trace: CUDA events: {}", s.what);
    for (size_t i = 0; i < kernels.size() && 2 + 2 * i < used; ++i) {
      float from_base = 0, dur = 0;
      DevStatus s = EventElapsedMs(events_[0], events_[1 + 2 * i], &from_base);
      if (s.ok()) s = EventElapsedMs(events_[1 + 2 * i], events_[2 + 2 * i], &dur);
      if (!s.ok()) return Internal("--trace: CUDA events: {}", s.what);
      spans.push_back({kernels[i], base_us_ + 1000.0 * from_base, 1000.0 * dur, kStreamTrack});
    }
    return spans;
  }
  std::string track_kind() const override { return "CUDA stream"; }

 private:
  // Above any Linux thread id (pid_max is at most 2^22), so it never names a host thread.
  static constexpr int64_t kStreamTrack = int64_t{1} << 30;

  void Record() {
    if (used_ == events_.size()) {
      void* e = nullptr;
      error_ = EventCreate(&e);
      if (!error_.ok()) return;
      events_.push_back(e);
    }
    error_ = EventRecord(events_[used_], stream_);
    if (error_.ok()) ++used_;
  }

  void* stream_;
  std::vector<void*> events_;
  size_t used_ = 0;
  std::vector<int> kernels_;
  double base_us_ = 0;
  DevStatus error_;
};

}  // namespace

StatusOr<std::unique_ptr<KernelTimer>> DeviceBackend::NewKernelTimer() {
  return std::unique_ptr<KernelTimer>(std::make_unique<DeviceKernelTimer>(stream_));
}

}  // namespace a8::A8_DEV_NS
