// Which instruction-set level fast_convert.h's conversions run on, for tests.
//
// The dispatch picks the widest level the CPU has (AVX-512F, then F16C+AVX2, then the scalar
// body), so on an AVX-512 machine the F16C+AVX2 code would never run. Tests force each level this
// CPU can run and check that every one gives the scalar body's bits.
#pragma once

#include <string>
#include <vector>

namespace a8::cpu {

// The levels this CPU can run the conversions on, widest first ("scalar" always last).
std::vector<std::string> FastConvertIsas();

// Every thread converts on `isa` (one of FastConvertIsas()) from now on; "" restores the
// detected level. False (and no change) for a level this CPU cannot run or an unknown name.
bool SetFastConvertIsaForTesting(const std::string& isa);

}  // namespace a8::cpu
