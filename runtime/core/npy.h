// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Supported: C-order arrays of little-endian `<f4 <f2 <f8 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1`
// (and their `=` or `<`/`|` spellings for 1-byte types). NumPy has no bfloat16: a bf16 array is
// stored as `<u2` (its raw 16-bit patterns); the reader returns `<u2` as kBF16 when the caller
// expects bf16 (`bf16_from_u2`: the plan's input is bf16), as kU16 otherwise. Everything else
// (big-endian, Fortran order, object or structured dtypes, a malformed header, data shorter or
// longer than the shape says) is an InvalidInput error naming the file and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/attribute.h"
#include "compiler/ir/status.h"
#include "compiler/ir/types.h"

namespace a8 {

struct NpyArray {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major, little-endian, dims product * element size bytes
};

// Parses the bytes of a .npy file; `source` names it in errors.
StatusOr<NpyArray> ParseNpy(const std::string& bytes, const std::string& source,
                            bool bf16_from_u2 = false);
StatusOr<NpyArray> ReadNpyFile(const std::string& path, bool bf16_from_u2 = false);

// A .npy file as constant tensor data (`a800c --bind`): the dtype and dims of the array.
StatusOr<TensorDataPtr> ReadNpyTensor(const std::string& path);

// Serialises as format 1.0 (2.0 when the header does not fit in 65535 bytes).
std::string SerializeNpy(DType dtype, const std::vector<int64_t>& dims, const void* data);
Status WriteNpyFile(const std::string& path, DType dtype, const std::vector<int64_t>& dims,
                    const void* data);

// The numpy descr of a dtype ("<f4", ...; "<u2" for bf16).
const char* NpyDescr(DType dtype);

}  // namespace a8
