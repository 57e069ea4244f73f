// The NN gradient rules (passes/autodiff/grad_rules_nn.cc) against central differences in
// float64: each case runs through ExpectGradientsMatch (grad_check_util.h: the autodiff engine
// and a compiled plan) and through an eager check here, which hands the rule a GradContext that
// runs every node it emits at once on the CPU kernels, so the rules are checked even where the
// engine is not built. Also: shape rules of the internal ops, and BatchNormalization and Dropout
// in the evaluation steps of a training plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_table.h"
#include "kernels/cpu/kernels.h"
#include "passes/autodiff/grad_rule.h"
#include "passes/lowering/lower.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/unit/cpu_kernels_test_util.h"
#include "tests/unit/grad_check_util.h"
#include "tests/unit/shared_norm_util.h"

namespace a8 {
namespace {

using testing::GradCheckCase;
using testing::GradCheckInput;
using ByteVec = std::vector<uint8_t>;

// Runs one node as the CPU backend runs it: inputs and outputs are the byte buffers of `values`.
Status RunNode(const Node& n, std::map<const Value*, ByteVec>* values, const StepInfo& step = {}) {
  const CpuKernelEntry* e = FindCpuBackendKernel(n.qualified_op());
  if (e == nullptr) return Internal("no CPU kernel for {}", n.qualified_op());
  plan::Kernel k;
  k.set_op(n.qualified_op());
  k.set_node(n.name());
  // The attributes a plan would give the kernel (defaults, explicit windows).
  A8_ASSIGN_OR_RETURN(const AttributeMap attrs, KernelAttributes(n));
  for (const auto& [name, a] : attrs) A8_RETURN_IF_ERROR(SetPlanAttribute(name, a, k.add_attrs()));
  auto arg = [&](const Value* v) {
    TensorArg t;
    if (v == nullptr) return t;
    ByteVec& b = (*values)[v];
    b.resize(static_cast<size_t>(v->type().CheckedNumElements()) * DTypeSize(v->dtype()));
    t.present = true;
    t.dtype = v->dtype();
    t.dims = v->dims();
    t.data = b.data();
    return t;
  };
  std::vector<TensorArg> in, out;
  for (const Value* v : n.inputs()) in.push_back(arg(v));
  for (const Value* v : n.outputs()) out.push_back(arg(v));
  KernelArgs args(&k, in, out, {});
  args.step = step;
  return e->fn(args);
}

// Adds `op` (qualified) on `inputs` and sets its output types from its shape rule.
StatusOr<Node*> AddTypedNode(Graph& g, std::string_view op, std::vector<Value*> inputs,
                             std::map<std::string, Attribute> attrs, int outputs,
                             const std::string& name) {
  const bool internal = op.substr(0, 3) == "a8.";
  const std::string domain = internal ? "a8" : "", bare(internal ? op.substr(3) : op);
  const OpDef* def = FindOp(domain, bare);
  if (def == nullptr) return Internal("unknown op {}", op);
  std::vector<std::pair<std::string, TensorType>> outs(outputs, {name + ".out", TensorType{}});
  Node* n = g.AddNode(bare, domain, std::move(inputs), outs, std::move(attrs), g.UniqueName(name));
  n->set_version(def->canonical);
  A8_RETURN_IF_ERROR(CheckNodeAgainstOpDef(*n, *def));
  std::vector<TensorType> types;
  A8_RETURN_IF_ERROR(def->infer(*n, &types));
  for (int i = 0; i < outputs; ++i) n->output(i)->set_type(types[i]);
  return n;
}

// A GradContext that runs every node it emits immediately.
class EagerContext : public GradContext {
 public:
  EagerContext(Graph& g, Node* fwd, std::map<const Value*, ByteVec>* values,
               std::vector<Value*> output_grads, std::vector<bool> needs)
      : g_(g),
        fwd_(fwd),
        values_(values),
        output_grads_(std::move(output_grads)),
        needs_(std::move(needs)),
        input_grads_(fwd->num_inputs(), nullptr) {}

