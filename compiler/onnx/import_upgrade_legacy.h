// The opset 1-9 forms of ops whose upgrade to the canonical form adds nodes around the node
// (internal to compiler/onnx; UpgradeNode in import_upgrade.cc calls these):
//
//   Add/Sub/Mul/Div (<7), Pow/Equal/Greater/Less/And/Or/Xor (1) with broadcast=1 and `axis`:
//       B's dims align with A's from `axis` on; B gets trailing size-1 dims (an Unsqueeze before
//       the node), after which numpy broadcasting gives the same result. Without `axis`, B aligns
//       with A's last dims, which numpy broadcasting already does. broadcast=0 requires equal
//       shapes, which numpy broadcasting accepts unchanged.
//   Softmax/LogSoftmax/Hardmax (<13): the input is coerced to 2-D at `axis` ([d0*..*d(axis-1),
//       d(axis)*..*d(r-1)]), normalized along the second dim and reshaped back. Exactly that:
//       Reshape(x, [0]*axis + [-1]) -> op(axis=-1) -> Reshape(y, Shape(x)); when axis is the last
//       axis, the node only gets axis = rank - 1.
//   Dropout (<10) with its mask output: the mask has the data's type; the node gets a bool mask
//       and a Cast to that type after it.
//
// Each added node is named `<node>.<what>`; the ONNX output names stay on the values the rest of
// the model reads.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/onnx/import_upgrade.h"

namespace a8 {

Status UpgradeLegacyBroadcast(Node* node, int from, const UpgradeContext& ctx);
Status UpgradeSoftmaxCoercion(Node* node, int from, const UpgradeContext& ctx);
Status UpgradeDropoutMask(Node* node, int from, const UpgradeContext& ctx);

}  // namespace a8
