// The normalization and pooling kernels of the CUDA backend (kernels/device/nn*.h), run through
// its host emulation (in a8_gpu_tests: on the GPU) against the CPU backend, to the bit (tolerance
// 0) for every dtype, mixed parameter dtypes included. The pools sum in the CPU kernels' order.
// The normalizations are one body that the CPU backend runs on the host too: here that checks the
// host launcher against the emulated device entry, on the GPU the CUDA launch against the host;
// their float64 references are in shared_norm_test.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

// Before device_test_util.h, which uses cpu::Cast without including it.
#include "kernels/cpu/kernels.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using Dims = std::vector<int64_t>;
using AttrFn = std::function<void(plan::Kernel*)>;

constexpr DType kF32 = DType::kF32, kF16 = DType::kF16, kBF16 = DType::kBF16, kF64 = DType::kF64;

// The operands of a one-kernel plan (device_test_util.h): In, Out, or None (absent).
using Operand = KernelOperand;
Operand In(DType t, Dims d, double lo = -2, double hi = 2) { return {t, std::move(d), lo, hi}; }
Operand Out(DType t, Dims d) { return {t, std::move(d)}; }
Operand None() { return {kF32, {}, 0, 0, true}; }

// Runs `op` on the CPU backend and on cuda-emu with random inputs; every output must agree
// exactly. `values` overrides an input's random bytes.
void ExpectSame(const std::string& op, const std::vector<Operand>& ins,
                const std::vector<Operand>& outs, const AttrFn& attrs = nullptr,
                const std::map<int, std::vector<uint8_t>>& values = {}) {
  SCOPED_TRACE(op);
  const OneKernelPlan p = BuildOneKernelPlan(op, ins, outs, attrs, 77, 13, values);
  ExpectEmuMatchesCpu(p.plan, p.inputs, 0, 0);
}

const DType kAllFloat[] = {kF32, kF16, kBF16, kF64};

// ---------------------------------------------------------------- LayerNormalization

TEST(DeviceNnTest, LayerNorm) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    // Rows of 7 (fewer than 8 lanes) and 33 (lanes and a tail); Mean/InvStdDev in f32.
    ExpectSame("LayerNormalization", {In(t, {3, 5, 7}), In(t, {7}), In(t, {7})},
               {Out(t, {3, 5, 7}), Out(kF32, {3, 5, 1}), Out(kF32, {3, 5, 1})});
    // Rows of 300: on a GPU the lane path (a thread per (row, lane)), against the host's row.
    ExpectSame("LayerNormalization", {In(t, {3, 300}), In(t, {300}), In(t, {300})},
               {Out(t, {3, 300}), Out(kF32, {3, 1}), Out(kF32, {3, 1})});
    ExpectSame("LayerNormalization", {In(t, {4, 2, 33}), In(t, {2, 33}), None()},
               {Out(t, {4, 2, 33}), None(), Out(t, {4, 1, 1})}, [](plan::Kernel* k) {
                 PlanBuilder::Int(k, "axis", -2);
                 PlanBuilder::Float(k, "epsilon", 1e-3f);
               });
  }
}

TEST(DeviceNnTest, LayerNormMixedDtypes) {
  // f16/bf16 data with f32 scale and bias (the a8.edge convention), f32 stash.
  for (DType t : {kF16, kBF16}) {
    ExpectSame("LayerNormalization", {In(t, {6, 40}), In(kF32, {40}), In(kF32, {40})},
               {Out(t, {6, 40}), Out(kF32, {6, 1}), Out(kF32, {6, 1})});
  }
  // f64 data with f16 parameters and an f16 / bf16 stash: stored by round-to-odd then round.
  ExpectSame("LayerNormalization", {In(kF64, {5, 3, 9}), In(kF16, {3, 9}), In(kBF16, {3, 9})},
             {Out(kF64, {5, 3, 9}), Out(kF16, {5, 1, 1}), Out(kF16, {5, 1, 1})},
             [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 1); });
}

TEST(DeviceNnTest, LayerNormBroadcastParams) {
  // Scale [1, 6] and B [4, 1] broadcast to the normalized dims [4, 6].
  ExpectSame("LayerNormalization", {In(kF32, {3, 4, 6}), In(kF32, {1, 6}), In(kF32, {4, 1})},
             {Out(kF32, {3, 4, 6}), None(), None()},
             [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 1); });
  ExpectSame("LayerNormalization", {In(kF16, {2, 3, 5}), In(kF32, {5}), In(kF32, {1})},
             {Out(kF16, {2, 3, 5})}, [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 1); });
}

