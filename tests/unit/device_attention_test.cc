// The fused attention kernels (kernels/device/attention.h: a8.FusedAttention and
// a8.FusedAttentionGrad) against naive softmax attention in double on random data: Y, LSE, dQ,
// dK, dV and dBias, in f32, f16, bf16 (f32 statistics inside) and f64, with group-query heads,
// Sq != Sk, head dims over one 64-dim chunk, broadcast and f32 biases, causal masks with an
// offset and fully masked rows (zeros, never NaN). Each runs on the CPU backend (the shared body
// through its host launch) and on the device under test (cuda-emu here, the GPU in
// a8_gpu_tests), which must also agree with the CPU bit for bit in emulation. The shape rules,
// the gradient through the compiled graph and the plan are tested in fused_attention_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast, used by device_test_util.h
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/device_test_util.h"

namespace a8::testing {
namespace {

using B = plan::Buffer;
using Dims = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  std::string name;
  int64_t b = 1, h = 2, hkv = 2, sq = 3, sk = 4, d = 8, dv = 8;
  bool causal = false;
  int64_t offset = 0;
  Dims bias_dims;  // empty: no bias
  bool bias_f32 = false;
  bool masked_rows = false;  // the bias's query row 1 is -inf everywhere
  double scale = 0;          // 0: the default 1 / sqrt(d)
};

// Naive attention in double with the [Sq, Sk] probabilities held: the forward and the gradients.
struct Reference {
  std::vector<double> y, lse, dq, dk, dv, dbias;
};

Reference Naive(const Case& c, const std::vector<double>& q, const std::vector<double>& k,
                const std::vector<double>& v, const std::vector<double>& bias,
                const std::vector<double>& dy) {
  Reference r;
  r.y.assign(c.b * c.h * c.sq * c.dv, 0);
  r.lse.assign(c.b * c.h * c.sq, 0);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(v.size(), 0);
  r.dbias.assign(bias.size(), 0);
  // The scale attribute is a float.
  const double scale = c.scale > 0 ? static_cast<double>(static_cast<float>(c.scale))
                                   : 1 / std::sqrt(static_cast<double>(c.d));
  Dims bd = c.bias_dims;
  while (!bd.empty() && bd.size() < 4) bd.insert(bd.begin(), 1);
  auto bias_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t at[4] = {b, h, i, j};
    int64_t idx = 0;
    for (int a = 0; a < 4; ++a) idx = idx * bd[a] + (bd[a] == 1 ? 0 : at[a]);
    return idx;
  };
  const int64_t group = c.h / c.hkv;
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t kh = b * c.hkv + h / group;
      for (int64_t i = 0; i < c.sq; ++i) {
        const int64_t row = (b * c.h + h) * c.sq + i;
        std::vector<double> s(c.sk, -kInf), p(c.sk, 0);
        double m = -kInf;
        for (int64_t j = 0; j < c.sk; ++j) {
          if (c.causal && j > i + c.offset) continue;
          double dot = 0;
          for (int64_t t = 0; t < c.d; ++t) dot += q[row * c.d + t] * k[(kh * c.sk + j) * c.d + t];
          s[j] = scale * dot + (bias.empty() ? 0 : bias[bias_at(b, h, i, j)]);
          m = std::max(m, s[j]);
        }
        if (m == -kInf) {
          r.lse[row] = kInf;
          continue;  // fully masked: Y and the gradients 0
        }
        double l = 0;
        for (int64_t j = 0; j < c.sk; ++j) l += s[j] == -kInf ? 0 : std::exp(s[j] - m);
        r.lse[row] = m + std::log(l);
        for (int64_t j = 0; j < c.sk; ++j) p[j] = s[j] == -kInf ? 0 : std::exp(s[j] - m) / l;
        std::vector<double> dp(c.sk, 0);
        double delta = 0;
        for (int64_t j = 0; j < c.sk; ++j) {
          for (int64_t t = 0; t < c.dv; ++t) {
            r.y[row * c.dv + t] += p[j] * v[(kh * c.sk + j) * c.dv + t];
            dp[j] += dy[row * c.dv + t] * v[(kh * c.sk + j) * c.dv + t];
          }
          delta += p[j] * dp[j];
        }
        for (int64_t j = 0; j < c.sk; ++j) {
          const double ds = p[j] * (dp[j] - delta);
          for (int64_t t = 0; t < c.d; ++t) {
            r.dq[row * c.d + t] += scale * ds * k[(kh * c.sk + j) * c.d + t];
            r.dk[(kh * c.sk + j) * c.d + t] += scale * ds * q[row * c.d + t];
          }
          for (int64_t t = 0; t < c.dv; ++t) {
            r.dv[(kh * c.sk + j) * c.dv + t] += p[j] * dy[row * c.dv + t];
          }
          if (!bias.empty()) r.dbias[bias_at(b, h, i, j)] += ds;
        }
      }
    }
  }
  return r;
}

