// The one math body of every elementwise binary op: an A8_HD functor per op, used by the CPU
// kernels (kernels/cpu/binary.cc), the device kernels (kernels/device/elementwise_binary_impl.h)
// and, through the CPU kernels, constant folding.
//
// VisitBinary maps the ops' one enum (BinaryKind) to them. A functor maps two elements in their
// compute type A (float for f16/bf16/f32, double for f64, the integer itself for integer ops).
// Integer arithmetic wraps as two's complement (computed unsigned); integer division and modulo by
// zero give 0, and by -1 never overflow. Float Max/Min propagate a NaN (a + b). Plain ::powf-style
// math only: no std:: containers, no exceptions.
#pragma once

#include <stdint.h>

#include <type_traits>

#include "kernels/common/unary_math.h"

namespace a8 {

// The unsigned type integer arithmetic wraps in: at least unsigned int, so that u16 * u16 is not
// promoted to a signed int that overflows.
template <typename A>
using WrapOf =
    std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;

struct AddF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapOf<A>>(a) + static_cast<WrapOf<A>>(b));
    } else {
      return a + b;
    }
  }
};
struct SubF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapOf<A>>(a) - static_cast<WrapOf<A>>(b));
    } else {
      return a - b;
    }
  }
};
struct MulF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<WrapOf<A>>(a) * static_cast<WrapOf<A>>(b));
    } else {
      return a * b;
    }
  }
};
struct DivF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>) {
        if (b == A(-1)) return static_cast<A>(WrapOf<A>(0) - static_cast<WrapOf<A>>(a));
      }
      return static_cast<A>(a / b);
    } else {
      return a / b;
    }
  }
};
struct PowF {
  template <typename A>
  A8_HD A operator()(A base, A exp) const {
    if constexpr (std::is_integral_v<A>) {
      if constexpr (std::is_signed_v<A>) {
        if (exp < 0) {
          if (base == 1) return 1;
          if (base == -1) return (exp % 2 == 0) ? 1 : -1;
          return 0;
        }
      }
      using U = WrapOf<A>;
      U result = 1, b = static_cast<U>(base);
      for (U e = static_cast<U>(exp); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * b);
        b = static_cast<U>(b * b);
      }
      return static_cast<A>(result);
    } else {
      return MPow(base, exp);
    }
  }
};
// c_fmod: C fmod (sign of the dividend); else the sign of the divisor.
struct ModF {
  bool c_fmod;
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>) {
        if (b == A(-1)) return 0;
        A r = static_cast<A>(a % b);
        if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<A>(r + b);
        return r;
      } else {
        return static_cast<A>(a % b);
      }
    } else {
      A r = MFmod(a, b);
      if (!c_fmod && r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
      return r;
    }
  }
};
// Max and Min propagate NaN: a NaN operand gives a + b (NaN) where the comparison would drop it.
template <typename A>
A8_HD bool EitherIsNaN(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return false;
  } else {
    return a != a || b != b;
  }
}
struct MaxF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if (EitherIsNaN(a, b)) return a + b;
    return a < b ? b : a;
  }
};
struct MinF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if (EitherIsNaN(a, b)) return a + b;
    return b < a ? b : a;
  }
};
struct EqualF {
  template <typename A>
  A8_HD bool operator()(A a, A b) const {
    return a == b;
  }
};
struct LessF {
  template <typename A>
  A8_HD bool operator()(A a, A b) const {
    return a < b;
  }
};
struct LessOrEqualF {
  template <typename A>
  A8_HD bool operator()(A a, A b) const {
    return a <= b;
  }
};
struct GreaterF {
  template <typename A>
  A8_HD bool operator()(A a, A b) const {
    return a > b;
  }
};
struct GreaterOrEqualF {
  template <typename A>
  A8_HD bool operator()(A a, A b) const {
    return a >= b;
  }
};
struct AndF {
  A8_HD bool operator()(bool a, bool b) const { return a && b; }
};
struct OrF {
  A8_HD bool operator()(bool a, bool b) const { return a || b; }
};
struct XorF {
  A8_HD bool operator()(bool a, bool b) const { return a != b; }
};