TEST(DeviceNnTest, LayerNormGrad) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    // Statistics recomputed.
    ExpectSame("a8.LayerNormalizationGrad",
               {In(t, {4, 3, 11}), In(t, {4, 3, 11}), In(t, {11}), None(), None()},
               {Out(t, {4, 3, 11}), Out(t, {11}), Out(t, {11})});
    // Rows of 70: row sums in 32 lanes (launch.h, ForEachRowLanes); 150 rows: dScale and dBias
    // add chunks of 64 rows.
    ExpectSame("a8.LayerNormalizationGrad",
               {In(t, {3, 70}), In(t, {3, 70}), In(t, {70}), None(), None()},
               {Out(t, {3, 70}), Out(t, {70}), Out(t, {70})});
    ExpectSame("a8.LayerNormalizationGrad",
               {In(t, {150, 12}), In(t, {150, 12}), In(t, {12}), None(), None()},
               {Out(t, {150, 12}), Out(t, {12}), Out(t, {12})});
    // Stashed f32 statistics (an f64 forward's f32 stash is recomputed, as on the CPU).
    ExpectSame("a8.LayerNormalizationGrad",
               {In(t, {5, 2, 9}), In(t, {5, 2, 9}), In(t, {2, 9}), In(kF32, {5, 1, 1}),
                In(kF32, {5, 1, 1}, 0.5, 2)},
               {Out(t, {5, 2, 9}), Out(t, {2, 9}), Out(t, {2, 9})},
               [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 1); });
  }
  // f64 stash, dX only; then dScale/dBias only (in another dtype than X).
  ExpectSame("a8.LayerNormalizationGrad",
             {In(kF64, {7, 13}), In(kF64, {7, 13}), In(kF64, {13}), In(kF64, {7, 1}),
              In(kF64, {7, 1}, 0.5, 2)},
             {Out(kF64, {7, 13})});
  ExpectSame("a8.LayerNormalizationGrad",
             {In(kF16, {6, 10}), In(kF16, {6, 10}), In(kF32, {10}), None(), None()},
             {None(), Out(kF32, {10}), Out(kF32, {10})});
  ExpectSame("a8.LayerNormalizationGrad",
             {In(kF64, {3, 10}), In(kF64, {3, 10}), In(kBF16, {10}), None(), None()},
             {Out(kF64, {3, 10}), Out(kBF16, {10}), Out(kBF16, {10})});
}

// ---------------------------------------------------------------- BatchNormalization

AttrFn Training(float momentum = 0.9f) {
  return [momentum](plan::Kernel* k) {
    PlanBuilder::Int(k, "training_mode", 1);
    PlanBuilder::Float(k, "momentum", momentum);
  };
}

std::vector<Operand> BnInputs(DType t, DType pt, DType st, const Dims& x) {
  const Dims c = {x[1]};
  return {In(t, x), In(pt, c), In(pt, c), In(st, c), In(st, c, 0.1, 2)};
}

TEST(DeviceNnTest, BatchNormInference) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    ExpectSame("BatchNormalization", BnInputs(t, t, t, {3, 4, 5, 3}), {Out(t, {3, 4, 5, 3})});
    ExpectSame("BatchNormalization", BnInputs(t, t, t, {5, 3}), {Out(t, {5, 3})},
               [](plan::Kernel* k) { PlanBuilder::Float(k, "epsilon", 0.01f); });
  }
  ExpectSame("BatchNormalization", BnInputs(kF16, kF32, kF32, {2, 3, 7}), {Out(kF16, {2, 3, 7})});
}

