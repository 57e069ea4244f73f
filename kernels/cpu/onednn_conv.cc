#include "kernels/cpu/onednn_conv.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int64_t> executions{0};

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One OpenMP thread per calling thread, as in onednn_gemm.cc: the kernels' pool is the only one.
dnnl::stream& ThreadStream() {
  thread_local dnnl::stream* stream = [] {
    omp_set_num_threads(1);
    return new dnnl::stream(Engine());  // leaked: a thread_local destructor may outlive oneDNN
  }();
  return *stream;
}

// Everything a primitive depends on: dtype, whether there is a bias, and the sizes
// (N C H W, M kh kw, strides, dilations, pads begin/end, output H W).
struct Key {
  DType dtype;
  bool bias;
  std::vector<int64_t> sizes;
  bool operator<(const Key& o) const {
    return std::tie(dtype, bias, sizes) < std::tie(o.dtype, o.bias, o.sizes);
  }
};

struct Entry {
  bool usable = false;
  dnnl::convolution_forward prim;
  memory::desc x_md, w_md, y_md, b_md;           // as stored: NCHW, OIHW, NCHW, [M]
  memory::desc xi_md, wi_md, yi_md, scratch_md;  // as the primitive wants them
  dnnl::reorder to_x, to_w, from_y;              // empty where the layouts agree
};

void* AlignedIn(std::vector<uint8_t>& bytes, size_t size) {
  constexpr size_t kAlign = 4096;
  if (bytes.size() < size + kAlign) bytes.resize(size + kAlign);
  const auto base = reinterpret_cast<uintptr_t>(bytes.data());
  return reinterpret_cast<void*>((base + kAlign - 1) & ~(kAlign - 1));
}

std::shared_ptr<const Entry> MakeEntry(const Key& key) {
  ThreadStream();  // a primitive is planned for its creating thread's OpenMP count: 1
  auto e = std::make_shared<Entry>();
  const std::vector<int64_t>& s = key.sizes;
  const memory::dims x{s[0], s[1], s[2], s[3]}, w{s[4], s[1], s[5], s[6]},
      y{s[0], s[4], s[15], s[16]};
  const memory::data_type dt =
      key.dtype == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
  e->x_md = memory::desc(x, dt, Tag::nchw);
  e->w_md = memory::desc(w, dt, Tag::oihw);
  e->y_md = memory::desc(y, dt, Tag::nchw);
  if (key.bias) e->b_md = memory::desc({s[4]}, dt, Tag::a);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one primitive, several threads
    const dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        memory::desc(x, dt, Tag::any), memory::desc(w, dt, Tag::any), e->b_md,
        memory::desc(y, dt, Tag::any), {s[7], s[8]}, {s[9] - 1, s[10] - 1}, {s[11], s[12]},
        {s[13], s[14]});
    dnnl::convolution_forward::primitive_desc pd(d, attr, Engine());
    const std::string impl = pd.impl_info_str();
    if (impl.find("ref") != std::string::npos) return e;  // declined: today's kernels win
    e->prim = dnnl::convolution_forward(pd);
    e->xi_md = pd.src_desc();
    e->wi_md = pd.weights_desc();
    e->yi_md = pd.dst_desc();
    e->scratch_md = pd.scratchpad_desc();
    if (e->xi_md != e->x_md) e->to_x = dnnl::reorder({Engine(), e->x_md, Engine(), e->xi_md});
    if (e->wi_md != e->w_md) e->to_w = dnnl::reorder({Engine(), e->w_md, Engine(), e->wi_md});
    if (e->yi_md != e->y_md) e->from_y = dnnl::reorder({Engine(), e->yi_md, Engine(), e->y_md});
    e->usable = true;
  } catch (const dnnl::error&) {
    // unimplemented here: declined
  }
  return e;
}

std::shared_ptr<const Entry> FindEntry(const Key& key) {
  static std::mutex mu;
  static auto* cache = new std::map<Key, std::shared_ptr<const Entry>>();  // leaked, as oneDNN
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it == cache->end()) it = cache->emplace(key, MakeEntry(key)).first;
  return it->second;
}

