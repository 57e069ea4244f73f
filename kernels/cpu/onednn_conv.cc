#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/blocked_convert.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/fast_convert.h"
#include "kernels/cpu/low_precision_gemm.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int64_t> executions{0};

enum class Pass { kForward, kBackwardData, kBackwardWeights };

// The epilogue a forward primitive applies in its store (oneDNN post-ops): + Z (kSum: Y's
// buffer holds Z when the primitive runs) and then Relu.
enum PostOps : uint8_t { kNoPostOps = 0, kRelu = 1, kSum = 2 };

uint8_t PostOpsOf(bool relu, bool z) {
  return static_cast<uint8_t>((relu ? kRelu : 0) | (z ? kSum : 0));
}

// Which of a forward primitive's X, Y and Z are stored NHWC (ConvLayouts), as bits.
enum LayoutBits : uint8_t { kXNhwc = 1, kYNhwc = 2, kZNhwc = 4 };

// Everything a primitive depends on: the pass, dtype, whether there is a bias, and the forward
// convolution's sizes (N C H W, M kh kw, strides, dilations, pads begin/end, output H W), its
// post-ops and its operands' layouts.
struct Key {
  Pass pass;
  DType dtype;
  bool bias;
  std::array<int64_t, 17> sizes;  // no allocation per call (KeyOf)
  uint8_t post = kNoPostOps;
  uint8_t layouts = 0;  // LayoutBits
  bool operator<(const Key& o) const {
    return std::tie(pass, dtype, bias, sizes, post, layouts) <
           std::tie(o.pass, o.dtype, o.bias, o.sizes, o.post, o.layouts);
  }
};

// One primitive with two inputs and an output, each stored plain (NCHW / OIHW) and reordered to
// and from the layout the primitive wants. Forward: X, W -> Y. Backward data: dY, W -> dX.
// Backward weights: X, dY -> dW. An f16 entry ("half"), and a bf16 one where oneDNN has no bf16
// convolution on this CPU (no AVX-512) or its bf16 kernels lose to f32 (OneDnnBf16Pays), runs
// an f32 primitive: its activations are converted straight between f16/bf16 NCHW and the
// primitive's layout (blocked_convert.h), its weights (small) widened into a thread-local f32
// buffer and reordered by oneDNN.
struct Entry {
  bool usable = false;
  bool half = false;
  DType half_type = DType::kF16;  // the operands' dtype, where half
  dnnl::primitive prim;
  int arg0 = 0, arg1 = 0, arg_out = 0;
  memory::desc in0_md, in1_md, out_md, b_md;           // as stored (f32 where half)
  memory::desc in0i_md, in1i_md, outi_md, scratch_md;  // as the primitive wants them
  dnnl::reorder to_in0, to_in1, from_out;              // empty where the layouts agree
  memory::desc z_md;                                   // Z as stored (kSum)
  dnnl::reorder to_out;  // Z into the primitive's Y layout (kSum, where the layouts differ)
  bool sum = false;      // the primitive adds what Y's buffer holds (kSum)
  bool act0 = true, act1 = false, act_out = true;  // activations, else weights
  bool out_f32 = false;      // the output is f32 whatever the inputs' dtype (the weight gradient)
  BlockedLayout l0, l1, lo;  // the activations' layouts (half)
};

// The layout of activation desc `d` [N, C, H, W] for blocked_convert.h, or false where it is
// not one the converters take.
bool LayoutOf(const memory::desc& d, BlockedLayout* l) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.ndims != 4 || m.format_kind != dnnl_blocked || m.offset0 != 0) return false;
  const auto& b = m.format_desc.blocking;
  if (b.inner_nblks > 1 || (b.inner_nblks == 1 && b.inner_idxs[0] != 1)) return false;
  *l = BlockedLayout{m.dims[0],
                     m.dims[1],
                     m.dims[2] * m.dims[3],
                     b.strides[0],
                     b.strides[1],
                     b.strides[3],
                     b.inner_nblks == 1 ? b.inner_blks[0] : 1};
  if (b.inner_nblks == 0 && b.strides[1] == 1 && m.dims[1] > 1) l->block = m.dims[1];  // NHWC
  return b.strides[2] == m.dims[3] * b.strides[3] && BlockedLayoutSupported(*l);
}

