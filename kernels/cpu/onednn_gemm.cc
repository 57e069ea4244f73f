#include "kernels/cpu/onednn_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/aligned_buffer.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/kernel_mode.h"
#include "kernels/cpu/low_precision_gemm.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/stable_regions.h"

namespace a8::cpu::internal {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int64_t> executions{0};

// Below this many multiply-adds a product runs as one call on the caller's thread (f32), and 16x
// as many in bf16/f16, which AMX multiplies about 16x as fast: a thread's share should stay well
// above the pool's hand-off cost.
constexpr int64_t kParallelWork = int64_t{1} << 22;
constexpr int64_t kParallelWorkLow = int64_t{1} << 26;

// Column slices per thread: a worker descheduled on a busy machine then holds up one narrow slice
// rather than half of the product (the caller runs every slice no worker has started).
constexpr int64_t kSlicesPerThread = 4;

// Row stride of a slice copied out of a wider matrix: its width plus 16 elements. oneDNN read a
// slice in place slowly where the matrix's rows are a multiple of 4 KiB apart (the caches map
// them onto a few sets); see RowSlices and the column slices of FastGemm.
int64_t PaddedLd(int64_t width) { return width + 16; }

// `rows` rows of `width` elements (`elem` bytes each), `ld` elements apart at `src`, copied into
// a buffer of the calling thread with rows PaddedLd(width) apart; returns the copy (valid until
// the thread's next call).
const uint8_t* CopyPadded(const uint8_t* src, int64_t rows, int64_t width, int64_t ld,
                          size_t elem) {
  thread_local std::vector<uint8_t> copy;
  const int64_t out_ld = PaddedLd(width);
  copy.resize(static_cast<size_t>(rows * out_ld) * elem);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(copy.data() + r * out_ld * elem, src + r * ld * elem,
                static_cast<size_t>(width) * elem);
  }
  return copy.data();
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
  int64_t lda = 0;  // 0: A is dense (k, or m when transposed); else a row slice of a wider A
  auto Tie() const {
    return std::tie(ab, c, ta, tb, batch_a, batch_b, m, n, k, ldb, ldc, add_rows, add_cols, alpha,
                    addend, lda);
  }
  bool operator<(const Key& o) const { return Tie() < o.Tie(); }
};

struct Entry {
  bool usable = false;  // false: oneDNN has only its reference implementation here
  std::string impl;
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md, add_md;
  // The primitive's scratch memory, given per call from the calling thread's buffer: one primitive
  // runs on several threads at once (row and column slices), and its own scratchpad would be
  // shared by them (row slices of a product computed wrong rows without this).
  memory::desc scratch_md;
  // B in the layout the kernel wants (AMX: VNNI blocks), made by `pack_b`: once per write for a
  // B in stable memory (a weight), else into a per-thread buffer before each product. Packing
  // and a product from the packed B measured faster than oneDNN 2.6 reading a plain B (1024^3
  // bf16, one thread, best of 30: 2.15 ms against 2.98; packed once: 1.94). Empty when the
  // kernel reads B as it is (a batched B).
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
  // One matrix each is described in 2-D: oneDNN 2.6 picks a blocked layout for B ("any") only
  // for a 2-D B, and a product from a packed B measured 1.3x faster on AMX (tools/bench).
  // (oneDNN 2.6 declines a 2-D product whose addend is a column, or whose C is a column slice
  // when it has an addend: those stay 3-D.)
  const bool flat = ba == 1 && bb == 1 && (!key.addend || (key.ldc == key.n && key.add_cols != 1));
  auto dims = [flat](int64_t batch, int64_t rows, int64_t cols) {
    return flat ? memory::dims{rows, cols} : memory::dims{batch, rows, cols};
  };
  auto strides = [flat](int64_t batch_stride, int64_t row_stride, int64_t col_stride) {
    return flat ? memory::dims{row_stride, col_stride}
                : memory::dims{batch_stride, row_stride, col_stride};
  };
  const int64_t lda = key.lda != 0 ? key.lda : key.ta ? key.m : key.k;
  e->a_md = memory::desc(dims(ba, key.m, key.k), ab,
                         key.ta ? strides(key.m * key.k, 1, lda) : strides(key.m * key.k, lda, 1));
  e->b_md = memory::desc(
      dims(bb, key.k, key.n), ab,
      key.tb ? strides(key.k * key.n, 1, key.k) : strides(key.k * key.ldb, key.ldb, 1));
  e->c_md =
      memory::desc(dims(bc, key.m, key.n), DnnlType(key.c), strides(key.m * key.ldc, key.ldc, 1));
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.addend) {
    // A row (one row, a slice of columns) is described dense, as a row of one is.
    const int64_t add_row_stride = key.add_cols == 1   ? 1
                                   : key.add_rows == 1 ? key.add_cols
                                                       : key.ldc;
    e->add_md = memory::desc(dims(1, key.add_rows, key.add_cols), DnnlType(key.c),
                             strides(key.add_rows * add_row_stride, add_row_stride, 1));
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, e->add_md);
    attr.set_post_ops(ops);
  }
  try {
    // B's layout is left to oneDNN ("any"), then B is packed into it by a reorder.
    const memory::desc any_b(dims(bb, key.k, key.n), ab, Tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, any_b, e->c_md), attr, Engine());
    e->impl = pd.impl_info_str();
    // The reference implementation is orders of magnitude slower than ours: decline it.
    if (e->impl.rfind("ref", 0) == 0) return e;
    e->prim = dnnl::matmul(pd);
    e->scratch_md = pd.scratchpad_desc();
    if (pd.weights_desc() != e->b_md) {
      // Where oneDNN picked a plain layout (a transposition of B's, as its AVX2 f32 GEMM does),
      // packing is only a transpose on every call: its GEMM reads B as stored just as fast
      // (the example mlp's [128, 64] weight: a 10 us reorder before a 15 us product). B is
      // packed only into a blocked layout (AMX, AVX-512 BF16).
      const dnnl_memory_desc_t& w = pd.weights_desc().data;
      const bool plain = w.format_kind == dnnl_blocked && w.format_desc.blocking.inner_nblks == 0;
      std::optional<dnnl::matmul::primitive_desc> as_stored;
      if (plain) {
        try {
          as_stored.emplace(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), attr, Engine());
          if (std::string(as_stored->impl_info_str()).rfind("ref", 0) == 0) as_stored.reset();
        } catch (const dnnl::error&) {
          as_stored.reset();
        }
      }
      if (as_stored) {
        e->impl = as_stored->impl_info_str();
        e->prim = dnnl::matmul(*as_stored);
        e->scratch_md = as_stored->scratchpad_desc();
      } else {
        e->packed_b_md = pd.weights_desc();
        e->pack_b = dnnl::reorder(
            dnnl::reorder::primitive_desc(Engine(), e->b_md, Engine(), e->packed_b_md));
      }
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