// Runs one sub-batch on the calling thread, through its own layout buffers.
void Execute(const Entry& e, const void* x, const void* w, const void* bias, void* y) {
  dnnl::engine& eng = Engine();
  dnnl::stream& s = ThreadStream();
  thread_local std::vector<uint8_t> xbuf, wbuf, ybuf, scratch;
  memory xm(e.x_md, eng, const_cast<void*>(x)), wm(e.w_md, eng, const_cast<void*>(w));
  memory ym(e.y_md, eng, y);
  memory xi = xm, wi = wm, yi = ym;
  if (e.to_x) {
    xi = memory(e.xi_md, eng, AlignedIn(xbuf, e.xi_md.get_size()));
    e.to_x.execute(s, xm, xi);
  }
  if (e.to_w) {
    wi = memory(e.wi_md, eng, AlignedIn(wbuf, e.wi_md.get_size()));
    e.to_w.execute(s, wm, wi);
  }
  if (e.from_y) yi = memory(e.yi_md, eng, AlignedIn(ybuf, e.yi_md.get_size()));
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, xi}, {DNNL_ARG_WEIGHTS, wi}, {DNNL_ARG_DST, yi}};
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, memory(e.b_md, eng, const_cast<void*>(bias)));
  if (e.scratch_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(e.scratch_md, eng, AlignedIn(scratch, e.scratch_md.get_size())));
  }
  e.prim.execute(s, args);
  if (e.from_y) e.from_y.execute(s, yi, ym);
  s.wait();
  executions.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int64_t FastConvExecutions() { return executions.load(std::memory_order_relaxed); }

StatusOr<bool> FastConv(const ConvParams& p, const Dims& out_spatial, const void* x, const void* w,
                        const void* bias, void* y) {
  if (p.dtype != DType::kF32 && p.dtype != DType::kBF16) return false;
  if (p.group != 1 || p.in_spatial.size() != 2 || p.kernel.size() != 2 || out_spatial.size() != 2 ||
      p.batch < 1 || p.out_channels < 1) {
    return false;
  }
  if (p.dtype == DType::kF32 && p.in_channels < kMinFastF32Channels) return false;
  auto at = [](const Dims& d, size_t i, int64_t none) { return d.empty() ? none : d[i]; };
  const int64_t pads[4] = {at(p.pads, 0, 0), at(p.pads, 1, 0), at(p.pads, 2, 0), at(p.pads, 3, 0)};
  const int threads = static_cast<int>(std::min<int64_t>(MaxThreads(), p.batch));
  const int64_t per = (p.batch + threads - 1) / threads;
  auto key_of = [&](int64_t batch) {
    return Key{p.dtype,
               bias != nullptr,
               {batch, p.in_channels, p.in_spatial[0], p.in_spatial[1], p.out_channels, p.kernel[0],
                p.kernel[1], at(p.strides, 0, 1), at(p.strides, 1, 1), at(p.dilations, 0, 1),
                at(p.dilations, 1, 1), pads[0], pads[1], pads[2], pads[3], out_spatial[0],
                out_spatial[1]}};
  };
  const int64_t parts = (p.batch + per - 1) / per;
  std::shared_ptr<const Entry> full = FindEntry(key_of(per)),
                               last = FindEntry(key_of(p.batch - per * (parts - 1)));
  if (!full->usable || !last->usable) return false;
  const size_t elem = ElemSize(p.dtype);
  const int64_t x_sample = p.in_channels * p.in_spatial[0] * p.in_spatial[1];
  const int64_t y_sample = p.out_channels * out_spatial[0] * out_spatial[1];
  const auto* px = static_cast<const uint8_t*>(x);
  auto* py = static_cast<uint8_t*>(y);
  auto run = [&](int64_t part) {
    const Entry& e = part == parts - 1 ? *last : *full;
    Execute(e, px + part * per * x_sample * elem, w, bias, py + part * per * y_sample * elem);
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

}  // namespace a8::cpu::internal