  const Node& node() const override { return *fwd_; }
  Value* output_grad(int i) const override { return output_grads_.at(i); }
  bool needs_grad(int i) const override { return i < static_cast<int>(needs_.size()) && needs_[i]; }
  Status SetInputGrad(int i, Value* v) override {
    if (!needs_grad(i)) return Status::Ok();
    if (v->type() != fwd_->input(i)->type() || input_grads_[i] != nullptr) {
      return Internal("gradient {} of input {}: type {} (input {}) or set twice", v->name(), i,
                      v->type().ToString(), fwd_->input(i)->type().ToString());
    }
    input_grads_[i] = v;
    return Status::Ok();
  }
  StatusOr<std::vector<Value*>> Emit(std::string_view op, std::vector<Value*> inputs,
                                     std::map<std::string, Attribute> attrs,
                                     int num_outputs) override {
    A8_ASSIGN_OR_RETURN(Node * n, AddTypedNode(g_, op, std::move(inputs), std::move(attrs),
                                               num_outputs, fwd_->name() + ".grad"));
    emitted_.push_back(n->qualified_op());
    A8_RETURN_IF_ERROR(RunNode(*n, values_));
    return n->outputs();
  }
  Value* ConstInts(const std::vector<int64_t>& v) override {
    return Constant(TensorData::FromInt64s(v, {static_cast<int64_t>(v.size())}));
  }
  Value* ConstScalar(DType dtype, double value) override {
    auto d = std::const_pointer_cast<TensorData>(TensorData::Make({dtype, {}}));
    EXPECT_TRUE(cpu::Cast(DType::kF64, dtype, 1, &value, d->bytes.data()).ok());
    return Constant(d);
  }

  Value* input_grad(int i) const { return input_grads_[i]; }
  const std::vector<std::string>& emitted() const { return emitted_; }

 private:
  Value* Constant(TensorDataPtr d) {
    Value* v = g_.AddConstant(g_.UniqueName("c"), d);
    (*values_)[v] = ByteVec(d->bytes.begin(), d->bytes.end());
    return v;
  }

  Graph& g_;
  Node* fwd_;
  std::map<const Value*, ByteVec>* values_;
  std::vector<Value*> output_grads_;
  std::vector<bool> needs_;
  std::vector<Value*> input_grads_;
  std::vector<std::string> emitted_;
};

ByteVec ToBytes(const TensorType& t, const std::vector<double>& v) {
  return cpu::testing::FromValues(t.dtype, t.dims, v).bytes;
}
std::vector<double> ToDoubles(const TensorType& t, const ByteVec& b) {
  cpu::testing::Buffer buf = cpu::testing::MakeBuffer(t.dtype, t.dims);
  buf.bytes = b;
  return cpu::testing::Values(buf);
}

// The eager twin of ExpectGradientsMatch: the same loss, the same tolerances.
void ExpectEagerGradientsMatch(const GradCheckCase& c) {
  SCOPED_TRACE(c.op);
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Graph g;
  std::map<const Value*, ByteVec> values;
  std::vector<Value*> inputs;
  std::vector<bool> needs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const GradCheckInput& in = c.inputs[i];
    needs.push_back(!in.absent && !in.constant && in.differentiable && IsFloat(in.type.dtype));
    if (in.absent) {
      inputs.push_back(nullptr);
      continue;
    }
    std::vector<double> v = in.values;
    if (v.empty()) {
      v.resize(static_cast<size_t>(in.type.CheckedNumElements()));
      for (double& x : v) x = uniform(rng);
    }
    Value* val;
    if (in.constant) {
      auto d = std::const_pointer_cast<TensorData>(TensorData::Make(in.type));
      d->bytes = ToBytes(in.type, v);
      val = g.AddConstant("in" + std::to_string(i), d);
    } else {
      val = g.AddInput("in" + std::to_string(i), in.type);
    }
    values[val] = ToBytes(in.type, v);
    inputs.push_back(val);
  }
  auto fwd = AddTypedNode(g, c.op, inputs, c.attrs, c.num_outputs, "fwd");
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  Node* node = *fwd;
  std::vector<int> loss_outputs = c.loss_outputs;
  if (loss_outputs.empty()) {
    for (int i = 0; i < c.num_outputs; ++i)
      if (IsFloat(node->output(i)->dtype())) loss_outputs.push_back(i);
  }
  std::vector<Value*> output_grads(c.num_outputs, nullptr);
  std::vector<std::vector<double>> r(c.num_outputs);
  for (int k : loss_outputs) {
    const TensorType& t = node->output(k)->type();
    r[k].resize(static_cast<size_t>(t.CheckedNumElements()));
    for (double& x : r[k]) x = uniform(rng);
    output_grads[k] = g.AddInput("dy" + std::to_string(k), t);
    values[output_grads[k]] = ToBytes(t, r[k]);
  }
  auto loss = [&]() {
    Status s = RunNode(*node, &values);
    EXPECT_TRUE(s.ok()) << s.message();
    double l = 0;
    for (int k : loss_outputs) {
      std::vector<double> y = ToDoubles(node->output(k)->type(), values[node->output(k)]);
      for (size_t j = 0; j < y.size(); ++j) l += y[j] * r[k][j];
    }
    return l;
  };
  loss();
  EagerContext ctx(g, node, &values, output_grads, needs);
  GradRule rule = FindGradRule(c.op);
  ASSERT_NE(rule, nullptr) << "no gradient rule";
  Status st = rule(ctx);
  ASSERT_TRUE(st.ok()) << st.message();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!needs[i]) continue;
    SCOPED_TRACE("input " + std::to_string(i));
    const TensorType& t = inputs[i]->type();
    std::vector<double> got(static_cast<size_t>(t.CheckedNumElements()), 0.0);
    if (ctx.input_grad(i) != nullptr) got = ToDoubles(t, values[ctx.input_grad(i)]);
    std::vector<double> x = ToDoubles(t, values[inputs[i]]);
    int failures = 0;
    for (size_t j = 0; j < x.size() && failures < 5; ++j) {
      const double x0 = x[j];
      x[j] = x0 + c.eps;
      values[inputs[i]] = ToBytes(t, x);
      const double lp = loss();
      x[j] = x0 - c.eps;
      values[inputs[i]] = ToBytes(t, x);
      const double lm = loss();
      x[j] = x0;
      values[inputs[i]] = ToBytes(t, x);
      const double numeric = (lp - lm) / (2 * c.eps);
      if (!(std::fabs(got[j] - numeric) <= c.atol + c.rtol * std::fabs(numeric))) {
        ADD_FAILURE() << "element " << j << ": analytic " << got[j] << ", numeric " << numeric;
        ++failures;
      }
    }
  }
}

