// fold-batchnorm: an inference-mode BatchNormalization after a Conv becomes the Conv's own
// weights and bias, as onnxruntime, TensorRT and PyTorch's fuse_conv_bn_eval do.
//
// y = (conv(x, W) + B - mean) * s + beta, with s = scale / sqrt(var + epsilon) per output
// channel, is conv(x, W * s) + ((B - mean) * s + beta): one kernel instead of two, and one pass
// over the activation fewer. The folded weights and bias are computed in double and rounded once
// to f32.
//
// Guarantees, after Run:
// - only inference compiles fold (no --loss, no TrainingInfoProto step): training normalizes with
//   the batch's statistics and trains W, scale and bias apart;
// - a BatchNormalization (default domain, one output, training_mode absent or 0, spatial absent or
//   1) whose X is the only use of a Conv's output (not a graph output), where W, the Conv's bias
//   (if any) and scale, B, mean, var are f32 initializers holding data and W has one output
//   channel per BN channel, is replaced by a Conv with the old Conv's attributes and node name,
//   reading new parameters `<W>.bn_folded` and `<W>.bn_folded_bias`, and writing the BN's
//   output name; its `a8.onnx_nodes` names both ONNX nodes (the trace and the plan say so);
// - the old weights and BN parameters go when nothing else reads them;
// - everything else is left alone. `--no-fuse` leaves this pass out too (one kernel per node).
// Stats: folded.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(FoldBatchNorm);

}  // namespace a8
