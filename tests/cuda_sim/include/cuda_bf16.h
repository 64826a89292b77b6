// The SIMT simulator's stand-in for <cuda_bf16.h> (see cuda_runtime.h beside it): bfloat16 as its 16 bits,
// converted with the engine's own rounding (round to nearest even, as __float2bfloat16 does).
#pragma once

#include <cstdint>

#include "cuda_runtime.h"
#include "engine/core/dtype.h"

struct __nv_bfloat16 {
  uint16_t bits = 0;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline float __bfloat162float(__nv_bfloat16 v) { return arach::BFloat16ToFloat(v.bits); }
inline __nv_bfloat16 __float2bfloat16(float v) { return __nv_bfloat16{arach::FloatToBFloat16(v)}; }
inline __nv_bfloat16 __float2bfloat16_rn(float v) { return __float2bfloat16(v); }
inline float2 __bfloat1622float2(__nv_bfloat162 v) { return {__bfloat162float(v.x), __bfloat162float(v.y)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16(a), __float2bfloat16(b)}; }
