#include "kernels/cpu/kernel_mode.h"

namespace a8::cpu {
namespace {

thread_local KernelMode current_mode = KernelMode::kReference;

}  // namespace

KernelMode CurrentKernelMode() { return current_mode; }

ScopedKernelMode::ScopedKernelMode(KernelMode mode) : previous_(current_mode) {
  current_mode = mode;
}

ScopedKernelMode::~ScopedKernelMode() { current_mode = previous_; }

}  // namespace a8::cpu
