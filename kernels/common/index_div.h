// Division of a non-negative index by a divisor fixed at launch, without a divide instruction:
// a GPU has none (a 64-bit `/` is a subroutine of some 70 instructions, a 32-bit one about 20),
// and the index arithmetic of strided copies, broadcasting and pooling divides by a dimension
// once or twice per dimension per element. IndexDiv precomputes the multiplier of the
// round-up method (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994; CUTLASS's FastDivmod): for d < 2^31 and n < 2^31,
//   n / d == (n * m) >> (31 + s),   s = ceil(log2 d), m = ceil(2^(31 + s) / d) < 2^32,
// exact because m * d - 2^(31 + s) < d <= 2^s makes the error n (m d - 2^(31+s)) / (d 2^(31+s))
// smaller than 1 / d. Larger operands take the plain division. Integer results, so the host and
// the GPU agree whichever path either takes.
#pragma once

#include <cstdint>

#include "kernels/common/float16.h"  // A8_HD

namespace a8 {

class IndexDiv {
 public:
  IndexDiv() = default;
  // divisor >= 1.
  A8_HD explicit IndexDiv(int64_t divisor) : d_(divisor) {
    if (divisor <= 1 || divisor >= (int64_t{1} << 31)) return;  // mul_ == 0: plain division
    uint32_t s = 0;
    while ((int64_t{1} << s) < divisor) ++s;
    mul_ = static_cast<uint32_t>(((uint64_t{1} << (31 + s)) + static_cast<uint64_t>(divisor) - 1) /
                                 static_cast<uint64_t>(divisor));
    shift_ = 31 + s;
  }

  A8_HD int64_t divisor() const { return d_; }

  // n / divisor for n >= 0.
  A8_HD int64_t Div(int64_t n) const {
    if (mul_ != 0 && static_cast<uint64_t>(n) < (uint64_t{1} << 31)) {
      return static_cast<int64_t>((static_cast<uint64_t>(n) * mul_) >> shift_);
    }
    return d_ == 1 ? n : n / d_;
  }

  // The quotient, and n - quotient * divisor in *rem.
  A8_HD int64_t DivMod(int64_t n, int64_t* rem) const {
    const int64_t q = Div(n);
    *rem = n - q * d_;
    return q;
  }

 private:
  int64_t d_ = 1;
  uint32_t mul_ = 0;
  uint32_t shift_ = 0;
};

}  // namespace a8