// The bitwise ops of integers (BitwiseAnd/Or/Xor, BitShift). Never called with a float type (the
// backends' entries take integers only); they return `a` there so that every visitor compiles.
struct BitwiseAndF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) return static_cast<A>(a & b);
    return a;
  }
};
struct BitwiseOrF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) return static_cast<A>(a | b);
    return a;
  }
};
struct BitwiseXorF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) return static_cast<A>(a ^ b);
    return a;
  }
};
// ONNX BitShift-28: a right shift of a signed type is arithmetic; a shift by a negative amount or
// by the type's width or more gives what the sign extension alone gives (-1 for a right shift
// of a negative value, else 0). Left shifts drop the bits past the top (computed unsigned).
template <typename A>
A8_HD bool ShiftOutOfRange(A b) {
  if constexpr (std::is_signed_v<A>) {
    if (b < 0) return true;
  }
  return static_cast<uint64_t>(b) >= sizeof(A) * 8;
}
struct ShiftLeftF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (ShiftOutOfRange(b)) return 0;
      return static_cast<A>(static_cast<WrapOf<A>>(static_cast<WrapOf<A>>(a) << b));
    }
    return a;
  }
};
struct ShiftRightF {
  template <typename A>
  A8_HD A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (ShiftOutOfRange(b)) {
        if constexpr (std::is_signed_v<A>) return a < 0 ? A(-1) : A(0);
        return 0;
      }
      return static_cast<A>(a >> b);  // arithmetic for signed A (C++20)
    }
    return a;
  }
};

// The binary ops, one enum for both backends (cpu::BinaryOp and DevBinaryOp are its names
// there). Mod is ONNX Mod with fmod=0 (the sign of the divisor, Python %), FMod with fmod=1 (C
// fmod, the sign of the dividend).
enum class BinaryKind : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMod,
  kFMod,
  kMax,
  kMin,
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor,
  // Integer-only arithmetic (after the bool ops, so that older values keep their numbers).
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kShiftLeft,
  kShiftRight,
};

// The name in messages (Mod with fmod=1 is "Mod(fmod)").
inline const char* BinaryKindName(BinaryKind op) {
  static const char* const kNames[] = {"Add",
                                       "Sub",
                                       "Mul",
                                       "Div",
                                       "Pow",
                                       "Mod",
                                       "Mod(fmod)",
                                       "Max",
                                       "Min",
                                       "Equal",
                                       "Less",
                                       "LessOrEqual",
                                       "Greater",
                                       "GreaterOrEqual",
                                       "And",
                                       "Or",
                                       "Xor",
                                       "BitwiseAnd",
                                       "BitwiseOr",
                                       "BitwiseXor",
                                       "BitShift(LEFT)",
                                       "BitShift(RIGHT)"};
  return kNames[static_cast<int>(op)];
}

// Whether `op` writes bool (comparisons, logic) rather than the input dtype.
A8_HD bool BinaryKindIsBool(BinaryKind op) {
  return op >= BinaryKind::kEqual && op <= BinaryKind::kXor;
}

// Whether `op` takes integer operands only (the bitwise ops).
A8_HD bool BinaryKindIsIntegerOnly(BinaryKind op) { return op >= BinaryKind::kBitwiseAnd; }

// The functor of `op`, handed to the visitor of its kind: arith(F) for Add ... Min, compare(F)
// for Equal ... GreaterOrEqual, logic(F) for And, Or, Xor; arith(F) for the bitwise ops. The three
// return the same type. Host code (the backends' dispatch).
template <typename Arith, typename Compare, typename Logic>
auto VisitBinary(BinaryKind op, Arith&& arith, Compare&& compare, Logic&& logic) {
  switch (op) {
    case BinaryKind::kAdd:
      return arith(AddF{});
    case BinaryKind::kSub:
      return arith(SubF{});
    case BinaryKind::kMul:
      return arith(MulF{});
    case BinaryKind::kDiv:
      return arith(DivF{});
    case BinaryKind::kPow:
      return arith(PowF{});
    case BinaryKind::kMod:
      return arith(ModF{false});
    case BinaryKind::kFMod:
      return arith(ModF{true});
    case BinaryKind::kMax:
      return arith(MaxF{});
    case BinaryKind::kMin:
      return arith(MinF{});
    case BinaryKind::kEqual:
      return compare(EqualF{});
    case BinaryKind::kLess:
      return compare(LessF{});
    case BinaryKind::kLessOrEqual:
      return compare(LessOrEqualF{});
    case BinaryKind::kGreater:
      return compare(GreaterF{});
    case BinaryKind::kGreaterOrEqual:
      return compare(GreaterOrEqualF{});
    case BinaryKind::kAnd:
      return logic(AndF{});
    case BinaryKind::kOr:
      return logic(OrF{});
    case BinaryKind::kBitwiseAnd:
      return arith(BitwiseAndF{});
    case BinaryKind::kBitwiseOr:
      return arith(BitwiseOrF{});
    case BinaryKind::kBitwiseXor:
      return arith(BitwiseXorF{});
    case BinaryKind::kShiftLeft:
      return arith(ShiftLeftF{});
    case BinaryKind::kShiftRight:
      return arith(ShiftRightF{});
    case BinaryKind::kXor:
      break;
  }
  return logic(XorF{});
}

}  // namespace a8