// |got - want| <= atol + rtol |want| everywhere (Inf equal to the same Inf), and no NaN.
void ExpectNear(const std::string& what, const std::vector<double>& got,
                const std::vector<double>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 8; ++i) {
    if (std::isinf(want[i]) && got[i] == want[i]) continue;
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      ++bad;
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
}

struct Tolerance {
  double y, lse, grad;
};
Tolerance TolOf(DType t) {
  switch (t) {
    case DType::kF16:
      return {4e-3, 1e-4, 8e-3};
    case DType::kBF16:
      return {2.5e-2, 1e-4, 5e-2};
    case DType::kF64:
      return {1e-11, 1e-11, 1e-10};
    default:
      return {2e-5, 2e-5, 2e-4};
  }
}

// One plan: a8.FusedAttention (q, k, v, bias?) -> (y, lse), then a8.FusedAttentionGrad (dy, q, k,
// v, y, lse, bias?) -> (dq, dk, dv, dbias?).
PlanFile AttentionPlan(const Case& c, DType t) {
  const DType lse_t = t == DType::kF64 ? DType::kF64 : DType::kF32;
  const DType bias_t = c.bias_f32 ? DType::kF32 : t;
  const Dims qd = {c.b, c.h, c.sq, c.d}, kd = {c.b, c.hkv, c.sk, c.d};
  const Dims vd = {c.b, c.hkv, c.sk, c.dv}, yd = {c.b, c.h, c.sq, c.dv};
  PlanBuilder pb;
  const int q = pb.Buffer("q", t, qd, B::INPUT), k = pb.Buffer("k", t, kd, B::INPUT);
  const int v = pb.Buffer("v", t, vd, B::INPUT), dy = pb.Buffer("dy", t, yd, B::INPUT);
  const bool has_bias = !c.bias_dims.empty();
  const int bias = has_bias ? pb.Buffer("bias", bias_t, c.bias_dims, B::INPUT) : -1;
  const int y = pb.Buffer("y", t, yd, B::OUTPUT);
  const int lse = pb.Buffer("lse", lse_t, {c.b, c.h, c.sq}, B::OUTPUT);
  std::vector<int> grads = {pb.Buffer("dq", t, qd, B::OUTPUT), pb.Buffer("dk", t, kd, B::OUTPUT),
                            pb.Buffer("dv", t, vd, B::OUTPUT)};
  if (has_bias) grads.push_back(pb.Buffer("dbias", bias_t, c.bias_dims, B::OUTPUT));
  auto attrs = [&](plan::Kernel* kern) {
    if (c.causal) {
      PlanBuilder::Int(kern, "is_causal", 1);
      PlanBuilder::Int(kern, "causal_offset", c.offset);
    }
    if (c.scale > 0) {
      plan::Attribute* a = kern->add_attrs();
      a->set_name("scale");
      a->set_f(static_cast<float>(c.scale));
    }
  };
  std::vector<int> fwd_in = {q, k, v};
  if (has_bias) fwd_in.push_back(bias);
  attrs(pb.Kernel("a8.FusedAttention", fwd_in, {y, lse}));
  std::vector<int> grad_in = {dy, q, k, v, y, lse};
  if (has_bias) grad_in.push_back(bias);
  attrs(pb.Kernel("a8.FusedAttentionGrad", grad_in, grads));
  return pb.Finish();
}

