// f16/bf16 operands of the shared normalization bodies, run on f32 copies in the fast mode.
//
// BatchNormalization, LayerNormalization, InstanceNormalization and their gradients have one
// math body, shared with the CUDA backend (kernels/device/nn_norm_impl.h, nn_layer_norm_impl.h),
// which the CPU backend runs on the host. With f16/bf16 activations that body converts every
// element through the scalar software conversions of float16.h; in the CNN's amp step it took
// half the time (profiled: 10x the same body on f32 data). The statistics and the arithmetic are
// f32 either way (PRECISION.md: normalizations read and write the low type but compute in f32),
// so in the fast mode the CPU backend converts the f16/bf16 operands to f32 in vector registers
// (kernels/cpu/fast_convert.h), runs the f32 body, and rounds each f16/bf16 output once. The
// reference mode is untouched (bit-identical to cuda-emu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.pb.h"
#include "runtime/core/kernel_args.h"

namespace a8 {

// One f16/bf16 operand bound to an f32 copy: `f32` holds `n` floats the kernel reads (an input:
// converted before each run) or writes (an output: rounded into `data` after each run).
struct WidenedOperand {
  uint8_t* data;
  DType dtype;
  float* f32;
  int64_t n;
  bool output;
};

// Whether op `op`'s f16/bf16 operands run on f32 copies in the fast mode.
bool RunsWidened(const std::string& op);

// The floats the f32 copies of `kern`'s f16/bf16 operands take (0 for other ops).
int64_t WidenedFloats(const plan::Plan& plan, const plan::Kernel& kern);

// Rebinds every present f16/bf16 operand of `in` and `out` to consecutive f32 copies from
// `scratch` (which has room for WidenedFloats) and returns them.
std::vector<WidenedOperand> WidenOperands(std::vector<TensorArg>* in, std::vector<TensorArg>* out,
                                          float* scratch);

// Before a run: the inputs converted into their copies. After it: the outputs rounded back.
void WidenInputs(const std::vector<WidenedOperand>& ops);
void NarrowOutputs(const std::vector<WidenedOperand>& ops);

}  // namespace a8
