// Tests of the CUDA backend's kernels through its host emulation ("cuda-emu", the same source
// compiled for the CPU: kernels/device/device.h): a plan runs once on the CPU reference backend
// and once on cuda-emu with the same inputs, and every graph output must agree.
//
// The same test files are also compiled into a8_gpu_tests (ctest label gpu) with
// A8_DEVICE_TESTS_ON_GPU: there the plans run on the real CUDA backend (skipped, with the reason,
// without a GPU), with per-dtype tolerance floors for what the GPU rounds differently (fused
// multiply-adds, the CUDA math library, cuBLASLt/cuDNN summation orders).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/dtype.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/registry.h"
#include "runtime/device/device_backend.h"
#include "runtime/device/device_registry.h"
#include "tests/unit/runtime_test_util.h"

namespace a8::testing {

// The element count of `dims`.
inline int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A string attribute of a hand-built kernel (PlanBuilder::Int, Float, Ints give the others).
inline void Str(plan::Kernel* k, const std::string& name, const std::string& v) {
  plan::Attribute* a = k->add_attrs();
  a->set_name(name);
  a->set_s(v);
}

// `v` as `dtype` bytes (through the CPU's Cast).
inline std::vector<uint8_t> FromDoubles(DType dtype, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * DTypeSize(dtype));
  EXPECT_TRUE(
      cpu::Cast(DType::kF64, dtype, static_cast<int64_t>(v.size()), v.data(), out.data()).ok());
  return out;
}

// A dtype's name, for test parameter names.
inline std::string Name(DType t) { return std::string(DTypeName(t)); }