// A packed copy's bytes beyond its size: the room AlignedIn (aligned_buffer.h) aligns in.
constexpr size_t kPackAlign = 4096;

// A packed copy of a B that lies in stable memory (stable_regions.h), for one entry's layout.
struct PackedCopy {
  std::mutex mu;
  uint64_t generation = 0;  // of B's region when packed; 0: not packed yet
  std::vector<uint8_t> bytes;
};

// Packed copies take at most this many bytes in all; beyond it B is packed on every call.
constexpr size_t kMaxPackedBytes = size_t{2} << 30;

struct PackCache {
  std::mutex mu;
  std::map<std::pair<uintptr_t, const Entry*>, std::shared_ptr<PackedCopy>> copies;
  size_t bytes = 0;
};

PackCache& Packs() {
  static PackCache* cache = new PackCache();  // leaked, as the primitives it refers to
  return *cache;
}

std::atomic<int64_t> packs{0};

// The packed copy of B for `e`, up to date with B's region generation `generation`, or null
// when the cache is full.
std::shared_ptr<PackedCopy> CachedPack(const Entry& e, const void* b, uint64_t generation) {
  PackCache& cache = Packs();
  std::shared_ptr<PackedCopy> copy;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto [it, added] = cache.copies.try_emplace({reinterpret_cast<uintptr_t>(b), &e});
    if (added) {
      const size_t size = e.packed_b_md.get_size() + kPackAlign;
      if (cache.bytes + size > kMaxPackedBytes) {
        cache.copies.erase(it);
        return nullptr;
      }
      cache.bytes += size;
      it->second = std::make_shared<PackedCopy>();
    }
    copy = it->second;
  }
  std::lock_guard<std::mutex> lock(copy->mu);
  if (copy->generation != generation) {
    memory src(e.b_md, Engine(), const_cast<void*>(b));
    memory dst(e.packed_b_md, Engine(), AlignedIn(copy->bytes, e.packed_b_md.get_size()));
    dnnl::stream& s = ThreadStream();
    e.pack_b.execute(s, src, dst);
    s.wait();
    copy->generation = generation;
    packs.fetch_add(1, std::memory_order_relaxed);
  }
  return copy;
}

// The memory objects a product binds, one slot each (BoundMemory, onednn_context.h).
enum Slot { kA, kB, kPackedB, kC, kAddend, kScratch, kSlots };
static_assert(kSlots <= kMaxBoundSlots);

