// The defaults of the training step, written once: the optimizers' hyper-parameters and the
// dynamic loss scaler's settings (PRECISION.md "Loss scaling", CLI.md's training flags). The
// compiler's flags (compiler/ir/training_config.h), the op table's attribute defaults
// (op_table_optim.cc), the kernels' parameter structs (optim_math.h) and the runtime's attribute
// decoders (runtime/core/kernel_args.cc) all read these constants; none writes a number of its
// own.
#pragma once

#include <cstdint>

namespace a8::defaults {

// ---- optimizers (PyTorch's torch.optim defaults, except that the learning rate has one so that
// `--loss` alone gives a working plan)
inline constexpr float kLr = 1e-3f;
inline constexpr float kMomentum = 0.9f;   // --optimizer=momentum|nesterov
inline constexpr float kDampening = 0.0f;  // PyTorch SGD's dampening
inline constexpr float kBeta1 = 0.9f;      // adam, adamw
inline constexpr float kBeta2 = 0.999f;
inline constexpr float kEps = 1e-8f;
inline constexpr float kAdamWWeightDecay = 0.01f;  // adamw
inline constexpr float kWeightDecay = 0.0f;        // sgd, momentum, nesterov, adam

// ---- the dynamic loss scaler (PRECISION.md: --init-scale, --growth-factor, --backoff-factor,
// --growth-interval, --min-scale, --max-scale)
inline constexpr float kInitScale = 65536.0f;
inline constexpr float kGrowthFactor = 2.0f;
inline constexpr float kBackoffFactor = 0.5f;
inline constexpr int64_t kGrowthInterval = 2000;
inline constexpr float kMinScale = 1.0f;
inline constexpr float kMaxScale = 16777216.0f;

}  // namespace a8::defaults