TEST(DeviceNnTest, BatchNormTraining) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    ExpectSame("BatchNormalization", BnInputs(t, t, t, {4, 3, 5, 5}),
               {Out(t, {4, 3, 5, 5}), Out(t, {3}), Out(t, {3})}, Training());
    ExpectSame("BatchNormalization", BnInputs(t, t, t, {7, 5}),
               {Out(t, {7, 5}), Out(t, {5}), Out(t, {5})}, Training(0.7f));
    // Planes of 144: summed in 32 lanes.
    ExpectSame("BatchNormalization", BnInputs(t, t, t, {3, 2, 12, 12}),
               {Out(t, {3, 2, 12, 12}), Out(t, {2}), Out(t, {2})}, Training());
  }
  // f16/bf16 data with f32 scale, bias and statistics; f64 data with f16 ones (round to odd);
  // 3 spatial dims; the running outputs absent.
  ExpectSame("BatchNormalization", BnInputs(kF16, kF32, kF32, {3, 2, 9}),
             {Out(kF16, {3, 2, 9}), Out(kF32, {2}), Out(kF32, {2})}, Training());
  ExpectSame("BatchNormalization", BnInputs(kBF16, kF32, kF32, {2, 6, 3, 4}),
             {Out(kBF16, {2, 6, 3, 4}), Out(kF32, {6}), Out(kF32, {6})}, Training());
  ExpectSame("BatchNormalization", BnInputs(kF64, kF16, kF16, {2, 3, 3, 2, 3}),
             {Out(kF64, {2, 3, 3, 2, 3}), Out(kF16, {3}), Out(kF16, {3})}, Training(0.6f));
  ExpectSame("BatchNormalization", BnInputs(kF32, kF32, kF32, {5, 4, 3}), {Out(kF32, {5, 4, 3})},
             Training());
}

TEST(DeviceNnTest, BatchNormGrad) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    // Training mode: batch statistics recomputed.
    ExpectSame("a8.BatchNormalizationGrad", {In(t, {3, 4, 5, 3}), In(t, {3, 4, 5, 3}), In(t, {4})},
               {Out(t, {3, 4, 5, 3}), Out(t, {4}), Out(t, {4})});
    ExpectSame("a8.BatchNormalizationGrad", {In(t, {2, 3, 130}), In(t, {2, 3, 130}), In(t, {3})},
               {Out(t, {2, 3, 130}), Out(t, {3}), Out(t, {3})});
    // Inference mode, with dmean and dvar.
    ExpectSame("a8.BatchNormalizationGrad",
               {In(t, {5, 3, 7}), In(t, {5, 3, 7}), In(t, {3}), In(t, {3}), In(t, {3}, 0.1, 2)},
               {Out(t, {5, 3, 7}), Out(t, {3}), Out(t, {3}), Out(t, {3}), Out(t, {3})},
               [](plan::Kernel* k) { PlanBuilder::Float(k, "epsilon", 1e-3f); });
  }
  ExpectSame("a8.BatchNormalizationGrad", {In(kF16, {4, 6}), In(kF16, {4, 6}), In(kF32, {6})},
             {Out(kF16, {4, 6}), Out(kF32, {6}), Out(kF32, {6})});
  ExpectSame("a8.BatchNormalizationGrad", {In(kBF16, {9}), In(kBF16, {9}), In(kF32, {1})},
             {Out(kBF16, {9}), None(), Out(kF32, {1})});
  ExpectSame("a8.BatchNormalizationGrad",
             {In(kF64, {2, 3, 4}), In(kF64, {2, 3, 4}), In(kF16, {3}), In(kF32, {3}),
              In(kF32, {3}, 0.1, 2)},
             {None(), Out(kF16, {3}), Out(kF16, {3}), Out(kF32, {3}), Out(kF32, {3})});
}

// ---------------------------------------------------------------- InstanceNormalization

TEST(DeviceNnTest, InstanceNorm) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    ExpectSame("InstanceNormalization", {In(t, {2, 3, 4, 5}), In(t, {3}), In(t, {3})},
               {Out(t, {2, 3, 4, 5})});
    ExpectSame("InstanceNormalization", {In(t, {3, 2, 13}), In(kF32, {2}), In(kF32, {2})},
               {Out(t, {3, 2, 13})},
               [](plan::Kernel* k) { PlanBuilder::Float(k, "epsilon", 0.1f); });
  }
}

TEST(DeviceNnTest, InstanceNormGrad) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    ExpectSame("a8.InstanceNormalizationGrad",
               {In(t, {2, 3, 4, 5}), In(t, {2, 3, 4, 5}), In(t, {3})},
               {Out(t, {2, 3, 4, 5}), Out(t, {3}), Out(t, {3})});
    ExpectSame("a8.InstanceNormalizationGrad",
               {In(t, {3, 2, 11}), In(t, {3, 2, 11}), In(kF32, {2})},
               {Out(t, {3, 2, 11}), Out(kF32, {2}), None()});
  }
  ExpectSame("a8.InstanceNormalizationGrad",
             {In(kF64, {2, 2, 3, 3}), In(kF64, {2, 2, 3, 3}), In(kBF16, {2})},
             {None(), Out(kBF16, {2}), Out(kBF16, {2})});
}

