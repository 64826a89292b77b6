// Loops over a row of logits that the compiler turns into vector code (for files built with -fopenmp-simd).
#pragma once

#include <cstddef>
#include <cstdint>

// glibc's expf has vector variants in libmvec, which libm.so links in as needed. This declaration (the one glibc's
// <math.h> makes only under -ffast-math) lets the compiler call them from loops marked `#pragma omp simd`: IEEE
// semantics kept, -inf terms give 0, each term within a few ulp. (Called unconditionally: a conditional call
// stays scalar.)
extern "C" {
#pragma omp declare simd notinbranch
float expf(float);
}

namespace arach {

// How many of values[0, count) are above `threshold` (vector compares, no early exit).
inline int32_t CountAbove(const float* values, size_t count, float threshold) {
  int32_t above = 0;
#pragma omp simd reduction(+ : above)
  for (size_t i = 0; i < count; ++i) above += values[i] > threshold ? 1 : 0;
  return above;
}

}  // namespace arach