using Attrs = std::map<std::string, Attribute>;
using Ints = std::vector<int64_t>;

// One case through both checks: the eager one and, unless `eager_only`, ExpectGradientsMatch.
void Check(std::string op, std::vector<GradCheckInput> inputs, Attrs attrs = {},
           int num_outputs = 1, std::vector<int> loss_outputs = {}, bool eager_only = false) {
  GradCheckCase c;
  c.op = std::move(op);
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.num_outputs = num_outputs;
  c.loss_outputs = std::move(loss_outputs);
  ExpectEagerGradientsMatch(c);
  if (!eager_only) testing::ExpectGradientsMatch(c);
}

using testing::Absent;
using testing::Const;
using testing::Fixed;
using testing::Input;
using testing::Positive;
GradCheckInput F64(std::vector<int64_t> dims) { return Input(DType::kF64, std::move(dims)); }
std::vector<double> Labels(int64_t n, int64_t classes) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 2 + 1) % classes);
  return v;
}

// ---- gradient rules

TEST(GradNnRuleTest, Conv) {
  struct Case {
    Ints x, w;
    Attrs attrs;
    bool bias;
  };
  const Case cases[] = {
      {{2, 3, 6, 5},
       {4, 3, 3, 2},
       {{"strides", Attribute(Ints{2, 1})},
        {"pads", Attribute(Ints{1, 0, 1, 1})},
        {"dilations", Attribute(Ints{1, 2})}},
       true},
      {{1, 4, 5, 5},
       {6, 2, 3, 3},
       {{"group", Attribute(2)}, {"pads", Attribute(Ints{1, 1, 1, 1})}},
       true},
      {{1, 2, 7, 6},
       {3, 2, 3, 3},
       {{"strides", Attribute(Ints{2, 2})}, {"auto_pad", Attribute("SAME_UPPER")}},
       false},
      {{2, 2, 9},
       {3, 2, 4},
       {{"strides", Attribute(Ints{3})}, {"pads", Attribute(Ints{2, 0})}},
       true},
      {{1, 2, 3, 4, 3}, {2, 1, 2, 2, 2}, {{"group", Attribute(2)}}, false},
  };
  for (const Case& c : cases) {
    Check("Conv", {F64(c.x), F64(c.w), c.bias ? F64({c.w[0]}) : Absent()}, c.attrs);
  }
}