// ---------------------------------------------------------------- pooling

AttrFn Pool(Dims kernel, Dims strides = {}, Dims pads = {}, Dims dilations = {}, int ceil = 0,
            int include_pad = 0, int storage_order = 0) {
  return [=](plan::Kernel* k) {
    PlanBuilder::Ints(k, "kernel_shape", kernel);
    if (!strides.empty()) PlanBuilder::Ints(k, "strides", strides);
    if (!pads.empty()) PlanBuilder::Ints(k, "pads", pads);
    if (!dilations.empty()) PlanBuilder::Ints(k, "dilations", dilations);
    if (ceil) PlanBuilder::Int(k, "ceil_mode", 1);
    if (include_pad) PlanBuilder::Int(k, "count_include_pad", 1);
    if (storage_order) PlanBuilder::Int(k, "storage_order", 1);
  };
}

// One pool geometry: X dims, its pooled output dims, the attributes.
struct PoolCase {
  Dims x, y;
  AttrFn attrs;
};

std::vector<PoolCase> PoolCases() {
  return {
      {{2, 3, 8, 6}, {2, 3, 4, 3}, Pool({2, 2}, {2, 2})},                // the CPU fast path
      {{2, 2, 7, 9}, {2, 2, 4, 5}, Pool({3, 3}, {2, 2}, {1, 1, 1, 1})},  // padded, overlapping
      {{1, 3, 7, 8}, {1, 3, 4, 4}, Pool({3, 2}, {2, 2}, {0, 0, 1, 0}, {}, 1)},   // ceil_mode
      {{2, 2, 9, 7}, {2, 2, 5, 3}, Pool({3, 2}, {1, 2}, {0, 0, 0, 0}, {2, 2})},  // dilations
      {{3, 2, 11}, {3, 2, 6}, Pool({4}, {2}, {2, 1})},                           // 1-D
      {{1, 2, 5, 4, 6}, {1, 2, 3, 2, 3}, Pool({2, 3, 2}, {2, 1, 2}, {1, 0, 0, 0, 0, 1})},  // 3-D
      {{2, 1, 5, 5}, {2, 1, 5, 5}, Pool({3, 3}, {1, 1}, {1, 1, 1, 1})},  // stride 1
  };
}

// PoolCases, then count_include_pad with ceil_mode (the last window overhangs the end pad too):
// AveragePool and its gradient.
std::vector<PoolCase> AveragePoolCases() {
  std::vector<PoolCase> cases = PoolCases();
  cases.push_back({{2, 2, 7, 8}, {2, 2, 4, 4}, Pool({3, 3}, {2, 2}, {1, 1, 1, 0}, {}, 1, 1)});
  return cases;
}

TEST(DeviceNnTest, MaxPool) {
  for (DType t : {kF32, kF16, kBF16, kF64, DType::kI8, DType::kU8}) {
    SCOPED_TRACE(DTypeName(t));
    const double lo = t == DType::kU8 ? 0 : -100, hi = 100;
    for (const PoolCase& c : PoolCases()) {
      ExpectSame("MaxPool", {In(t, c.x, lo, hi)}, {Out(t, c.y)}, c.attrs);
      ExpectSame("MaxPool", {In(t, c.x, lo, hi)}, {Out(t, c.y), Out(DType::kI64, c.y)}, c.attrs);
    }
  }
  // Column-major indices; ties (the first maximum wins).
  ExpectSame("MaxPool", {In(kF32, {2, 2, 5, 7})},
             {Out(kF32, {2, 2, 3, 3}), Out(DType::kI64, {2, 2, 3, 3})},
             Pool({3, 3}, {2, 3}, {1, 1, 1, 1}, {}, 0, 0, 1));
  ExpectSame("MaxPool", {In(kBF16, {2, 3, 6, 6})},
             {Out(kBF16, {2, 3, 5, 5}), Out(DType::kI64, {2, 3, 5, 5})}, Pool({2, 2}),
             {{0, SmallInts(kBF16, 2 * 3 * 36, 5, -1, 1)}});
}

