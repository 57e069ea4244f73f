// The host side of the gradient all-reduce kernels (a8.AllReduceStart, a8.AllReduceWait), one
// definition for the CPU entries (runtime/cpu/ops_dist.cc) and the device entries
// (runtime/device/ops_dist.cc). The sum happens in each gradient's own bytes: the plan keeps it
// alive, untouched, between its start and its wait. On one process nothing communicates.
#pragma once

#include "runtime/core/kernel_args.h"

namespace a8 {

// a8.AllReduceStart(g_1..g_n){bucket, dtype, every}: starts the bucket's all-reduce on the step's
// communicator, on the steps that reduce (every step, or with every=k the update steps only).
Status StartGradientAllReduce(const KernelArgs& a);

// a8.AllReduceWait(token, g){bucket, every} -> y: checks y against g and waits for the bucket
// (the mean over the ranks then lies in g); the caller copies g to y on its own memory.
Status WaitGradientAllReduce(const KernelArgs& a);

}  // namespace a8
