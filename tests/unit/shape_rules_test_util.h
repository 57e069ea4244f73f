// The fixture of the shape-rule tests: builds one node on a tiny graph, checks it against its
// OpDef and runs its shape rule.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/shape_rules.h"

namespace a8 {
// Lets GoogleTest print "f32[2,3]" in failures.
inline void PrintTo(const TensorType& t, std::ostream* os) { *os << t.ToString(); }
}  // namespace a8

namespace a8::shape_test {

inline TensorType T(DType t, std::vector<int64_t> dims) { return TensorType{t, std::move(dims)}; }
inline TensorType F32(std::vector<int64_t> dims) { return T(DType::kF32, std::move(dims)); }
inline TensorType I64(std::vector<int64_t> dims) { return T(DType::kI64, std::move(dims)); }

class ShapeRulesFixture : public ::testing::Test {
 protected:
  Value* In(TensorType t) { return g_.AddInput(g_.UniqueName("x"), std::move(t)); }
  Value* Ints(const std::vector<int64_t>& v) {
    return g_.AddConstant(g_.UniqueName("c"),
                          TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())}));
  }
  Value* IntScalar(int64_t v) {
    return g_.AddConstant(g_.UniqueName("c"), TensorData::FromInt64s({v}, {}));
  }
  Value* FloatScalar(float v) {
    return g_.AddConstant(g_.UniqueName("c"), TensorData::FromFloats({v}, {}));
  }

  // Adds the node, checks it against its OpDef and runs its shape rule.
  StatusOr<std::vector<TensorType>> Infer(const std::string& op, std::vector<Value*> inputs,
                                          std::map<std::string, Attribute> attrs = {},
                                          int outputs = 1, int version = 0,
                                          const std::string& domain = "") {
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back({"y", F32({})});
    Node* n = g_.AddNode(op, domain, std::move(inputs), outs, std::move(attrs), "n");
    n->set_version(version);
    const OpDef* def = FindOp(domain, op);
    if (def == nullptr) return Internal("no op {}", op);
    A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*n, *def));
    std::vector<TensorType> types;
    A8_RETURN_IF_ERROR(def->infer(*n, &types));
    if (static_cast<int>(types.size()) != outputs) return Internal("wrong output count");
    return types;
  }
  // The single output's type, or a type whose dims say why not (so EXPECT_EQ prints it).
  TensorType One(const std::string& op, std::vector<Value*> inputs,
                 std::map<std::string, Attribute> attrs = {}, int version = 0) {
    StatusOr<std::vector<TensorType>> r =
        Infer(op, std::move(inputs), std::move(attrs), 1, version);
    if (!r.ok()) {
      ADD_FAILURE() << r.status().message();
      return T(DType::kBool, {-1});
    }
    return (*r)[0];
  }
  // The error of a rule expected to fail.
  Status Error(const std::string& op, std::vector<Value*> inputs,
               std::map<std::string, Attribute> attrs = {}, int outputs = 1) {
    StatusOr<std::vector<TensorType>> r = Infer(op, std::move(inputs), std::move(attrs), outputs);
    if (r.ok()) return Status::Ok();
    return r.status();
  }

  Graph g_;
};

}  // namespace a8::shape_test
