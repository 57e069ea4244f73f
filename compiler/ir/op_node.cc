#include "compiler/ir/op_node.h"

#include <fmt/format.h>

#include <utility>

namespace a8 {

OpNode::OpNode(std::string_view domain, std::string_view op, std::string_view name, int version,
               std::vector<const OpValue*> inputs, std::vector<const OpValue*> outputs,
               const std::map<std::string, Attribute>* attrs)
    : domain_(domain),
      op_(op),
      name_(name),
      version_(version),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      attrs_(attrs) {}

std::string OpNode::qualified_op() const { return domain_.empty() ? op_ : domain_ + "." + op_; }

std::string OpNode::Where() const { return fmt::format("node '{}' ({})", name_, qualified_op()); }

const Attribute* OpNode::attr(const std::string& n) const {
  auto it = attrs_->find(n);
  return it == attrs_->end() ? nullptr : &it->second;
}

}  // namespace a8
