#include "runtime/cpu/channels_last.h"

#include <algorithm>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/pool.h"
#include "runtime/core/kernel_args.h"

namespace a8 {
namespace {

bool IsConv(const std::string& op) { return op == "Conv" || op == "a8.FusedConv"; }

bool Is4dF32(const TensorArg& t) {
  return t.present && t.dtype == DType::kF32 && t.dims.size() == 4;
}

// The operand slots of kernel `a` that may be NHWC (before the convolutions' final check).
struct Slots {
  std::vector<int> in, out;
};

Slots NhwcSlots(const KernelArgs& a) {
  const std::string& op = a.kernel().op();
  if (IsConv(op)) {
    if (!Is4dF32(a.in(0)) || !Is4dF32(a.out(0))) return {};
    if (op == "Conv") return {{0}, {0}};
    return {{0, 3}, {0}};  // a8.FusedConv's X and Z
  }
  if (op == "MaxPool") {
    if (a.has_out(1) || !Is4dF32(a.in(0)) || !Is4dF32(a.out(0))) return {};
    if (!cpu::MaxPoolChannelsLastTakes(PoolParamsFromKernel(a, a.in(0).dims, DType::kF32)))
      return {};
    return {{0}, {0}};
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    if (!Is4dF32(a.in(0))) return {};
    return {{0}, {}};  // Y [N, C, 1, 1] is the same bytes in either layout
  }
  return {};
}

bool Has(const std::vector<int>& v, int i) { return std::find(v.begin(), v.end(), i) != v.end(); }

// Whether convolution kernel `a` runs with the layouts `nhwc` gives its X, Y and Z.
bool ConvTakes(const KernelArgs& a, const std::vector<bool>& nhwc, const plan::Kernel& kern) {
  const bool fused = kern.op() == "a8.FusedConv", has_z = fused && a.has_in(3);
  cpu::internal::ConvLayouts l;
  l.x = nhwc[kern.inputs(0)];
  l.y = nhwc[kern.outputs(0)];
  l.z = has_z && nhwc[kern.inputs(3)];
  if (!l.any()) return true;
  bool relu = false;
  ConvParams p;
  if (fused) {
    StatusOr<FusedConvArgs> f = FusedConvOperands(a);
    if (!f.ok()) return false;
    p = f->conv;
    relu = f->relu;
  } else {
    StatusOr<ConvParams> c = ConvParamsOf(a, false);
    if (!c.ok()) return false;
    p = *c;
  }
  return cpu::FusedConvChannelsLastTakes(p, l, a.has_in(2), relu, has_z);
}

}  // namespace

std::vector<bool> ChannelsLastBuffers(const plan::Plan& plan) {
  const int num_buffers = plan.buffers_size();
  std::vector<bool> ok(static_cast<size_t>(num_buffers), false);
  for (int b = 0; b < num_buffers; ++b) {
    const plan::Buffer& buf = plan.buffers(b);
    ok[b] = buf.role() == plan::Buffer::INTERMEDIATE && buf.region() == plan::Buffer::ARENA &&
            buf.type().dtype() == plan::DType::F32 && buf.type().dims_size() == 4;
  }
  for (int b = 0; b < num_buffers; ++b) {
    const int alias = plan.buffers(b).alias_of();
    if (alias >= 0 && alias < num_buffers) ok[b] = ok[alias] = false;
  }
  for (const plan::Update& u : plan.updates())
    if (u.source() >= 0 && u.source() < num_buffers) ok[u.source()] = false;

  std::vector<int> writers(static_cast<size_t>(num_buffers), 0),
      readers(static_cast<size_t>(num_buffers), 0);
  std::vector<KernelArgs> args;
  args.reserve(static_cast<size_t>(plan.kernels_size()));
  for (const plan::Kernel& kern : plan.kernels()) {
    std::vector<TensorArg> in, out;
    for (int id : kern.inputs()) in.push_back(BindBuffer(plan, {}, id));
    for (int id : kern.outputs()) out.push_back(BindBuffer(plan, {}, id));
    args.emplace_back(&kern, std::move(in), std::move(out), std::vector<TensorArg>{});
    const Slots slots = NhwcSlots(args.back());
    for (int i = 0; i < kern.inputs_size(); ++i) {
      const int id = kern.inputs(i);
      if (id < 0 || id >= num_buffers) continue;
      ++readers[id];
      if (!Has(slots.in, i)) ok[id] = false;
    }
    for (int i = 0; i < kern.outputs_size(); ++i) {
      const int id = kern.outputs(i);
      if (id < 0 || id >= num_buffers) continue;
      ++writers[id];
      if (!Has(slots.out, i)) ok[id] = false;
    }
    for (const plan::Attribute& at : kern.attrs())
      if (at.has_tensor_buffer() && at.tensor_buffer() >= 0 && at.tensor_buffer() < num_buffers)
        ok[at.tensor_buffer()] = false;
  }
  std::vector<bool> nhwc(static_cast<size_t>(num_buffers), false);
  for (int b = 0; b < num_buffers; ++b) nhwc[b] = ok[b] && writers[b] == 1 && readers[b] >= 1;

  // Each convolution must run in the layouts its operands got, and MaxPool reads and writes one
  // layout: where not, its operands go back to NCHW, until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (int k = 0; k < plan.kernels_size(); ++k) {
      const plan::Kernel& kern = plan.kernels(k);
      if (IsConv(kern.op()) && !ConvTakes(args[k], nhwc, kern)) {
        for (int slot : {0, 3}) {
          if (slot < kern.inputs_size() && kern.inputs(slot) >= 0 && nhwc[kern.inputs(slot)]) {
            nhwc[kern.inputs(slot)] = false;
          }
        }
        nhwc[kern.outputs(0)] = false;
        changed = true;
      } else if (kern.op() == "MaxPool" && nhwc[kern.inputs(0)] != nhwc[kern.outputs(0)]) {
        nhwc[kern.inputs(0)] = nhwc[kern.outputs(0)] = false;
        changed = true;
      }
    }
  }
  return nhwc;
}

}  // namespace a8
