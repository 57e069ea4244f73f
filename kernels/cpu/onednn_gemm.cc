#include "kernels/cpu/onednn_gemm.h"

#include <fmt/format.h>
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

#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/parallel.h"

namespace a8::cpu::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int64_t> executions{0};

// Below this many multiply-adds a product runs as one call on the caller's thread.
constexpr int64_t kParallelWork = int64_t{1} << 22;

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN's OpenMP parallel regions are 1 thread wide on every thread that calls it: the kernels'
// pool is the only one. Set on first use by each thread (the count is per thread in OpenMP).
dnnl::stream& ThreadStream() {
  thread_local dnnl::stream* stream = [] {
    omp_set_num_threads(1);
    return new dnnl::stream(Engine());  // leaked: a thread_local destructor may outlive oneDNN
  }();
  return *stream;
}

memory::data_type DnnlType(DType t) {
  switch (t) {
    case DType::kF16:
      return memory::data_type::f16;
    case DType::kBF16:
      return memory::data_type::bf16;
    default:
      return memory::data_type::f32;
  }
}

// The key of one primitive: everything its descriptor depends on.
struct Key {
  DType ab, c;
  bool ta, tb;
  int64_t batch_a, batch_b, m, n, k, ldb, ldc, add_rows, add_cols;
  float alpha;
  bool addend;
  auto Tie() const {
    return std::tie(ab, c, ta, tb, batch_a, batch_b, m, n, k, ldb, ldc, add_rows, add_cols, alpha,
                    addend);
  }
  bool operator<(const Key& o) const { return Tie() < o.Tie(); }
};

struct Entry {
  bool usable = false;  // false: oneDNN has only its reference implementation here
  std::string impl;
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md, add_md;
  // B in the layout the kernel wants (AMX: VNNI blocks), made by `pack_b` into a per-thread
  // buffer before each product: oneDNN 2.6's own copy of a plain B inside the product measured
  // slower (tools/bench/README.md). Empty when the kernel reads B as it is.
  memory::desc packed_b_md;
  dnnl::reorder pack_b;
};

// Descriptors of one product; B and C may be column slices of wider matrices (ldb, ldc).
std::shared_ptr<const Entry> MakeEntry(const Key& key) {
  // A primitive is planned for the OpenMP thread count of the thread that creates it (and then
  // runs that many threads, whoever executes it): make that count 1 first.
  ThreadStream();
  auto e = std::make_shared<Entry>();
  const int64_t ba = key.batch_a, bb = key.batch_b, bc = std::max(ba, bb);
  const auto ab = DnnlType(key.ab);
  // Strides: dims are [batch, rows, cols]; a transposed operand is stored [batch, cols, rows].
  e->a_md = memory::desc(
      {ba, key.m, key.k}, ab,
      key.ta ? memory::dims{key.m * key.k, 1, key.m} : memory::dims{key.m * key.k, key.k, 1});
  e->b_md = memory::desc(
      {bb, key.k, key.n}, ab,
      key.tb ? memory::dims{key.k * key.n, 1, key.k} : memory::dims{key.k * key.ldb, key.ldb, 1});
  e->c_md = memory::desc({bc, key.m, key.n}, DnnlType(key.c), {key.m * key.ldc, key.ldc, 1});
  dnnl::primitive_attr attr;
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.addend) {
    e->add_md = memory::desc({1, key.add_rows, key.add_cols}, DnnlType(key.c),
                             {key.add_rows * key.ldc, key.add_cols == 1 ? 1 : key.ldc, 1});
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, e->add_md);
    attr.set_post_ops(ops);
  }
  try {
    // B's layout is left to oneDNN ("any"), then B is packed into it by a reorder.
    const memory::desc any_b({bb, key.k, key.n}, ab, Tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, any_b, e->c_md), attr, Engine());
    e->impl = pd.impl_info_str();
    // The reference implementation is orders of magnitude slower than ours: decline it.
    if (e->impl.rfind("ref", 0) == 0) return e;
    e->prim = dnnl::matmul(pd);
    if (pd.weights_desc() != e->b_md) {
      e->packed_b_md = pd.weights_desc();
      e->pack_b =
          dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), e->b_md, Engine(), e->packed_b_md));
    }
    e->usable = true;
  } catch (const dnnl::error&) {
    // unimplemented for these types on this CPU: declined, the caller runs the reference
  }
  return e;
}

