// Finite-difference checks of gradient rules (see grad_check_util.h).
#include "tests/unit/grad_check_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "compiler/ir/verifier.h"
#include "passes/autodiff/autodiff.h"
#include "passes/lowering/lower.h"
#include "passes/memory/plan_memory.h"
#include "passes/memory/schedule.h"
#include "runtime/core/executor.h"
#include "runtime/cpu/cpu_backend.h"

namespace a8::testing {
namespace {

std::vector<uint8_t> ToBytes(DType t, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t) {
      case DType::kF64:
        std::memcpy(&out[i * 8], &v[i], 8);
        break;
      case DType::kF32: {
        float f = static_cast<float>(v[i]);
        std::memcpy(&out[i * 4], &f, 4);
        break;
      }
      case DType::kI64: {
        int64_t x = static_cast<int64_t>(v[i]);
        std::memcpy(&out[i * 8], &x, 8);
        break;
      }
      case DType::kI32: {
        int32_t x = static_cast<int32_t>(v[i]);
        std::memcpy(&out[i * 4], &x, 4);
        break;
      }
      case DType::kBool:
      case DType::kU8:
      case DType::kI8:
        out[i] = static_cast<uint8_t>(static_cast<int>(v[i]));
        break;
      default:
        ADD_FAILURE() << "grad check: unsupported input dtype " << DTypeName(t);
        return out;
    }
  }
  return out;
}

double Load(DType t, const uint8_t* p, int64_t i) {
  if (t == DType::kF64) {
    double d;
    std::memcpy(&d, p + i * 8, 8);
    return d;
  }
  float f;
  std::memcpy(&f, p + i * 4, 4);
  return f;
}

TensorDataPtr Data(const TensorType& t, const std::vector<double>& v) {
  auto d = TensorData::Make(t);
  d->bytes = ToBytes(t.dtype, v);
  return d;
}

}  // namespace

