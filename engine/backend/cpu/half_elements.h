// Half-width elements as the CPU backend stores them (weight matrices, the KV cache): 16-bit patterns tagged with
// their format, and their exact widening to float32. The scalar Widen overloads have no branches, so loops that
// call them vectorise; cpu_linear.cc also has whole-vector loads of them.
#pragma once

#include <cstdint>
#include <cstring>

#include "engine/core/dtype.h"

namespace arach::cpu {

// bfloat16: the upper half of a float32.
struct BFloat16Bits {
  uint16_t bits;
};
// IEEE float16.
struct HalfBits {
  uint16_t bits;
};
static_assert(sizeof(BFloat16Bits) == 2 && sizeof(HalfBits) == 2);

// Whether this build's vector loads of halves (cpu_linear.cc's LoadVec) convert them in hardware: AVX-512's or
// F16C's vcvtph2ps. A portable build (ARACH_CPU_NATIVE=OFF) widens them one at a time with Widen below.
#if defined(__AVX512F__) || (defined(__F16C__) && defined(__AVX__))
inline constexpr bool kHardwareHalfWidening = true;
#else
inline constexpr bool kHardwareHalfWidening = false;
#endif

inline float Widen(float x) { return x; }

inline float Widen(BFloat16Bits x) { return BFloat16ToFloat(x.bits); }

// HalfToFloat's value without its branches (so that loops vectorise). Exact for every half: exponent and mantissa moved into a float's bits give the value times 2^-112 (subnormal
// halves become subnormal floats), a multiply by 2^112 restores it; an all-ones exponent (inf/nan) becomes a
// float's; the sign is copied.
inline float Widen(HalfBits x) {
  const uint32_t magnitude = static_cast<uint32_t>(x.bits & 0x7fffu) << 13;
  float f;
  std::memcpy(&f, &magnitude, sizeof(f));
  f *= 0x1p112f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u |= (x.bits & 0x7c00u) == 0x7c00u ? 0x7f800000u : 0u;
  u |= static_cast<uint32_t>(x.bits & 0x8000u) << 16;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace arach::cpu
