// FoldValue: the data of a value computed from constants, for the importer (ImportOptions::
// fold_value), which must decide control flow while the graph is still being built: an If's cond
// or a Loop's trip count computed by a few nodes from constants and --bind'ed inputs.
//
// What it guarantees:
// - it evaluates the producers of `v` with the constant evaluator (EvaluateNode), after giving
//   each the type its op's shape rule computes (the shape-inference pass would give the same);
//   the graph's nodes are left in place (canonicalize folds them later);
// - a value that is not computed from constants only (a graph input, a parameter, an op the
//   evaluator does not know) is Unsupported; bad constant data is the evaluator's InvalidInput.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

StatusOr<TensorDataPtr> FoldValue(Graph& g, Value* v);

}  // namespace a8