// `packed_b`: B already in e's packed layout (shared by the row slices of one product), or null.
// `counted`: whether the product and its packing count in FastGemmExecutions / FastGemmPacks.
void Execute(const Entry& e, const void* a, const void* b, void* c, const void* addend,
             const void* packed_b = nullptr, bool counted = true) {
  dnnl::stream& s = ThreadStream();
  const memory* b_mem = &BoundMemory(&e, kB, e.b_md, b);
  std::shared_ptr<PackedCopy> cached;  // held until the product is done
  if (packed_b != nullptr) {
    b_mem = &BoundMemory(&e, kPackedB, e.packed_b_md, packed_b);
  } else if (e.packed_b_md.get_size() > 0) {
    // A B in stable memory (a weight) is packed once per write of it; any other B is packed
    // into a per-thread buffer before each product.
    const uint64_t generation = StableGeneration(b, e.b_md.get_size());
    if (generation != 0) cached = CachedPack(e, b, generation);
    if (cached != nullptr) {
      b_mem = &BoundMemory(&e, kPackedB, e.packed_b_md,
                           AlignedIn(cached->bytes, e.packed_b_md.get_size()));
    } else {
      thread_local std::vector<uint8_t> packed;
      const memory& p =
          BoundMemory(&e, kPackedB, e.packed_b_md, AlignedIn(packed, e.packed_b_md.get_size()));
      Reorder(e.pack_b, s, *b_mem, p);
      if (counted) packs.fetch_add(1, std::memory_order_relaxed);
      b_mem = &p;
    }
  }
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, BoundMemory(&e, kA, e.a_md, a).get()},
                             {DNNL_ARG_WEIGHTS, b_mem->get()},
                             {DNNL_ARG_DST, BoundMemory(&e, kC, e.c_md, c).get()}};
  int n = 3;
  if (e.scratch_md.get_size() > 0) {
    thread_local std::vector<uint8_t> scratch;
    args[n++] = {
        DNNL_ARG_SCRATCHPAD,
        BoundMemory(&e, kScratch, e.scratch_md, AlignedIn(scratch, e.scratch_md.get_size())).get()};
  }
  if (addend != nullptr) {
    args[n++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 BoundMemory(&e, kAddend, e.add_md, addend).get()};
  }
  ExecuteArgs(e.prim, s, args, n);
  s.wait();
  if (counted) executions.fetch_add(1, std::memory_order_relaxed);
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

// One product (batch 1) over `threads`: row slices of A and C (16-row aligned, kSlicesPerThread a
// thread) against one packed B, packed once for all of them (a B in stable memory: once per
// write). Row slices cost nothing measurable against one call (1024^3 bf16, one thread: 256-row
// slices 1.92 ms, one call 1.85), where column slices cost up to 1.7x (512 columns: 3.08 ms).
bool RowSlices(const FastGemmArgs& g, const Key& key, int threads, const uint8_t* pa,
               const uint8_t* pb, uint8_t* pc, const uint8_t* padd) {
  const size_t ab_size = ElemSize(g.ab_type), c_size = ElemSize(g.c_type);
  const int64_t pieces = threads * kSlicesPerThread;
  const int64_t rows = std::max<int64_t>((g.m + pieces * 16 - 1) / (pieces * 16) * 16, 16);
  const int64_t slices = (g.m + rows - 1) / rows;
  // A transposed A's slice is a block of its columns, copied with padded rows (PaddedLd):
  // BERT-base's weight gradients, A^T [3072, 1024] x [1024, 768], took 54 ms on one thread and
  // 60 on two read in place, where 3000 columns took 50 and 30 (a 1.5 MB copy against 7 ms of
  // products there).
  auto slice_entry = [&](int64_t height) {
    Key k = key;
    k.m = height;
    k.lda = g.trans_a ? PaddedLd(height) : g.k;
    if (g.add_rows != 1) k.add_rows = height;
    return FindEntry(k);
  };
  std::shared_ptr<const Entry> full = slice_entry(rows),
                               last = slice_entry(g.m - rows * (slices - 1));
  if (!full->usable || !last->usable) return false;
  // B packed once for each distinct layout the two entries want (usually one).
  thread_local std::vector<uint8_t> own[2];
  std::shared_ptr<PackedCopy> cached[2];
  const void* packed[2] = {nullptr, nullptr};
  const Entry* entries[2] = {full.get(), last.get()};
  for (int i = 0; i < 2; ++i) {
    const Entry& e = *entries[i];
    if (e.packed_b_md.get_size() == 0) continue;
    if (i == 1 && e.packed_b_md == full->packed_b_md) {
      packed[1] = packed[0];
      break;
    }
    const uint64_t generation = StableGeneration(pb, e.b_md.get_size());
    if (generation != 0) cached[i] = CachedPack(e, pb, generation);
    if (cached[i] != nullptr) {
      packed[i] = AlignedIn(cached[i]->bytes, e.packed_b_md.get_size());
    } else {
      void* dst = AlignedIn(own[i], e.packed_b_md.get_size());
      memory src(e.b_md, Engine(), const_cast<uint8_t*>(pb)), p(e.packed_b_md, Engine(), dst);
      e.pack_b.execute(ThreadStream(), src, p);
      ThreadStream().wait();
      packs.fetch_add(1, std::memory_order_relaxed);
      packed[i] = dst;
    }
  }
  auto run_slice = [&](int64_t s) {
    const int64_t r0 = s * rows;
    const int i = s == slices - 1 ? 1 : 0;
    const uint8_t* add =
        padd == nullptr ? nullptr : padd + (g.add_rows == 1 ? 0 : r0 * g.add_cols) * c_size;
    const uint8_t* a_slice =
        g.trans_a ? CopyPadded(pa + r0 * ab_size, g.k, std::min(rows, g.m - r0), g.m, ab_size)
                  : pa + r0 * g.k * ab_size;
    Execute(*entries[i], a_slice, pb, pc + r0 * g.n * c_size, add, packed[i]);
  };
  auto task = [](void* ctx, int s) { (*static_cast<decltype(run_slice)*>(ctx))(s); };
  if (!internal::PoolRun(threads, static_cast<int>(slices), task, &run_slice)) {
    for (int64_t s = 0; s < slices; ++s) run_slice(s);
  }
  return true;
}

