#include "runtime/core/backend.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <utility>

namespace a8 {

double SteadyNowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// The host clock around each kernel, on the thread that runs it (the CPU backend's kernels
// return when done; their thread pool works inside that span).
class HostKernelTimer : public KernelTimer {
 public:
  void Start(int kernel) override {
    KernelSpan s;
    s.kernel = kernel;
    s.track = tid_;
    s.start_us = SteadyNowUs();
    spans_.push_back(s);
  }
  void Stop(int kernel) override {
    const double now = SteadyNowUs();
    if (!spans_.empty() && spans_.back().kernel == kernel)
      spans_.back().dur_us = now - spans_.back().start_us;
  }
  StatusOr<std::vector<KernelSpan>> Collect() override { return std::exchange(spans_, {}); }
  std::string track_kind() const override { return "thread"; }

 private:
  int64_t tid_ = static_cast<int64_t>(syscall(SYS_gettid));
  std::vector<KernelSpan> spans_;
};

}  // namespace

StatusOr<std::unique_ptr<KernelTimer>> Backend::NewKernelTimer() {
  return std::unique_ptr<KernelTimer>(std::make_unique<HostKernelTimer>());
}

Status Backend::RunSequence(int, const std::vector<int>& kernels, const std::vector<Copy>& copies,
                            const StepInfo& step) {
  for (int k : kernels) A8_RETURN_IF_ERROR(Run(k, step));
  for (const Copy& c : copies)
    if (c.dst != c.src && c.bytes > 0) std::memmove(c.dst, c.src, c.bytes);
  return Status::Ok();
}

StatusOr<uint8_t*> Backend::AllocateRegion(uint64_t) {
  return Internal("backend '{}' works on host memory: the executor allocates it", name());
}

Status Backend::CopyIn(uint8_t* dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

Status Backend::CopyOut(void* dst, const uint8_t* src, uint64_t bytes) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

Status Backend::Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) {
  if (bytes > 0) std::memset(dst, byte, bytes);
  return Status::Ok();
}

}  // namespace a8
