#include "runtime/core/backend.h"

#include <cstring>

namespace a8 {

Status Backend::RunSequence(int, const std::vector<int>& kernels, const std::vector<Copy>& copies,
                            const StepInfo& step) {
  for (int k : kernels) A8_RETURN_IF_ERROR(Run(k, step));
  for (const Copy& c : copies)
    if (c.dst != c.src && c.bytes > 0) std::memmove(c.dst, c.src, c.bytes);
  return Status::Ok();
}

StatusOr<uint8_t*> Backend::AllocateRegion(uint64_t) {
  return Internal("backend '{}' works on host memory: the executor allocates it", name());
}

Status Backend::CopyIn(uint8_t* dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

Status Backend::CopyOut(void* dst, const uint8_t* src, uint64_t bytes) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return Status::Ok();
}

Status Backend::Fill(uint8_t* dst, uint8_t byte, uint64_t bytes) {
  if (bytes > 0) std::memset(dst, byte, bytes);
  return Status::Ok();
}

}  // namespace a8