std::shared_ptr<const Entry> FindEntry(const Key& key) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Entry>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, MakeEntry(key)).first;
  return it->second;
}

void Execute(const Entry& e, const void* a, const void* b, void* c, const void* addend) {
  dnnl::engine& eng = Engine();
  dnnl::stream& s = ThreadStream();
  memory b_mem(e.b_md, eng, const_cast<void*>(b));
  if (e.packed_b_md.get_size() > 0) {
    // Kept for the next product on this thread; 4 KiB aligned, as oneDNN's own buffers (AMX
    // tile loads from a misaligned B measured slower).
    thread_local std::vector<uint8_t> packed;
    constexpr size_t kAlign = 4096;
    packed.resize(std::max(packed.size(), e.packed_b_md.get_size() + kAlign));
    const auto base = reinterpret_cast<uintptr_t>(packed.data());
    memory p(e.packed_b_md, eng, reinterpret_cast<void*>((base + kAlign - 1) & ~(kAlign - 1)));
    e.pack_b.execute(s, b_mem, p);
    b_mem = p;
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(e.a_md, eng, const_cast<void*>(a))},
                                          {DNNL_ARG_WEIGHTS, b_mem},
                                          {DNNL_ARG_DST, memory(e.c_md, eng, c)}};
  if (addend != nullptr) {
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 memory(e.add_md, eng, const_cast<void*>(addend)));
  }
  e.prim.execute(s, args);
  s.wait();
  executions.fetch_add(1, std::memory_order_relaxed);
}

Status Check(const FastGemmArgs& g) {
  const bool ab_ok =
      g.ab_type == DType::kF32 || g.ab_type == DType::kF16 || g.ab_type == DType::kBF16;
  if (!ab_ok || (g.c_type != g.ab_type && g.c_type != DType::kF32)) {
    return InvalidInput("FastGemm: unsupported dtypes {} x {} -> {}", ElemName(g.ab_type),
                        ElemName(g.ab_type), ElemName(g.c_type));
  }
  if (g.batch < 1 || g.m < 1 || g.n < 1 || g.k < 1) {
    return InvalidInput("FastGemm: sizes must be positive: batch {} m {} n {} k {}", g.batch, g.m,
                        g.n, g.k);
  }
  const bool add_ok =
      (g.add_rows == 1 || g.add_rows == g.m) && (g.add_cols == 1 || g.add_cols == g.n);
  if (g.addend != nullptr && (g.batch != 1 || !add_ok)) {
    return InvalidInput("FastGemm: addend [{},{}] does not broadcast to [{},{}] (batch {})",
                        g.add_rows, g.add_cols, g.m, g.n, g.batch);
  }
  return Status::Ok();
}

}  // namespace

int64_t FastGemmExecutions() { return executions.load(std::memory_order_relaxed); }

bool FastGemmEnabled() { return CurrentKernelMode() == KernelMode::kFast; }

