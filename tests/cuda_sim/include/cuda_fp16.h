// The SIMT simulator's stand-in for <cuda_fp16.h> (see cuda_runtime.h beside it): IEEE half as its 16 bits,
// converted with the engine's own rounding (round to nearest even, +-inf beyond +-65504, as __float2half).
#pragma once

#include <cstdint>

#include "cuda_runtime.h"
#include "engine/core/dtype.h"

struct __half {
  uint16_t bits = 0;
};
struct __half2 {
  __half x, y;
};

inline float __half2float(__half v) { return arach::HalfToFloat(v.bits); }
inline __half __float2half(float v) { return __half{arach::FloatToHalf(v)}; }
inline float2 __half22float2(__half2 v) { return {__half2float(v.x), __half2float(v.y)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half(a), __float2half(b)}; }
