#include "compiler/onnx/import_sequence.h"

#include <fmt/format.h>

#include <limits>

namespace a8 {
namespace {

// A constant int32/int64 operand's values, or an error naming what it is for.
StatusOr<std::vector<int64_t>> ConstantInts(const Value* v, const std::string& where,
                                            const char* what) {
  if (v == nullptr || !v->is_constant()) {
    return Unsupported(
        "{}: {} '{}' is computed at run time; a800c takes sequences only with a constant {}", where,
        what, v ? v->name() : "", what);
  }
  const DType dt = v->data()->type.dtype;
  if (dt != DType::kI64 && dt != DType::kI32) {
    return InvalidInput("{}: {} '{}' must be int32 or int64, got {}", where, what, v->name(),
                        DTypeName(dt));
  }
  return v->data()->ToInt64Vector();
}

}  // namespace

StatusOr<SequenceSplit> ParseSplitToSequence(const std::string& where,
                                             const std::vector<Value*>& inputs,
                                             const std::map<std::string, Attribute>& attrs) {
  if (inputs.empty() || inputs.size() > 2 || inputs[0] == nullptr) {
    return InvalidInput("{}: SplitToSequence takes input and optional split", where);
  }
  SequenceSplit s;
  s.where = where;
  s.input = inputs[0];
  for (const auto& [key, a] : attrs) {
    if (key != "axis" && key != "keepdims") {
      return InvalidInput("{}: unknown attribute '{}'", where, key);
    }
    if (a.kind() != AttrKind::kInt) {
      return InvalidInput("{}: attribute '{}' must be an int", where, key);
    }
    if (key == "axis") s.axis = a.i();
    if (key == "keepdims") s.keepdims = a.i() != 0;
  }
  if (inputs.size() < 2 || inputs[1] == nullptr) return s;  // chunks of 1
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> split, ConstantInts(inputs[1], where, "split"));
  const int64_t rank = inputs[1]->data()->type.rank();
  if (rank == 0) {
    s.kind = SequenceSplit::Kind::kChunk;
    s.chunk = split[0];
    if (s.chunk <= 0) return InvalidInput("{}: split {} must be positive", where, s.chunk);
  } else if (rank == 1) {
    s.kind = SequenceSplit::Kind::kLengths;
    s.lengths = std::move(split);
    for (int64_t len : s.lengths) {
      if (len < 0) return InvalidInput("{}: split length {} is negative", where, len);
    }
  } else {
    return InvalidInput("{}: split must be a scalar or 1-D, got rank {}", where, rank);
  }
  return s;
}

StatusOr<std::vector<DecomposedNode>> EmitSequenceAt(Graph& g, const SequenceSplit& seq,
                                                     const SequenceAtRequest& req) {
  A8_ASSIGN_OR_RETURN(std::vector<int64_t> pos, ConstantInts(req.position, req.where, "position"));
  if (req.position->data()->type.rank() != 0) {
    return InvalidInput("{}: position must be a scalar, got {}", req.where,
                        req.position->data()->type.ToString());
  }
  int64_t i = pos[0];
  int64_t start = 0, end = 0;
  switch (seq.kind) {
    case SequenceSplit::Kind::kOnes:
      // Slice counts a negative start from the end, as SequenceAt does; -1's end is the end.
      start = i;
      end = i == -1 ? std::numeric_limits<int64_t>::max() : i + 1;
      break;
    case SequenceSplit::Kind::kChunk:
      if (i < 0) {
        return Unsupported(
            "{}: position {} counts from the end of the sequence of {}, whose length a scalar "
            "split leaves to the input's shape; a800c takes positions >= 0 here",
            req.where, i, seq.where);
      }
      if (i > std::numeric_limits<int64_t>::max() / seq.chunk - 1) {
        return InvalidInput("{}: position {} is out of range", req.where, i);
      }
      start = i * seq.chunk;
      end = start + seq.chunk;  // Slice clamps the last, shorter chunk
      break;
    case SequenceSplit::Kind::kLengths: {
      const int64_t n = static_cast<int64_t>(seq.lengths.size());
      if (i < -n || i >= n) {
        return InvalidInput("{}: position {} is out of range for the {} elements of {}", req.where,
                            i, n, seq.where);
      }
      if (i < 0) i += n;
      for (int64_t k = 0; k < i; ++k) start += seq.lengths[k];
      end = start + seq.lengths[i];
      break;
    }
  }
  auto constant = [&](const std::string& what, int64_t v) {
    return g.AddConstant(req.fresh_name(req.name + "." + what), TensorData::FromInt64s({v}, {1}));
  };
  const bool squeeze = seq.kind == SequenceSplit::Kind::kOnes && !seq.keepdims;
  std::vector<DecomposedNode> nodes;
  auto out =
      squeeze ? std::make_pair(req.fresh_name(req.name + ".slice"), TensorType{}) : req.output;
  Node* slice = g.AddNode(
      "Slice", "",
      {seq.input, constant("starts", start), constant("ends", end), constant("axes", seq.axis)},
      {out}, {}, squeeze ? req.name + ".slice" : req.name);
  nodes.push_back({slice, 13});
  if (squeeze) {
    Node* sq = g.AddNode("Squeeze", "", {slice->output(0), constant("squeeze_axes", seq.axis)},
                         {req.output}, {}, req.name);
    nodes.push_back({sq, 13});
  }
  return nodes;
}

}  // namespace a8