StatusOr<bool> FastGemm(const FastGemmArgs& g, const void* a, const void* b, void* c) {
  A8_RETURN_IF_ERROR(Check(g));
  const size_t ab_size = ElemSize(g.ab_type), c_size = ElemSize(g.c_type);
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* pc = static_cast<uint8_t*>(c);
  const auto* padd = static_cast<const uint8_t*>(g.addend);
  const int64_t work = g.batch * g.m * g.n * g.k;
  if (g.ab_type == DType::kF32 && work < kMinFastF32Work) return false;
  const int threads = static_cast<int>(std::min<int64_t>(MaxThreads(), work / kParallelWork + 1));
  Key key{g.ab_type,
          g.c_type,
          g.trans_a,
          g.trans_b,
          g.stride_a == 0 ? 1 : g.batch,
          g.stride_b == 0 ? 1 : g.batch,
          g.m,
          g.n,
          g.k,
          g.n,
          g.n,
          g.add_rows,
          g.add_cols,
          g.alpha,
          g.addend != nullptr};
  if (threads <= 1) {
    std::shared_ptr<const Entry> e = FindEntry(key);
    if (!e->usable) return false;
    Execute(*e, a, b, c, g.addend);
    return true;
  }
  if (g.batch >= threads) {
    // Whole matrices per thread: `threads` slices of the batch.
    const int64_t per = (g.batch + threads - 1) / threads;
    std::shared_ptr<const Entry> full, last;
    auto slice_key = [&](int64_t count) {
      Key k = key;
      if (g.stride_a != 0) k.batch_a = count;
      if (g.stride_b != 0) k.batch_b = count;
      return FindEntry(k);
    };
    full = slice_key(per);
    last = slice_key(g.batch - per * (threads - 1));
    if (!full->usable || !last->usable) return false;
    ParallelFor(threads, kParallelWork, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b0 = t * per;
        if (b0 >= g.batch) continue;
        const Entry& e = b0 + per >= g.batch ? *last : *full;
        Execute(e, pa + b0 * g.stride_a * ab_size, pb + b0 * g.stride_b * ab_size,
                pc + b0 * g.m * g.n * c_size, nullptr);
      }
    });
    return true;
  }
  // Column slices of B and C (each thread packs only its slice of B), 64-column aligned; a
  // transposed B's slice is a block of its rows, so the same pointer arithmetic works with ldb k.
  const int64_t per = std::max<int64_t>((g.n + threads * 64 - 1) / (threads * 64) * 64, 64);
  const int64_t slices = (g.n + per - 1) / per;
  auto slice_key = [&](int64_t width) {
    Key k = key;
    k.batch_a = k.batch_b = 1;  // one matrix a call
    k.n = width;
    if (g.add_cols != 1) k.add_cols = width;
    return FindEntry(k);
  };
  std::shared_ptr<const Entry> full = slice_key(per), last = slice_key(g.n - per * (slices - 1));
  if (!full->usable || !last->usable) return false;
  ParallelFor(slices, kParallelWork, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t c0 = s * per;
      const Entry& e = s == slices - 1 ? *last : *full;
      for (int64_t bi = 0; bi < g.batch; ++bi) {
        const uint8_t* add = padd == nullptr ? nullptr : padd + (g.add_cols == 1 ? 0 : c0) * c_size;
        Execute(e, pa + bi * g.stride_a * ab_size,
                pb + (bi * g.stride_b + (g.trans_b ? c0 * g.k : c0)) * ab_size,
                pc + (bi * g.m * g.n + c0) * c_size, add);
      }
    }
  });
  return true;
}

std::string FastGemmDescription() {
  static const std::string text = [] {
    const dnnl_version_t* v = dnnl_version();
    std::string out = fmt::format("oneDNN {}.{}.{} (", v->major, v->minor, v->patch);
    const DType types[] = {DType::kBF16, DType::kF16, DType::kF32};
    for (DType t : types) {
      Key key{t, t, false, false, 1, 1, 64, 64, 64, 64, 64, 1, 1, 1.0f, false};
      std::shared_ptr<const Entry> e = FindEntry(key);
      out += fmt::format("{}{}: {}", t == DType::kBF16 ? "" : ", ", ElemName(t),
                         e->usable ? e->impl : "reference");
    }
    return out + ")";
  }();
  return text;
}

}  // namespace a8::cpu::internal
