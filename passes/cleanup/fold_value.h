// FoldValue: the data of a value computed from constants, for the importer (ImportOptions::
// fold_value), which must decide control flow while the graph is still being built: an If's cond
// or a Loop's trip count computed by a few nodes from constants and --bind'ed inputs.
//
// What it guarantees:
// - it evaluates the producers of `v` with the constant evaluator (EvaluateNode), after giving
//   each the type its op's shape rule computes (the shape-inference pass would give the same;
//   where a rule needs data that earlier nodes compute, such as a Reshape to a computed shape,
//   the type comes from shape-inference run on a copy of the graph); the graph's nodes are left
//   in place (canonicalize folds them later). Folding Shape(v) so gives the importer v's dims
//   where onnx's own inference does not know the model's opset (a Scan's sequence length);
// - a value that is not computed from constants only (a graph input, a parameter, an op the
//   evaluator does not know) is Unsupported; bad constant data is the evaluator's InvalidInput.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

StatusOr<TensorDataPtr> FoldValue(Graph& g, Value* v);

}  // namespace a8