TEST(GradNnRuleTest, MaxPoolAndAveragePool) {
  const Attrs cases[] = {
      {{"kernel_shape", Attribute(Ints{3, 2})},
       {"strides", Attribute(Ints{2, 2})},
       {"pads", Attribute(Ints{1, 0, 1, 1})}},
      {{"kernel_shape", Attribute(Ints{3, 3})},
       {"strides", Attribute(Ints{2, 3})},
       {"pads", Attribute(Ints{1, 1, 1, 1})},
       {"ceil_mode", Attribute(1)}},
      {{"kernel_shape", Attribute(Ints{2, 3})},
       {"strides", Attribute(Ints{2, 2})},
       {"auto_pad", Attribute("SAME_LOWER")}},
  };
  for (const Attrs& a : cases) {
    Check("MaxPool", {F64({2, 2, 7, 6})}, a);
    for (int include_pad : {0, 1}) {
      Attrs avg = a;
      avg["count_include_pad"] = Attribute(include_pad);
      Check("AveragePool", {F64({2, 2, 7, 6})}, avg);
    }
  }
  // 1-D with dilation; MaxPool's Indices output gets no gradient.
  Attrs one_d = {{"kernel_shape", Attribute(Ints{3})},
                 {"strides", Attribute(Ints{2})},
                 {"dilations", Attribute(Ints{2})}};
  Check("MaxPool", {F64({2, 3, 11})}, one_d, 2, {0});
  Check("AveragePool", {F64({2, 3, 11})}, {{"kernel_shape", Attribute(Ints{3})}});
}

TEST(GradNnRuleTest, GlobalPools) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Check(op, {F64({2, 3, 4, 5})});
    Check(op, {F64({3, 2, 7})});
  }
}

TEST(GradNnRuleTest, BatchNormalizationTrainingAndInference) {
  for (Ints x : {Ints{4, 3, 2, 2}, Ints{5, 2}}) {
    const int64_t c = x[1];
    // The running statistics get no gradient: only Y feeds the loss.
    Check("BatchNormalization", {F64(x), Positive({c}, 3), F64({c}), F64({c}), Positive({c}, 4)},
          {{"training_mode", Attribute(1)}, {"epsilon", Attribute(1e-3f)}}, 3, {0});
    Check("BatchNormalization", {F64(x), Positive({c}, 5), F64({c}), F64({c}), Positive({c}, 6)},
          {{"epsilon", Attribute(1e-3f)}});
  }
}

TEST(GradNnRuleTest, LayerNormalization) {
  // f32 Mean / InvStdDev of an f64 forward (stash_type 1): the kernel recomputes them in double.
  Check("LayerNormalization", {F64({3, 4, 5}), Positive({5}, 7), F64({5})},
        {{"epsilon", Attribute(1e-3f)}}, 3, {0});
  Check("LayerNormalization", {F64({2, 3, 4}), Positive({3, 4}, 8), Absent()},
        {{"axis", Attribute(1)}});
  // Y and Mean only: no statistics for the gradient, the kernel recomputes them.
  Check("LayerNormalization", {F64({4, 6}), Positive({6}, 9), F64({6})}, {}, 2, {0});
}

TEST(GradNnRuleTest, InstanceNormalization) {
  Check("InstanceNormalization", {F64({2, 3, 5}), Positive({3}, 10), F64({3})},
        {{"epsilon", Attribute(1e-3f)}});
  Check("InstanceNormalization", {F64({1, 2, 3, 3}), Positive({2}, 11), F64({2})});
}

TEST(GradNnRuleTest, SoftmaxAndLogSoftmax) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    Check(op, {F64({3, 7})});
    Check(op, {F64({2, 4, 3})}, {{"axis", Attribute(1)}});
    Check(op, {F64({4, 2, 3})}, {{"axis", Attribute(-3)}});
  }
}

TEST(GradNnRuleTest, DropoutInAndOutOfTrainingMode) {
  // Training mode: eager only for now. ExpectGradientsMatch runs every finite-difference
  // evaluation as a new executor step, and each step draws a new mask (the mask is a function of
  // seed, step and node), so its differences are meaningless until it pins the step.
  Check("Dropout", {F64({4, 9}), Const(DType::kF64, {}, {0.3}), Const(DType::kBool, {}, {1})}, {},
        2, {});
  Check("Dropout", {F64({3, 5}), Fixed(DType::kF32, {}, {0.5}), Fixed(DType::kBool, {}, {1})}, {},
        2, {});
  Check("Dropout", {F64({3, 5})});
  Check("Dropout", {F64({3, 5}), Absent(), Const(DType::kBool, {}, {0})});
}