void ExpectGradientsMatch(const GradCheckCase& c) {
  SCOPED_TRACE("gradient check of " + c.op);
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Graph g;
  g.name = "gradcheck";
  g.source = "gradcheck";
  g.opsets = {{"", 17}};

  std::vector<Value*> operands;
  std::vector<std::vector<double>> values(c.inputs.size());
  std::vector<int> wrt_index;
  std::vector<Value*> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const GradCheckInput& in = c.inputs[i];
    if (in.absent) {
      operands.push_back(nullptr);
      continue;
    }
    const int64_t n = in.type.CheckedNumElements();
    values[i] = in.values;
    const bool diff = in.differentiable && !in.constant && IsFloat(in.type.dtype);
    if (values[i].empty()) {
      if (!diff) {
        ADD_FAILURE() << "input " << i << " is not differentiable and has no values";
        return;
      }
      for (int64_t k = 0; k < n; ++k) values[i].push_back(uniform(rng));
    }
    if (static_cast<int64_t>(values[i].size()) != n) {
      ADD_FAILURE() << "input " << i << " has " << values[i].size() << " values, its type "
                    << in.type.ToString() << " needs " << n;
      return;
    }
    Value* v = in.constant ? g.AddConstant("c" + std::to_string(i), Data(in.type, values[i]))
                           : g.AddInput("x" + std::to_string(i), in.type);
    operands.push_back(v);
    if (diff) {
      wrt.push_back(v);
      wrt_index.push_back(static_cast<int>(i));
    }
  }

  std::vector<TensorType> types;
  std::vector<Value*> results;
  if (c.build) {
    auto built = c.build(g, operands);
    ASSERT_TRUE(built.ok()) << built.status().message();
    ASSERT_EQ(static_cast<int>(built->size()), c.num_outputs);
    results = *built;
    for (Value* v : results) types.push_back(v->type());
  } else {
    const size_t dot = c.op.rfind('.');
    const std::string domain = dot == std::string::npos ? "" : c.op.substr(0, dot);
    const std::string op = dot == std::string::npos ? c.op : c.op.substr(dot + 1);
    const OpDef* def = FindOp(domain, op);
    ASSERT_NE(def, nullptr) << "unknown op " << c.op;
    if (!domain.empty()) g.opsets[domain] = 1;
    std::vector<std::pair<std::string, TensorType>> outs;
    for (int k = 0; k < c.num_outputs; ++k) {
      outs.emplace_back("y" + std::to_string(k), TensorType{});
    }
    Node* node = g.AddNode(op, domain, operands, outs, c.attrs, "node");
    node->set_version(def->canonical);
    Status st = def->infer(*node, &types);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(static_cast<int>(types.size()), c.num_outputs);
    for (int k = 0; k < c.num_outputs; ++k) {
      node->output(k)->set_type(types[k]);
      results.push_back(node->output(k));
    }
  }

  // L = sum_k ReduceSum(y_k * r_k).
  std::vector<int> loss_outputs = c.loss_outputs;
  if (loss_outputs.empty()) {
    for (int k = 0; k < c.num_outputs; ++k) {
      if (IsFloat(types[k].dtype)) loss_outputs.push_back(k);
    }
  }
  Value* loss = nullptr;
  for (int k : loss_outputs) {
    const TensorType& t = types[k];
    std::vector<double> r;
    for (int64_t e = 0; e < t.CheckedNumElements(); ++e) r.push_back(uniform(rng));
    Value* rv = g.AddConstant("r" + std::to_string(k), Data(t, r));
    Node* mul = g.AddNode("Mul", "", {results[k], rv}, {{"m" + std::to_string(k), t}}, {},
                          "mul" + std::to_string(k));
    mul->set_version(7);
    Node* sum = g.AddNode("ReduceSum", "", {mul->output(0)},
                          {{"s" + std::to_string(k), TensorType{t.dtype, {}}}},
                          {{"keepdims", Attribute(0)}}, "sum" + std::to_string(k));
    sum->set_version(13);
    if (loss == nullptr) {
      loss = sum->output(0);
    } else {
      Node* add = g.AddNode("Add", "", {loss, sum->output(0)},
                            {{"l" + std::to_string(k), TensorType{t.dtype, {}}}}, {},
                            "add" + std::to_string(k));
      add->set_version(7);
      loss = add->output(0);
    }
  }
  ASSERT_NE(loss, nullptr) << "no float output feeds the loss";
  auto grads = BuildGradients(g, loss, wrt);
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  std::vector<Value*> graph_outputs = {loss};
  for (Value* gv : *grads) graph_outputs.push_back(gv);
  // A gradient may be an input or a constant (Identity's rule, a zero gradient): route it
  // through Identity so every output is an arena value the plan can bind.
  // The same value twice (Add's two gradients) is bound once: route repeats through Identity too.
  std::set<const Value*> seen;
  for (size_t k = 1; k < graph_outputs.size(); ++k) {
    if (graph_outputs[k]->producer() == nullptr || !seen.insert(graph_outputs[k]).second) {
      Node* id = g.AddNode("Identity", "", {graph_outputs[k]},
                           {{"g" + std::to_string(k), graph_outputs[k]->type()}}, {},
                           "id" + std::to_string(k));
      id->set_version(1);
      graph_outputs[k] = id->output(0);
    }
  }
  g.SetOutputs(graph_outputs);
  Status verified = Verify(g);
  ASSERT_TRUE(verified.ok()) << verified.message();
  auto scheduled = Schedule().Run(g);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status().message();
  auto planned = PlanMemory().Run(g);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  LowerOptions lo;
  lo.model_name = "gradcheck";
  lo.model_hash = "fnv1a64:0000000000000000";
  auto pf = LowerToPlan(g, lo);
  ASSERT_TRUE(pf.ok()) << pf.status().message();
  auto ex = Executor::Create(std::move(pf).value(), MakeCpuBackend());
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  Executor& e = **ex;

  auto run = [&](const std::vector<std::vector<double>>& vals) -> Status {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i].absent || c.inputs[i].constant) continue;
      std::vector<uint8_t> b = ToBytes(c.inputs[i].type.dtype, vals[i]);
      A8_RETURN_IF_ERROR(e.SetInput("x" + std::to_string(i), b.data(), b.size()));
    }
    // Every evaluation is step 0, so random ops (Dropout) draw the same mask each time.
    e.set_steps_run(0);
    return e.Run();
  };
  auto output = [&](size_t k, int64_t i) {
    const plan::Buffer* b = e.FindOutput(graph_outputs[k]->name());
    return Load(graph_outputs[k]->dtype(), e.BufferData(b->id()), i);
  };

  Status ran = run(values);
  ASSERT_TRUE(ran.ok()) << ran.message();
  std::vector<std::vector<double>> analytic;
  for (size_t w = 0; w < wrt.size(); ++w) {
    std::vector<double> gv;
    for (int64_t i = 0; i < wrt[w]->type().CheckedNumElements(); ++i) {
      gv.push_back(output(w + 1, i));
    }
    analytic.push_back(std::move(gv));
  }
  int failures = 0;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const int in = wrt_index[w];
    for (size_t i = 0; i < values[in].size(); ++i) {
      std::vector<std::vector<double>> plus = values, minus = values;
      plus[in][i] += c.eps;
      minus[in][i] -= c.eps;
      ASSERT_TRUE(run(plus).ok());
      const double lp = output(0, 0);
      ASSERT_TRUE(run(minus).ok());
      const double lm = output(0, 0);
      const double numeric = (lp - lm) / (2 * c.eps);
      const double a = analytic[w][i];
      if (!(std::fabs(a - numeric) <= c.atol + c.rtol * std::fabs(numeric))) {
        if (++failures <= 10) {
          ADD_FAILURE() << c.op << ": d(loss)/d(input " << in << ")[" << i << "] = " << a
                        << " by the rule, " << numeric << " by finite differences";
        }
      }
    }
  }
}

}  // namespace a8::testing
