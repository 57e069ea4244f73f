// Seeded synthetic inputs (a800c-run --synthetic, and the inputs a dataset does not bind): the
// same values for the same (seed, step, buffer) on every backend and every rank.
#pragma once

#include <cstdint>

#include "compiler/ir/status.h"
#include "compiler/plan/plan_file.h"
#include "runtime/core/dataset.h"
#include "runtime/core/executor.h"

namespace a8 {

// The exclusive upper bound of integer input `id` from its first consumer that indexes with it;
// a training plan's labels are class indices below the logits' last dim.
int64_t IndexBound(const plan::Plan& plan, int id);

// Seeded random data for input buffer `b` at step `step`: normal floats (uniform in [0, 1) for
// the labels of a binary cross-entropy), integers in [0, IndexBound).
Status FillSynthetic(const plan::Plan& plan, const plan::Buffer& b, uint64_t seed, int64_t step,
                     uint8_t* dst);

// Fills the inputs the dataset does not bind with synthetic data.
Status FillSyntheticInputs(Executor& ex, const Dataset& data, uint64_t seed, int64_t step);

}  // namespace a8
