// The devices of --cost (cost.h): the datasheet table of the GPUs, the CPU calibration, and the
// roofline prediction of a plan.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "kernels/common/fused_elementwise.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fused.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/parallel.h"
#include "kernels/device/movement_setup.h"
#include "kernels/device/nn.h"
#include "kernels/device/reduce.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/inspect/cost.h"

namespace a8 {
namespace {

constexpr double kT = 1e12, kG = 1e9;

// Dense peaks (no structured sparsity: the datasheets' "with sparsity" figures are twice these),
// SXM parts. Sources, the vendor datasheets:
// - NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): FP32 19.5 TFLOPS, TF32 tensor
//   156 TFLOPS, BF16/FP16 tensor 312 TFLOPS, 2,039 GB/s HBM2e, NVLink 600 GB/s.
// - NVIDIA A800 80GB datasheet (A800 80GB SXM): the A100's compute and memory, NVLink 400 GB/s.
// - NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP32 67 TFLOPS, TF32 tensor 989
//   TFLOPS with sparsity (494.5 dense), BF16/FP16 tensor 1,979 with sparsity (989.5 dense),
//   3.35 TB/s HBM3, NVLink 900 GB/s.
// - NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column): the H100 SXM's compute, 4.8 TB/s
//   HBM3e, NVLink 900 GB/s.
// The per-kernel overhead (2 us) is not a datasheet figure: it is the order of a kernel launch
// replayed from a CUDA graph, an assumption of this model.
DevicePeaks Gpu(const char* name, const char* description, double f16, double tf32, double fp32,
                double memory_tbs, double nvlink_gbs, const char* source) {
  DevicePeaks d;
  d.name = name;
  d.description = description;
  d.source = source;
  d.tensor_f16 = d.tensor_bf16 = f16 * kT;
  d.tensor_tf32 = tf32 * kT;
  d.fp32 = d.vector = fp32 * kT;
  d.memory_bw = memory_tbs * kT;
  d.nvlink_bw = nvlink_gbs * kG;
  d.overhead_s = 2e-6;
  return d;
}

const std::map<std::string, DevicePeaks>& GpuTable() {
  static const auto* table = new std::map<std::string, DevicePeaks>{
      {"a800", Gpu("a800", "NVIDIA A800 80GB SXM", 312, 156, 19.5, 2.039, 400,
                   "NVIDIA A800 80GB datasheet (the A100's peaks, NVLink 400 GB/s)")},
      {"a100", Gpu("a100", "NVIDIA A100 80GB SXM", 312, 156, 19.5, 2.039, 600,
                   "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM")},
      {"h100", Gpu("h100", "NVIDIA H100 SXM 80GB", 989.5, 494.5, 67, 3.35, 900,
                   "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM (dense)")},
      {"h200", Gpu("h200", "NVIDIA H200 SXM 141GB", 989.5, 494.5, 67, 4.8, 900,
                   "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM (dense)")},
  };
  return *table;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The fastest of `reps` runs of `fn` (after one warm-up run), in seconds: what the kernel
// itself costs with the pool's workers awake. What waking them costs is measured apart
// (PoolWakeSeconds), as it depends on the load more than on the kernel.
template <typename Fn>
StatusOr<double> Fastest(int reps, Fn fn) {
  A8_RETURN_IF_ERROR(fn());
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    A8_RETURN_IF_ERROR(fn());
    best = std::min(best, Seconds(std::chrono::steady_clock::now() - t0));
  }
  return std::max(best, 1e-9);
}

// Seconds of one n x n x n product of the CPU backend's GEMM for `dtype`.
StatusOr<double> GemmSeconds(DType dtype, int64_t n) {
  const size_t bytes = static_cast<size_t>(n * n) * DTypeSize(dtype);
  std::vector<uint8_t> a(bytes), b(bytes), y(bytes);
  // Small, finite values of any float type: 0x3c00 is 1.0 in f16, a small normal in bf16.
  for (size_t i = 0; i + 1 < bytes; i += 2) {
    a[i + 1] = 0x3c;
    b[i + 1] = 0x3c;
  }
  cpu::GemmParams p;
  p.dtype = dtype;
  p.m = p.n = p.k = n;
  p.beta = 0;
  return Fastest(7, [&] { return cpu::Gemm(p, a.data(), b.data(), nullptr, y.data()); });
}

// The GEMM of `dtype` as t = FLOPs / peak + elements x per_element (elements: |A| + |B| + |Y|;
// the per-element part is the f16/bf16 conversion and the packing, which dominate small
// products): the peak from a 256^3 product, the per-element part from a 64^3 one.
struct GemmFit {
  double peak = 0, per_element = 0;
};
StatusOr<GemmFit> FitGemm(DType dtype) {
  constexpr double n1 = 64, n2 = 256;
  A8_ASSIGN_OR_RETURN(double t1, GemmSeconds(dtype, 64));
  A8_ASSIGN_OR_RETURN(double t2, GemmSeconds(dtype, 256));
  const double f1 = 2 * n1 * n1 * n1, f2 = 2 * n2 * n2 * n2;
  const double e1 = 3 * n1 * n1;
  // The peak from the large product; what the small one takes beyond it at that peak, per
  // element (never negative).
  GemmFit fit;
  fit.peak = f2 / t2;
  fit.per_element = std::max(0.0, (t1 - f1 / fit.peak) / e1);
  return fit;
}

// Bytes/s of an f32 Add over `n` elements (two reads, one write).
StatusOr<double> AddBandwidth(int64_t n, int reps) {
  std::vector<float> a(static_cast<size_t>(n), 1.0f), b(a), y(a);
  const cpu::Dims dims{n};
  A8_ASSIGN_OR_RETURN(double s, Fastest(reps, [&] {
                        return cpu::Binary(cpu::BinaryOp::kAdd, DType::kF32, dims, a.data(),
                                           DType::kF32, dims, b.data(), y.data());
                      }));
  return 3.0 * 4.0 * static_cast<double>(n) / s;
}

// FLOP/s of one thread for the families the CPU runs below its Add rate, by their own kernels
// on 2048 f32 elements: little enough work that the pool runs it inline on the caller (parallel.h:
// under 2^16 work units), so the figure is the kernel's own, without the pool (the cost rules'
// FLOPs an element times the elements a second).
StatusOr<std::map<CostFamily, double>> FamilyRates() {
  const int64_t n = 2048;
  std::vector<float> x(static_cast<size_t>(n), -0.5f), g(x), m(x), v(x), p1(x), m1(x), v1(x);
  std::vector<uint16_t> half(static_cast<size_t>(n));
  std::map<CostFamily, double> rates;
  A8_ASSIGN_OR_RETURN(double cast, Fastest(31, [&] {
                        return cpu::Cast(DType::kF32, DType::kF16, n, x.data(), half.data());
                      }));
  rates[CostFamily::kCast] = static_cast<double>(n) / cast;
  A8_ASSIGN_OR_RETURN(double exp, Fastest(31, [&] {
                        return cpu::Unary(cpu::UnaryOp::kExp, DType::kF32, n, x.data(), g.data());
                      }));
  rates[CostFamily::kTranscendental] = 10.0 * static_cast<double>(n) / exp;
  float ctl[cpu::kCtlSize] = {1e-3f, 1.0f, 1.0f, 1.0f, 0.0f};
  for (float& e : v) e = 0.25f;
  A8_ASSIGN_OR_RETURN(double adam, Fastest(31, [&] {
                        return cpu::AdamUpdate(cpu::AdamParams{}, DType::kF32, DType::kF32, n, ctl,
                                               x.data(), g.data(), m.data(), v.data(), p1.data(),
                                               m1.data(), v1.data());
                      }));
  rates[CostFamily::kOptimizer] = 15.0 * static_cast<double>(n) / adam;
  // The fused elementwise interpreter: relu(a + b), two FLOPs an element.
  const int64_t code[] = {kFusedAdd, 2, 0, 1, kFusedRelu, 3, 2, 0};
  FusedProgram program;
  if (!DecodeFusedProgram(code, 8, nullptr, 0, 2, &program))
    return Internal("cost calibration: the fused program does not decode");
  const void* inputs[] = {x.data(), g.data()};
  const int64_t counts[] = {n, n};
  A8_ASSIGN_OR_RETURN(double fused, Fastest(31, [&] {
                        return cpu::FusedElementwise(program, DType::kF32, inputs, counts,
                                                     DType::kF32, n, p1.data());
                      }));
  rates[CostFamily::kFused] = 2.0 * static_cast<double>(n) / fused;
  // SoftmaxGrad over rows of 1024 and LayerNormalization over rows of 1024 (the shared bodies, on
  // the host as the CPU backend runs them): the rules' 14 and 8 FLOPs an element.
  emu::DevCtx host;
  const auto on_host = [&](const char* what, auto launch) {
    return Fastest(31, [&]() -> Status {
      const emu::DevStatus s = launch();
      return s.ok() ? Status::Ok() : Internal("cost calibration: {}: {}", what, s.what);
    });
  };
  emu::SoftmaxGradParams sg;
  sg.view.outer = n / 1024;
  sg.view.len = 1024;
  sg.dy = g.data(), sg.y = v.data(), sg.dx = p1.data();
  StatusOr<double> softmax_or = on_host("SoftmaxGrad", [&] { return emu::SoftmaxGrad(host, sg); });
  emu::LayerNormArgs ln;
  ln.outer = n / 1024;
  ln.inner = 1024;
  ln.x = x.data(), ln.scale = v.data(), ln.bias = g.data(), ln.y = p1.data();
  ln.mean = m1.data(), ln.inv_std_dev = v1.data();
  StatusOr<double> norm_or = on_host("LayerNorm", [&] { return emu::LayerNorm(host, ln); });
  emu::ReleaseScratch(host);
  A8_ASSIGN_OR_RETURN(double softmax, std::move(softmax_or));
  rates[CostFamily::kSoftmaxLoss] = 14.0 * static_cast<double>(n) / softmax;
  A8_ASSIGN_OR_RETURN(double norm, std::move(norm_or));
  rates[CostFamily::kNormalization] = 8.0 * static_cast<double>(n) / norm;
  return rates;
}

// Seconds per element (read and written) of a Transpose of [32, 32] f32 on one thread: the
// shared movement kernel's strided copy, as the CPU backend runs it.
StatusOr<double> MovementElementSeconds() {
  const int64_t n = 32;
  std::vector<float> x(static_cast<size_t>(n * n), 1.0f), y(x);
  emu::DevCtx host;  // a strided copy needs no scratch
  A8_ASSIGN_OR_RETURN(double s, Fastest(31, [&] {
                        return emu::movement::Transpose(host, DType::kF32, {n, n}, {1, 0}, x.data(),
                                                        y.data(), n * n);
                      }));
  return s / (2.0 * static_cast<double>(n * n));
}

// What a kernel split over the CPU pool pays beyond its work divided over the threads: handing
// the chunks out and waiting for the last (on a loaded machine, for a worker to get a core). The
// median of a few AdamUpdates of 8192 elements (the smallest split: 2^16 work units), less their
// one-thread time (the optimizer rate of FamilyRates, 15 FLOPs an element) over the threads.
StatusOr<double> PoolPenaltySeconds(double adam_flops, int threads) {
  const int64_t n = 8192;
  std::vector<float> x(static_cast<size_t>(n), -0.5f), g(x), m(x), p1(x), m1(x), v1(x);
  std::vector<float> v(static_cast<size_t>(n), 0.25f);
  float ctl[cpu::kCtlSize] = {1e-3f, 1.0f, 1.0f, 1.0f, 0.0f};
  auto adam = [&] {
    return cpu::AdamUpdate(cpu::AdamParams{}, DType::kF32, DType::kF32, n, ctl, x.data(), g.data(),
                           m.data(), v.data(), p1.data(), m1.data(), v1.data());
  };
  A8_RETURN_IF_ERROR(adam());
  std::vector<double> times;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    A8_RETURN_IF_ERROR(adam());
    times.push_back(Seconds(std::chrono::steady_clock::now() - t0));
  }
  std::nth_element(times.begin(), times.begin() + 4, times.end());
  return std::max(times[4] - 15.0 * static_cast<double>(n) / adam_flops / threads, 0.0);
}

// The share of a core this thread gets now: its CPU time over the wall time of a 40 ms spin (1 on
// an idle machine; on a shared or oversubscribed one, what the run it predicts will get too).
double CpuShare() {
  auto cpu_now = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  while (std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(40)) {
  }
  const double wall = Seconds(std::chrono::steady_clock::now() - w0);
  return std::clamp((cpu_now() - c0) / wall, 0.05, 1.0);
}

// What a kernel costs before its work: a one-kernel plan (Relu over 8 floats) run through the
// CPU backend, with the clock reads a trace adds.
StatusOr<double> KernelOverhead() {
  plan::Plan p;
  for (int i = 0; i < 2; ++i) {
    plan::Buffer* b = p.add_buffers();
    b->set_id(i);
    b->set_name(i == 0 ? "x" : "y");
    b->mutable_type()->set_dtype(plan::F32);
    b->mutable_type()->add_dims(8);
    b->set_bytes(32);
    b->set_offset(64 * static_cast<uint64_t>(i));
    b->set_alias_of(-1);
  }
  plan::Kernel* k = p.add_kernels();
  k->set_name("Relu:f32->f32");
  k->set_op("Relu");
  k->set_version(14);
  k->add_inputs(0);
  k->add_outputs(1);
  std::vector<float> memory(32, 1.0f);
  std::vector<uint8_t*> ptrs = {reinterpret_cast<uint8_t*>(memory.data()),
                                reinterpret_cast<uint8_t*>(memory.data() + 16)};
  std::unique_ptr<Backend> be = MakeCpuBackend();
  A8_RETURN_IF_ERROR(be->Prepare(p, ptrs));
  constexpr int kCalls = 2000;
  StepInfo step;
  A8_ASSIGN_OR_RETURN(double s, Fastest(5, [&]() -> Status {
                        for (int i = 0; i < kCalls; ++i) {
                          auto t0 = std::chrono::steady_clock::now();
                          A8_RETURN_IF_ERROR(be->Run(0, step));
                          (void)(std::chrono::steady_clock::now() - t0);
                        }
                        return Status::Ok();
                      }));
  return s / kCalls;
}

}  // namespace