TEST(DeviceNnTest, MaxPoolNaN) {
  // A NaN first tap stays the maximum; a later NaN never wins (MaxPool and GlobalMaxPool).
  std::vector<float> v(2 * 2 * 6 * 6);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-2, 2);
  for (float& x : v) x = d(rng);
  for (size_t i = 0; i < v.size(); i += 7) v[i] = std::nanf("");
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  ExpectSame("MaxPool", {In(kF32, {2, 2, 6, 6})},
             {Out(kF32, {2, 2, 5, 5}), Out(DType::kI64, {2, 2, 5, 5})}, Pool({2, 2}), {{0, bytes}});
  ExpectSame("MaxPool", {In(kF32, {2, 2, 6, 6})}, {Out(kF32, {2, 2, 3, 3})}, Pool({2, 2}, {2, 2}),
             {{0, bytes}});
  ExpectSame("GlobalMaxPool", {In(kF32, {2, 2, 6, 6})}, {Out(kF32, {2, 2, 1, 1})}, nullptr,
             {{0, bytes}});
  ExpectSame("a8.MaxPoolGrad", {In(kF32, {2, 2, 5, 5}), In(kF32, {2, 2, 6, 6})},
             {Out(kF32, {2, 2, 6, 6})}, Pool({2, 2}), {{1, bytes}});
}

TEST(DeviceNnTest, AveragePool) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    for (const PoolCase& c : AveragePoolCases())
      ExpectSame("AveragePool", {In(t, c.x)}, {Out(t, c.y)}, c.attrs);
    // count_include_pad, with ceil_mode, 1-D.
    ExpectSame("AveragePool", {In(t, {1, 3, 9})}, {Out(t, {1, 3, 5})},
               Pool({3}, {2}, {1, 1}, {}, 0, 1));
  }
}

TEST(DeviceNnTest, GlobalPools) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    ExpectSame("GlobalAveragePool", {In(t, {2, 3, 5, 7})}, {Out(t, {2, 3, 1, 1})});
    ExpectSame("GlobalMaxPool", {In(t, {2, 3, 5, 7})}, {Out(t, {2, 3, 1, 1})});
    ExpectSame("GlobalAveragePool", {In(t, {3, 4, 9})}, {Out(t, {3, 4, 1})});
    ExpectSame("GlobalMaxPool", {In(t, {1, 5, 2, 3, 3})}, {Out(t, {1, 5, 1, 1, 1})});
  }
}

TEST(DeviceNnTest, MaxPoolGrad) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    for (const PoolCase& c : PoolCases())
      ExpectSame("a8.MaxPoolGrad", {In(t, c.y), In(t, c.x)}, {Out(t, c.x)}, c.attrs);
  }
  // Many ties: each dY element goes to its window's first maximum only.
  const Dims x = {2, 2, 6, 7}, y = {2, 2, 5, 6};
  for (DType t : {kF32, kBF16}) {
    ExpectSame("a8.MaxPoolGrad", {In(t, y), In(t, x)}, {Out(t, x)}, Pool({2, 2}),
               {{1, SmallInts(t, Count(x), 9, -1, 1)}});
  }
}

TEST(DeviceNnTest, AveragePoolGrad) {
  for (DType t : kAllFloat) {
    SCOPED_TRACE(DTypeName(t));
    for (const PoolCase& c : AveragePoolCases())
      ExpectSame("a8.AveragePoolGrad", {In(t, c.y)}, {Out(t, c.x)}, c.attrs);
  }
}

// ---------------------------------------------------------------- entries called directly

// A tensor in host memory (the emulation's device memory).
struct HostTensor {
  DType dtype;
  Dims dims;
  std::vector<uint8_t> bytes;
};
HostTensor Random(DType t, Dims d, uint32_t seed, double lo = -2, double hi = 2) {
  return {t, d, RandomBytes(t, Count(d), seed, lo, hi)};
}

