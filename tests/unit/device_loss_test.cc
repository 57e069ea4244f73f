// The loss kernels of the CUDA backend (kernels/device/loss_optim*.h) through its host
// emulation, against the CPU backend: one-kernel plans on random data, every dtype the entries
// take, odd sizes and optional operands. The CPU backend runs the same loss bodies on the host
// (their math is tested in shared_grad_nn_test.cc), so this checks the two backends' plumbing, bit
// for bit (device_test_util.h ExpectBitExact).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"  // cpu::Cast (device_test_util.h uses it too)
#include "tests/unit/device_test_util.h"

namespace a8 {
namespace {

using testing::Count;
using testing::ExpectBitExact;
using testing::PlanBuilder;
using testing::RandomBytes;
using Role = plan::Buffer;
using Feed = testing::Snapshot;

std::vector<uint8_t> Labels(DType dtype, int64_t n, int64_t classes, int64_t ignore,
                            uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<double>((i * 7 + seed) % classes);
    if (i % 5 == 3) v[i] = static_cast<double>(ignore);  // some targets ignored
  }
  return testing::FromDoubles(dtype, v);
}

struct LossCase {
  std::vector<int64_t> dims;  // scores [N, C, d...]
  std::string reduction;
  bool weights, ignore, i32_labels;
};

const std::vector<LossCase> kLossCases = {
    {{5, 7}, "mean", false, false, false},  {{5, 7}, "sum", true, true, true},
    {{3, 4, 5}, "none", true, true, false}, {{2, 3, 2, 3}, "mean", true, true, true},
    {{9, 1}, "mean", false, true, false},   {{4, 6, 3}, "sum", false, false, true},
};

std::vector<int64_t> TargetDims(const std::vector<int64_t>& dims) {
  std::vector<int64_t> t = {dims[0]};
  t.insert(t.end(), dims.begin() + 2, dims.end());
  return t;
}

// Forward (grad = false) or gradient plan of SoftmaxCrossEntropyLoss (sce) / NLL.
PlanFile LossPlan(DType t, const LossCase& c, bool sce, bool grad, bool log_prob, Feed* feed) {
  PlanBuilder pb;
  const DType lt = c.i32_labels ? DType::kI32 : DType::kI64;
  const std::vector<int64_t> tdims = TargetDims(c.dims);
  const int64_t ignore = c.dims[1] > 2 ? 1 : -100;
  int x = pb.Buffer("x", t, c.dims, Role::INPUT);
  int l = pb.Buffer("labels", lt, tdims, Role::INPUT);
  (*feed)["labels"] = Labels(lt, Count(tdims), c.dims[1], c.ignore ? ignore : 0, 3);
  int w = c.weights ? pb.Buffer("w", t, {c.dims[1]}, Role::INPUT) : -1;
  if (c.weights) (*feed)["w"] = RandomBytes(t, c.dims[1], 9, 0.1, 2.0);
  plan::Kernel* k = nullptr;
  if (!grad) {
    int y =
        pb.Buffer("loss", t, c.reduction == "none" ? tdims : std::vector<int64_t>{}, Role::OUTPUT);
    std::vector<int> outs = {y};
    if (log_prob) outs.push_back(pb.Buffer("log_prob", t, c.dims, Role::OUTPUT));
    std::vector<int> ins = {x, l};
    if (w >= 0) ins.push_back(w);
    k = pb.Kernel(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", ins, outs);
  } else {
    int dl =
        pb.Buffer("dloss", t, c.reduction == "none" ? tdims : std::vector<int64_t>{}, Role::INPUT);
    int dx = pb.Buffer("dx", t, c.dims, Role::OUTPUT);
    std::vector<int> ins = sce ? std::vector<int>{dl, x, l} : std::vector<int>{dl, l};
    if (w >= 0) ins.push_back(w);
    k = pb.Kernel(sce ? "a8.SoftmaxCrossEntropyLossGrad" : "a8.NegativeLogLikelihoodLossGrad", ins,
                  {dx});
  }
  testing::Str(k, "reduction", c.reduction);
  if (c.ignore) PlanBuilder::Int(k, "ignore_index", ignore);
  return pb.Finish();
}

TEST(DeviceLossTest, SoftmaxCrossEntropyAndNllMatchCpu) {
  for (DType t : kFloatTypes) {
    for (const LossCase& c : kLossCases) {
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(std::string(testing::Name(t)) + " " + c.reduction + " variant " +
                     std::to_string(variant) + " rank " + std::to_string(c.dims.size()));
        Feed feed;
        PlanFile f = variant == 2 ? LossPlan(t, c, false, false, false, &feed)
                                  : LossPlan(t, c, true, false, variant == 1, &feed);
        ExpectBitExact(f, {feed});
      }
    }
  }
}

TEST(DeviceLossTest, LossGradientsMatchCpu) {
  for (DType t : kFloatTypes) {
    for (const LossCase& c : kLossCases) {
      for (bool sce : {true, false}) {
        SCOPED_TRACE(std::string(testing::Name(t)) + " " + c.reduction + (sce ? " sce" : " nll"));
        Feed feed;
        PlanFile f = LossPlan(t, c, sce, true, false, &feed);  // fills feed first
        ExpectBitExact(f, {feed});
      }
    }
  }
}

TEST(DeviceLossTest, LossWithEveryTargetIgnoredIsNaNOnBoth) {
  LossCase c{{3, 4}, "mean", false, true, false};
  Feed feed;
  PlanFile f = LossPlan(DType::kF32, c, true, false, false, &feed);
  feed["labels"] = testing::Bytes(std::vector<int64_t>{1, 1, 1});
  auto got = ExpectBitExact(f, {feed});
  ASSERT_EQ(got.size(), 1u);
  float loss;
  std::memcpy(&loss, got[0]["loss"].data(), 4);
  EXPECT_TRUE(std::isnan(loss));
}

// One step of `f` on `backend` with the labels of `feed` (the other inputs left zero).
Status RunLabels(const PlanFile& f, StatusOr<std::unique_ptr<Backend>> backend, Feed& feed) {
  A8_RETURN_IF_ERROR(backend.status());
  auto ex = Executor::Create(f, std::move(backend).value());
  A8_RETURN_IF_ERROR(ex.status());
  A8_RETURN_IF_ERROR((*ex)->SetInput("labels", feed["labels"].data(), feed["labels"].size()));
  return (*ex)->Run();
}

TEST(DeviceLossTest, BadReductionIsTheCpuError) {
  LossCase c{{3, 4}, "avg", false, false, false};
  Feed feed;
  PlanFile f = LossPlan(DType::kF32, c, true, false, false, &feed);
  Status s = RunLabels(f, MakeCudaEmuBackend(), feed);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("SoftmaxCrossEntropyLoss: reduction: unknown value 'avg'"),
            std::string::npos)
      << s.message();
}

