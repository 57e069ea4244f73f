// shape-inference: gives every value its static type.
//
// Walks the nodes in program order and sets each output's type from the op table's shape rule
// (`OpDef::infer`), after checking the node's arity and attributes against its OpDef. a800c's
// shapes are static, so rules that need operand data (Reshape's shape, Slice's starts, Expand,
// Tile, ConstantOfShape, Range, ...) read it from constants. To make that possible for shapes
// computed inside the graph (Shape -> Gather -> Concat -> Reshape, as exporters emit), the pass
// folds, as it goes, every node whose inputs are all constant (Shape and Size: whose input is
// typed) and whose outputs are integer or bool, or are floats that only feed such computations
// (a float Cast/Div in the middle of a shape computation). Float tensors used as data are left
// to `canonicalize`, which decides whether a folded float tensor is a weight.
//
// Guarantees, after a successful Run:
// - every node output has the type its op's rule computes from its inputs (so the verifier's
//   type check holds);
// - graph outputs match the types the model declared, when the importer recorded them
//   (Graph::declared_output_types): a different dtype, rank or static dim is an error naming the
//   output.
// Errors name the node (`node 'Reshape_3' (Reshape): ...`). Returns changed=true when a type
// changed or a node was folded.
#pragma once

#include "compiler/ir/graph.h"
#include "compiler/pass/pass.h"

namespace a8 {

A8_DECLARE_PASS(ShapeInference);

}  // namespace a8