// The raw bytes of a vector (index operands, scalars, hand-written data).
template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// `n` random elements of `dtype` in [lo, hi] (integers: rounded; bool: 0/1), as raw bytes.
inline std::vector<uint8_t> RandomBytes(DType dtype, int64_t n, uint32_t seed, double lo = -2,
                                        double hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    x = d(rng);
    if (dtype == DType::kBool)
      x = x > (lo + hi) / 2 ? 1 : 0;
    else if (!IsFloat(dtype))
      x = std::round(x);
  }
  std::vector<uint8_t> out(static_cast<size_t>(n) * DTypeSize(dtype));
  Status s = cpu::Cast(DType::kF64, dtype, n, v.data(), out.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// Buffer bytes as float64.
inline std::vector<double> AsDoubles(DType dtype, const std::vector<uint8_t>& bytes) {
  const int64_t n = static_cast<int64_t>(bytes.size() / DTypeSize(dtype));
  std::vector<double> v(static_cast<size_t>(n));
  Status s = cpu::Cast(dtype, DType::kF64, n, bytes.data(), v.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

using Snapshot = std::map<std::string, std::vector<uint8_t>>;

// Runs `f` (a plan, e.g. from PlanBuilder) on `backend`, step s fed `feeds[s]` (by input name;
// missing inputs get random values, seeded from `seed` + s), and returns after each step every
// output's bytes and (training plans) each parameter/state buffer's bytes, keyed by buffer name.
// A failed step ends the run: its snapshots stop there.
inline std::vector<Snapshot> RunSteps(PlanFile f, std::unique_ptr<Backend> backend,
                                      const std::vector<Snapshot>& feeds, uint32_t seed = 100) {
  std::vector<Snapshot> out;
  auto ex = Executor::Create(std::move(f), std::move(backend));
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return out;
  Executor& e = **ex;
  auto read = [&](int id) {
    std::vector<uint8_t> bytes(e.plan().buffers(id).bytes());
    EXPECT_TRUE(e.ReadBuffer(id, bytes.data()).ok());
    return bytes;
  };
  for (size_t s = 0; s < feeds.size(); ++s) {
    uint32_t input_seed = seed + static_cast<uint32_t>(s);
    for (const plan::Binding& b : e.plan().inputs()) {
      const plan::Buffer& buf = e.plan().buffers(b.buffer());
      const DType t = static_cast<DType>(buf.type().dtype());
      auto it = feeds[s].find(b.name());
      std::vector<uint8_t> bytes =
          it != feeds[s].end()
              ? it->second
              : RandomBytes(t, static_cast<int64_t>(buf.bytes() / DTypeSize(t)), input_seed++);
      Status st = e.SetInput(b.name(), bytes.data(), bytes.size());
      EXPECT_TRUE(st.ok()) << st.message();
    }
    Status st = e.Run();
    EXPECT_TRUE(st.ok()) << e.backend().name() << ": " << st.message();
    if (!st.ok()) return out;
    Snapshot snap;
    for (const plan::Binding& b : e.plan().outputs()) snap[b.name()] = read(b.buffer());
    for (int id : e.checkpoint_buffers()) snap[e.plan().buffers(id).name()] = read(id);
    out.push_back(std::move(snap));
  }
  return out;
}

// `steps` steps of `f` on `backend`, each fed `inputs` (missing inputs: random, as RunSteps), and
// the snapshot after the last one (empty if a step failed).
inline Snapshot RunOn(PlanFile f, std::unique_ptr<Backend> backend, const Snapshot& inputs,
                      int steps = 1) {
  std::vector<Snapshot> snaps =
      RunSteps(std::move(f), std::move(backend), std::vector<Snapshot>(steps, inputs), 1000);
  return static_cast<int>(snaps.size()) == steps && steps > 0 ? snaps.back() : Snapshot{};
}

// CPU and cuda-emu agree byte for byte on every output and state buffer after every step of
// RunSteps(f, feeds) (the first five differing elements of a buffer are reported); returns the
// emulation's snapshots.
inline std::vector<Snapshot> ExpectBitExact(const PlanFile& f, const std::vector<Snapshot>& feeds) {
  auto want = RunSteps(f, MakeCpuBackend(), feeds);
  auto emu = MakeCudaEmuBackend();
  EXPECT_TRUE(emu.ok()) << emu.status().message();
  if (!emu.ok()) return {};
  auto got = RunSteps(f, std::move(emu).value(), feeds);
  EXPECT_EQ(got.size(), want.size());
  std::map<std::string, DType> types;
  for (const plan::Buffer& b : f.plan.buffers())
    types[b.name()] = static_cast<DType>(b.type().dtype());
  for (size_t s = 0; s < want.size() && s < got.size(); ++s) {
    for (const auto& [name, w] : want[s]) {
      const std::vector<uint8_t>& g = got[s][name];
      EXPECT_EQ(g.size(), w.size()) << name;
      if (g == w) continue;
      const size_t size = DTypeSize(types[name]);
      std::vector<double> wd = AsDoubles(types[name], w), gd = AsDoubles(types[name], g);
      for (size_t i = 0, bad = 0; i < wd.size() && i < gd.size() && bad < 5; ++i) {
        if (std::memcmp(&w[i * size], &g[i * size], size) == 0) continue;
        ++bad;
        ADD_FAILURE() << "step " << s << " '" << name << "'[" << i << "]: cuda-emu " << gd[i]
                      << ", cpu " << wd[i];
      }
    }
  }
  return got;
}

// `n` random integers in [lo, hi] as `dtype`, as raw bytes: ties for ArgMax/ArgMin and pools,
// exact products for ReduceProd.
inline std::vector<uint8_t> SmallInts(DType dtype, int64_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(rng);
  std::vector<uint8_t> out(static_cast<size_t>(n) * DTypeSize(dtype));
  EXPECT_TRUE(cpu::Cast(DType::kF64, dtype, n, v.data(), out.data()).ok());
  return out;
}

// The CUDA backend has an entry for `op` with the CPU backend's dtypes (its own entry's, and
// those it runs the device body for on the host) and type operand.
inline void ExpectDeviceEntryLikeCpu(const std::string& op) {
  ASSERT_NE(FindCpuKernel(op), nullptr) << op;
  const CpuKernelEntry* c = FindCpuBackendKernel(op);
  const emu::DevKernelEntry* d = emu::FindDeviceKernel(op);
  ASSERT_NE(c, nullptr) << op;
  ASSERT_NE(d, nullptr) << op;
  std::vector<DType> dt = d->types, ct = c->types;
  std::sort(dt.begin(), dt.end());
  std::sort(ct.begin(), ct.end());
  EXPECT_EQ(dt, ct) << op;
  EXPECT_EQ(d->type_input, c->type_input) << op;
}

// The backend under test: cuda-emu, or the CUDA backend in a8_gpu_tests.
inline StatusOr<std::unique_ptr<Backend>> DeviceUnderTest() {
#if defined(A8_DEVICE_TESTS_ON_GPU)
  return MakeCudaBackend();
#else
  return MakeCudaEmuBackend();
#endif
}

// Runs `body` on the CPU backend, then on the device under test, each under a SCOPED_TRACE
// naming it. In a8_gpu_tests on a machine without a usable GPU the device run is skipped with
// the reason; anywhere else a device that cannot be created fails the test.
inline void OnCpuThenDevice(const std::function<void(std::unique_ptr<Backend>)>& body) {
  {
    SCOPED_TRACE("on the CPU");
    body(MakeCpuBackend());
  }
  auto dev = DeviceUnderTest();
#if defined(A8_DEVICE_TESTS_ON_GPU)
  if (!dev.ok()) GTEST_SKIP() << "no usable GPU: " << dev.status().message();
#endif
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  SCOPED_TRACE("on the device");
  body(std::move(dev).value());
}

// The least tolerance of a dtype on the GPU (0 in emulation): a few ulps of the dtype, scaled for
// sums of a few hundred terms.
inline double GpuTolFloor(DType t) {
#if defined(A8_DEVICE_TESTS_ON_GPU)
  switch (t) {
    case DType::kF32:
      return 2e-5;
    case DType::kF16:
      return 2e-3;
    case DType::kBF16:
      return 1.6e-2;
    case DType::kF64:
      return 1e-12;
    default:
      return 0;
  }
#else
  (void)t;
  return 0;
#endif
}

// An operand of a one-kernel test plan: dtype, dims, the range of an input's random values, or
// absent (an optional operand left out).
struct KernelOperand {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  double lo = -2, hi = 2;
  bool absent = false;
};

// A plan of the one kernel `op` on input buffers in0, in1, ... and output buffers out0, ..., and
// its inputs: input i random in its range, seeded seed + seed_step * i, unless `values` has it.
struct OneKernelPlan {
  PlanFile plan;
  std::map<std::string, std::vector<uint8_t>> inputs;
};
inline OneKernelPlan BuildOneKernelPlan(const std::string& op,
                                        const std::vector<KernelOperand>& ins,
                                        const std::vector<KernelOperand>& outs,
                                        const std::function<void(plan::Kernel*)>& attrs,
                                        uint32_t seed, uint32_t seed_step,
                                        const std::map<int, std::vector<uint8_t>>& values = {}) {
  PlanBuilder b;
  OneKernelPlan p;
  std::vector<int> in_ids, out_ids;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].absent) {
      in_ids.push_back(-1);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    in_ids.push_back(b.Buffer(name, ins[i].dtype, ins[i].dims, plan::Buffer::INPUT));
    auto it = values.find(static_cast<int>(i));
    int64_t count = 1;
    for (int64_t d : ins[i].dims) count *= d;
    p.inputs[name] = it != values.end() ? it->second
                                        : RandomBytes(ins[i].dtype, count,
                                                      seed + seed_step * static_cast<uint32_t>(i),
                                                      ins[i].lo, ins[i].hi);
  }
  // PlanBuilder names the kernel from its operands' dtypes: an absent output is bound to a
  // placeholder buffer for that, then unbound.
  std::vector<int> absent_outputs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].absent) {
      absent_outputs.push_back(static_cast<int>(i));
      out_ids.push_back(in_ids[0]);
      continue;
    }
    out_ids.push_back(
        b.Buffer("out" + std::to_string(i), outs[i].dtype, outs[i].dims, plan::Buffer::OUTPUT));
  }
  plan::Kernel* k = b.Kernel(op, in_ids, out_ids);
  for (int j : absent_outputs) k->set_outputs(j, -1);
  if (attrs) attrs(k);
  p.plan = b.Finish();
  return p;
}

