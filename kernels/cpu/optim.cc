#include "kernels/cpu/optim.h"

#include <cstring>
#include <type_traits>

#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/optim_fast.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/tensor_chunks.h"

namespace a8::cpu {
namespace {

// Elements per fixed chunk of GlobalNormSq: partial sums are per chunk, whatever the threads.
constexpr int64_t kNormChunk = int64_t{1} << 15;
// Rough cost of one update element relative to a copy, for ParallelFor.
constexpr int64_t kUpdateCost = 8;

// A not-applied update: the outputs keep the inputs' bytes (nothing to do when in place).
void KeepBytes(const void* in, void* out, int64_t n, DType dtype) {
  if (in != out && n > 0) std::memmove(out, in, static_cast<size_t>(n) * ElemSize(dtype));
}

// Elements [b, e) of a8.AdamUpdate's working copy from the stored f32 parameter, rounded as the
// reference Cast rounds (one element at a time through float16.h).
void StoreWorkingCopy(const AdamExtras& extras, const float* x, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    if (extras.copy_dtype == DType::kF16) {
      static_cast<Half*>(extras.copy)[i] = Store<Half>(x[i]);
    } else {
      static_cast<BFloat16*>(extras.copy)[i] = Store<BFloat16>(x[i]);
    }
  }
}

Status CheckUpdateArgs(const char* op, int64_t n, const float* ctl) {
  if (n < 0) return InvalidInput("{}: negative element count {}", op, n);
  if (ctl == nullptr) return InvalidInput("{}: the control vector is missing", op);
  return Status::Ok();
}

// Calls f(TypeTag<P>, TypeTag<G>) for a float parameter and a float gradient dtype.
template <typename F>
Status DispatchParamGrad(DType param, DType grad, const char* op, F&& f) {
  return Dispatch<TypeSet::kFloat>(param, op, [&](auto p_tag) {
    return Dispatch<TypeSet::kFloat>(grad, op, [&](auto g_tag) { return f(p_tag, g_tag); });
  });
}

}  // namespace

Status CheckTrainControlParams(const TrainControlParams& p) {
  if (p.accumulate < 1) {
    return InvalidInput("a8.TrainControl: accumulate must be at least 1, got {}", p.accumulate);
  }
  if (p.warmup_steps < 0 || p.total_steps < 0) {
    return InvalidInput("a8.TrainControl: warmup_steps ({}) and total_steps ({}) must be >= 0",
                        p.warmup_steps, p.total_steps);
  }
  return Status::Ok();
}

Status TrainControl(const TrainControlParams& p, const TrainControlInputs& in, float* ctl,
                    int64_t* step_next, float* updates_next) {
  A8_RETURN_IF_ERROR(CheckTrainControlParams(p));
  if (in.step < 0) return InvalidInput("a8.TrainControl: negative step {}", in.step);
  TrainControlStep(p, in, ctl, step_next, updates_next);
  return Status::Ok();
}

Status GlobalNormSq(const std::vector<DType>& dtypes, const std::vector<int64_t>& counts,
                    const std::vector<const void*>& data, float* out) {
  if (dtypes.size() != counts.size() || dtypes.size() != data.size())
    return InvalidInput("a8.GlobalNormSq: {} dtypes, {} counts and {} tensors", dtypes.size(),
                        counts.size(), data.size());
  double total = 0.0;
  A8_RETURN_IF_ERROR(ForEachTensorChunk<double>(
      "a8.GlobalNormSq", kNormChunk, dtypes, counts,
      [&](auto tag, size_t t, int64_t b, int64_t e) {
        using T = A8_TAG_TYPE(tag);
        const T* x = static_cast<const T*>(data[t]);
        double s = 0.0;
        for (int64_t i = b; i < e; ++i) {
          const double v = static_cast<double>(Load(x[i]));
          s += v * v;
        }
        return s;
      },
      [&](double s) { total += s; }));
  *out = static_cast<float>(total);
  return Status::Ok();
}

