// Where a plan's PERSISTENT buffers live on a host backend.
//
// Normally every PERSISTENT buffer lies in the executor's persistent region at its offset, and
// the initial values are copied there from the plan's blob. Copying means first-touch faults of
// fresh anonymous pages: the kernel zero-fills each page and then the copy overwrites it (the
// largest item of `a800c-run`'s load on the 12-layer BERT-base training plan: `clear_page`,
// 47% of the load's CPU samples, tools/bench/README.md). When the blob is the plan file's own
// private, writable memory (ReadPlanFile: the anonymous buffer of its direct read, or a private
// mapping of a cached file) and nothing else holds it, the buffers with initial values stay in
// that memory instead: no copy, and the region's pages under them are never touched.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/plan/plan_file.h"

namespace a8 {

// For each buffer of `file.plan`, the address where it lives when its initial value stays in
// the blob (nullptr: in its region, as usual). A PERSISTENT buffer whose bytes lie within those
// of a buffer with an initial value (an in-place update's result) lives at the same place
// relative to it. std::nullopt when the blob cannot be kept (pieces not marked writable, held by
// another PlanFile too, or a buffer partly overlapping one with an initial value): the caller
// copies. The caller must own `file` exclusively and keep it alive while the buffers are used;
// the blob then holds the buffers' current values, not the initial ones.
std::optional<std::vector<uint8_t*>> InitialValuesInPlace(const PlanFile& file);

}  // namespace a8
