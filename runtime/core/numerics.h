// `--check-numerics` support: finding the first non-finite element of a float buffer, and the
// error text that names where it came from.
//
// The executor calls these after every kernel (ExecutorOptions::check_numerics); nothing here
// runs without the option. f16 and bf16 are tested on their bits, so no element is converted
// unless it is the one reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/ir/types.h"

namespace a8 {

struct NonFinite {
  int64_t index = 0;  // flat, row-major
  double value = 0;   // Inf, -Inf or NaN
};

// The first Inf or NaN among the `count` elements of `dtype` at `data`; nullopt when all are
// finite or `dtype` is not a float type (integers and bools cannot be non-finite).
std::optional<NonFinite> FindNonFinite(DType dtype, const uint8_t* data, int64_t count);

// "nan", "inf" or "-inf" (a NaN's sign and payload say nothing useful here).
std::string NonFiniteName(double value);

}  // namespace a8