TEST(GradNnRuleTest, SoftmaxCrossEntropyAndNegativeLogLikelihood) {
  struct Case {
    Ints scores;
    const char* reduction;
    bool weights, ignore;
  };
  const Case cases[] = {{{5, 4}, "mean", false, false},
                        {{4, 3}, "sum", true, true},
                        {{3, 5, 2}, "none", true, false},
                        {{2, 3, 2, 3}, "mean", true, true}};
  for (const Case& c : cases) {
    Ints labels_dims = c.scores;
    labels_dims.erase(labels_dims.begin() + 1);
    const int64_t n = cpu::NumElements(labels_dims);
    for (DType label_dt : {DType::kI64, DType::kI32}) {
      Attrs attrs = {{"reduction", Attribute(c.reduction)}};
      if (c.ignore) attrs["ignore_index"] = Attribute(int64_t{1});
      std::vector<GradCheckInput> in = {
          F64(c.scores), Fixed(label_dt, labels_dims, Labels(n, c.scores[1])),
          c.weights ? Const(DType::kF64, {c.scores[1]}, {0.5, 2.0, 1.5, 0.75, 1.25}) : Absent()};
      if (c.weights) in[2].values.resize(static_cast<size_t>(c.scores[1]));
      Check("SoftmaxCrossEntropyLoss", in, attrs);
      Check("SoftmaxCrossEntropyLoss", in, attrs, 2);  // with log_prob in the loss
      Check("NegativeLogLikelihoodLoss", in, attrs);
    }
  }
}

TEST(GradNnRuleTest, A8Losses) {
  GradCheckInput probs = Positive({3, 4}, 12);
  for (double& p : probs.values) p /= 2.0;  // targets in [0.25, 1]
  for (Ints dims : {Ints{7}, Ints{3, 4}}) {
    Check("a8.MseLoss", {F64(dims), F64(dims)});
    Check("a8.L1Loss", {F64(dims), F64(dims)});
    Check("a8.MseLoss",
          {F64(dims), Fixed(DType::kF64, dims, std::vector<double>(cpu::NumElements(dims), 0.25))});
  }
  Check("a8.BceWithLogitsLoss", {F64({3, 4}), probs});
  probs.differentiable = false;
  Check("a8.BceWithLogitsLoss", {F64({3, 4}), probs});
}

TEST(GradNnRuleTest, TrainingDropoutWithoutItsMaskIsAnError) {
  Graph g;
  Value* x = g.AddInput("x", {DType::kF32, {2, 3}});
  Value* t = g.AddInput("t", {DType::kBool, {}});
  auto node = AddTypedNode(g, "Dropout", {x, nullptr, t}, {}, 1, "drop");
  ASSERT_TRUE(node.ok()) << node.status().message();
  std::map<const Value*, ByteVec> values;
  EagerContext ctx(g, *node, &values, {g.AddInput("dy", {DType::kF32, {2, 3}})}, {true});
  Status s = FindGradRule("Dropout")(ctx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("mask"), std::string::npos) << s.message();
}

TEST(GradNnRuleTest, EveryRuleOfTheBriefIsRegistered) {
  for (const char* op :
       {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
        "BatchNormalization", "LayerNormalization", "InstanceNormalization", "Softmax",
        "LogSoftmax", "Dropout", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
        "a8.MseLoss", "a8.L1Loss", "a8.BceWithLogitsLoss"}) {
    EXPECT_TRUE(HasGradient(op)) << op;
  }
}

// ---- evaluation steps of a training plan

