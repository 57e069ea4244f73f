// Which CPU kernels run: the reference or the fast path.
//
// The reference kernels (OpenBLAS and our own tiles, f16/bf16 widened to float) are the numerical
// oracle: bit-identical to the CUDA backend's kernels run on the host (cuda-emu). The fast path
// (oneDNN on AMX / AVX-512-BF16 / AVX-512-FP16 where the CPU has them, onednn_gemm.h) reads the
// low-precision operands directly and sums in another order, so it agrees with the reference
// within each dtype's rounding, not bit for bit.
//
// The mode is per calling thread (a kernel decides on the thread that calls it, before it splits
// work over the pool) and defaults to the reference, so code that calls the kernels directly
// (tests, cuda-emu) gets the oracle; the CPU backend sets the fast mode around each kernel unless
// it was made with the reference mode (a800c-run --backend=cpu --reference).
#pragma once

namespace a8::cpu {

enum class KernelMode { kReference, kFast };

KernelMode CurrentKernelMode();

// Sets the calling thread's mode for the life of the object, then restores the previous one.
class ScopedKernelMode {
 public:
  explicit ScopedKernelMode(KernelMode mode);
  ~ScopedKernelMode();
  ScopedKernelMode(const ScopedKernelMode&) = delete;
  ScopedKernelMode& operator=(const ScopedKernelMode&) = delete;

 private:
  KernelMode previous_;
};

}  // namespace a8::cpu