// `widen`: a bf16 key planned as a half entry (an f32 primitive) instead of a bf16 primitive.
std::shared_ptr<const Entry> MakeEntry(const Key& key, bool widen) {
  ThreadStream();  // a primitive is planned for its creating thread's OpenMP count: 1
  auto e = std::make_shared<Entry>();
  const std::array<int64_t, 17>& s = key.sizes;
  const memory::dims x{s[0], s[1], s[2], s[3]}, w{s[4], s[1], s[5], s[6]},
      y{s[0], s[4], s[15], s[16]};
  const memory::dims strides{s[7], s[8]}, dilations{s[9] - 1, s[10] - 1}, pad_l{s[11], s[12]},
      pad_r{s[13], s[14]};
  const memory::data_type dt =
      key.dtype == DType::kBF16 && !widen ? memory::data_type::bf16 : memory::data_type::f32;
  e->half = key.dtype == DType::kF16 || widen;
  e->half_type = key.dtype;
  auto act = [&](const memory::dims& d, uint8_t bit) {
    return memory::desc(d, dt, (key.layouts & bit) != 0 ? Tag::nhwc : Tag::nchw);
  };
  const memory::desc x_md = act(x, kXNhwc), w_md(w, dt, Tag::oihw), y_md = act(y, kYNhwc);
  if (key.post & kSum) e->z_md = act(y, kZNhwc);
  const memory::desc x_any(x, dt, Tag::any), w_any(w, dt, Tag::any), y_any(y, dt, Tag::any);
  if (key.bias) e->b_md = memory::desc({s[4]}, dt, Tag::a);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one primitive, several threads
    if (key.post != kNoPostOps) {
      dnnl::post_ops ops;
      if (key.post & kSum) ops.append_sum(1.0f);
      if (key.post & kRelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
      e->sum = (key.post & kSum) != 0;
    }
    const auto alg = dnnl::algorithm::convolution_direct;
    const dnnl::prop_kind prop = key.pass == Pass::kForward ? dnnl::prop_kind::forward_inference
                                                            : dnnl::prop_kind::forward_training;
    const dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(prop, alg, x_any, w_any, e->b_md, y_any, strides, dilations,
                                        pad_l, pad_r),
        attr, Engine());
    std::string impl;
    if (key.pass == Pass::kForward) {
      impl = fwd.impl_info_str();
      e->prim = dnnl::convolution_forward(fwd);
      e->arg0 = DNNL_ARG_SRC, e->arg1 = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DST;
      e->in0_md = x_md, e->in1_md = w_md, e->out_md = y_md;
      e->in0i_md = fwd.src_desc(), e->in1i_md = fwd.weights_desc(), e->outi_md = fwd.dst_desc();
      e->scratch_md = fwd.scratchpad_desc();
    } else if (key.pass == Pass::kBackwardData) {
      const dnnl::convolution_backward_data::primitive_desc bwd(
          dnnl::convolution_backward_data::desc(alg, x_any, w_any, y_any, strides, dilations, pad_l,
                                                pad_r),
          attr, Engine(), fwd);
      impl = bwd.impl_info_str();
      e->prim = dnnl::convolution_backward_data(bwd);
      e->arg0 = DNNL_ARG_DIFF_DST, e->arg1 = DNNL_ARG_WEIGHTS, e->arg_out = DNNL_ARG_DIFF_SRC;
      e->in0_md = y_md, e->in1_md = w_md, e->out_md = x_md;
      e->in0i_md = bwd.diff_dst_desc(), e->in1i_md = bwd.weights_desc();
      e->outi_md = bwd.diff_src_desc();
      e->scratch_md = bwd.scratchpad_desc();
    } else {
      // dW in f32 for every dtype: the batch's parts are summed in f32 and rounded once.
      const memory::desc dw_any(w, memory::data_type::f32, Tag::any);
      const dnnl::convolution_backward_weights::primitive_desc bwd(
          dnnl::convolution_backward_weights::desc(alg, x_any, dw_any, y_any, strides, dilations,
                                                   pad_l, pad_r),
          attr, Engine(), fwd);
      impl = bwd.impl_info_str();
      e->prim = dnnl::convolution_backward_weights(bwd);
      e->arg0 = DNNL_ARG_SRC, e->arg1 = DNNL_ARG_DIFF_DST, e->arg_out = DNNL_ARG_DIFF_WEIGHTS;
      e->in0_md = x_md, e->in1_md = y_md;
      e->out_md = memory::desc(w, memory::data_type::f32, Tag::oihw);
      e->in0i_md = bwd.src_desc(), e->in1i_md = bwd.diff_dst_desc();
      e->outi_md = bwd.diff_weights_desc();
      e->scratch_md = bwd.scratchpad_desc();
      e->act1 = true, e->act_out = false, e->out_f32 = true;
    }
    if (impl.find("ref") != std::string::npos) return e;  // declined: today's kernels win
    if (e->half &&
        ((e->act0 && !LayoutOf(e->in0i_md, &e->l0)) || (e->act1 && !LayoutOf(e->in1i_md, &e->l1)) ||
         (e->act_out && !LayoutOf(e->outi_md, &e->lo)))) {
      return e;  // a layout the f16 converters do not take: declined
    }
    if (e->in0i_md != e->in0_md)
      e->to_in0 = dnnl::reorder({Engine(), e->in0_md, Engine(), e->in0i_md});
    if (e->in1i_md != e->in1_md)
      e->to_in1 = dnnl::reorder({Engine(), e->in1_md, Engine(), e->in1i_md});
    if (e->outi_md != e->out_md)
      e->from_out = dnnl::reorder({Engine(), e->outi_md, Engine(), e->out_md});
    if (e->sum && e->z_md != e->outi_md)
      e->to_out = dnnl::reorder({Engine(), e->z_md, Engine(), e->outi_md});
    e->usable = true;
  } catch (const dnnl::error&) {
    // unimplemented here: declined
  }
  return e;
}

