// The attribute decode of the ONNX ai.onnx.preview.training optimizers (Adam, Momentum,
// Adagrad), defaults from the ONNX spec (kernels/common/onnx_optim_params.h): one copy for the CPU
// entries (runtime/cpu/ops_optim.cc) and the CUDA ones (runtime/device/ops_loss_optim.cc).
#pragma once

#include <string>

#include "kernels/common/onnx_optim_params.h"
#include "runtime/core/attr_decode.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

inline cpu::OnnxAdamParams DecodeOnnxAdam(const KernelArgs& a) {
  using P = cpu::OnnxAdamParams;
  P p;
  DecodeAttrs<P>(a,
                 {A8_ATTR(P, alpha), A8_ATTR(P, beta), A8_ATTR(P, epsilon),
                  A8_ATTR(P, norm_coefficient), A8_ATTR(P, norm_coefficient_post)},
                 &p);
  return p;
}

// An error for a mode other than standard or nesterov.
inline StatusOr<cpu::OnnxMomentumParams> DecodeOnnxMomentum(const KernelArgs& a) {
  using P = cpu::OnnxMomentumParams;
  P p;
  DecodeAttrs<P>(a, {A8_ATTR(P, alpha), A8_ATTR(P, beta), A8_ATTR(P, norm_coefficient)}, &p);
  const std::string mode = a.Str("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return InvalidInput("{}: mode: unknown value '{}'", a.kernel().op(), mode);
  }
  p.nesterov = mode == "nesterov";
  return p;
}

inline cpu::OnnxAdagradParams DecodeOnnxAdagrad(const KernelArgs& a) {
  using P = cpu::OnnxAdagradParams;
  P p;
  DecodeAttrs<P>(a, {A8_ATTR(P, decay_factor), A8_ATTR(P, epsilon), A8_ATTR(P, norm_coefficient)},
                 &p);
  return p;
}

}  // namespace a8
