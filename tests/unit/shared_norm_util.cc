#include "tests/unit/shared_norm_util.h"

#include "kernels/device/nn.h"
#include "kernels/emu/run_on_host.h"
#include "runtime/device/device_registry.h"

namespace a8::testing::norm {
namespace {

emu::BatchNormArgs ArgsOf(const BatchNormParams& p) {
  emu::BatchNormArgs a;
  a.dtype = p.dtype, a.param_dtype = p.param_dtype, a.stat_dtype = p.stat_dtype;
  a.batch = p.batch, a.channels = p.channels, a.spatial = p.spatial;
  a.epsilon = p.epsilon, a.momentum = p.momentum;
  return a;
}

}  // namespace

Status BatchNormInference(const BatchNormParams& p, const void* x, const void* scale,
                          const void* bias, const void* mean, const void* var, void* y) {
  emu::BatchNormArgs a = ArgsOf(p);
  a.x = x, a.scale = scale, a.bias = bias, a.mean = mean, a.var = var, a.y = y;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::BatchNormInference(ctx, a); });
}

Status BatchNormTraining(const BatchNormParams& p, const void* x, const void* scale,
                         const void* bias, const void* running_mean_in, const void* running_var_in,
                         void* y, void* running_mean_out, void* running_var_out) {
  emu::BatchNormArgs a = ArgsOf(p);
  a.x = x, a.scale = scale, a.bias = bias, a.mean = running_mean_in, a.var = running_var_in;
  a.y = y, a.running_mean_out = running_mean_out, a.running_var_out = running_var_out;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::BatchNormTraining(ctx, a); });
}

Status BatchNormGrad(const BatchNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* var, void* dx, void* dscale, void* dbias,
                     void* dmean, void* dvar) {
  emu::BatchNormGradArgs a;
  a.dtype = p.dtype, a.param_dtype = p.param_dtype, a.stat_dtype = p.stat_dtype;
  a.batch = p.batch, a.channels = p.channels, a.spatial = p.spatial, a.epsilon = p.epsilon;
  a.dy = dy, a.x = x, a.scale = scale, a.mean = mean, a.var = var;
  a.dx = dx, a.dscale = dscale, a.dbias = dbias, a.dmean = dmean, a.dvar = dvar;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::BatchNormGrad(ctx, a); });
}

Status LayerNorm(const LayerNormParams& p, const void* x, const void* scale, const void* bias,
                 void* y, void* mean, void* inv_std_dev) {
  emu::LayerNormArgs a;
  a.dtype = p.dtype, a.param_dtype = p.param_dtype, a.stat_dtype = p.stat_dtype;
  a.outer = p.outer, a.inner = p.inner, a.epsilon = p.epsilon;
  a.x = x, a.scale = scale, a.bias = bias, a.y = y, a.mean = mean, a.inv_std_dev = inv_std_dev;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::LayerNorm(ctx, a); });
}

Status LayerNormGrad(const LayerNormParams& p, const void* dy, const void* x, const void* scale,
                     const void* mean, const void* inv_std_dev, void* dx, void* dscale,
                     void* dbias) {
  emu::LayerNormGradArgs a;
  a.dtype = p.dtype, a.param_dtype = p.param_dtype, a.stat_dtype = p.stat_dtype;
  a.outer = p.outer, a.inner = p.inner, a.epsilon = p.epsilon;
  a.dy = dy, a.x = x, a.scale = scale, a.mean = mean, a.inv_std_dev = inv_std_dev;
  a.dx = dx, a.dscale = dscale, a.dbias = dbias;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::LayerNormGrad(ctx, a); });
}

Status InstanceNorm(DType dtype, DType param_dtype, int64_t batch, int64_t channels,
                    int64_t spatial, float epsilon, const void* x, const void* scale,
                    const void* bias, void* y) {
  emu::InstanceNormArgs a;
  a.dtype = dtype, a.param_dtype = param_dtype;
  a.batch = batch, a.channels = channels, a.spatial = spatial, a.epsilon = epsilon;
  a.x = x, a.scale = scale, a.bias = bias, a.y = y;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::InstanceNorm(ctx, a); });
}

Status InstanceNormGrad(DType dtype, DType param_dtype, int64_t batch, int64_t channels,
                        int64_t spatial, float epsilon, const void* dy, const void* x,
                        const void* scale, void* dx, void* dscale, void* dbias) {
  emu::InstanceNormArgs a;
  a.dtype = dtype, a.param_dtype = param_dtype;
  a.batch = batch, a.channels = channels, a.spatial = spatial, a.epsilon = epsilon;
  a.dy = dy, a.x = x, a.scale = scale, a.dx = dx, a.dscale = dscale, a.dbias = dbias;
  return emu::RunOnHost([&](emu::DevCtx& ctx) { return emu::InstanceNormGrad(ctx, a); });
}

}  // namespace a8::testing::norm