std::shared_ptr<const Entry> FindEntry(const Key& key) {
  static std::mutex mu;
  static auto* cache = new std::map<Key, std::shared_ptr<const Entry>>();  // leaked, as oneDNN
  // Without AMX a bf16 convolution runs on the same vdpbf16ps dot products as a bf16 matmul:
  // where those lose to f32 (OneDnnBf16Pays), bf16 is planned as f16 is (an f32 primitive).
  const bool widen = key.dtype == DType::kBF16 && !OneDnnBf16Pays();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it == cache->end()) {
    std::shared_ptr<const Entry> e = MakeEntry(key, widen);
    if (!e->usable && key.dtype == DType::kBF16 && !widen) e = MakeEntry(key, true);
    it = cache->emplace(key, std::move(e)).first;
  }
  return it->second;
}

// The memory objects a primitive's run binds, one slot each (BoundMemory, onednn_context.h).
enum Slot {
  kIn0,
  kIn1,
  kOut,
  kIn0Inner,
  kIn1Inner,
  kOutInner,
  kOutStage,
  kBias,
  kScratch,
  kZ,
  kSlots
};
static_assert(kSlots <= kMaxBoundSlots);

const memory& Bound(const Entry& e, Slot slot, const memory::desc& md, const void* data) {
  return BoundMemory(&e, slot, md, data);
}

// The primitive of `e` on i0, i1 -> io, with its bias (null: none) and the calling thread's
// scratchpad, on stream `s`.
void RunPrimitive(const Entry& e, dnnl::stream& s, const memory& i0, const memory& i1,
                  const memory& io, const void* bias) {
  thread_local std::vector<uint8_t> scratch;
  dnnl_exec_arg_t args[5] = {{e.arg0, i0.get()}, {e.arg1, i1.get()}, {e.arg_out, io.get()}};
  int n = 3;
  if (bias != nullptr) args[n++] = {DNNL_ARG_BIAS, Bound(e, kBias, e.b_md, bias).get()};
  if (e.scratch_md.get_size() > 0) {
    args[n++] = {
        DNNL_ARG_SCRATCHPAD,
        Bound(e, kScratch, e.scratch_md, AlignedIn(scratch, e.scratch_md.get_size())).get()};
  }
  ExecuteArgs(e.prim, s, args, n);
}

