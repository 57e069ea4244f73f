// The fast GEMM path on BERT-base's shapes (hidden 768, FFN 3072, 1024 tokens), one product at a
// time, in the CPU backend's fast mode (kernels/cpu/onednn_gemm.h):
//
//   OMP_NUM_THREADS=1 build/bin/a8-gemm-bench [--reps 11]
//
// For each shape, in one loop that alternates the variants each repetition (so a busy machine's
// slow phases hit them alike): f32 (oneDNN), f16 and bf16 (FastGemm: oneDNN's kernels where the
// CPU has them and they pay, else PackedGemm, gemm_packed.h), and "f16 copies": f16 operands
// widened into whole float copies, the f32 product, the output rounded to f16 (the path f16 took
// before PackedGemm: on AVX2 CPUs, and on AVX-512 ones before its AVX-512 tiles). Prints each
// variant's median ms and GFLOP/s (2 m n k / time), and each one's time over f32's. The first
// lines say which kernels ran (FastGemmDescription) and the load average, and, on AVX-512 CPUs,
// how many multiply-add instructions a core issues a second: vfmadd231ps
// (16 f32 multiply-adds), vdpbf16ps (32 bf16 ones, f32 sums: oneDNN's bf16 kernel without AMX)
// and vfmadd231ph (32 f16 ones, f16 sums: none of our kernels), each as 12 independent chains.
#include <cpuid.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/onednn_gemm.h"