Status GradAccumulate(DType acc_dtype, DType g_dtype, int64_t n, int64_t accumulate, int64_t step,
                      const void* acc, const void* g, void* acc_next) {
  if (accumulate < 1) {
    return InvalidInput("a8.GradAccumulate: accumulate must be at least 1, got {}", accumulate);
  }
  if (n < 0) return InvalidInput("a8.GradAccumulate: negative element count {}", n);
  const bool restart = step % accumulate == 0;
  return DispatchParamGrad(acc_dtype, g_dtype, "a8.GradAccumulate", [&](auto a_tag, auto g_tag) {
    using A = A8_TAG_TYPE(a_tag);
    using G = A8_TAG_TYPE(g_tag);
    using C = Compute<A>;
    const A* a = static_cast<const A*>(acc);
    const G* gr = static_cast<const G*>(g);
    A* out = static_cast<A*>(acc_next);
    ParallelFor(n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const C sum = restart ? C(0) : Load(a[i]);
        out[i] = Store<A>(sum + static_cast<C>(Load(gr[i])));
      }
    });
    return Status::Ok();
  });
}

Status SgdUpdate(const SgdParams& p, DType param_dtype, DType grad_dtype, int64_t n,
                 const float* ctl, const void* param, const void* grad, const void* buf,
                 void* param_next, void* buf_next) {
  A8_RETURN_IF_ERROR(CheckUpdateArgs("a8.SgdUpdate", n, ctl));
  const bool has_buf = buf != nullptr && buf_next != nullptr;
  if (p.momentum != 0.0f && !has_buf) {
    return InvalidInput("a8.SgdUpdate: momentum {} needs the momentum buffer input and output",
                        p.momentum);
  }
  if (ctl[kCtlApplied] == 0.0f) {
    KeepBytes(param, param_next, n, param_dtype);
    if (has_buf) KeepBytes(buf, buf_next, n, param_dtype);
    return Status::Ok();
  }
  return DispatchParamGrad(param_dtype, grad_dtype, "a8.SgdUpdate", [&](auto p_tag, auto g_tag) {
    using P = A8_TAG_TYPE(p_tag);
    using G = A8_TAG_TYPE(g_tag);
    using C = Compute<P>;
    const SgdStep<C> s{static_cast<C>(ctl[kCtlLr]),    static_cast<C>(ctl[kCtlGradScale]),
                       static_cast<C>(p.momentum),     static_cast<C>(p.dampening),
                       static_cast<C>(p.weight_decay), p.nesterov,
                       ctl[kCtlUpdates] == 1.0f};
    const bool use_buf = p.momentum != 0.0f;
    const P* x = static_cast<const P*>(param);
    const G* gr = static_cast<const G*>(grad);
    const P* bf = static_cast<const P*>(buf);
    P* x_out = static_cast<P*>(param_next);
    P* b_out = static_cast<P*>(buf_next);
    ParallelFor(n, kUpdateCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C xi = Load(x[i]);
        C bi = use_buf ? Load(bf[i]) : C(0);
        SgdElement<C>(s, static_cast<C>(Load(gr[i])), &xi, &bi);
        x_out[i] = Store<P>(xi);
        if (use_buf) b_out[i] = Store<P>(bi);
      }
    });
    // With momentum 0 a present buffer is not used (as PyTorch): pass it through.
    if (has_buf && !use_buf) KeepBytes(buf, buf_next, n, param_dtype);
    return Status::Ok();
  });
}