// Input `src` (f16 or bf16: `dtype`) of a half entry in the primitive's layout `inner`: an
// activation converted into `buf` directly, a weight widened into `stage` (plain f32 `plain`),
// then reordered. `plain_slot` and `inner_slot`: its memory objects' slots.
const memory& HalfInput(const Entry& e, Slot plain_slot, Slot inner_slot, DType dtype,
                        const memory::desc& plain, const memory::desc& inner,
                        const dnnl::reorder& to, bool act, const BlockedLayout& l, const void* src,
                        std::vector<uint8_t>& buf, std::vector<uint8_t>& stage) {
  if (act) {
    const memory& m = Bound(e, inner_slot, inner, AlignedIn(buf, inner.get_size()));
    HalfToBlocked(dtype, src, l, static_cast<float*>(m.get_data_handle()));
    return m;
  }
  auto* w = static_cast<float*>(AlignedIn(stage, plain.get_size()));
  HalfTypeToF32(dtype, src, w, static_cast<int64_t>(plain.get_size() / sizeof(float)));
  const memory& m = Bound(e, plain_slot, plain, w);
  if (!to) return m;
  const memory& i = Bound(e, inner_slot, inner, AlignedIn(buf, inner.get_size()));
  Reorder(to, ThreadStream(), m, i);
  return i;
}

// A half entry: f16/bf16 operands, f32 primitive, the output rounded to their dtype once.
void ExecuteHalf(const Entry& e, const void* in0, const void* in1, const void* bias, void* out) {
  dnnl::stream& s = ThreadStream();
  thread_local std::vector<uint8_t> buf0, buf1, bufo, stage_in, stage_out;
  thread_local std::vector<float> bias32;
  const DType t = e.half_type;
  const memory& i0 = HalfInput(e, kIn0, kIn0Inner, t, e.in0_md, e.in0i_md, e.to_in0, e.act0, e.l0,
                               in0, buf0, stage_in);
  const memory& i1 = HalfInput(e, kIn1, kIn1Inner, t, e.in1_md, e.in1i_md, e.to_in1, e.act1, e.l1,
                               in1, buf1, stage_in);
  const memory& io = Bound(e, kOutInner, e.outi_md, AlignedIn(bufo, e.outi_md.get_size()));
  if (bias != nullptr) {
    const auto m = static_cast<int64_t>(e.b_md.get_size() / sizeof(float));
    bias32.resize(static_cast<size_t>(m));
    HalfTypeToF32(t, bias, bias32.data(), m);
  }
  RunPrimitive(e, s, i0, i1, io, bias != nullptr ? bias32.data() : nullptr);
  const auto* result = static_cast<const float*>(io.get_data_handle());
  if (e.act_out) {
    BlockedToHalf(t, result, e.lo, out);
  } else if (e.out_f32) {
    if (e.from_out) {
      Reorder(e.from_out, s, io, Bound(e, kOut, e.out_md, out));
    } else {
      std::copy_n(result, e.out_md.get_size() / sizeof(float), static_cast<float*>(out));
    }
  } else {
    if (e.from_out) {
      const memory& plain =
          Bound(e, kOutStage, e.out_md, AlignedIn(stage_out, e.out_md.get_size()));
      Reorder(e.from_out, s, io, plain);
      s.wait();
      result = static_cast<const float*>(plain.get_data_handle());
    }
    const auto n = static_cast<int64_t>(e.out_md.get_size() / sizeof(float));
    if (t == DType::kBF16) {
      FloatToBFloat16(result, static_cast<BFloat16*>(out), n);
    } else {
      FloatToHalf(result, static_cast<Half*>(out), n);
    }
  }
  s.wait();
  executions.fetch_add(1, std::memory_order_relaxed);
}