// Runs the CPU entry and the cuda-emu entry of `k` on copies of `ins` / `outs` with step.eval =
// `eval`; output j writes into input alias[j] when that is >= 0 (in-place running statistics).
// Both must succeed, or fail with the same code and message; every byte must agree.
void ExpectDirectSame(const plan::Kernel& k, const std::vector<HostTensor>& ins,
                      const std::vector<HostTensor>& outs, bool eval,
                      const std::vector<int>& alias = {}) {
  SCOPED_TRACE(k.op());
  std::vector<HostTensor> in[2] = {ins, ins}, out[2] = {outs, outs};
  std::vector<Status> status;
  for (int backend = 0; backend < 2; ++backend) {
    std::vector<TensorArg> ti, to;
    auto arg = [](HostTensor& h) {
      TensorArg t;
      t.present = true;
      t.dtype = h.dtype;
      t.dims = h.dims;
      t.data = h.bytes.data();
      return t;
    };
    for (HostTensor& h : in[backend]) ti.push_back(arg(h));
    for (size_t j = 0; j < out[backend].size(); ++j) {
      to.push_back(arg(out[backend][j]));
      if (j < alias.size() && alias[j] >= 0) to.back().data = ti[alias[j]].data;
    }
    KernelArgs args(&k, ti, to, {});
    args.step.eval = eval;
    if (backend == 0) {
      status.push_back(FindCpuBackendKernel(k.op())->fn(args));
    } else {
      emu::StepDev step;
      emu::DevCtx ctx;
      ctx.step = &step;
      status.push_back(emu::FindDeviceKernel(k.op())->fn(args, ctx));
      emu::Free(ctx.scratch);
    }
  }
  EXPECT_EQ(status[0].code(), status[1].code())
      << status[0].message() << " / " << status[1].message();
  EXPECT_EQ(status[0].message(), status[1].message());
  if (!status[0].ok()) return;
  for (size_t i = 0; i < ins.size(); ++i)
    EXPECT_EQ(in[0][i].bytes, in[1][i].bytes) << "input " << i;
  for (size_t j = 0; j < outs.size(); ++j)
    EXPECT_EQ(out[0][j].bytes, out[1][j].bytes) << "output " << j;
}

plan::Kernel KernelOf(const std::string& op, const AttrFn& attrs) {
  plan::Kernel k;
  k.set_op(op);
  attrs(&k);
  return k;
}

TEST(DeviceNnTest, BatchNormEvalStepAndInPlaceRunningStats) {
  for (DType st : {kF32, kF16}) {
    const Dims x = {3, 4, 5}, c = {4};
    const std::vector<HostTensor> ins = {Random(kF32, x, 1), Random(kF32, c, 2), Random(kF32, c, 3),
                                         Random(st, c, 4), Random(st, c, 5, 0.1, 2)};
    const std::vector<HostTensor> outs = {Random(kF32, x, 6), Random(st, c, 7), Random(st, c, 8)};
    const plan::Kernel k = KernelOf("BatchNormalization", Training(0.8f));
    // An evaluation step: running statistics used and copied through (or left, in place).
    ExpectDirectSame(k, ins, outs, /*eval=*/true);
    ExpectDirectSame(k, ins, outs, /*eval=*/true, {-1, 3, 4});
    // A training step updating the running statistics in place.
    ExpectDirectSame(k, ins, outs, /*eval=*/false, {-1, 3, 4});
  }
}

TEST(DeviceNnTest, ErrorsMatchTheCpu) {
  const std::vector<HostTensor> x = {Random(kF32, {1, 2, 5, 5}, 1)};
  const std::vector<HostTensor> y = {Random(kF32, {1, 2, 2, 2}, 2)};
  // kernel_shape of the wrong rank, a negative pad, a window larger than the padded input.
  ExpectDirectSame(KernelOf("MaxPool", Pool({2})), x, y, false);
  ExpectDirectSame(KernelOf("AveragePool", Pool({2, 2}, {}, {0, -1, 0, 0})), x, y, false);
  ExpectDirectSame(KernelOf("MaxPool", Pool({7, 2})), x, y, false);
  // dY that is not the pooled output.
  ExpectDirectSame(KernelOf("a8.AveragePoolGrad", Pool({2, 2})), y, {Random(kF32, {1, 2, 5, 5}, 3)},
                   false);
  // A LayerNorm axis out of range; a broadcast Scale in the gradient.
  ExpectDirectSame(
      KernelOf("LayerNormalization", [](plan::Kernel* k) { PlanBuilder::Int(k, "axis", 4); }),
      {Random(kF32, {2, 3}, 4), Random(kF32, {3}, 5)}, {Random(kF32, {2, 3}, 6)}, false);
  ExpectDirectSame(KernelOf("a8.LayerNormalizationGrad", [](plan::Kernel*) {}),
                   {Random(kF32, {2, 3}, 4), Random(kF32, {2, 3}, 5), Random(kF32, {1}, 6)},
                   {Random(kF32, {2, 3}, 7)}, false);
}

}  // namespace
}  // namespace a8::testing
