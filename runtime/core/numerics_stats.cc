#include "runtime/core/numerics_stats.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kernels/common/float16.h"
#include "kernels/cpu/elementwise.h"

namespace a8 {
namespace {

constexpr double kFp16Max = 65504.0;
constexpr double kNearOverflow = kFp16Max / 2;             // within 2x of the largest value
constexpr double kSmallestNormal = 6.103515625e-05;        // 2^-14
constexpr double kRoundsToZero = 2.98023223876953125e-08;  // 2^-25: half the smallest subnormal

void Classify(double v, Fp16Classes* c) {
  ++c->values;
  const double a = std::fabs(v);
  if (!(a < kNearOverflow)) {  // NaN too
    ++c->near_overflow;
  } else if (a <= kRoundsToZero) {  // 2^-25 itself rounds to 0 (ties to even)
    ++c->zero;
  } else if (a < kSmallestNormal) {
    ++c->subnormal;
  }
}

nlohmann::ordered_json Shares(const Fp16Classes& c, const char* prefix) {
  nlohmann::ordered_json j;
  const double n = c.values > 0 ? static_cast<double>(c.values) : 1.0;
  j[std::string(prefix) + "values"] = c.values;
  j[std::string(prefix) + "zero"] = static_cast<double>(c.zero) / n;
  j[std::string(prefix) + "subnormal"] = static_cast<double>(c.subnormal) / n;
  j[std::string(prefix) + "near_overflow"] = static_cast<double>(c.near_overflow) / n;
  return j;
}

}  // namespace

void Fp16Classes::Add(const Fp16Classes& o) {
  values += o.values;
  zero += o.zero;
  subnormal += o.subnormal;
  near_overflow += o.near_overflow;
}

Fp16Classes ClassifyForFp16(DType dtype, const uint8_t* data, int64_t count) {
  Fp16Classes c;
  if (!IsFloat(dtype)) return c;
  for (int64_t i = 0; i < count; ++i) {
    double v = 0;
    switch (dtype) {
      case DType::kF16: {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        v = HalfBitsToFloat(bits);
        break;
      }
      case DType::kBF16: {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        v = BFloat16BitsToFloat(bits);
        break;
      }
      case DType::kF32: {
        float f;
        std::memcpy(&f, data + 4 * i, 4);
        v = f;
        break;
      }
      default:
        std::memcpy(&v, data + 8 * i, 8);
        break;
    }
    Classify(v, &c);
  }
  return c;
}

std::string GroupOf(const std::string& name) {
  const size_t at = name.find_last_of("./");
  if (at == std::string::npos || at == 0) return name;
  return name.substr(0, at);
}

StatusOr<std::unique_ptr<NumericsStats>> NumericsStats::Create(const plan::Plan& plan,
                                                               const std::string& path,
                                                               int64_t every) {
  if (!plan.training()) return InvalidInput("--numerics-stats: needs a training plan");
  if (every < 1) return InvalidInput("--every={}: expected at least 1", every);
  std::unique_ptr<NumericsStats> s(new NumericsStats());
  s->every_ = every;
  s->path_ = path;
  s->out_.open(path, std::ios::trunc);
  if (!s->out_) return InvalidInput("--numerics-stats {}: cannot create", path);
  for (int k : plan.train().eval_kernels()) {
    const plan::Kernel& kern = plan.kernels(k);
    if (kern.op() == "Cast" || kern.outputs_size() == 0) continue;
    s->activation_group_[k] =
        GroupOf(kern.onnx_nodes_size() > 0 ? kern.onnx_nodes(0) : kern.node());
  }
  // Scaled gradient -> unscaled: the unscale kernels' inputs (after the scale) and outputs.
  std::map<int, int> scaled_of;  // unscaled -> scaled
  for (const plan::Kernel& kern : plan.kernels()) {
    if (kern.op() != "a8.UnscaleCheckFinite") continue;
    for (int i = 1; i < kern.inputs_size() && i - 1 < kern.outputs_size(); ++i)
      scaled_of[kern.outputs(i - 1)] = kern.inputs(i);
  }
  // Parameter -> its gradient: the optimizer kernels read (parameter, gradient, ...).
  for (const plan::Kernel& kern : plan.kernels()) {
    if (kern.op() != "a8.AdamUpdate" && kern.op() != "a8.SgdUpdate") continue;
    if (kern.inputs_size() < 2) continue;
    const int param = kern.inputs(0), grad = kern.inputs(1);
    if (param < 0 || grad < 0 || plan.buffers(param).role() != plan::Buffer::PARAMETER) continue;
    const std::string group = GroupOf(plan.buffers(param).name());
    s->param_group_[param] = group;
    auto it = scaled_of.find(grad);
    const int scaled = it != scaled_of.end() ? it->second : grad;
    s->grad_group_[scaled] = group;
  }
  for (int k = 0; k < plan.kernels_size(); ++k)
    for (int id : plan.kernels(k).outputs())
      if (s->grad_group_.count(id) > 0) s->grads_written_[k].push_back(id);
  return s;
}

Status NumericsStats::Read(int id, std::vector<uint8_t>* raw) const {
  raw->resize(ex_->plan().buffers(id).bytes());
  return ex_->ReadBuffer(id, raw->data());
}

Status NumericsStats::AfterKernel(int k, const StepInfo& info) {
  if (ex_ == nullptr || info.eval || !Sampled(info.step + 1)) return Status::Ok();
  const plan::Plan& plan = ex_->plan();
  std::vector<uint8_t> raw;
  if (auto it = activation_group_.find(k); it != activation_group_.end()) {
    for (int id : plan.kernels(k).outputs()) {
      const plan::Buffer& b = plan.buffers(id);
      const DType dtype = static_cast<DType>(b.type().dtype());
      if (!IsFloat(dtype)) continue;
      A8_RETURN_IF_ERROR(Read(id, &raw));
      activations_[it->second].Add(
          ClassifyForFp16(dtype, raw.data(), static_cast<int64_t>(b.bytes() / DTypeSize(dtype))));
    }
  }
  if (auto it = grads_written_.find(k); it != grads_written_.end()) {
    for (int id : it->second) {
      const plan::Buffer& b = plan.buffers(id);
      const DType dtype = static_cast<DType>(b.type().dtype());
      const int64_t n = static_cast<int64_t>(b.bytes() / DTypeSize(dtype));
      A8_RETURN_IF_ERROR(Read(id, &raw));
      grads_[grad_group_.at(id)].Add(ClassifyForFp16(dtype, raw.data(), n));
      std::vector<double> v(static_cast<size_t>(n));
      A8_RETURN_IF_ERROR(cpu::Cast(dtype, DType::kF64, n, raw.data(), v.data()));
      for (double x : v) {
        grad_sq_ += x * x;
        grad_max_ = std::isfinite(x) ? std::max(grad_max_, std::fabs(x)) : HUGE_VAL;
      }
    }
  }
  return Status::Ok();
}

Status NumericsStats::OnStep(const StepRecord& rec) {
  if (ex_ == nullptr || !Sampled(rec.step)) return Status::Ok();
  const plan::Plan& plan = ex_->plan();
  std::map<std::string, Fp16Classes> params;
  std::vector<uint8_t> raw;
  for (const auto& [id, group] : param_group_) {
    const plan::Buffer& b = plan.buffers(id);
    const DType dtype = static_cast<DType>(b.type().dtype());
    A8_RETURN_IF_ERROR(Read(id, &raw));
    params[group].Add(
        ClassifyForFp16(dtype, raw.data(), static_cast<int64_t>(b.bytes() / DTypeSize(dtype))));
  }
  const double scale = rec.scale > 0 ? rec.scale : 1.0;
  nlohmann::ordered_json j;
  j["step"] = rec.step;
  j["scale"] = rec.scale;
  j["skipped"] = rec.skipped;
  const double norm = std::sqrt(grad_sq_) / scale, max_abs = grad_max_ / scale;
  auto number = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  j["grad_norm"] = number(norm);
  j["grad_max_abs"] = number(max_abs);
  j["headroom_log2"] = max_abs > 0 ? number(std::log2(kFp16Max / (scale * max_abs))) : nullptr;
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  for (const auto& [group, c] : params) {
    nlohmann::ordered_json g = Shares(c, "");
    auto it = grads_.find(group);
    g.update(Shares(it != grads_.end() ? it->second : Fp16Classes{}, "grad_"));
    p[group] = g;
  }
  j["params"] = p;
  nlohmann::ordered_json a = nlohmann::ordered_json::object();
  for (const auto& [group, c] : activations_) a[group] = Shares(c, "");
  j["activations"] = a;
  out_ << j.dump() << "\n";
  out_.flush();
  activations_.clear();
  grads_.clear();
  grad_sq_ = grad_max_ = 0;
  if (!out_) return Internal("--numerics-stats {}: cannot write", path_);
  return Status::Ok();
}

}  // namespace a8