// The plan on the CPU backend and on cuda-emu: every output (and parameter/state) within
// |got - want| <= atol + rtol * |want| (NaN matches NaN, Inf matches the same Inf).
inline void ExpectEmuMatchesCpu(const PlanFile& f,
                                const std::map<std::string, std::vector<uint8_t>>& inputs,
                                double rtol, double atol, int steps = 1) {
  auto dev = DeviceUnderTest();
#if defined(A8_DEVICE_TESTS_ON_GPU)
  if (!dev.ok()) GTEST_SKIP() << "no usable GPU: " << dev.status().message();
#endif
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  auto want = RunOn(f, MakeCpuBackend(), inputs, steps);
  auto got = RunOn(f, std::move(dev).value(), inputs, steps);
  ASSERT_EQ(got.size(), want.size());
  std::map<std::string, DType> types;
  for (const plan::Buffer& b : f.plan.buffers())
    types[b.name()] = static_cast<DType>(b.type().dtype());
  for (const auto& [name, wbytes] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    const DType t = types[name];
    const double floor = GpuTolFloor(t);
    const double rt = std::max(rtol, floor), at = std::max(atol, floor);
    std::vector<double> w = AsDoubles(t, wbytes), g = AsDoubles(t, got[name]);
    ASSERT_EQ(w.size(), g.size()) << name;
    int bad = 0;
    for (size_t i = 0; i < w.size() && bad < 10; ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      if (!(std::fabs(g[i] - w[i]) <= at + rt * std::fabs(w[i]))) {
        ++bad;
        ADD_FAILURE() << "output '" << name << "' element " << i << ": device " << g[i] << ", cpu "
                      << w[i];
      }
    }
  }
}

}  // namespace a8::testing
