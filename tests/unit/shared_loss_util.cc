#include "tests/unit/shared_loss_util.h"

#include "kernels/device/loss_optim.h"
#include "runtime/device/device_registry.h"

namespace a8::testing::loss {
namespace {

// A host "device" context with an error word: scratch from the host allocator, freed after the
// call; a raised DevErr is InvalidInput, as the CPU backend reports it.
template <typename Fn>
Status OnHost(Fn&& fn) {
  emu::DevCtx ctx;
  int32_t error = 0;
  ctx.error_word = &error;
  ctx.error_tag = 1;
  const emu::DevStatus s = fn(ctx);
  emu::ReleaseScratch(ctx);
  A8_RETURN_IF_ERROR(emu::FromDev(s));
  if (error != 0) return InvalidInput("a label is outside [0, classes)");
  return Status::Ok();
}

}  // namespace

Status SoftmaxCrossEntropyLoss(const LossParams& p, const void* scores, const void* labels,
                               const void* weights, void* loss, void* log_prob) {
  emu::LossParams a;
  A8_ASSIGN_OR_RETURN(a.shape, emu::LossShapeFrom(p, "SoftmaxCrossEntropyLoss"));
  a.scores = scores, a.labels = labels, a.weights = weights, a.loss = loss, a.log_prob = log_prob;
  return OnHost([&](emu::DevCtx& ctx) {
    a.shape.err = emu::ErrOf(ctx);
    return emu::SoftmaxCrossEntropyLoss(ctx, a);
  });
}

Status NegativeLogLikelihoodLoss(const LossParams& p, const void* input, const void* labels,
                                 const void* weights, void* loss) {
  emu::LossParams a;
  A8_ASSIGN_OR_RETURN(a.shape, emu::LossShapeFrom(p, "NegativeLogLikelihoodLoss"));
  a.scores = input, a.labels = labels, a.weights = weights, a.loss = loss;
  return OnHost([&](emu::DevCtx& ctx) {
    a.shape.err = emu::ErrOf(ctx);
    return emu::NegativeLogLikelihoodLoss(ctx, a);
  });
}

Status SoftmaxCrossEntropyLossGrad(const LossParams& p, const void* dloss, const void* scores,
                                   const void* labels, const void* weights, void* dscores) {
  emu::LossGradParams a;
  A8_ASSIGN_OR_RETURN(a.shape, emu::LossShapeFrom(p, "a8.SoftmaxCrossEntropyLossGrad"));
  a.dloss = dloss, a.scores = scores, a.labels = labels, a.weights = weights, a.dscores = dscores;
  return OnHost([&](emu::DevCtx& ctx) {
    a.shape.err = emu::ErrOf(ctx);
    return emu::SoftmaxCrossEntropyLossGrad(ctx, a);
  });
}

Status NegativeLogLikelihoodLossGrad(const LossParams& p, const void* dloss, const void* labels,
                                     const void* weights, void* dinput) {
  emu::LossGradParams a;
  A8_ASSIGN_OR_RETURN(a.shape, emu::LossShapeFrom(p, "a8.NegativeLogLikelihoodLossGrad"));
  a.dloss = dloss, a.labels = labels, a.weights = weights, a.dscores = dinput;
  return OnHost([&](emu::DevCtx& ctx) {
    a.shape.err = emu::ErrOf(ctx);
    return emu::NegativeLogLikelihoodLossGrad(ctx, a);
  });
}

Status PairLossForward(PairLossKind kind, DType dtype, int64_t n, const void* pred,
                       const void* target, void* loss) {
  emu::PairLossParams a;
  a.kind = kind, a.dtype = dtype, a.n = n, a.pred = pred, a.target = target, a.loss = loss;
  return OnHost([&](emu::DevCtx& ctx) { return emu::PairLossForward(ctx, a); });
}

Status PairLossGrad(PairLossKind kind, DType dtype, int64_t n, const void* dloss, const void* pred,
                    const void* target, void* dpred, void* dtarget) {
  emu::PairLossParams a;
  a.kind = kind, a.dtype = dtype, a.n = n, a.dloss = dloss, a.pred = pred, a.target = target;
  a.dpred = dpred, a.dtarget = dtarget;
  return OnHost([&](emu::DevCtx& ctx) { return emu::PairLossGrad(ctx, a); });
}

}  // namespace a8::testing::loss
