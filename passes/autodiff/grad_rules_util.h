// Helpers the gradient-rule files share (internal to passes/autodiff).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "passes/autodiff/grad_rule.h"

namespace a8::grad {

using Attrs = std::map<std::string, Attribute>;
using Dims = std::vector<int64_t>;

inline Value* In(GradContext& ctx, int i) { return ctx.node().input(i); }
inline Value* Out(GradContext& ctx, int i) { return ctx.node().output(i); }

// The gradient reaching output 0 (the engine calls a rule only when one reaches it).
inline StatusOr<Value*> Dy(GradContext& ctx) {
  Value* g = ctx.output_grad(0);
  if (g == nullptr) return Internal("{}: no gradient reaches the output", ctx.node().Where());
  return g;
}

// The ints attributes among `names` that the node has, passed on to its gradient op.
inline Attrs IntsAttrsOf(const Node& node, std::initializer_list<const char*> names) {
  Attrs attrs;
  for (const char* name : names) {
    if (node.has_attr(name)) attrs[name] = Attribute(node.GetInts(name));
  }
  return attrs;
}

// `v` reshaped to `dims` (itself when they already match).
inline StatusOr<Value*> ReshapeTo(GradContext& ctx, Value* v, const Dims& dims) {
  if (v->dims() == dims) return v;
  Attrs attrs;
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) attrs["allowzero"] = Attribute(1);
  return ctx.Emit1("Reshape", {v, ctx.ConstInts(dims)}, std::move(attrs));
}

}  // namespace a8::grad
