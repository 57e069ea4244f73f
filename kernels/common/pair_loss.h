// The a8 pair losses (a8.MseLoss, a8.L1Loss, a8.BceWithLogitsLoss: `--loss=mse|l1|bce_logits`),
// whose kernels are kernels/device/loss_optim.h (run on the host by the CPU backend): the kinds
// and one element's gradients.
#pragma once

#include <cstdint>

#include "kernels/common/unary_math.h"  // A8_HD, MExp, MAbs

namespace a8 {

enum class PairLossKind : int32_t { kMse, kL1, kBceWithLogits };

// The gradients of one element's term for prediction x and target t, times k = dloss / n:
// *gp = d(pred) = k times 2 (x - t), sign(x - t) (0 at x = t), or sigmoid(x) - t; *gt = d(target)
// = -*gp for Mse and L1, -x * k for BceWithLogits.
template <typename C>
A8_HD void PairLossGradAt(PairLossKind kind, C x, C t, C k, C* gp, C* gt) {
  *gp = 0;
  *gt = 0;
  switch (kind) {
    case PairLossKind::kMse:
      *gp = C(2) * (x - t) * k;
      *gt = -*gp;
      break;
    case PairLossKind::kL1: {
      const C d = x - t;
      *gp = (d > 0 ? C(1) : d < 0 ? C(-1) : C(0)) * k;
      *gt = -*gp;
      break;
    }
    case PairLossKind::kBceWithLogits: {
      // sigmoid(x) without overflow for either sign of x.
      const C z = MExp(-MAbs(x));
      const C sig = x >= 0 ? C(1) / (C(1) + z) : z / (C(1) + z);
      *gp = (sig - t) * k;
      *gt = -x * k;
      break;
    }
  }
}

}  // namespace a8