// Runs one primitive on the calling thread, through its own layout buffers. `z`: what a kSum
// entry adds (Y's shape and layout; may be `out`).
void Execute(const Entry& e, const void* in0, const void* in1, const void* bias, void* out,
             const void* z = nullptr) {
  if (e.half) return ExecuteHalf(e, in0, in1, bias, out);
  dnnl::stream& s = ThreadStream();
  thread_local std::vector<uint8_t> buf0, buf1, bufo;
  const memory& m0 = Bound(e, kIn0, e.in0_md, in0);
  const memory& m1 = Bound(e, kIn1, e.in1_md, in1);
  const memory& mo = Bound(e, kOut, e.out_md, out);
  const memory* i0 = &m0;
  const memory* i1 = &m1;
  const memory* io = &mo;
  if (e.to_in0) {
    i0 = &Bound(e, kIn0Inner, e.in0i_md, AlignedIn(buf0, e.in0i_md.get_size()));
    Reorder(e.to_in0, s, m0, *i0);
  }
  if (e.to_in1) {
    i1 = &Bound(e, kIn1Inner, e.in1i_md, AlignedIn(buf1, e.in1i_md.get_size()));
    Reorder(e.to_in1, s, m1, *i1);
  }
  if (e.from_out) io = &Bound(e, kOutInner, e.outi_md, AlignedIn(bufo, e.outi_md.get_size()));
  if (e.sum) {
    if (e.to_out) {
      Reorder(e.to_out, s, Bound(e, kZ, e.z_md, z), *io);
    } else if (z != io->get_data_handle()) {
      std::memcpy(io->get_data_handle(), z, e.outi_md.get_size());
    }
  }
  RunPrimitive(e, s, *i0, *i1, *io, bias);
  if (e.from_out) Reorder(e.from_out, s, *io, mo);
  s.wait();
  executions.fetch_add(1, std::memory_order_relaxed);
}

// Whether the fast path takes a convolution of these params at all (see onednn_conv.h).
// `any_channels`: no f32/f16 channel minimum (the weight gradient: the ResNet stem's, C = 3,
// measured 3.4 ms in oneDNN against 8-11 ms in im2col + GEMM, f32, one thread).
bool Takes(const ConvParams& p, const Dims& out_spatial, bool any_channels = false) {
  if (p.dtype != DType::kF32 && p.dtype != DType::kBF16 && p.dtype != DType::kF16) return false;
  if (p.group != 1 || p.in_spatial.size() != 2 || p.kernel.size() != 2 || out_spatial.size() != 2 ||
      p.batch < 1 || p.out_channels < 1 || p.in_channels < 1) {
    return false;
  }
  // f16, and bf16 without oneDNN's bf16 kernels, run an f32 primitive (blocked_convert.h): f32's
  // rule.
  return (p.dtype == DType::kBF16 && OneDnnConvolvesBf16()) || any_channels ||
         p.in_channels >= kMinFastF32Channels;
}

// The key of forward convolution `p` (X [N, C, in], W [M, C, k], Y [N, M, out]) for `batch`.
Key KeyOf(Pass pass, const ConvParams& p, const Dims& out, int64_t batch, bool bias,
          uint8_t post = kNoPostOps, uint8_t layouts = 0) {
  auto at = [](const Dims& d, size_t i, int64_t none) { return d.empty() ? none : d[i]; };
  return Key{pass,
             p.dtype,
             bias,
             {batch, p.in_channels, p.in_spatial[0], p.in_spatial[1], p.out_channels, p.kernel[0],
              p.kernel[1], at(p.strides, 0, 1), at(p.strides, 1, 1), at(p.dilations, 0, 1),
              at(p.dilations, 1, 1), at(p.pads, 0, 0), at(p.pads, 1, 0), at(p.pads, 2, 0),
              at(p.pads, 3, 0), out[0], out[1]},
             post,
             layouts};
}

// The batch split over the pool: `parts` parts of `per` samples (the last one the rest), one
// thread each, and the entries of a full part and of the last.
struct Split {
  int64_t per = 0, parts = 0;
  std::shared_ptr<const Entry> full, last;
  bool usable() const { return full->usable && last->usable; }
};

