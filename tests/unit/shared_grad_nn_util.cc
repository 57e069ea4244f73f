#include "tests/unit/shared_grad_nn_util.h"

#include "kernels/device/elementwise.h"
#include "kernels/device/loss_optim.h"
#include "kernels/device/reduce.h"
#include "kernels/emu/run_on_host.h"
#include "runtime/device/device_registry.h"

namespace a8::testing::grad_nn {
namespace {

// A class loss or its gradient: `args` with the LossShape of `p` (raising into ctx's error word).
template <typename Args>
Status OnHostWithShape(const LossParams& p, const char* op, Args args,
                       emu::DevStatus (*launch)(emu::DevCtx&, const Args&)) {
  A8_ASSIGN_OR_RETURN(args.shape, emu::LossShapeFrom(p, op));
  return emu::RunOnHost([&](emu::DevCtx& ctx) {
    args.shape.err = emu::ErrOf(ctx);
    return launch(ctx, args);
  });
}

// A class loss (`softmax`: SoftmaxCrossEntropyLoss, else NegativeLogLikelihoodLoss) of scores x.
Status ClassLoss(const LossParams& p, bool softmax, const void* x, const void* labels,
                 const void* weights, void* loss, void* log_prob) {
  emu::LossParams a;
  a.scores = x, a.labels = labels, a.weights = weights, a.loss = loss, a.log_prob = log_prob;
  return softmax
             ? OnHostWithShape(p, "SoftmaxCrossEntropyLoss", a, emu::SoftmaxCrossEntropyLoss)
             : OnHostWithShape(p, "NegativeLogLikelihoodLoss", a, emu::NegativeLogLikelihoodLoss);
}

// Its gradient (scores: SoftmaxCrossEntropyLoss's only).
Status ClassLossGrad(const LossParams& p, bool softmax, const void* dloss, const void* scores,
                     const void* labels, const void* weights, void* dx) {
  emu::LossGradParams a;
  a.dloss = dloss, a.scores = scores, a.labels = labels, a.weights = weights, a.dscores = dx;
  return softmax ? OnHostWithShape(p, "a8.SoftmaxCrossEntropyLossGrad", a,
                                   emu::SoftmaxCrossEntropyLossGrad)
                 : OnHostWithShape(p, "a8.NegativeLogLikelihoodLossGrad", a,
                                   emu::NegativeLogLikelihoodLossGrad);
}

}  // namespace

Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob) {
  return ClassLoss(p, true, scores, labels, weights, loss, log_prob);
}

Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss) {
  return ClassLoss(p, false, input, labels, weights, loss, nullptr);
}

Status SoftmaxCrossEntropyLossGrad(const LossParams& p, const void* dloss, const void* scores,
                                   const void* labels, const void* weights, void* dscores) {
  return ClassLossGrad(p, true, dloss, scores, labels, weights, dscores);
}

Status NegativeLogLikelihoodLossGrad(const LossParams& p, const void* dloss, const void* labels,
                                     const void* weights, void* dinput) {
  return ClassLossGrad(p, false, dloss, nullptr, labels, weights, dinput);
}

Status PairLossForward(PairLossKind kind, DType dtype, int64_t n, const void* pred,
                       const void* target, void* loss) {
  emu::PairLossParams a;
  a.kind = kind, a.dtype = dtype, a.n = n, a.pred = pred, a.target = target, a.loss = loss;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::PairLossForward(ctx, a); });
}

Status PairLossGrad(PairLossKind kind, DType dtype, int64_t n, const void* dloss, const void* pred,
                    const void* target, void* dpred, void* dtarget) {
  emu::PairLossParams a;
  a.kind = kind, a.dtype = dtype, a.n = n, a.dloss = dloss, a.pred = pred, a.target = target;
  a.dpred = dpred, a.dtarget = dtarget;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::PairLossGrad(ctx, a); });
}

Status SoftmaxGrad(DType dtype, const Dims& dims, int64_t axis, bool log, const void* dy,
                   const void* y, void* dx) {
  emu::SoftmaxGradParams a;
  a.log = log, a.dtype = dtype, a.dy = dy, a.y = y, a.dx = dx;
  a.view.outer = NumElements(Dims(dims.begin(), dims.begin() + axis));
  a.view.len = dims[axis];
  a.view.inner = NumElements(Dims(dims.begin() + axis + 1, dims.end()));
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::SoftmaxGrad(ctx, a); });
}

Status DropoutGrad(DType dtype, int64_t n, const void* dy, const bool* mask, float ratio,
                   void* dx) {
  const bool training = true;
  emu::DropoutGradParams a;
  a.dtype = dtype, a.n = n, a.dy = dy, a.mask = mask, a.dx = dx;
  a.ratio = &ratio, a.ratio_dtype = DType::kF32, a.training = &training;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::DropoutGrad(ctx, a); });
}

}  // namespace a8::testing::grad_nn
