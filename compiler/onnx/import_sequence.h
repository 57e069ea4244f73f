// ONNX sequences as PyTorch's dynamo exporter writes them for `torch.split` and `chunk` (GPT-2's
// `c_attn` output split into query, key and value): a SplitToSequence with a constant split, read
// only by SequenceAt nodes at constant positions. a800c has no sequence type; the import turns
// each SequenceAt into the slice of the split's input that it selects, so no sequence reaches the
// IR:
//
//   s = SplitToSequence<axis, keepdims>(x, split); y = SequenceAt(s, i)
//     -> y = Slice(x, [start_i], [end_i], [axis])            (split given: scalar or 1-D)
//     -> y = Squeeze(Slice(x, [i], [i + 1], [axis]), [axis]) (no split, keepdims = 0)
//
// Any other use of a sequence (another op reading it, a graph output, a position or split that
// is not a constant) is one Unsupported error naming the node and the op.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"
#include "compiler/onnx/import_decompose.h"

namespace a8 {

// What a SplitToSequence node splits, recorded at its import; it emits no node itself.
struct SequenceSplit {
  std::string where;  // "node 'n' (SplitToSequence)"
  Value* input = nullptr;
  int64_t axis = 0;
  bool keepdims = true;
  // The split input: absent (chunks of 1 along axis), a scalar chunk length, or the lengths.
  enum class Kind { kOnes, kChunk, kLengths } kind = Kind::kOnes;
  int64_t chunk = 0;
  std::vector<int64_t> lengths;
};

// Checks a SplitToSequence node (its split input must be a constant) and records it.
StatusOr<SequenceSplit> ParseSplitToSequence(const std::string& where,
                                             const std::vector<Value*>& inputs,
                                             const std::map<std::string, Attribute>& attrs);

struct SequenceAtRequest {
  std::string name;   // the SequenceAt node's name (its last emitted node keeps it)
  std::string where;  // "node 'n' (SequenceAt)"
  Value* position = nullptr;
  std::pair<std::string, TensorType> output;
  std::function<std::string(const std::string& base)> fresh_name;
};

// Emits the Slice (and, for keepdims = 0, Squeeze) that give element `position` of `seq`. The
// nodes come back with the ONNX version their form has (Slice-13, Squeeze-13).
StatusOr<std::vector<DecomposedNode>> EmitSequenceAt(Graph& g, const SequenceSplit& seq,
                                                     const SequenceAtRequest& req);

}  // namespace a8