std::vector<std::string> CostDeviceNames() { return {"a800", "a100", "h100", "h200", "cpu"}; }

StatusOr<DevicePeaks> CostDevice(std::string_view name) {
  if (name == "cpu") return CalibrateCpu();
  auto it = GpuTable().find(std::string(name));
  if (it == GpuTable().end())
    return InvalidInput("--cost={}: unknown device (expected {})", name,
                        fmt::join(CostDeviceNames(), ", "));
  return it->second;
}

StatusOr<DevicePeaks> CalibrateCpu() {
  DevicePeaks d;
  d.name = "cpu";
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  d.description =
      fmt::format("this machine's CPU ({} cores), measured through the CPU kernels", cores);
  d.source =
      "calibrated now (fastest runs; the pool's penalty a median): CPU-backend GEMM 64^3 and "
      "256^3 per dtype; f32 Add over 32K and 4M elements; on one thread Cast f32->f16, Exp, "
      "AdamUpdate, SoftmaxGrad, a fused relu(a + b), LayerNorm and a Transpose; a one-kernel "
      "plan on the CPU backend; a split AdamUpdate for the pool's penalty; a 40 ms spin for the "
      "share of a core this process gets";
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    A8_ASSIGN_OR_RETURN(GemmFit fit, FitGemm(dtype));
    (dtype == DType::kF32   ? d.fp32
     : dtype == DType::kF16 ? d.tensor_f16
                            : d.tensor_bf16) = fit.peak;
    d.matmul_element_s[dtype] = fit.per_element;
  }
  d.tensor_tf32 = d.fp32;  // no TF32 on a CPU
  const int64_t small = int64_t{32} << 10;
  A8_ASSIGN_OR_RETURN(d.cache_bw, AddBandwidth(small, 31));
  A8_ASSIGN_OR_RETURN(d.memory_bw, AddBandwidth(int64_t{4} << 20, 5));
  d.vector = d.cache_bw / 12.0;  // the Add: one FLOP for 12 bytes, in cache
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  d.cache_bytes = static_cast<double>(l2 > 0 ? l2 : 1 << 20) * static_cast<double>(cores);
  A8_ASSIGN_OR_RETURN(d.family_flops, FamilyRates());
  d.half_element_s = 1.0 / d.family_flops[CostFamily::kCast];
  A8_ASSIGN_OR_RETURN(d.movement_element_s, MovementElementSeconds());
  A8_ASSIGN_OR_RETURN(d.overhead_s, KernelOverhead());
  d.cpu_share = CpuShare();
  d.threads = cpu::MaxThreads();
  if (d.threads > 1) {
    A8_ASSIGN_OR_RETURN(d.parallel_wake_s,
                        PoolPenaltySeconds(d.family_flops[CostFamily::kOptimizer], d.threads));
  }
  return d;
}