namespace {

using a8::DType;
using namespace a8::cpu;

struct Shape {
  int64_t m, n, k;
  bool trans_a, trans_b;
  const char* what;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs FastGemm and exits with a message if it fails or declines: a benchmark of the reference
// kernel under the fast path's name would be a lie.
void Run(const internal::FastGemmArgs& g, const void* a, const void* b, void* c) {
  a8::StatusOr<bool> ran = internal::FastGemm(g, a, b, c);
  if (!ran.ok() || !*ran) {
    std::fprintf(stderr, "a8-gemm-bench: the fast path %s a %s product\n",
                 ran.ok() ? "declined" : "failed on", ElemName(g.ab_type));
    std::exit(1);
  }
}

// 12 independent chains of one multiply-add instruction on zmm registers, `n` times: the
// instructions issued a second.
#define A8_CHAINS(op)                                                                        \
  op " %%zmm1,%%zmm1,%%zmm2\n" op " %%zmm1,%%zmm1,%%zmm3\n" op " %%zmm1,%%zmm1,%%zmm4\n" op  \
     " %%zmm1,%%zmm1,%%zmm5\n" op " %%zmm1,%%zmm1,%%zmm6\n" op " %%zmm1,%%zmm1,%%zmm7\n" op  \
     " %%zmm1,%%zmm1,%%zmm8\n" op " %%zmm1,%%zmm1,%%zmm9\n" op " %%zmm1,%%zmm1,%%zmm10\n" op \
     " %%zmm1,%%zmm1,%%zmm11\n" op " %%zmm1,%%zmm1,%%zmm12\n" op " %%zmm1,%%zmm1,%%zmm13\n"
#define A8_ISSUE_RATE(name, op)                                                             \
  double name(int64_t n) {                                                                  \
    const double start = Seconds();                                                         \
    asm volatile("vpxord %%zmm1,%%zmm1,%%zmm1\n1:\n" A8_CHAINS(op) "dec %0\njnz 1b\n"       \
                 : "+r"(n)::"xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
                   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");                             \
    return Seconds() - start;                                                               \
  }
A8_ISSUE_RATE(Fmaps, "vfmadd231ps")
A8_ISSUE_RATE(Dpbf16ps, "vdpbf16ps")
A8_ISSUE_RATE(Fmaph, "vfmadd231ph")

// Prints the issue rates of the instructions this CPU has (CPUID leaf 7: AVX-512-FP16 is EDX
// bit 23 of subleaf 0, AVX-512-BF16 EAX bit 5 of subleaf 1), the best of 3 runs each.
void PrintIssueRates() {
  if (!internal::CpuHasAvx512()) return;
  unsigned a = 0, b = 0, c = 0, d = 0, a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
  const bool bf16 = (a1 >> 5) & 1, fp16 = (d >> 23) & 1;
  constexpr int64_t kLoops = 2'000'000;
  auto rate = [](double (*f)(int64_t)) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) best = std::min(best, f(kLoops));
    return 12.0 * kLoops / best * 1e-9;
  };
  std::printf("instructions a second, one core: vfmadd231ps %.2f G", rate(Fmaps));
  if (bf16) std::printf(", vdpbf16ps %.2f G", rate(Dpbf16ps));
  if (fp16) std::printf(", vfmadd231ph %.2f G", rate(Fmaph));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 11;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  ScopedKernelMode fast(KernelMode::kFast);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  std::printf("GEMM: %s\nload average %.2f; %d repetitions, medians\n",
              internal::FastGemmDescription().c_str(), load[0], reps);
  PrintIssueRates();
  std::printf("%-32s %14s %22s %22s %22s\n", "shape (m n k)", "f32 ms (GF/s)", "f16 ms (/f32)",
              "bf16 ms (/f32)", "f16 copies ms (/f32)");
  const Shape shapes[] = {{1024, 3072, 768, false, false, "ffn1 forward"},
                          {1024, 768, 3072, false, false, "ffn2 forward"},
                          {768, 3072, 1024, true, false, "ffn1 dW"},
                          {1024, 768, 3072, false, true, "ffn1 dX"},
                          {1024, 768, 768, false, false, "qkv forward"},
                          {768, 768, 1024, true, false, "qkv dW"},
                          {1024, 768, 768, false, true, "qkv dX"}};
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (const Shape& s : shapes) {
    std::vector<float> a32(static_cast<size_t>(s.m * s.k)), b32(static_cast<size_t>(s.k * s.n));
    for (float& v : a32) v = dist(rng);
    for (float& v : b32) v = dist(rng);
    std::vector<Half> a16(a32.size()), b16(b32.size());
    std::vector<BFloat16> abf(a32.size()), bbf(b32.size());
    FloatToHalf(a32.data(), a16.data(), static_cast<int64_t>(a32.size()));
    FloatToHalf(b32.data(), b16.data(), static_cast<int64_t>(b32.size()));
    FloatToBFloat16(a32.data(), abf.data(), static_cast<int64_t>(a32.size()));
    FloatToBFloat16(b32.data(), bbf.data(), static_cast<int64_t>(b32.size()));
    std::vector<float> c32(static_cast<size_t>(s.m * s.n)), wa(a32.size()), wb(b32.size());
    std::vector<Half> c16(c32.size());
    std::vector<BFloat16> cbf(c32.size());
    internal::FastGemmArgs g;
    g.m = s.m;
    g.n = s.n;
    g.k = s.k;
    g.trans_a = s.trans_a;
    g.trans_b = s.trans_b;
    auto as = [&](DType t) {
      internal::FastGemmArgs h = g;
      h.ab_type = h.c_type = t;
      return h;
    };
    std::vector<double> t[4];
    for (int r = 0; r < reps; ++r) {
      double t0 = Seconds();
      Run(as(DType::kF32), a32.data(), b32.data(), c32.data());
      double t1 = Seconds();
      Run(as(DType::kF16), a16.data(), b16.data(), c16.data());
      double t2 = Seconds();
      Run(as(DType::kBF16), abf.data(), bbf.data(), cbf.data());
      double t3 = Seconds();
      HalfToFloat(a16.data(), wa.data(), static_cast<int64_t>(wa.size()));
      HalfToFloat(b16.data(), wb.data(), static_cast<int64_t>(wb.size()));
      Run(as(DType::kF32), wa.data(), wb.data(), c32.data());
      FloatToHalf(c32.data(), c16.data(), static_cast<int64_t>(c16.size()));
      double t4 = Seconds();
      t[0].push_back(t1 - t0);
      t[1].push_back(t2 - t1);
      t[2].push_back(t3 - t2);
      t[3].push_back(t4 - t3);
    }
    const double f32 = Median(t[0]), flops = 2.0 * s.m * s.n * s.k;
    char label[64], cells[4][32];
    std::snprintf(label, sizeof label, "%s (%lld %lld %lld)", s.what, static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k));
    std::snprintf(cells[0], sizeof cells[0], "%.2f (%.1f)", f32 * 1e3, flops / f32 * 1e-9);
    for (int v = 1; v < 4; ++v) {
      const double m = Median(t[v]);
      std::snprintf(cells[v], sizeof cells[v], "%.2f (%.3f)", m * 1e3, m / f32);
    }
    std::printf("%-32s %14s %22s %22s %22s\n", label, cells[0], cells[1], cells[2], cells[3]);
  }
  return 0;
}