// Random inputs (the bias in [-1, 1] with a few -inf, and fully masked rows when asked).
std::map<std::string, std::vector<uint8_t>> AttentionInputs(const Case& c, DType t, uint32_t seed) {
  std::map<std::string, std::vector<uint8_t>> in;
  in["q"] = RandomBytes(t, c.b * c.h * c.sq * c.d, seed, -1.5, 1.5);
  in["k"] = RandomBytes(t, c.b * c.hkv * c.sk * c.d, seed + 1, -1.5, 1.5);
  in["v"] = RandomBytes(t, c.b * c.hkv * c.sk * c.dv, seed + 2, -1, 1);
  in["dy"] = RandomBytes(t, c.b * c.h * c.sq * c.dv, seed + 3, -1, 1);
  if (!c.bias_dims.empty()) {
    std::mt19937 rng(seed + 4);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> bias(Count(c.bias_dims));
    for (double& x : bias) x = u(rng) > 0.85 ? -kInf : u(rng);
    const int64_t sk = c.bias_dims.back();
    const int64_t rows = c.bias_dims.size() >= 2 ? c.bias_dims[c.bias_dims.size() - 2] : 1;
    if (c.masked_rows && rows > 1) {
      for (int64_t at = 0; at < static_cast<int64_t>(bias.size()); ++at) {
        if ((at / sk) % rows == 1) bias[at] = -kInf;
      }
    }
    in["bias"] = FromDoubles(c.bias_f32 ? DType::kF32 : t, bias);
  }
  return in;
}

void CheckCase(const Case& c, DType t) {
  SCOPED_TRACE(c.name + " " + ElemName(t));
  const PlanFile plan = AttentionPlan(c, t);
  const auto in = AttentionInputs(c, t, 17);
  const DType bias_t = c.bias_f32 ? DType::kF32 : t;
  const DType lse_t = t == DType::kF64 ? DType::kF64 : DType::kF32;
  const Reference want =
      Naive(c, AsDoubles(t, in.at("q")), AsDoubles(t, in.at("k")), AsDoubles(t, in.at("v")),
            in.count("bias") ? AsDoubles(bias_t, in.at("bias")) : std::vector<double>{},
            AsDoubles(t, in.at("dy")));
  const Tolerance tol = TolOf(t);
  OnCpuThenDevice([&](std::unique_ptr<Backend> backend) {
    auto out = RunOn(plan, std::move(backend), in);
    ASSERT_EQ(out.count("y"), 1u);
    ExpectNear("y", AsDoubles(t, out["y"]), want.y, tol.y, tol.y);
    ExpectNear("lse", AsDoubles(lse_t, out["lse"]), want.lse, tol.lse, tol.lse);
    ExpectNear("dq", AsDoubles(t, out["dq"]), want.dq, tol.grad, tol.grad);
    ExpectNear("dk", AsDoubles(t, out["dk"]), want.dk, tol.grad, tol.grad);
    ExpectNear("dv", AsDoubles(t, out["dv"]), want.dv, tol.grad, tol.grad);
    if (!c.bias_dims.empty()) {
      const double bias_tol = c.bias_f32 ? TolOf(DType::kF32).grad * 10 : tol.grad;
      ExpectNear("dbias", AsDoubles(bias_t, out["dbias"]), want.dbias, bias_tol, bias_tol);
    }
  });
  ExpectEmuMatchesCpu(plan, in, 0, 0);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  Case plain;
  plain.name = "plain";
  cases.push_back(plain);
  Case gqa;
  gqa.name = "gqa, Sq != Sk, Dv != D, [Sq, Sk] bias";
  gqa.b = 2, gqa.h = 4, gqa.hkv = 2, gqa.sq = 5, gqa.sk = 7, gqa.d = 8, gqa.dv = 6;
  gqa.bias_dims = {5, 7};
  cases.push_back(gqa);
  Case causal;
  causal.name = "causal bottom-right, broadcast bias, scale";
  causal.b = 2, causal.h = 2, causal.hkv = 1, causal.sq = 4, causal.sk = 6;
  causal.causal = true, causal.offset = 2, causal.scale = 0.3;
  causal.bias_dims = {2, 1, 1, 6};
  cases.push_back(causal);
  Case masked;
  masked.name = "fully masked rows: by the bias and by a negative causal offset";
  masked.sq = 4, masked.sk = 5, masked.causal = true, masked.offset = -1;
  masked.bias_dims = {1, 2, 4, 5};
  masked.masked_rows = true;
  cases.push_back(masked);
  Case wide;
  wide.name = "head dims over one chunk, f32 bias";
  wide.h = 1, wide.hkv = 1, wide.sq = 3, wide.sk = 5, wide.d = 80, wide.dv = 70;
  wide.bias_dims = {3, 5};
  wide.bias_f32 = true;
  cases.push_back(wide);
  return cases;
}