StatusOr<PlanPrediction> PredictPlan(const plan::Plan& plan, const DevicePeaks& device) {
  PlanPrediction out;
  out.device = device;
  // TF32 is the kernel's (Kernel.tf32_inputs), as on the GPU; the MFU peak is TF32's when the
  // plan has any such kernel.
  bool tf32 = false;
  for (const plan::Kernel& k : plan.kernels()) tf32 = tf32 || k.tf32_inputs_size() > 0;
  auto matmul_peak = [&](DType dtype, bool kernel_tf32) {
    switch (dtype) {
      case DType::kF16:
        return device.tensor_f16;
      case DType::kBF16:
        return device.tensor_bf16;
      case DType::kF32:
        return kernel_tf32 ? device.tensor_tf32 : device.fp32;
      default:
        return device.fp32 / 2;  // f64
    }
  };
  std::map<DType, double> matmul_flops;
  for (int k = 0; k < plan.kernels_size(); ++k) {
    KernelPrediction p;
    p.kernel = k;
    A8_ASSIGN_OR_RETURN(p.cost, EstimateKernelCost(plan, k));
    const bool tensor = p.cost.family == CostFamily::kMatMul || p.cost.family == CostFamily::kConv;
    auto family = device.family_flops.find(p.cost.family);
    const bool kernel_tf32 = plan.kernels(k).tf32_inputs_size() > 0;
    const double peak = tensor ? matmul_peak(p.cost.dtype, kernel_tf32)
                        : family != device.family_flops.end() ? family->second
                                                              : device.vector;
    const double bw = device.cache_bw > 0 && p.cost.bytes <= device.cache_bytes ? device.cache_bw
                                                                                : device.memory_bw;
    double compute = peak > 0 ? (p.cost.flops - p.cost.epilogue_flops) / peak : 0;
    if (auto e = device.matmul_element_s.find(p.cost.dtype);
        tensor && e != device.matmul_element_s.end())
      compute += e->second * p.cost.elements;
    if (!tensor && p.cost.family != CostFamily::kCast && p.cost.family != CostFamily::kView &&
        p.cost.family != CostFamily::kCollective)
      compute += device.half_element_s * p.cost.half_elements;
    if (p.cost.family == CostFamily::kMovement)
      compute += device.movement_element_s * p.cost.elements;
    double epilogue = 0;
    if (p.cost.epilogue_flops > 0) {
      auto e = device.family_flops.find(p.cost.epilogue_family);
      const double rate = e != device.family_flops.end() ? e->second : device.vector;
      epilogue = rate > 0 ? p.cost.epilogue_flops / rate : 0;
    }
    // A collective of one process moves nothing (the kernels average over one rank); across
    // ranks its time is the interconnect's, which this per-device model leaves out.
    const double memory =
        bw > 0 && p.cost.family != CostFamily::kCollective ? p.cost.bytes / bw : 0;
    p.compute_bound = compute > memory;
    p.intensity = p.cost.bytes > 0 ? p.cost.flops / p.cost.bytes : 0;
    // A kernel with enough work to be split over the CPU pool (parallel.h: 2^15 work units a
    // thread) divides its one-thread rates' time over the threads and pays the pool's penalty.
    // (The FLOP rules stand for the kernels' work units; matmuls and convolutions are measured
    // split already, at two sizes.)
    const bool split = !tensor && device.threads > 1 && p.cost.flops >= 2 * 32768.0;
    if (split) {
      compute /= device.threads;
      epilogue /= device.threads;
    }
    p.seconds = device.overhead_s + std::max(compute, memory) + epilogue;
    if (split) p.seconds += device.parallel_wake_s;
    // The calibration kept its fastest runs, which a time slice did not cut; a whole step gets
    // the share of the cores the machine leaves it.
    p.seconds /= device.cpu_share;
    if (tensor) matmul_flops[p.cost.dtype] += p.cost.flops;
    out.step_s += p.seconds;
    out.flops += p.cost.flops;
    out.kernels.push_back(p);
  }
  DType mfu_dtype = DType::kF32;
  double most = -1;
  for (const auto& [dtype, flops] : matmul_flops)
    if (flops > most) {
      most = flops;
      mfu_dtype = dtype;
    }
  if (most < 0) {
    out.mfu_peak = device.vector;
    out.mfu_dtype = "vector";
  } else {
    out.mfu_peak = matmul_peak(mfu_dtype, tf32);
    out.mfu_dtype = std::string(DTypeName(mfu_dtype));
    if (mfu_dtype == DType::kF32 && tf32) out.mfu_dtype = "tf32";
  }
  out.mfu = out.step_s > 0 && out.mfu_peak > 0 ? out.flops / (out.step_s * out.mfu_peak) : 0;
  out.peak_memory = plan.arena_bytes() + plan.persistent_bytes();
  return out;
}

}  // namespace a8
