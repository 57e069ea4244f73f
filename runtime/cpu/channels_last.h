// The CPU backend's channels-last activations: which 4-D f32 intermediates its fast mode stores
// NHWC instead of the plan's NCHW.
//
// oneDNN's forward convolution computes in NHWC, so every NCHW activation it reads or writes is
// reordered on each call (about 13 us of a 90 us convolution of the example CNN, one thread). A
// buffer is stored NHWC where every kernel that touches it takes NHWC: its one writer and all
// its readers are oneDNN-bound convolutions (Conv, a8.FusedConv as X, Y or Z), MaxPool (its
// input and output together, no Indices) or a global pool (its input). The bytes are the same
// size; each such operand's TensorArg says `channels_last`, and its kernel reads and writes the
// NHWC form with the NCHW kernel's bits. Only ARENA intermediates qualify: no graph input or
// output, parameter, update source, in-place alias or tensor attribute, so nothing outside the
// kernels sees the layout; the backend turns it off where something does
// (Backend::SetIntermediatesObserved: --check-numerics, debug-precision, --numerics-stats) and
// A8_CPU_CHANNELS_LAST=0 turns it off to compare.
#pragma once

#include <vector>

#include "compiler/plan/plan.pb.h"

namespace a8 {

// Whether each buffer of `plan` is stored NHWC (indexed by buffer id).
std::vector<bool> ChannelsLastBuffers(const plan::Plan& plan);

}  // namespace a8
