// The attributes of the ONNX ai.onnx.preview.training optimizers (Adam, Momentum, Adagrad) with
// the ONNX defaults: the device kernels carry them (kernels/device/loss_optim.h, the CPU backend's
// too), whose entries decode them (runtime/device/ops_loss_optim.cc).
#pragma once

namespace a8::cpu {

struct OnnxAdamParams {
  float alpha = 0.9f, beta = 0.999f, epsilon = 1e-6f;
  float norm_coefficient = 0.0f, norm_coefficient_post = 0.0f;
};
struct OnnxMomentumParams {
  float alpha = 0.0f, beta = 0.0f, norm_coefficient = 0.0f;
  bool nesterov = false;
};
struct OnnxAdagradParams {
  float decay_factor = 0.0f, epsilon = 1e-6f, norm_coefficient = 0.0f;
};

}  // namespace a8::cpu