TEST(GradNnEvalStepTest, BatchNormUsesAndKeepsTheRunningStatistics) {
  Graph g;
  const int64_t n = 4, c = 3, sp = 5;
  std::vector<Value*> in = {g.AddInput("x", {DType::kF32, {n, c, sp}})};
  for (const char* name : {"scale", "b", "mean", "var"}) {
    in.push_back(g.AddInput(name, {DType::kF32, {c}}));
  }
  auto node =
      AddTypedNode(g, "BatchNormalization", in,
                   {{"training_mode", Attribute(1)}, {"momentum", Attribute(0.8f)}}, 3, "bn");
  ASSERT_TRUE(node.ok()) << node.status().message();
  std::map<const Value*, ByteVec> values;
  std::mt19937_64 rng(30);
  std::vector<cpu::testing::Buffer> bufs = {
      cpu::testing::RandomBuffer(DType::kF32, {n, c, sp}, rng),
      cpu::testing::RandomBuffer(DType::kF32, {c}, rng, 0.5, 2),
      cpu::testing::RandomBuffer(DType::kF32, {c}, rng),
      cpu::testing::RandomBuffer(DType::kF32, {c}, rng),
      cpu::testing::RandomBuffer(DType::kF32, {c}, rng, 0.5, 2)};
  for (int i = 0; i < 5; ++i) values[in[i]] = bufs[i].bytes;
  testing::norm::BatchNormParams p;
  p.batch = n, p.channels = c, p.spatial = sp, p.momentum = 0.8f;
  for (bool eval : {true, false}) {
    SCOPED_TRACE(eval ? "eval" : "train");
    StepInfo step;
    step.eval = eval;
    ASSERT_TRUE(RunNode(**node, &values, step).ok());
    std::vector<float> y(n * c * sp), rm(c), rv(c);
    if (eval) {
      ASSERT_TRUE(testing::norm::BatchNormInference(p, bufs[0].data(), bufs[1].data(),
                                                    bufs[2].data(), bufs[3].data(), bufs[4].data(),
                                                    y.data())
                      .ok());
      std::memcpy(rm.data(), bufs[3].data(), c * 4);
      std::memcpy(rv.data(), bufs[4].data(), c * 4);
    } else {
      ASSERT_TRUE(testing::norm::BatchNormTraining(p, bufs[0].data(), bufs[1].data(),
                                                   bufs[2].data(), bufs[3].data(), bufs[4].data(),
                                                   y.data(), rm.data(), rv.data())
                      .ok());
    }
    EXPECT_EQ(std::memcmp(values[(*node)->output(0)].data(), y.data(), y.size() * 4), 0);
    EXPECT_EQ(std::memcmp(values[(*node)->output(1)].data(), rm.data(), c * 4), 0);
    EXPECT_EQ(std::memcmp(values[(*node)->output(2)].data(), rv.data(), c * 4), 0);
  }
}

TEST(GradNnEvalStepTest, DropoutStreamsPerNodeAndStepAndPassesThroughInEval) {
  Graph g;
  const int64_t n = 256;
  Value* x = g.AddInput("x", {DType::kF32, {n}});
  Value* ratio = g.AddInput("ratio", {DType::kF32, {}});
  Value* training = g.AddInput("training", {DType::kBool, {}});
  std::map<const Value*, ByteVec> values;
  std::mt19937_64 rng(31);
  values[x] = cpu::testing::RandomBuffer(DType::kF32, {n}, rng, 0.5, 2).bytes;
  const float r = 0.4f;
  values[ratio] = ByteVec(4);
  std::memcpy(values[ratio].data(), &r, 4);
  values[training] = ByteVec{1};
  auto a = AddTypedNode(g, "Dropout", {x, ratio, training}, {}, 2, "drop_a");
  auto b = AddTypedNode(g, "Dropout", {x, ratio, training}, {}, 2, "drop_b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto mask_of = [&](Node* node, int64_t step_index, bool eval) {
    StepInfo step;
    step.step = step_index;
    step.seed = 1234;
    step.eval = eval;
    EXPECT_TRUE(RunNode(*node, &values, step).ok());
    return values[node->output(1)];
  };
  const ByteVec a0 = mask_of(*a, 0, false), b0 = mask_of(*b, 0, false);
  EXPECT_NE(a0, b0) << "two Dropouts of one step draw the same mask";
  EXPECT_NE(a0, mask_of(*a, 1, false)) << "successive steps draw the same mask";
  EXPECT_EQ(a0, mask_of(*a, 0, false)) << "the mask is not a function of (seed, step, node)";
  int kept = 0;
  for (uint8_t m : a0) kept += m;
  EXPECT_NEAR(kept, n * (1 - r), 4 * std::sqrt(n * r * (1 - r)));
  EXPECT_EQ(mask_of(*a, 0, true), ByteVec(n, 1));
  EXPECT_EQ(values[(*a)->output(0)], values[x]) << "an eval step must pass through";
}

}  // namespace
}  // namespace a8