Status AdamUpdate(const AdamParams& p, DType param_dtype, DType grad_dtype, int64_t n,
                  const float* ctl, const void* param, const void* grad, const void* m,
                  const void* v, void* param_next, void* m_next, void* v_next,
                  const AdamExtras& extras) {
  A8_RETURN_IF_ERROR(CheckUpdateArgs("a8.AdamUpdate", n, ctl));
  if (extras.copy != nullptr &&
      (param_dtype != DType::kF32 ||
       (extras.copy_dtype != DType::kF16 && extras.copy_dtype != DType::kBF16))) {
    return InvalidInput("a8.AdamUpdate: a working copy of {} is {} (f16 or bf16 of f32 expected)",
                        ElemName(param_dtype), ElemName(extras.copy_dtype));
  }
  const bool applied = ctl[kCtlApplied] != 0.0f;
  if (!applied) {
    KeepBytes(param, param_next, n, param_dtype);
    KeepBytes(m, m_next, n, param_dtype);
    KeepBytes(v, v_next, n, param_dtype);
    if (extras.copy != nullptr) {
      const auto* x = static_cast<const float*>(param_next);
      if (CurrentKernelMode() == KernelMode::kFast) {
        NarrowFromF32(extras.copy_dtype, x, n, extras.copy);
      } else {
        ParallelFor(n, 1, [&](int64_t b, int64_t e) { StoreWorkingCopy(extras, x, b, e); });
      }
    }
    return Status::Ok();
  }
  const double t = ctl[kCtlUpdates];
  if (!(t >= 1.0)) {
    return InvalidInput("a8.AdamUpdate: an applied update must have count >= 1, got {}", t);
  }
  const double lr = ctl[kCtlLr];
  const double bc1 = 1.0 - std::pow(static_cast<double>(p.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(p.beta2), t);
  const float inv = extras.scale != nullptr ? InverseScale(*extras.scale) : 1.0f;
  return DispatchParamGrad(param_dtype, grad_dtype, "a8.AdamUpdate", [&](auto p_tag, auto g_tag) {
    using P = A8_TAG_TYPE(p_tag);
    using G = A8_TAG_TYPE(g_tag);
    using C = Compute<P>;
    AdamStep<C> s;
    s.lr = static_cast<C>(lr);
    s.grad_scale = static_cast<C>(ctl[kCtlGradScale]);
    s.beta1 = static_cast<C>(p.beta1);
    s.beta2 = static_cast<C>(p.beta2);
    s.eps = static_cast<C>(p.eps);
    s.weight_decay = static_cast<C>(p.weight_decay);
    s.decoupled = p.decoupled;
    s.step_size = static_cast<C>(lr / bc1);
    s.inv_sqrt_bc2 = static_cast<C>(1.0 / std::sqrt(bc2));
    const P* x = static_cast<const P*>(param);
    const G* gr = static_cast<const G*>(grad);
    const P* mp = static_cast<const P*>(m);
    const P* vp = static_cast<const P*>(v);
    P* x_out = static_cast<P*>(param_next);
    P* m_out = static_cast<P*>(m_next);
    P* v_out = static_cast<P*>(v_next);
    if constexpr (std::is_same_v<P, float>) {
      if (CurrentKernelMode() == KernelMode::kFast &&
          internal::AdamUpdateF32Fast(s, grad_dtype, n, x, grad, mp, vp, x_out, m_out, v_out,
                                      extras.scale != nullptr ? &inv : nullptr, extras.copy_dtype,
                                      extras.copy))
        return Status::Ok();
    }
    const bool unscale = extras.scale != nullptr;
    ParallelFor(n, kUpdateCost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C xi = Load(x[i]), mi = Load(mp[i]), vi = Load(vp[i]);
        const C gi = unscale ? static_cast<C>(UnscaleElement(Load(gr[i]), inv))
                             : static_cast<C>(Load(gr[i]));
        AdamElement<C>(s, gi, &xi, &mi, &vi);
        x_out[i] = Store<P>(xi);
        m_out[i] = Store<P>(mi);
        v_out[i] = Store<P>(vi);
      }
      if constexpr (std::is_same_v<P, float>) {
        if (extras.copy != nullptr) StoreWorkingCopy(extras, x_out, b, e);
      }
    });
    return Status::Ok();
  });
}

}  // namespace a8::cpu