Split SplitOf(Pass pass, const ConvParams& p, const Dims& out, bool bias, uint8_t post,
              uint8_t layouts) {
  Split sp;
  const int threads = static_cast<int>(std::min<int64_t>(MaxThreads(), p.batch));
  sp.per = (p.batch + threads - 1) / threads;
  sp.parts = (p.batch + sp.per - 1) / sp.per;
  sp.full = FindEntry(KeyOf(pass, p, out, sp.per, bias, post, layouts));
  sp.last = FindEntry(KeyOf(pass, p, out, p.batch - sp.per * (sp.parts - 1), bias, post, layouts));
  return sp;
}

// Runs pass kForward or kBackwardData of forward convolution `p` with the batch split over the
// pool: `in0` and `out` are per-sample tensors of in0_sample / out_sample elements, `in1` (W)
// is shared; `post` the forward pass's post-ops, `z` (per-sample as `out`) what kSum adds,
// `layouts` which of X, Y and Z are NHWC (a sample is contiguous in either layout).
bool RunSplit(Pass pass, const ConvParams& p, const Dims& out, const void* in0, const void* in1,
              const void* bias, void* dst, int64_t in0_sample, int64_t out_sample,
              uint8_t post = kNoPostOps, const void* z = nullptr, uint8_t layouts = 0) {
  const Split sp = SplitOf(pass, p, out, bias != nullptr, post, layouts);
  if (!sp.usable()) return false;
  const int64_t per = sp.per, parts = sp.parts;
  const size_t elem = ElemSize(p.dtype);
  const auto* p0 = static_cast<const uint8_t*>(in0);
  auto* po = static_cast<uint8_t*>(dst);
  const auto* pz = static_cast<const uint8_t*>(z);
  auto run = [&](int64_t part) {
    const Entry& e = part == parts - 1 ? *sp.last : *sp.full;
    const int64_t at = part * per * out_sample * elem;
    Execute(e, p0 + part * per * in0_sample * elem, in1, bias, po + at,
            pz != nullptr ? pz + at : nullptr);
  };
  if (parts == 1) {
    run(0);
    return true;
  }
  ParallelFor(parts, int64_t{1} << 30, [&](int64_t b, int64_t end) {
    for (int64_t part = b; part < end; ++part) run(part);
  });
  return true;
}

}  // namespace

bool OneDnnConvolvesBf16() {
  static const bool native = [] {
    const Key key{
        Pass::kForward, DType::kBF16, false, {1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 8}};
    const std::shared_ptr<const Entry> e = FindEntry(key);
    return e->usable && !e->half;
  }();
  return native;
}

int64_t FastConvExecutions() { return executions.load(std::memory_order_relaxed); }

uint8_t LayoutBitsOf(ConvLayouts l) {
  return static_cast<uint8_t>((l.x ? kXNhwc : 0) | (l.y ? kYNhwc : 0) | (l.z ? kZNhwc : 0));
}

StatusOr<bool> FastConv(const ConvParams& p, const Dims& out_spatial, const void* x, const void* w,
                        const void* bias, void* y, bool relu, const void* z, bool* epilogue_applied,
                        ConvLayouts layouts) {
  if (epilogue_applied != nullptr) *epilogue_applied = false;
  const uint8_t bits = LayoutBitsOf(layouts);
  if (bits != 0 && (p.dtype != DType::kF32 || epilogue_applied == nullptr)) {
    return InvalidInput("FastConv: NHWC operands need f32 and the epilogue in the store");
  }
  if (!Takes(p, out_spatial)) return false;
  // + Z in the store only in f32: a half Y is rounded before Z is added (the unfused bits).
  // Relu commutes with that rounding, so it runs in the store in every dtype.
  const bool fuse = epilogue_applied != nullptr && (z == nullptr || p.dtype == DType::kF32);
  const uint8_t post = fuse ? PostOpsOf(relu, z != nullptr) : uint8_t{kNoPostOps};
  const bool ran = RunSplit(Pass::kForward, p, out_spatial, x, w, bias, y,
                            p.in_channels * p.in_spatial[0] * p.in_spatial[1],
                            p.out_channels * out_spatial[0] * out_spatial[1], post, z, bits);
  if (ran && epilogue_applied != nullptr) *epilogue_applied = fuse;
  return ran;
}

