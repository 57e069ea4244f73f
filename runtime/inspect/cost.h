// a800c-inspect PLAN --cost=DEVICE: what a plan will cost before it runs (issue 16).
//
// Per kernel, a FLOP and byte count from a rule per op family (cost_rules.cc; every op of the
// kernel catalog has one, and a unit test holds that): matrix products 2·M·N·K, convolutions
// 2·|Y|·|W|/C_out, elementwise ops one FLOP an element (a transcendental function ten, erf and
// gelu twenty, their gradients thirty), normalizations, softmax and losses a fixed count an
// element, movement none; the bytes are the kernel's input and output buffers, each once (a view
// that aliases its input moves none).
// Arithmetic intensity = FLOPs / bytes.
//
// Predicted time of a kernel on a device (a roofline with a launch cost):
//   t = overhead + max(FLOPs / peak(family, dtype), bytes / bandwidth(bytes)) + epilogue
// (a fused matmul's elementwise epilogue at its family's rate), where matrix products and
// convolutions run at the tensor-core peak of their dtype (f16, bf16; f32 at the TF32 peak only in
// a --precision=tf32 plan, else at the FP32 CUDA-core peak) and everything else at the FP32
// CUDA-core peak; the kernel is compute-bound when the first term of the max wins. The step time is
// the sum over the kernels (one stream, in order). MFU = the plan's FLOPs / (step time x the tensor
// peak of the dtype that carries most matmul FLOPs). Peak memory = the plan's arena + persistent
// bytes (what the executor allocates).
//
// GPU peaks come from the vendor datasheets (cost_devices.cc has the table and its sources; the
// README repeats it). `cpu` is this machine, measured when asked (CalibrateCpu, ~0.3 s, never
// cached: a figure from another load or another machine would mislead) through the CPU
// backend's own kernels (the fastest of a few runs each): GEMM per dtype at 256^3 (the peak) and
// 64^3 (a per-element cost beside it: the f16/bf16 conversion and the packing); an f32 Add over a
// cache-sized and a memory-sized array (two bandwidths: a kernel whose bytes fit the cache gets
// the first; its FLOP rate is `vector`); on one thread, Cast f32->f16, Exp, AdamUpdate,
// SoftmaxGrad, a fused relu(a + b), LayerNorm and a Transpose for the families that run slower
// (family_flops, half_element_s, movement_element_s); the thread pool's penalty for a kernel it
// splits (parallel_wake_s); a one-kernel plan run through the CPU backend for the per-kernel
// overhead; and the share of a core this process gets now (cpu_share: CPU time over wall time of
// a 40 ms spin), which divides every time, since the fastest runs are the uncut ones. The
// whole-kernel rates of split kernels swung tenfold between runs on a loaded machine (whether the
// pool's worker got a core); the one-thread rates hold to a few percent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/ir/types.h"
#include "compiler/plan/plan.pb.h"
#include "compiler/plan/plan_file.h"