// The primitive of one n x n x n product in dtype t, A and C of t, no scale or addend: the one
// the probes below (and FastGemmDescription) ask about.
std::shared_ptr<const Entry> SquareEntry(DType t, int64_t n) {
  return FindEntry(Key{t, t, false, false, 1, 1, n, n, n, n, n, 1, 1, 1.0f, false});
}

}  // namespace

// Under kMinFastF32Work, or a batch of products each under it where the CPU has the tiles: one tile
// GEMM a matrix over the pool (BatchedGemm in gemm.cc) beats oneDNN's batched matmul, whose cost
// per matrix dominates there (the example BERT's attention scores, 128 products of 16 x 16 x 16,
// one thread: 0.115 ms through oneDNN, 0.051 ms through the AVX2 tiles).
bool F32Declines(const FastGemmArgs& g) {
  if (g.batch * g.m * g.n * g.k < kMinFastF32Work) return true;
  return g.batch > 1 && g.m * g.n * g.k < kMinFastF32Work && CpuHasGemmTiles();
}

bool OneDnnMultiplies(DType t) {
  auto probe = [](DType dtype) { return SquareEntry(dtype, 64)->usable; };
  static const bool f32 = probe(DType::kF32), f16 = probe(DType::kF16), bf16 = probe(DType::kBF16);
  return t == DType::kF32 ? f32 : t == DType::kF16 ? f16 : t == DType::kBF16 && bf16;
}

void OneDnnSquareProduct(DType t, int64_t n, const void* a, void* c) {
  Execute(*SquareEntry(t, n), a, a, c, nullptr, nullptr, /*counted=*/false);
}

int64_t FastGemmExecutions() { return executions.load(std::memory_order_relaxed); }

int64_t FastGemmPacks() { return packs.load(std::memory_order_relaxed); }

void DropCachedCopies(uintptr_t begin, uintptr_t end) {
  PackCache& cache = Packs();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.copies.lower_bound({begin, nullptr});
  while (it != cache.copies.end() && it->first.first < end) {
    cache.bytes -= it->first.second->packed_b_md.get_size() + kPackAlign;
    it = cache.copies.erase(it);
  }
}

bool FastGemmEnabled() { return CurrentKernelMode() == KernelMode::kFast; }

