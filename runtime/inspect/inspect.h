// Human- and machine-readable views of a plan, for `a800c-inspect` (CLI.md).
//
// Every function here works on an already validated PlanFile (ReadPlanFile), prints only what
// the plan holds (no timestamps, no paths) and iterates in plan order, so the same plan always
// gives byte-identical output. The JSON view carries "schema_version": 1; a field is only ever
// added to it, never renamed, within one schema version.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"
#include "compiler/plan/plan_file.h"

namespace a8 {

inline constexpr int kInspectSchemaVersion = 1;

enum class InspectFormat { kText, kJson, kDot };

// "text", "json" or "dot"; anything else is InvalidInput naming the accepted values.
StatusOr<InspectFormat> ParseInspectFormat(std::string_view name);

// The largest live set of the arena: the kernel index at which the bytes of live ARENA buffers
// (each rounded up to the plan's alignment; an in-place chain, buffers linked by alias_of,
// counts once, with its largest member, whenever any member is live) peak, the total, and the ids
// of the buffers live there (ascending). A buffer is live at kernel k when first <= k <= last. With
// no kernels, k = -1 (the graph inputs). The earliest kernel wins a tie.
struct LiveSet {
  int kernel = -1;
  uint64_t bytes = 0;
  std::vector<int> buffers;
};
LiveSet LargestLiveSet(const plan::Plan& plan);

// Counts and total bytes of the PERSISTENT buffers with the given role.
struct RoleTotals {
  int64_t count = 0;
  uint64_t bytes = 0;
};
RoleTotals TotalsForRole(const plan::Plan& plan, plan::Buffer::Role role);

std::string InspectText(const PlanFile& plan);
std::string InspectJson(const PlanFile& plan);  // ends with a newline
// A Graphviz digraph (dot.cc): kernels clustered by their ONNX name scope (the layer); depth 0
// draws every kernel and buffer, depth N >= 1 one box per scope cut at N components (below the
// prefix every scope shares) with the data flowing between them.
std::string InspectDot(const PlanFile& plan, int depth = 0);
std::string Inspect(const PlanFile& plan, InspectFormat format);

}  // namespace a8
