// The gradient-rule registry and the helpers every rule shares (see grad_rule.h).
#include <fmt/format.h>

#include "passes/autodiff/grad_rule.h"

namespace a8 {
namespace {

const GradRuleTable& Table() {
  static const GradRuleTable kTable = [] {
    GradRuleTable t;
    RegisterMathGradRules(&t);
    RegisterNnGradRules(&t);
    return t;
  }();
  return kTable;
}

}  // namespace

Status NoGradient(GradContext& ctx) {
  (void)ctx;
  return Status::Ok();
}

GradRule FindGradRule(std::string_view qualified_op) {
  auto it = Table().rules.find(qualified_op);
  return it == Table().rules.end() ? nullptr : it->second;
}

bool HasGradient(std::string_view qualified_op) {
  GradRule r = FindGradRule(qualified_op);
  return r != nullptr && r != kNoGradient;
}

StatusOr<Value*> GradContext::Emit1(std::string_view qualified_op, std::vector<Value*> inputs,
                                    std::map<std::string, Attribute> attrs) {
  A8_ASSIGN_OR_RETURN(std::vector<Value*> outs,
                      Emit(qualified_op, std::move(inputs), std::move(attrs), 1));
  return outs[0];
}

StatusOr<Value*> GradContext::SumToShape(Value* g, const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& from = g->dims();
  if (from == dims) return g;
  if (dims.size() > from.size()) {
    return Internal("{}: cannot sum a gradient of shape rank {} to rank {}", node().Where(),
                    from.size(), dims.size());
  }
  // Right-align `dims` against `from`: leading axes and size-1 axes that were broadcast sum.
  const size_t lead = from.size() - dims.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i) {
    if (i < lead) {
      axes.push_back(static_cast<int64_t>(i));
    } else if (dims[i - lead] == 1 && from[i] != 1) {
      axes.push_back(static_cast<int64_t>(i));
    } else if (dims[i - lead] != from[i]) {
      return Internal("{}: gradient of shape [{}] does not broadcast from [{}]", node().Where(),
                      fmt::join(from, ","), fmt::join(dims, ","));
    }
  }
  // Only leading axes summed (a bias gradient): keepdims=0 gives `dims` directly.
  const bool only_leading = !axes.empty() && axes.back() < static_cast<int64_t>(lead);
  Value* summed = g;
  if (!axes.empty()) {
    A8_ASSIGN_OR_RETURN(summed, Emit1("ReduceSum", {g, ConstInts(axes)},
                                      {{"keepdims", Attribute(only_leading ? 0 : 1)}}));
  }
  if (summed->dims() == dims) return summed;
  return Emit1("Reshape", {summed, ConstInts(dims)});
}

}  // namespace a8
