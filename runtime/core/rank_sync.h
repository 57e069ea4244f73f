// Data-parallel agreement between ranks (a800c-run under mpirun or torchrun-style launches):
// before the first step every rank runs the same plan from rank 0's parameters and state; after
// the last one every rank holds the same parameters.
#pragma once

#include <string>

#include "compiler/ir/status.h"
#include "compiler/plan/plan_file.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/executor.h"

namespace a8 {

// Before the first step: every rank runs the same plan, and every rank starts from rank 0's
// parameters and state (its initial values, or the checkpoint it resumed) and its step counter.
Status SyncRanks(Communicator& comm, Executor& ex, const std::string& plan_path);

// After the last step: every rank must hold the same parameters (they start equal and take the
// same averaged update each step); a difference is a bug, reported with the ranks that disagree
// rather than left to surface as a silently wrong checkpoint.
Status CheckParametersAgree(Communicator& comm, const Executor& ex);

// Whether the plan all-reduces its gradients (bucket-gradients ran).
bool HasGradientBuckets(const plan::Plan& plan);

}  // namespace a8