StatusOr<bool> FastGemm(const FastGemmArgs& g, const void* a, const void* b, void* c) {
  A8_RETURN_IF_ERROR(Check(g));
  const size_t ab_size = ElemSize(g.ab_type), c_size = ElemSize(g.c_type);
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* pc = static_cast<uint8_t*>(c);
  const auto* padd = static_cast<const uint8_t*>(g.addend);
  const int64_t work = g.batch * g.m * g.n * g.k;
  if (g.ab_type == DType::kF32 && F32Declines(g)) return false;
  // oneDNN's f16/bf16 kernels multiply in low precision (AMX: about 16x f32); PackedGemm's tiles
  // at f32's rate. Without AVX-512 an f32 multiply-add costs about twice as long: split at half
  // the work.
  const GemmRoute route = RouteOf(g.ab_type);
  const int64_t split_work = g.ab_type != DType::kF32 && route == GemmRoute::kOneDnn
                                 ? kParallelWorkLow
                             : CpuHasAvx512() ? kParallelWork
                                              : kParallelWork / 2;
  const int threads = static_cast<int>(std::min<int64_t>(MaxThreads(), work / split_work + 1));
  if (route != GemmRoute::kOneDnn) {
    const bool ran = RunOffOneDnn(route, g, a, b, c, threads);
    if (ran) executions.fetch_add(1, std::memory_order_relaxed);
    return ran;
  }
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
  // One matrix is cut into row slices, which share one packed B (cached for a weight), except a
  // wider than tall one whose B oneDNN reads as stored (its AVX2 f32 GEMM): there each row slice
  // packed all of B inside the GEMM (A^T [768, 1024] x [1024, 3072], BERT-base's other weight
  // gradient, ran no faster on two threads than on one: 53.4 / 53.6 ms), so it is cut into
  // column slices, each packing only its part (33.0 ms on two threads).
  if (g.batch == 1 && (g.m >= g.n || FindEntry(key)->packed_b_md.get_size() != 0)) {
    return RowSlices(g, key, threads, pa, pb, pc, padd);
  }
  // Column slices of B and C, 64-column aligned; a transposed B's slice is a block of its rows,
  // so the same pointer arithmetic works with ldb k. A plain B's slice is a block of its columns:
  // copied with padded rows, as RowSlices copies a transposed A's (CopyPadded).
  const int64_t pieces = threads * kSlicesPerThread;
  const int64_t per = std::max<int64_t>((g.n + pieces * 64 - 1) / (pieces * 64) * 64, 64);
  const int64_t slices = (g.n + per - 1) / per;
  const bool copy_b = g.batch == 1 && !g.trans_b;
  auto slice_key = [&](int64_t width) {
    Key k = key;
    k.batch_a = k.batch_b = 1;  // one matrix a call
    k.n = width;
    if (copy_b) k.ldb = PaddedLd(width);
    if (g.add_cols != 1) k.add_cols = width;
    return FindEntry(k);
  };
  std::shared_ptr<const Entry> full = slice_key(per), last = slice_key(g.n - per * (slices - 1));
  if (!full->usable || !last->usable) return false;
  auto run_slice = [&](int64_t s) {
    const int64_t c0 = s * per;
    const Entry& e = s == slices - 1 ? *last : *full;
    for (int64_t bi = 0; bi < g.batch; ++bi) {
      const uint8_t* add = padd == nullptr ? nullptr : padd + (g.add_cols == 1 ? 0 : c0) * c_size;
      const uint8_t* b_slice = pb + (bi * g.stride_b + (g.trans_b ? c0 * g.k : c0)) * ab_size;
      if (copy_b) b_slice = CopyPadded(b_slice, g.k, std::min(per, g.n - c0), g.n, ab_size);
      Execute(e, pa + bi * g.stride_a * ab_size, b_slice, pc + (bi * g.m * g.n + c0) * c_size, add);
    }
  };
  // One pool chunk per slice (ParallelFor would merge them into one chunk per thread).
  auto task = [](void* ctx, int s) { (*static_cast<decltype(run_slice)*>(ctx))(s); };
  if (!internal::PoolRun(threads, static_cast<int>(slices), task, &run_slice)) {
    for (int64_t s = 0; s < slices; ++s) run_slice(s);
  }
  return true;
}

std::string FastGemmDescription() {
  static const std::string text = [] {
    const dnnl_version_t* v = dnnl_version();
    std::string out = fmt::format("oneDNN {}.{}.{} (", v->major, v->minor, v->patch);
    const DType types[] = {DType::kBF16, DType::kF16, DType::kF32};
    for (DType t : types) {
      std::shared_ptr<const Entry> e = SquareEntry(t, 64);
      const GemmRoute route = RouteOf(t);
      out += fmt::format("{}{}: {}", t == DType::kBF16 ? "" : ", ", ElemName(t),
                         route == GemmRoute::kOneDnn ? e->impl : RouteName(route));
      if (t == DType::kBF16 && e->usable && route != GemmRoute::kOneDnn) {
        out += fmt::format(" ({} {})", e->impl, Bf16OffReason());
      }
    }
    return out + ")";
  }();
  return text;
}

}  // namespace a8::cpu::internal