namespace a8 {

enum class CostFamily {
  kMatMul,          // MatMul, Gemm, a8.FusedMatMul: tensor cores
  kConv,            // Conv, ConvTranspose, a8.ConvGradFilter: tensor cores
  kElementwise,     // one FLOP an output element
  kCast,            // Cast, CastLike: one FLOP an output element
  kTranscendental,  // exp/log/tanh/erf...: ten FLOPs an output element
  kFused,           // a8.FusedElementwise: its program's instructions an element
  kPool,            // one FLOP per window element
  kReduction,       // one FLOP an input element
  kNormalization,   // 8 (forward) or 12 (gradient) FLOPs an element
  kSoftmaxLoss,     // softmax, log-softmax, losses: 14 FLOPs an element
  kOptimizer,       // FLOPs an element per optimizer
  kMovement,        // no FLOPs: reads and writes bytes
  kView,            // no FLOPs; no bytes when the output aliases the input
  kCollective,      // a8.AllReduceStart/Wait: bytes of the gradients
};
std::string_view CostFamilyName(CostFamily family);

// The family of a catalog op (qualified, "a8.AdamUpdate"), or nullopt when no rule covers it.
std::optional<CostFamily> CostFamilyOf(std::string_view op);

struct KernelCost {
  CostFamily family = CostFamily::kElementwise;
  DType dtype = DType::kF32;  // the compute dtype: its first float input's (else output's)
  double flops = 0;           // all of it, the epilogue's included
  double bytes = 0;
  double elements = 0;       // of its inputs and outputs (and a convolution's im2col matrix)
  double half_elements = 0;  // of those, f16 and bf16 ones
  // a8.FusedMatMul: the FLOPs of its elementwise epilogue (bias, relu, gelu and their
  // gradients), which run at `epilogue_family`'s rate after the product, not on tensor cores.
  double epilogue_flops = 0;
  CostFamily epilogue_family = CostFamily::kElementwise;
};
// Kernel `k` of a validated plan; Unsupported naming the kernel when its op has no rule.
StatusOr<KernelCost> EstimateKernelCost(const plan::Plan& plan, int k);

// A device's peaks, FLOP/s and bytes/s.
struct DevicePeaks {
  std::string name;                                         // "h200", "cpu"
  std::string description;                                  // "NVIDIA H200 SXM 141GB"
  std::string source;                                       // where the figures come from
  double tensor_f16 = 0, tensor_bf16 = 0, tensor_tf32 = 0;  // dense tensor-core peaks
  double fp32 = 0;                                          // matmul in f32 without TF32
  double vector = 0;     // non-matmul FLOP/s (the FP32 CUDA cores; CPU: measured)
  double memory_bw = 0;  // DRAM / HBM
  double cache_bw = 0;   // CPU: a working set under cache_bytes (0: none)
  double cache_bytes = 0;
  double nvlink_bw = 0;  // per GPU, both directions
  // Measured FLOP/s of families whose kernels run below `vector` (the CPU's scalar casts,
  // transcendental functions, optimizers, softmax); a family not here runs at `vector`.
  std::map<CostFamily, double> family_flops;
  // Seconds a matmul or convolution spends per element of its operands and result beside its
  // FLOPs (the CPU's f16/bf16 conversion and packing, fitted to two GEMM sizes; GPUs: none).
  std::map<DType, double> matmul_element_s;
  // Seconds a non-matmul kernel spends per f16/bf16 element it reads or writes (the CPU converts
  // each to float and back; GPUs: none), and per element a movement kernel moves (the CPU's
  // strided copies; GPUs: none, the bytes say it).
  double half_element_s = 0;
  double movement_element_s = 0;
  // CPU: the kernel thread pool's threads; a kernel with enough work to be split over them
  // divides the time of the one-thread rates above by `threads` and pays `parallel_wake_s`
  // (handing out the chunks, waiting for the last). GPUs: 1.
  int threads = 1;
  double parallel_wake_s = 0;
  // CPU: the share of a core a thread gets now (CPU time over wall time of a short spin); every
  // predicted time is divided by it, as the calibration keeps its fastest runs. GPUs: 1.
  double cpu_share = 1;
  double overhead_s = 0;  // per kernel
};
// a800, a100, h100, h200 (the datasheet table), or cpu (CalibrateCpu). Unknown: InvalidInput
// naming --cost and the accepted names.
StatusOr<DevicePeaks> CostDevice(std::string_view name);
StatusOr<DevicePeaks> CalibrateCpu();
// The accepted --cost names.
std::vector<std::string> CostDeviceNames();

struct KernelPrediction {
  int kernel = 0;
  KernelCost cost;
  double intensity = 0;  // FLOPs / byte
  double seconds = 0;
  bool compute_bound = false;
};
struct PlanPrediction {
  DevicePeaks device;
  std::vector<KernelPrediction> kernels;  // plan order
  double step_s = 0;
  double flops = 0;
  double mfu_peak = 0;  // the peak MFU is measured against
  std::string mfu_dtype;
  double mfu = 0;
  uint64_t peak_memory = 0;
};
StatusOr<PlanPrediction> PredictPlan(const plan::Plan& plan, const DevicePeaks& device);

// The views (cost_view.cc): every kernel, the step, the ten costliest kernels. JSON carries
// "schema_version" (kInspectSchemaVersion) and ends with a newline.
std::string CostText(const PlanFile& plan, const PlanPrediction& p);
std::string CostJson(const PlanFile& plan, const PlanPrediction& p);

}  // namespace a8