bool FastConvTakesChannelsLast(const ConvParams& p, const Dims& out_spatial, ConvLayouts layouts,
                               bool bias, bool relu, bool z) {
  if (p.dtype != DType::kF32 || !Takes(p, out_spatial)) return false;
  return SplitOf(Pass::kForward, p, out_spatial, bias, PostOpsOf(relu, z), LayoutBitsOf(layouts))
      .usable();
}

StatusOr<bool> FastConvTranspose(const ConvParams& p, const Dims& out_spatial, const void* x,
                                 const void* w, const void* bias, void* y) {
  // ConvTranspose(X, W) is the data gradient of the convolution Y -> X with the same W
  // ([C, M, k]: that convolution's [out, in, k]). Output position i takes X[o] W[k] wherever
  // i = o s - pad_begin + k d: the end pads only size Y. So output_padding (the rows a strided
  // convolution's floor dropped, as autodiff emits for stride 2) is that convolution with its
  // end pad lowered by it, where that still gives X's size.
  if (bias != nullptr || out_spatial.size() != 2 || p.in_spatial.size() != 2) return false;
  ConvParams conv = p;
  conv.in_channels = p.out_channels;
  conv.out_channels = p.in_channels;
  conv.in_spatial = out_spatial;
  conv.output_padding.clear();
  if (!p.output_padding.empty()) {
    if (conv.pads.empty()) conv.pads.assign(4, 0);
    for (size_t i = 0; i < 2; ++i) {
      int64_t& end = conv.pads[2 + i];
      end = std::max<int64_t>(end - p.output_padding[i], 0);
    }
    StatusOr<Dims> forward = ConvOutputSpatial(conv, false);
    if (!forward.ok() || *forward != p.in_spatial) return false;
  }
  if (!Takes(conv, p.in_spatial)) return false;
  return RunSplit(Pass::kBackwardData, conv, p.in_spatial, x, w, nullptr, y,
                  p.in_channels * p.in_spatial[0] * p.in_spatial[1],
                  p.out_channels * out_spatial[0] * out_spatial[1]);
}

StatusOr<bool> FastConvGradFilter(const ConvParams& p, const Dims& out_spatial, const void* dy,
                                  const void* x, void* dw) {
  if (!Takes(p, out_spatial, /*any_channels=*/true)) return false;
  // dW sums over the batch: one part of the batch a thread, each part's dW in f32, summed in
  // part order and rounded once. (So in the fast mode dW's last bits depend on the thread
  // count, as oneDNN's own reductions do; the reference kernels' do not.)
  const Split sp = SplitOf(Pass::kBackwardWeights, p, out_spatial, false, kNoPostOps, 0);
  if (!sp.usable()) return false;
  const int64_t per = sp.per, parts = sp.parts;
  const int64_t wn = p.out_channels * p.in_channels * p.kernel[0] * p.kernel[1];
  const int64_t x_sample = p.in_channels * p.in_spatial[0] * p.in_spatial[1];
  const int64_t dy_sample = p.out_channels * out_spatial[0] * out_spatial[1];
  const size_t elem = ElemSize(p.dtype);
  // Each part's dW in a slice of the caller's thread-local buffer (a pointer: inside the loop
  // `partial` would name each thread's own), summed into the first.
  thread_local std::vector<float> partial;
  partial.resize(static_cast<size_t>(parts * wn));
  float* const sums = partial.data();
  ParallelFor(parts, int64_t{1} << 30, [&](int64_t b, int64_t end) {
    for (int64_t part = b; part < end; ++part) {
      Execute(part == parts - 1 ? *sp.last : *sp.full,
              static_cast<const uint8_t*>(x) + part * per * x_sample * elem,
              static_cast<const uint8_t*>(dy) + part * per * dy_sample * elem, nullptr,
              sums + part * wn);
    }
  });
  for (int64_t part = 1; part < parts; ++part) {
    const float* add = sums + part * wn;
    for (int64_t i = 0; i < wn; ++i) sums[i] += add[i];
  }
  if (p.dtype == DType::kF32) {
    std::copy_n(sums, wn, static_cast<float*>(dw));
  } else {
    NarrowFromF32(p.dtype, sums, wn, dw);
  }
  return true;
}

}  // namespace a8::cpu::internal