// Host memory (the CPU backend, cuda-emu) lets the entry name the label; on a GPU the kernel
// raises DevErr and the backend names the kernel after the step.
TEST(DeviceLossTest, LabelOutsideTheClassesIsNamedOnBoth) {
  LossCase c{{3, 4}, "mean", false, false, false};
  for (bool grad : {false, true}) {
    for (bool sce : {true, false}) {
      Feed feed;
      PlanFile f = LossPlan(DType::kF32, c, sce, grad, false, &feed);
      feed["labels"] = testing::Bytes(std::vector<int64_t>{0, 7, 1});
      const std::string op = std::string(grad ? "a8." : "") +
                             (sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss") +
                             (grad ? "Grad" : "");
      for (bool cpu : {true, false}) {
        SCOPED_TRACE(op + (cpu ? " cpu" : " cuda-emu"));
        using Made = StatusOr<std::unique_ptr<Backend>>;
        Status s = RunLabels(f, cpu ? Made(MakeCpuBackend()) : MakeCudaEmuBackend(), feed);
        EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
        EXPECT_NE(s.message().find(op + ": label 7 (target 1) is outside [0, 4)"),
                  std::string::npos)
            << s.message();
      }
    }
  }
}

TEST(DeviceLossTest, PairLossesAndGradientsMatchCpu) {
  const char* kOps[] = {"a8.MseLoss", "a8.L1Loss", "a8.BceWithLogitsLoss"};
  for (DType t : kFloatTypes) {
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{37}, {3, 5, 7}, {1}, {2, 1000}}) {
      for (const char* op : kOps) {
        SCOPED_TRACE(std::string(testing::Name(t)) + " " + op + " n " +
                     std::to_string(Count(dims)));
        {
          PlanBuilder pb;
          int x = pb.Buffer("x", t, dims, Role::INPUT);
          int y = pb.Buffer("y", t, dims, Role::INPUT);
          pb.Kernel(op, {x, y}, {pb.Buffer("loss", t, {}, Role::OUTPUT)});
          Feed feed;
          // BCE targets in [0, 1].
          feed["y"] = std::string(op) == "a8.BceWithLogitsLoss"
                          ? RandomBytes(t, Count(dims), 5, 0, 1)
                          : RandomBytes(t, Count(dims), 5);
          ExpectBitExact(pb.Finish(), {feed});
        }
        for (bool both : {true, false}) {
          PlanBuilder pb;
          int dl = pb.Buffer("dloss", t, {}, Role::INPUT);
          int x = pb.Buffer("x", t, dims, Role::INPUT);
          int y = pb.Buffer("y", t, dims, Role::INPUT);
          std::vector<int> outs = {pb.Buffer("dx", t, dims, Role::OUTPUT)};
          if (both) outs.push_back(pb.Buffer("dy", t, dims, Role::OUTPUT));
          pb.Kernel(std::string(op) + "Grad", {dl, x, y}, outs);
          Feed feed;
          feed["x"] = RandomBytes(t, Count(dims), 7);
          feed["y"] = RandomBytes(t, Count(dims), 6);
          std::memcpy(feed["y"].data(), feed["x"].data(), DTypeSize(t));  // a tie: L1's sign(0)
          ExpectBitExact(pb.Finish(), {feed});
        }
      }
    }
  }
}

// ---- step control and loss scaling

}  // namespace
}  // namespace a8
