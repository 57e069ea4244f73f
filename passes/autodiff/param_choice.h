// Which float initializers train: the parameters as the user meant them.
//
// Exporters store more than module parameters as float initializers: the dynamo exporter lifts
// every constant into an initializer named `val_N` (attention masks, GELU's exponent 3.0, the
// attention scale), and any exporter may keep a float tensor that only feeds a shape, an index
// or an exponent. Training those is wrong (d/dy x^y = x^y ln x is NaN for negative x), so the
// default choice keeps them constant and says why:
//   1. --freeze=REGEX matches: constant ("matches --freeze").
//   2. --trainable=REGEX given: exactly the matching initializers the loss depends on train.
//   3. The loss does not depend on it: constant.
//   4. The loss depends on it only through inputs that are not differentiable in the math the
//      model means (Pow's exponent, Reshape's shape, Gather's indices, Clip's bounds, ...):
//      constant, naming the first such use.
//   5. A scalar named as an exporter constant (`val_N`, onnxscript's names; module parameters
//      keep their state_dict names): constant. A larger `val_N` trains: the exporter's constant
//      folding also turns a parameter into a derived tensor (the transpose of a Linear weight),
//      which is still that parameter.
//   6. Holds a non-finite value or one below -1e30 (an additive attention mask): constant.
//   Everything else trains.
// The decisions are deterministic, in the graph's parameter order; `a800c --list-params` prints
// them and the compile prints a one-line summary (ParameterSummary).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/status.h"

namespace a8 {

struct ParamDecision {
  Value* value = nullptr;
  bool trained = false;
  std::string kind;    // "trained", "freeze", "trainable", "unused", "non-diff", "exporter",
                       // "mask": the reason's category, for the summary
  std::string reason;  // one human phrase
};

// Decides for every float initializer (role kParameter) of `g`. `roots`: the values the loss is
// computed from (the loss itself when training; the graph outputs for --list-params). Errors: an
// invalid --freeze / --trainable regex, naming the flag.
StatusOr<std::vector<ParamDecision>> ChooseParameters(const Graph& g,
                                                      const std::vector<const Value*>& roots,
                                                      const std::string& freeze,
                                                      const std::string& trainable);

// "parameters: 12 trained (1,234 elements, 4.9 KB); 3 initializers kept constant (2 exporter
// constants, 1 Pow exponent)".
std::string ParameterSummary(const std::vector<ParamDecision>& decisions);

// One line per decision: name, type, trained/constant, reason.
std::string ParameterTable(const std::vector<ParamDecision>& decisions);

}  // namespace a8