TEST(FusedAttentionKernelTest, MatchesNaiveAttentionInDouble) {
  for (const Case& c : Cases()) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) CheckCase(c, t);
  }
}

TEST(FusedAttentionKernelTest, FullyMaskedRowsAreZeroNotNaN) {
  // Every key masked for every row: Y, dQ, dK, dV and dBias are exactly 0, LSE +inf.
  Case c;
  c.name = "all masked";
  c.bias_dims = {1, 1, 3, 4};
  const PlanFile plan = AttentionPlan(c, DType::kF16);
  auto in = AttentionInputs(c, DType::kF16, 3);
  in["bias"] = FromDoubles(DType::kF16, std::vector<double>(12, -kInf));
  auto dev = DeviceUnderTest();
#if defined(A8_DEVICE_TESTS_ON_GPU)
  if (!dev.ok()) GTEST_SKIP() << "no usable GPU: " << dev.status().message();
#endif
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  auto out = RunOn(plan, std::move(dev).value(), in);
  for (const char* name : {"y", "dq", "dk", "dv", "dbias"}) {
    for (double x : AsDoubles(DType::kF16, out[name])) EXPECT_EQ(x, 0.0) << name;
  }
  for (double x : AsDoubles(DType::kF32, out["lse"])) EXPECT_EQ(x, kInf);
}

TEST(FusedAttentionKernelTest, BadOperandsAreErrors) {
  // K's head dim differs from Q's: the entry refuses the plan, naming the op.
  PlanBuilder pb;
  const int q = pb.Buffer("q", DType::kF32, {1, 1, 2, 4}, B::INPUT);
  const int k = pb.Buffer("k", DType::kF32, {1, 1, 3, 5}, B::INPUT);
  const int v = pb.Buffer("v", DType::kF32, {1, 1, 3, 4}, B::INPUT);
  const int y = pb.Buffer("y", DType::kF32, {1, 1, 2, 4}, B::OUTPUT);
  const int lse = pb.Buffer("lse", DType::kF32, {1, 1, 2}, B::OUTPUT);
  pb.Kernel("a8.FusedAttention", {q, k, v}, {y, lse});
  auto ex = Executor::Create(pb.Finish(), MakeCpuBackend());
  Status s = ex.status();
  if (ex.ok()) {
    for (const char* name : {"q", "k", "v"}) {
      const std::vector<uint8_t> zeros(64, 0);
      const size_t bytes = name[0] == 'q' ? 32 : name[0] == 'k' ? 60 : 48;
      Status set = (*ex)->SetInput(name, zeros.data(), bytes);
      ASSERT_TRUE(set.ok()) << set.message();
    }
    s = (*ex)->Run();
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("FusedAttention"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace a8::testing
