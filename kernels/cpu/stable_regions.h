// Memory whose every write the caller reports: where a GEMM may keep a repacked copy of an operand.
//
// oneDNN's bf16 (AMX) and f32 kernels read B in a blocked layout; repacking a plain B costs about
// as much as a 1024^3 bf16 product on one core. A weight changes only when the optimizer, a
// checkpoint load or an update copy writes it (once a step in training, never in inference), so
// its packed copy can serve every product until then (onednn_gemm.cc). Which memory is such
// "stable" memory, and when it is written, only the runtime knows: the CPU backend registers its
// plan's PERSISTENT parameter, state and constant buffers here and reports every write that can
// touch them (kernel outputs, copies in, fills, update copies).
//
// Each region carries a generation, drawn from one process-wide counter when the region is
// registered and again at each write that overlaps it: a cached copy made at generation g is
// valid while its region's generation is still g. Memory no region holds (activations, inputs,
// anything a test passes to a kernel directly) is never cached. Regions of one owner never
// overlap each other or another owner's (an overlapping one is not registered, so a write there
// still invalidates the region it overlaps).
#pragma once

#include <cstddef>
#include <cstdint>

namespace a8::cpu {

// Registers [p, p + bytes) as stable memory of `owner` (a backend). Ignored when empty or when it
// overlaps a registered region.
void WatchStableRegion(const void* owner, const void* p, size_t bytes);

// Drops every region of `owner` and the copies cached from them (before its memory is freed or
// rebound).
void ForgetStableRegions(const void* owner);

// Reports a write to [p, p + bytes): every region it overlaps gets a new generation.
void NoteWrite(const void* p, size_t bytes);

// Whether [p, p + bytes) overlaps a registered region: a caller whose writes land at fixed
// addresses asks once and reports only those writes.
bool OverlapsStableRegion(const void* p, size_t bytes);

namespace internal {

// The generation of the region that holds all of [p, p + bytes), or 0 when none does.
uint64_t StableGeneration(const void* p, size_t bytes);

// Called by ForgetStableRegions for each dropped region, to free what was cached from it (the
// GEMM cache, onednn_gemm.cc).
void DropCachedCopies(uintptr_t begin, uintptr_t end);

}  // namespace internal
}  // namespace a8::cpu
